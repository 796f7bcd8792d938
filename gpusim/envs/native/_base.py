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

from gpusim.envs._fasttd import fast_get
from gpusim.envs.common import EnvBase
from gpusim.envs.native._checks import random_seed
from gpusim.envs.native._rng import CounterRNG
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
    start states from :meth:`_noise` (``[*B, num_noise]`` uniforms in ``[low, high]``). The counter
    that makes consecutive resets differ is a device buffer advanced in place.

    Args:
        batch_size: the env batch dims.
        device: the env device.
        seed: the initial seed; ``None`` draws one from torch's global generator.
        num_noise: how many uniforms per env each reset needs (``0``: no generator).
        noise_bits: resolution of the uniforms, 16 or 24 bits.
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        num_noise: int = 0,
        noise_bits: int = 16,
    ) -> None:
        super().__init__(batch_size=batch_size, device=device)
        self._rng = (
            CounterRNG(self.batch_size, num=num_noise, device=self.device, bits=noise_bits)
            if num_noise > 0
            else None
        )
        self._set_seed(seed)

    def _reset_proc(self, tensordict, **kwargs):
        # Eager CPU path: the rows being reset are known on the host, so only their reset noise
        # is hashed (the counter-based numbers are the same as a full draw; the other rows are
        # discarded by the "_reset" merge). Device and compiled paths draw all rows, mask-based.
        # Only when the input holds every entry the reset draws (observations and states): the
        # merge then overwrites the other rows, so they are not even filled.
        rows = None
        if self._rng is not None and tensordict is not None and self._may_branch():
            mask = tensordict.get("_reset", None)
            if mask is not None and mask.numel() == self.batch_size.numel() and mask.numel() >= 256:
                rows = mask.reshape(-1).nonzero().squeeze(-1)
        if rows is None or not self._holds_noise_keys(tensordict):
            # without previous values to merge over, every row keeps its reset draw
            return super()._reset_proc(tensordict, **kwargs)
        self._rng.only_rows(rows, fill_others=False)
        try:
            return super()._reset_proc(tensordict, **kwargs)
        finally:
            self._rng.only_rows(None, fill_others=True)

    def _holds_noise_keys(self, tensordict) -> bool:
        """Whether ``tensordict`` has every entry a reset draws (observation and state keys)."""
        keys = self._cached("native_noise_keys", lambda: [*self.observation_keys, *self.state_keys])
        for key in keys:
            value = fast_get(tensordict, key) if isinstance(key, str) else tensordict.get(key, None)
            if value is None:
                return False
        return True

    def _reset_skipped(self) -> None:
        # keep the noise stream aligned with the masked (always-reset) path
        if self._rng is not None:
            self._rng.counter.add_(1)

    def _noise(self, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
        """``[*B, num_noise]`` float32 uniforms in ``[low, high]`` (advances the counter)."""
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
        if _new_unsafe is not None and not torch.compiler.is_compiling():
            return _new_unsafe(entries, batch_size=self.batch_size, device=self.device)
        return TensorDict(entries, batch_size=self.batch_size, device=self.device)


# tensordict's validation-free constructor (private; fall back to the checked one without it)
_new_unsafe = getattr(TensorDict, "_new_unsafe", None)
