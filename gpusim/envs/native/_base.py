"""Shared plumbing of the native classic-control envs: reset noise, seeding, done specs.

Examples:
    >>> import torch
    >>> from gpusim.specs import Composite
    >>> done_spec(torch.Size([2]), torch.device("cpu"))["terminated"].shape
    torch.Size([2, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict

from gpusim.envs._fasttd import fast_get, new_td
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import ResetMasks
from gpusim.envs.native._checks import random_seed
from gpusim.envs.native._rng import CounterRNG
from gpusim.kernels import select
from gpusim.specs import Categorical, Composite

__all__ = ["NativeEnv", "done_spec", "stack_last"]


def stack_last(columns: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(columns, -1)``, written column by column in eager mode on CPU.

    On CPU, stacking along a small last dim costs about ten elementwise ops (a strided
    interleave); copying each column into a strided view costs about one. Compiled graphs and
    other devices use ``torch.stack`` (one fused kernel).

    Examples:
        >>> stack_last([torch.zeros(2), torch.ones(2)]).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
    """
    first = columns[0]
    if torch.compiler.is_compiling() or first.device.type != "cpu":
        return torch.stack(tuple(columns), -1)
    out = torch.empty((*first.shape, len(columns)), dtype=first.dtype, device=first.device)
    for i, column in enumerate(columns):
        out[..., i] = column
    return out


def done_spec(batch_size: torch.Size, device: torch.device) -> Composite:
    """``Composite(done=..., terminated=...)``, both bool ``[*B, 1]``.

    Args:
        batch_size: the env batch dims.
        device: the env device.
    """
    flag = Categorical(2, shape=(*batch_size, 1), dtype=torch.bool, device=device)
    return Composite(done=flag, terminated=flag.clone(), shape=batch_size, device=device)


class NativeEnv(EnvBase):
    """Base of the native envs: owns a :class:`CounterRNG` for reset noise and its seeding.

    Subclasses call ``super().__init__(batch_size, device, seed, num_noise=...)`` and draw their
    start states from :meth:`_reset_noise` (``[*B, num_noise]`` uniforms in ``[low, high]``, keyed by
    the episode index of each row, a device buffer advanced in place) and any step randomness
    from :meth:`_noise`.

    **Action values are not checked in the default mode** (no host read per step): the physics
    receive guarded actions, ``Categorical`` indices clamped into range (CartPole's ``7`` pushes
    right, ``-1`` left) and NaN float actions as ``0``, while the tensordict keeps the action as
    given (:mod:`gpusim.envs._action_guard`, ``docs/bad-actions.md``). The debug mode
    (``env.run_type_checks = True``) raises on them instead, naming the key, range and value.

    Args:
        batch_size: the env batch dims.
        device: the env device.
        seed: the initial seed; ``None`` draws one from torch's global generator.
        num_noise: how many uniforms per env each reset needs (``0``: no generator).
        noise_bits: resolution of the uniforms, 16 or 24 bits.
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (see :class:`~gpusim.envs.common.EnvBase`).
    """

    functional_step = True
    guard_actions = True  # out-of-range indices clamped, NaN actions as 0 (see gpusim.envs._action_guard)

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        num_noise: int = 0,
        noise_bits: int = 16,
        auto_reset_mode: str | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, device=device, auto_reset_mode=auto_reset_mode)
        self._rng = (
            CounterRNG(self.batch_size, num=num_noise, device=self.device, bits=noise_bits)
            if num_noise > 0
            else None
        )
        self._set_seed(seed)

    def _reset_rows(self, tensordict, masks: ResetMasks, **kwargs):
        # The reset noise of a row is keyed by its episode index (see CounterRNG): the rows of
        # ``masks`` start their next episode. In SPARSE mode, on large batches, only those rows
        # are hashed (their numbers are those of a full draw) when the input holds every entry a
        # reset draws, so that the merge restores the other rows; the other rows are zero, never
        # uninitialised.
        rng = self._rng
        if rng is None:
            return super()._reset_rows(tensordict, masks, **kwargs)
        env_rows = masks.env_rows()
        rows = None
        if (
            env_rows is not None
            and masks.sparse
            and select("sparse_reset", self.device, self.batch_size.numel()) == "cpu"
            and self._holds_noise_keys(tensordict)
        ):
            rows = masks.rows()
        self.__dict__["_reset_selection"] = (None if rows is not None else env_rows, rows)
        try:
            return super()._reset_rows(tensordict, masks, **kwargs)
        finally:
            self.__dict__["_reset_selection"] = (None, None)

    def _holds_noise_keys(self, tensordict) -> bool:
        """Whether ``tensordict`` has every entry a reset draws (observation and state keys)."""
        if tensordict is None:
            return False
        keys = self._cached("native_noise_keys", lambda: [*self.observation_keys, *self.state_keys])
        for key in keys:
            value = fast_get(tensordict, key) if isinstance(key, str) else tensordict.get(key, None)
            if value is None:
                return False
        return True

    def _reset_noise(self, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
        """``[*B, num_noise]`` float32 uniforms in ``[low, high]`` for the start states of the rows
        being reset (keyed by their episode index; call once per ``_reset``)."""
        mask, rows = self.__dict__.get("_reset_selection", (None, None))
        return self._rng.reset_uniform_range(low, high, mask=mask, rows=rows)

    def _noise(self, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
        """``[*B, num_noise]`` float32 uniforms in ``[low, high]`` from the step stream (advances
        the counter): randomness of steps and actions, not of resets."""
        return self._rng.uniform_range(low, high)

    def _set_seed(self, seed: int | None) -> None:
        if self._rng is not None:
            self._rng.manual_seed(random_seed() if seed is None else seed)

    def _flags(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh ``(done, terminated)`` all-False tensors ``[*B, 1]``."""
        shape = (*self.batch_size, 1)
        return (
            torch.zeros(shape, dtype=torch.bool, device=self.device),
            torch.zeros(shape, dtype=torch.bool, device=self.device),
        )

    def _out(self, **entries: torch.Tensor) -> TensorDict:
        """A flat tensordict of freshly computed tensors (already on the env device, with the
        env batch dims), built without per-key validation when tensordict allows it."""
        return new_td(entries, self.batch_size, self.device)

