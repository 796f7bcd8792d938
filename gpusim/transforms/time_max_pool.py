"""``TimeMaxPool``: element-wise max of the last ``T`` observations.

Each in_key has a buffer of the last ``T`` frames (``[*B, T, *feature]``, preallocated on the
env device and updated in place by :func:`gpusim.kernels.cat_frames_update`); the output is its
max over time. A reset refills the reset rows with the reset frame (so the output is the frame
itself), the other rows keep their buffer.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import TimeMaxPool, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), TimeMaxPool(T=3))
    >>> env.observation_spec["observation"].shape  # the pooled observation keeps its shape
    torch.Size([2, 4])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.kernels import cat_frames_update, masked_fill_rows_
from gpusim.transforms._levels import default_levels, done_levels_of, mask_at, reset_mask_for, tget, tset
from gpusim.transforms.transform import Transform

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.specs import Composite

__all__ = ["TimeMaxPool"]


class TimeMaxPool(Transform):
    """Max-pools the last ``T`` values of each in_key over time.

    Args:
        in_keys: entries to pool (default ``["observation"]``).
        out_keys: destinations (default: ``in_keys``).
        T: window length (>= 1).
        reset_key: a ``"_reset"`` key to read instead of the parent's done levels.

    Raises:
        ValueError: ``T < 1``.
        KeyError: (when attached) an ``in_key`` that is not an observation of the parent.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> pool = TimeMaxPool(in_keys=["observation"], out_keys=["pooled"], T=2)
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), pool)
        >>> td = env.rollout(3)
        >>> obs, pooled = td["next", "observation"], td["next", "pooled"]
        >>> torch.equal(pooled[:, 1:], torch.maximum(obs[:, :-1], obs[:, 1:]))  # max of the last 2
        True
        >>> torch.equal(pooled[:, 0], torch.maximum(td["observation"][:, 0], obs[:, 0]))  # with the reset frame
        True
    """

    restarts_on_native_autoreset = True  # per-episode state: restarted on a native auto-reset

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        T: int = 1,
        reset_key: NestedKey | None = None,
    ) -> None:
        if isinstance(T, bool) or not isinstance(T, int) or T < 1:
            raise ValueError(f"TimeMaxPool T must be an int >= 1, got {T!r}")
        if in_keys is None:
            in_keys = ["observation"]
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.T = T
        self.reset_key = None if reset_key is None else _keys.unravel(reset_key)
        self.__dict__["_levels"] = None
        self.__dict__["_nbatch"] = {}  # in_key -> batch ndim of its Composite

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        self.__dict__["_levels"] = done_levels_of(output_spec)
        obs_spec = output_spec["full_observation_spec"]
        nbatch = {}
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            if in_key not in obs_spec.keys(True, True):
                raise KeyError(f"TimeMaxPool: in_key {in_key!r} is not an observation key of the parent env")
            spec = obs_spec[in_key]
            if out_key != in_key:
                obs_spec[out_key] = spec.clone()
            prefix = _keys.as_tuple(in_key)[:-1]
            nb = len(obs_spec[prefix].shape) if prefix else len(obs_spec.shape)
            nbatch[in_key] = nb
            self._ensure_buffer(i, (*spec.shape[:nb], self.T, *spec.shape[nb:]), spec.dtype, spec.device)
        self.__dict__["_nbatch"] = nbatch
        return output_spec

    def _ensure_buffer(self, i: int, shape, dtype, device) -> tuple[torch.Tensor, bool]:
        name = f"_pool_buffer_{i}"
        buf = self._buffers.get(name)
        if (
            buf is not None
            and buf.shape == torch.Size(shape)
            and buf.dtype == dtype
            and buf.device == torch.device(device)
        ):
            return buf, False
        buf = torch.zeros(shape, dtype=dtype, device=device)
        self.register_buffer(name, buf, persistent=False)
        return buf, True

    def _frame(self, x: torch.Tensor, nb: int) -> tuple[torch.Tensor, int]:
        """``x`` with a time dim inserted after the batch dims, and that dim (negative)."""
        d = -(x.ndim - nb) - 1
        return x.unsqueeze(d), d

    def _nb(self, tensordict: TensorDictBase, key: NestedKey) -> int:
        nb = self.__dict__["_nbatch"].get(key)
        if nb is None:
            prefix = _keys.as_tuple(key)[:-1]
            node = tensordict.get(prefix) if prefix else tensordict
            nb = node.batch_dims
        return nb

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        levels = self.__dict__["_levels"] or default_levels(tensordict_reset.batch_size)
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            x = tget(tensordict_reset, in_key)
            if x is None:
                continue
            nb = self._nb(tensordict_reset, in_key)
            frame, d = self._frame(x, nb)
            buf, _ = self._ensure_buffer(i, (*x.shape[:nb], self.T, *x.shape[nb:]), x.dtype, x.device)
            refill = frame.expand_as(buf)
            if self.reset_key is not None:
                mask = mask_at(tensordict, self.reset_key, x.shape[:nb])
            else:
                mask = reset_mask_for(tensordict, in_key, levels, tensordict_reset.batch_size)
            if mask is None:
                buf.copy_(refill)
            else:
                masked_fill_rows_([buf], [refill.contiguous()], [mask])
            # reset rows: the max of T copies of the frame; the other rows take their previous
            # value from the input (the reset merge)
            tset(tensordict_reset, out_key, x if out_key == in_key else x.clone())
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            x = tget(next_tensordict, in_key)
            if x is None:
                continue
            nb = self._nb(next_tensordict, in_key)
            frame, d = self._frame(x, nb)
            buf, new = self._ensure_buffer(i, (*x.shape[:nb], self.T, *x.shape[nb:]), x.dtype, x.device)
            if new:
                buf.copy_(frame.expand_as(buf))
            stacked = cat_frames_update(buf, frame, None, d, "same", 0.0)
            tset(next_tensordict, out_key, stacked.amax(d))
        return next_tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._step(next_tensordict, next_tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the pool follows env steps (use the transform in a ``TransformedEnv``).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from tensordict import TensorDict
            >>> TimeMaxPool(T=2)(TensorDict({}, []))
            Traceback (most recent call last):
            ...
            NotImplementedError: TimeMaxPool cannot be called independently: it pools env steps; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "TimeMaxPool cannot be called independently: it pools env steps; it has no offline forward. Use it in a TransformedEnv."
        )

    def __repr__(self) -> str:
        return f"TimeMaxPool(in_keys={self.in_keys}, out_keys={self.out_keys}, T={self.T})"
