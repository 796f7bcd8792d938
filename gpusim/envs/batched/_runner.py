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

from collections.abc import Sequence
from typing import Any

from tensordict import TensorDict, TensorDictBase

from gpusim.envs.batched._shared import Buffers, KeyPlan, TDBuilder, copy_leaves, leaves
from gpusim.envs.common import EnvBase

__all__ = ["WorkerRunner"]


def _nontensor_values(td: TensorDictBase, keys: list) -> list | None:
    """The non-tensor entries ``keys`` of ``td`` (``NonTensorData``/``NonTensorStack``
    objects, ``None`` where missing), or ``None`` without keys."""
    if not keys:
        return None
    return [td.get(key, None) for key in keys]


class WorkerRunner:
    """Runs commands of a batched env on one worker env.

    Args:
        env: the worker env.
        plan: the key plan of the batched env.
        buffers: the exchange buffers (``[W, *sub]``).
        index: the worker's row in the buffers.
    """

    def __init__(self, env: Any, plan: KeyPlan, buffers: Buffers | None, index: int) -> None:
        self.env = env
        self.plan = plan
        self.index = index
        self._plain_step = type(env).step is EnvBase.step
        self._direct = None
        self.required = plan.required_inputs()
        if buffers is None:  # no buffers: data travels with the commands (step_td, reset_td)
            return
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
        self._direct = self._direct_stepper(env, plan)

    @property
    def reads_observations(self) -> bool:
        """Whether the env's step may read the observation entries of its input (``False`` on
        the direct step, which reads the action alone: the batched env may skip writing them)."""
        return self._direct is None

    def _direct_stepper(self, env: Any, plan: KeyPlan) -> Any:
        """The env's direct buffer step (``_buffer_stepper``: outputs written straight into the
        worker's row, no tensordict), or ``None``. Looked up on the env's class: a wrapper that
        forwards attributes to an inner env (``TransformedEnv``) must not step past itself."""
        factory = getattr(type(env), "_buffer_stepper", None)
        if factory is None or not self._plain_step or plan.input_nontensor_keys or plan.next_nontensor_keys:
            return None
        return factory(env, plan.input_keys, self.views.inputs, plan.next_keys, self.views.next_out)

    def _subset(self, cache: dict, keys: list, views: list, present: tuple):
        builder = cache.get(present)
        if builder is None:
            builder = TDBuilder(self._template, [keys[i] for i in present])
            cache[present] = builder
        return builder([views[i] for i in present])

    # ------------------------------------------------------------------ env commands
    def step(self, present: Sequence[int] | None = None, extra: dict | None = None) -> list | None:
        """Steps the env on the worker's input row; writes ``"next"`` into the output row.

        Args:
            present: indices (in ``plan.input_keys``) of the entries the input holds (``None``:
                all of them). The direct step (an env with ``_buffer_stepper``) serves ``None``
                and ``plan.required_inputs()``: it reads the action alone.
            extra: non-tensor input entries (``{key: NonTensorData}``), set into the input.

        Returns:
            The non-tensor entries of ``"next"`` (in the order of ``plan.next_nontensor_keys``),
            or ``None`` when the env has none.
        """
        direct = self._direct
        if direct is not None and not extra and (present is None or tuple(present) == self.required) and direct():
            return None
        if present is None:
            td = self._input_builder(self.views.inputs)
        else:
            td = self._subset(self._step_builders, self.plan.input_keys, self.views.inputs, tuple(present))
        if extra:
            for key, value in extra.items():
                td.set(key, value)
        next_td = self._step_next(td)
        copy_leaves(self.views.next_out, leaves(next_td, self._next_keys))
        return _nontensor_values(next_td, self.plan.next_nontensor_keys)

    def _step_next(self, td: TensorDictBase) -> TensorDictBase:
        if self._plain_step:  # EnvBase.step minus its batch and action checks (done by the batched env)
            return self.env._step_output(td)
        return self.env.step(td).get("next")

    def reset(self, present: Sequence[int], kwargs: dict | None = None, extra: dict | None = None) -> list | None:
        """Resets the env; ``present`` are the indices (in ``reset_mask_keys + state_keys``)
        of the input entries to pass (``()``: a full reset without input); ``extra`` holds
        non-tensor input entries. Returns the non-tensor entries of the reset output (in the
        order of ``plan.reset_out_nontensor_keys``), or ``None`` when the env has none."""
        present = tuple(present)
        td = self._subset(self._reset_builders, self._reset_keys, self._reset_views, present) if present else None
        if extra:
            if td is None:
                td = TensorDict({}, batch_size=self.env.batch_size, device=self.env.device)
            for key, value in extra.items():
                td.set(key, value)
        out = self.env.reset(td, **(kwargs or {}))
        copy_leaves(self.views.reset_out, leaves(out, self._reset_out_keys))
        return _nontensor_values(out, self.plan.reset_out_nontensor_keys)

    def step_td(self, td: TensorDictBase) -> TensorDictBase:
        """Without buffers: steps the env on ``td`` (the worker's rows); returns ``"next"``.
        (A shallow copy first: a consolidated tensordict keeps its entries in one storage, and
        entries added to it later would not travel back through a pipe.)"""
        return self._step_next(td.copy())

    def reset_td(self, td: TensorDictBase | None, kwargs: dict | None = None) -> TensorDictBase:
        """Without buffers: resets the env with ``td``; returns the reset data."""
        return self.env.reset(None if td is None else td.copy(), **(kwargs or {}))

    def set_seed(self, seed: int | None, static_seed: bool) -> int | None:
        """Seeds the env; returns the next seed of the chain."""
        return self.env.set_seed(seed, static_seed=static_seed)

    # ------------------------------------------------------------------ attribute access
    def _resolve(self, name: str | tuple) -> Any:
        value = self.env
        for part in (name,) if isinstance(name, str) else name:
            value = getattr(value, part)
        return value

    def getattr(self, name: str | tuple) -> tuple[bool, Any]:
        """``(is_callable, value)`` of ``env.<name>`` (a tuple: a chain, ``env.a.b``); callables
        are not returned (call them with :meth:`call`)."""
        value = self._resolve(name)
        if callable(value):
            return True, None
        return False, value

    def call(self, name: str | tuple, args: tuple, kwargs: dict) -> Any:
        """Calls ``env.<name>(*args, **kwargs)`` (a tuple name: a chain, ``env.a.b(...)``)."""
        return self._resolve(name)(*args, **kwargs)

    def close(self) -> None:
        """Closes the env."""
        self.env.close()
