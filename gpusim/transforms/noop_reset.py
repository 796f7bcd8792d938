"""``NoopResetEnv``: random actions after each reset (Atari's "no-op starts").

After the env up to this transform (``parent``) resets, every reset row takes ``n`` random
actions (``n`` uniform in ``[1, noops]`` per row with ``random=True``, else ``noops``). On tensor
envs this is sync-free: ``noops`` parent steps run for all rows and a row takes a step's result
only while it is being reset, still has noops left and the step does not end its episode (a row
that would finish stops with its last live state). Rows not being reset are untouched, which
relies on the parent keeping its state in the tensordict (native envs) — so put this transform
first in the chain: stateful transforms before it would see the noop steps of every row.
CPU-backed envs (gymnasium) step all their sub-envs, so there the noops run only when every row
is reset.

Each reset call costs ``noops`` parent steps.

Examples:
    >>> from gpusim.transforms import NoopResetEnv, StepCounter, Compose, TransformedEnv
    >>> from tests.envs.toy_envs import StatelessCounter
    >>> env = TransformedEnv(StatelessCounter(batch_size=[3], max_count=100), NoopResetEnv(3, random=False))
    >>> env.reset()["state"].shape
    torch.Size([3, 1])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs._seeding import next_seed
from gpusim.kernels import masked_merge
from gpusim.transforms._levels import default_levels, reset_mask
from gpusim.transforms.transform import Transform

__all__ = ["NoopResetEnv"]


class NoopResetEnv(Transform):
    """Runs random actions after a reset.

    Args:
        noops: the (upper bound of the) number of random actions, >= 0.
        random: draw the number per row in ``[1, noops]`` (``False``: always ``noops``).

    Raises:
        ValueError: ``noops < 0``.

    Examples:
        See the module docstring.
    """

    def __init__(self, noops: int = 30, random: bool = True) -> None:
        if isinstance(noops, bool) or not isinstance(noops, int) or noops < 0:
            raise ValueError(f"NoopResetEnv noops must be an int >= 0, got {noops!r}")
        super().__init__()
        self.noops = noops
        self.random = random
        self.__dict__["_seed"] = 0
        self.__dict__["_gens"] = {}

    def _set_seed(self, seed: int | None) -> int | None:
        self.__dict__["_seed"] = 0 if seed is None else seed
        self.__dict__["_gens"] = {}
        return seed if seed is None else next_seed(seed)

    def _generator(self, device: torch.device) -> torch.Generator:
        gens = self.__dict__["_gens"]
        key = str(device)
        if key not in gens:
            gen = torch.Generator(device=device)
            gen.manual_seed(self.__dict__["_seed"])
            gens[key] = gen
        return gens[key]

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.noops == 0:
            return tensordict_reset
        parent = self.parent
        if parent is None:
            raise RuntimeError("NoopResetEnv needs a parent env (use it in a TransformedEnv)")
        levels = parent.done_levels or default_levels(parent.batch_size)
        if len(levels) > 1:
            raise ValueError(
                "NoopResetEnv: there is more than one done level in the parent environment "
                f"({[lvl.prefix for lvl in levels]}); noops are defined for a single done level"
            )
        batch = parent.batch_size
        device = tensordict_reset.device or parent.device
        mask = reset_mask(tensordict, levels[0])
        rows = torch.ones(batch, dtype=torch.bool, device=device) if mask is None else mask.reshape(batch)
        if parent._cpu_backed and mask is not None and not bool(rows.all()):
            return tensordict_reset  # gym sub-envs cannot be stepped row by row
        if self.random:
            n = torch.randint(1, self.noops + 1, batch, generator=self._generator(device), device=device)
        else:
            n = torch.full(batch, self.noops, device=device)
        current = tensordict_reset.clone(False)
        keys = [k for k, v in current.items(True, True) if isinstance(v, torch.Tensor)]
        alive = rows
        for i in range(self.noops):
            inp = parent.rand_action(current.clone(False))
            nxt = parent._step_proc(inp)
            done = parent._done_rows(nxt)
            take = alive & (i < n) & ~done
            alive = alive & ~done
            new, old, used = [], [], []
            for key in keys:
                v = nxt.get(key, None)
                o = current.get(key)
                if isinstance(v, torch.Tensor) and v.shape == o.shape and v.dtype == o.dtype:
                    new.append(v)
                    old.append(o)
                    used.append(key)
            for key, value in zip(used, masked_merge(new, old, [take] * len(used))):
                current.set(key, value)
        for key in keys:
            tensordict_reset.set(key, current.get(key))
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError("NoopResetEnv acts on env resets; it has no offline forward.")

    def __repr__(self) -> str:
        return f"NoopResetEnv(noops={self.noops}, random={self.random})"
