"""``NoopResetEnv``: random actions after each reset (Atari's "no-op starts").

After the env up to this transform (``parent``) resets, every reset row takes ``n`` random
actions (``n`` uniform in ``[1, noops]`` per row with ``random=True``, else ``noops``): ``noops``
parent steps run for all rows and a row takes a step's result only while it is being reset and
still has noops left. Rows not being reset are untouched.

A row whose episode ends during its noops is reset again and draws new noops, up to 10 more
times; then ``reset`` raises a ``RuntimeError`` (the noops are too many for the env, as TorchRL
documents). Spotting those rows reads one flag per noop step on the host, which envs in
``AutoResetMode.SPARSE`` (CPU, host-backed) do anyway; an env in ``MASKED`` mode (device,
compiled) stays sync-free and is checked only in debug mode (``run_type_checks=True`` /
``GPUSIM_VALIDATE=1``): otherwise such a row keeps its last state before the end.

That needs a parent whose step is a pure function of its input (``functional_step``: the state
lives in the tensordict, as in the native envs), so that stepping a row and discarding the result
changes nothing; put this transform first in the chain. A batched parent whose rows cannot be
stepped apart (a gymnasium vector env, VMAS, a batched env) is rejected at its first reset
(``ValueError``, as TorchRL does), whatever the backend: it never silently skips the noops of a
partial reset.

The noop counts and actions of a row are keyed by (seed, row, episode index of the row), so they
do not depend on the env's auto-reset mode nor on how many resets other rows had. Each reset
call costs ``noops`` parent steps.

Examples:
    >>> from gpusim.transforms import NoopResetEnv, TransformedEnv
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), NoopResetEnv(3, random=False))
    >>> td = env.reset()
    >>> bool((td["state"] != CartPoleEnv(batch_size=[3], seed=0).reset()["state"]).any())
    True
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs._seeding import next_seed
from gpusim.envs.episode import merge_rows, reset_mask_for
from gpusim.envs.native.rng import CounterRNG
from gpusim.envs.random_actions import HashRandomPolicy
from gpusim.transforms._levels import default_levels
from gpusim.transforms.transform import Transform

__all__ = ["NoopResetEnv"]

#: resets retried when an episode ends during the noops, before ``reset`` raises
_MAX_TRIALS = 10


class NoopResetEnv(Transform):
    """Runs random actions after a reset.

    Args:
        noops: the (upper bound of the) number of random actions, >= 0.
        random: draw the number per row in ``[1, noops]`` (``False``: always ``noops``).

    Raises:
        ValueError: ``noops < 0``; a reset of a batched parent whose step is not functional, or
            of one with several done levels.
        RuntimeError: (at reset) the episode of a row ended during its noops 11 times in a row.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), NoopResetEnv(noops=5))
        >>> td = env.reset()  # every row took 1 to 5 random steps after its reset
        >>> before = td["state"].clone()
        >>> td = env.reset(td.set("_reset", torch.tensor([[True], [False], [False]])))
        >>> bool((td["state"][0] != before[0]).any()), torch.equal(td["state"][1:], before[1:])
        (True, True)
    """

    def __init__(self, noops: int = 30, random: bool = True) -> None:
        if isinstance(noops, bool) or not isinstance(noops, int) or noops < 0:
            raise ValueError(f"NoopResetEnv noops must be an int >= 0, got {noops!r}")
        super().__init__()
        self.noops = noops
        self.random = random
        self.__dict__["_seed"] = 0
        self.__dict__["_streams"] = None  # (batch_size, device, rng, policy)

    def _set_seed(self, seed: int | None) -> int | None:
        self.__dict__["_seed"] = 0 if seed is None else seed
        streams = self.__dict__["_streams"]
        if streams is not None:
            streams[2].manual_seed(self.__dict__["_seed"])
        return seed if seed is None else next_seed(seed)

    def _check_parent(self, batch: torch.Size) -> None:
        """Raises when the parent has several rows that cannot be stepped apart (TorchRL raises at
        reset too: the transform may be attached to such an env, not used on it)."""
        container = self._preceding()
        if container is None or self.noops == 0 or batch.numel() <= 1:
            return
        base_env = container[0]
        if not base_env.functional_step:
            raise ValueError(
                f"The parent environment batch-size is non-null ({list(batch)}) and NoopResetEnv cannot run there: "
                f"the parent {type(base_env).__name__} cannot step some rows without the others (its step is not "
                "functional_step: the state lives in the library, not in the tensordict), so the noops of a "
                "partial reset cannot be applied. Use a native env, or NoopResetEnv on each single env (e.g. "
                "SerialEnv(n, lambda: TransformedEnv(GymEnv(...), NoopResetEnv())))"
            )

    def _streams_for(self, parent) -> tuple[CounterRNG, HashRandomPolicy | None]:
        batch, device = parent.batch_size, parent.device
        streams = self.__dict__["_streams"]
        if streams is None or streams[0] != batch or streams[1] != device:
            spec = parent.full_action_spec
            policy = HashRandomPolicy(spec, batch, seed=0) if HashRandomPolicy.supports(spec) else None
            num = 1 if policy is None else policy.num
            rng = CounterRNG(batch, num=num, device=device, seed=self.__dict__["_seed"], bits=24)
            streams = self.__dict__["_streams"] = (batch, device, rng, policy)
        return streams[2], streams[3]

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.noops == 0:
            return tensordict_reset
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                "NoopResetEnv.parent not found. Make sure that the parent is set: NoopResetEnv needs a parent env (use it in a TransformedEnv)"
            )
        batch = parent.batch_size
        self._check_parent(batch)
        levels = parent.done_levels or default_levels(batch)
        if len(levels) > 1:
            raise ValueError(
                "NoopResetEnv: there is more than one done level in the parent environment "
                f"({[lvl.prefix for lvl in levels]}); noops are defined for a single done level"
            )
        device = tensordict_reset.device or parent.device
        mask = reset_mask_for(tensordict, levels[0].key("done"), levels, batch)
        rows = torch.ones(batch, dtype=torch.bool, device=device) if mask is None else mask
        current = tensordict_reset.clone(False)
        keys = [k for k, v in current.items(True, True) if isinstance(v, torch.Tensor)]
        # a host read is allowed where the env reads its done rows on the host anyway (SPARSE
        # mode) and in debug mode; MASKED envs (device, compiled) stay sync-free
        debug = any(getattr(env, "run_type_checks", False) for env in (parent, self.container, parent.base_env))
        checked = parent._sparse_now() or (debug and not torch.compiler.is_compiling())
        for trial in range(_MAX_TRIALS + 1):
            current, short = self._noops(parent, current, rows, mask, keys, checked)
            if not checked or not bool(short.any()):
                break
            if trial == _MAX_TRIALS:
                raise RuntimeError(
                    f"NoopResetEnv: the parent env was done or truncated before the {self.noops} noops "
                    f"(random={self.random}) could be applied, {_MAX_TRIALS + 1} times in a row; use fewer noops"
                )
            # rows whose episode ended before their noops: reset them again and start over
            mask = rows = short
            again = current.clone(False)
            if batch.numel() > 1:
                again.set(levels[0].key("_reset"), short.reshape(parent.full_done_spec[levels[0].key("done")].shape))
            current.update(parent.reset(again).select(*keys, strict=False))
        for key in keys:
            tensordict_reset.set(key, current.get(key))
        return tensordict_reset

    def _noops(self, parent, current, rows, mask, keys, checked):
        """Runs the noops of the reset ``rows``; returns the data and the rows that ended early."""
        batch = parent.batch_size
        rng, policy = self._streams_for(parent)
        rng.start_episodes(mask)  # the noops of a row's episode are keyed by its episode index
        if self.random:
            n = (rng.episode_uniform(0)[..., 0] * self.noops).to(torch.int64).clamp_max(self.noops - 1) + 1
        else:
            n = torch.full(batch, self.noops, device=rows.device)
        alive = rows
        short = torch.zeros_like(rows)
        for i in range(self.noops):
            if checked and not bool((alive & (i < n)).any()):
                break  # (a stateful parent must not step past the end of its episode)
            inp = current.clone(False)
            if policy is not None:
                inp = policy.write(inp, rng.episode_uniform(i + 1)[..., : policy.num])
            else:
                inp = parent.rand_action(inp)
            nxt = parent._step_output(inp)
            done = parent.episode.ended(nxt)
            take = alive & (i < n) & ~done
            short = short | (alive & (i < n) & done)
            alive = alive & ~done
            current.update(merge_rows(nxt.select(*keys, strict=False), current, take))
        return current, short

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline data is returned as it is: the noops happen at env resets (as in TorchRL, the
        transform is a no-op in a module chain or a replay buffer).

        Examples:
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"observation": torch.zeros(2)}, [])
            >>> NoopResetEnv()(td) is td
            True
        """
        return tensordict

    def __repr__(self) -> str:
        return f"NoopResetEnv(noops={self.noops}, random={self.random})"
