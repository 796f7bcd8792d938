"""The native env contract: :class:`NativeEnv` (specs + ``_reset(td, rows)`` + ``_step(td)``).

A native env is a tensor program written once in plain torch: the same ``_reset``/``_step``
run eager, inside ``torch.compile`` graphs (``rollout(..., compile=True)``) and on CUDA, for any
batch size. The contract (see ``docs/writing_an_env.md`` for a complete env in ~30 lines):

* ``__init__``: call ``super().__init__(batch_size, device, seed)``, then set the specs
  (``observation_spec``, ``action_spec``, ``reward_spec``, ``state_spec``, ``done_spec``) with
  the env's batch dims ``self.batch_size`` and device ``self.device``.
* ``_reset(tensordict, rows) -> TensorDict``: the start data of every row. ``rows`` is a
  :class:`~gpusim.envs.native.rng.ResetRows`: which rows reset (``rows.mask``, ``rows.index``)
  and their random numbers (``rows.uniform(low, high, n)``, ``rows.randint``,
  ``rows.bernoulli``). Rows that do not reset are restored afterwards.
* ``_step(tensordict) -> TensorDict``: the next observation, reward and done flags, a pure
  function of the input (keep the physical state in the tensordict, e.g. under ``"state"``).
  Randomness inside a step comes from ``self.rng`` (:class:`~gpusim.envs.native.rng.CounterRNG`:
  ``self.rng.uniform(low, high, n)``, ``randint``, ``bernoulli``).
* no host reads (``.item()``, ``bool(tensor)``), no ``torch.Generator``, no Python branch on
  tensor values; shared eager-CPU speed tricks are in :mod:`gpusim.envs.native._ops`.

``seed`` / ``env.set_seed(s)`` seed ``self.rng`` (both streams).

Examples:
    >>> import torch
    >>> from gpusim.specs import Composite
    >>> done_spec(torch.Size([2]), torch.device("cpu"))["terminated"].shape
    torch.Size([2, 1])
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._fasttd import fast_get, new_td
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import ResetMasks
from gpusim.envs.native._checks import random_seed
from gpusim.envs.native._ops import stack_last
from gpusim.envs.native.rng import CounterRNG, ResetRows
from gpusim.kernels import select
from gpusim.specs import Categorical, Composite

__all__ = ["NativeEnv", "done_spec", "stack_last"]


def done_spec(batch_size: torch.Size, device: torch.device) -> Composite:
    """``Composite(done=..., terminated=...)``, both bool ``[*B, 1]``.

    Args:
        batch_size: the env batch dims.
        device: the env device.
    """
    flag = Categorical(2, shape=(*batch_size, 1), dtype=torch.bool, device=device)
    return Composite(done=flag, terminated=flag.clone(), shape=batch_size, device=device)


class NativeEnv(EnvBase):
    """Base of the native envs (see the module docstring for the contract).

    Subclasses implement ``_reset(tensordict, rows)`` and ``_step(tensordict)``. The base owns
    the env's random numbers, :attr:`rng` (a :class:`~gpusim.envs.native.rng.CounterRNG` seeded
    by ``seed`` and ``set_seed``), and builds the ``rows`` argument of ``_reset`` in its
    ``_reset_rows`` hook.

    Args:
        batch_size: the env batch dims.
        device: the env device.
        seed: the initial seed; ``None`` draws one from torch's global generator.

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (see :class:`~gpusim.envs.common.EnvBase`).
        num_noise: the default ``n`` of a draw (``rows.uniform(low, high)`` without ``n``); the
            lane ids of draws of this size are cached.
        noise_bits: the default resolution of uniform draws, 16 or 24 bits.

    Attributes:
        rng: the env's :class:`~gpusim.envs.native.rng.CounterRNG` (step stream:
            ``self.rng.uniform(low, high, n)`` in ``_step``).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0)
        >>> isinstance(env.rng, CounterRNG), env.rng.batch_size
        (True, torch.Size([2]))
    """

    functional_step = True

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        num_noise: int = 1,
        noise_bits: int = 24,
    ) -> None:
        super().__init__(batch_size=batch_size, device=device, auto_reset_mode=auto_reset_mode)
        self.rng = CounterRNG(self.batch_size, num=num_noise, device=self.device, bits=noise_bits)
        self._set_seed(seed)

    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        """The start data of every row (a new tensordict); ``rows`` tells which rows reset and
        draws their random numbers (see the module docstring)."""

    def _reset_rows(self, tensordict, masks: ResetMasks, **kwargs):
        # The rows of ``masks`` start their next episode (the reset stream of a row is keyed by
        # its episode index). In SPARSE mode, on large batches, only those rows are hashed (their
        # numbers are those of a full draw) when the input holds every entry a reset writes, so
        # that the merge restores the other rows; the other rows are zero, never uninitialised.
        mask = masks.env_rows()
        index = None
        if (
            mask is not None
            and masks.sparse
            and select("sparse_reset", self.device, self.batch_size.numel()) == "cpu"
            and self._holds_noise_keys(tensordict)
        ):
            index = masks.rows()
        rows = ResetRows.start(self.rng, mask, index)
        return super()._reset_rows(tensordict, masks, rows=rows, **kwargs)

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

    def _set_seed(self, seed: int | None) -> None:
        self.rng.manual_seed(random_seed() if seed is None else seed)

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
