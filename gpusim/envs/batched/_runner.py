"""``WorkerRunner``: what one worker does with its env, in process (serial) or in a worker process.

The runner reads its inputs from its row of the exchange buffers, runs the env and writes the
outputs back into its row (one ``torch._foreach_copy_`` per direction). The same class serves
``SerialEnv`` (rows of plain buffers) and ``ParallelEnv``'s worker processes (rows of
shared-memory buffers).

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.envs.batched.metadata import get_env_metadata
    >>> from gpusim.envs.batched._shared import Buffers, KeyPlan
    >>> meta = get_env_metadata(CartPoleEnv)
    >>> plan = KeyPlan.from_metadata(meta)
    >>> buffers = Buffers.allocate(plan, meta, 1, share_memory=False)
    >>> runner = WorkerRunner(CartPoleEnv(), plan, buffers, 0)
    >>> runner.reset(())
    >>> buffers.reset_out["observation"].abs().max().item() <= 0.05
    True
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from gpusim.envs.common import EnvBase
from gpusim.envs.batched._shared import Buffers, KeyPlan, TDBuilder, leaves

__all__ = ["WorkerRunner"]


class WorkerRunner:
    """Runs commands of a batched env on one worker env.

    Args:
        env: the worker env.
        plan: the key plan of the batched env.
        buffers: the exchange buffers (``[W, *sub]``).
        index: the worker's row in the buffers.
    """

    def __init__(self, env: Any, plan: KeyPlan, buffers: Buffers, index: int) -> None:
        self.env = env
        self.plan = plan
        self.index = index
        self.views = buffers.worker_views(index)
        self._template = buffers.inputs[index]
        self._input_builder = TDBuilder(self._template, plan.input_keys)
        self._step_builders: dict[tuple, TDBuilder] = {}
        self._reset_keys = [*plan.reset_mask_keys, *plan.state_keys]
        state_views = [self.views.inputs[plan.input_keys.index(k)] for k in plan.state_keys]
        self._reset_views = [*self.views.reset_masks, *state_views]
        self._reset_builders: dict[tuple, TDBuilder] = {}
        self._next_keys = plan.next_keys
        self._reset_out_keys = plan.reset_out_keys
        self._plain_step = type(env).step is EnvBase.step

    def _subset(self, cache: dict, keys: list, views: list, present: tuple):
        builder = cache.get(present)
        if builder is None:
            builder = TDBuilder(self._template, [keys[i] for i in present])
            cache[present] = builder
        return builder([views[i] for i in present])

    # ------------------------------------------------------------------ env commands
    def step(self, present: Sequence[int] | None = None) -> None:
        """Steps the env on the worker's input row; writes ``"next"`` into the output row.

        Args:
            present: indices (in ``plan.input_keys``) of the entries the input holds (``None``:
                all of them).
        """
        if present is None:
            td = self._input_builder(self.views.inputs)
        else:
            td = self._subset(self._step_builders, self.plan.input_keys, self.views.inputs, tuple(present))
        if self._plain_step:  # EnvBase.step minus its batch and action checks (done by the batched env)
            next_td = self.env._step_output(td)
        else:
            next_td = self.env.step(td).get("next")
        torch._foreach_copy_(self.views.next_out, leaves(next_td, self._next_keys))

    def reset(self, present: Sequence[int], kwargs: dict | None = None) -> None:
        """Resets the env; ``present`` are the indices (in ``reset_mask_keys + state_keys``)
        of the input entries to pass (``()``: a full reset without input)."""
        present = tuple(present)
        td = self._subset(self._reset_builders, self._reset_keys, self._reset_views, present) if present else None
        out = self.env.reset(td, **(kwargs or {}))
        torch._foreach_copy_(self.views.reset_out, leaves(out, self._reset_out_keys))

    def set_seed(self, seed: int | None, static_seed: bool) -> int | None:
        """Seeds the env; returns the next seed of the chain."""
        return self.env.set_seed(seed, static_seed=static_seed)

    # ------------------------------------------------------------------ attribute access
    def getattr(self, name: str) -> tuple[bool, Any]:
        """``(is_callable, value)``: callables are not returned (call them with :meth:`call`)."""
        value = getattr(self.env, name)
        if callable(value):
            return True, None
        return False, value

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        """Calls ``env.<name>(*args, **kwargs)``."""
        return getattr(self.env, name)(*args, **kwargs)

    def close(self) -> None:
        """Closes the env."""
        self.env.close()
