"""``CatFrames``: concatenates the last ``N`` observations along a (negative) dim.

In an environment, each in_key has a ring buffer of the last ``N`` frames, preallocated on the
env device when the specs are built and updated in place: a step shifts the new frame in
(:func:`gpusim.kernels.cat_frames_update`, one fused op), a reset refills the reset rows only
(``padding="same"`` repeats the reset frame ``N`` times; ``"constant"`` pads with
``padding_value`` and puts the frame last), reading the ``"_reset"`` masks of the input. The
observation written is a fresh copy of the buffer, so stored rollouts never alias it.

Offline (``forward`` on stored data of shape ``[*B, T]``, time last), the same windows are
built for every time step at once, restarted after each ``("next", done)``; root and ``"next"``
entries are both processed, and the result equals what the env would have produced.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import CatFrames, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), CatFrames(2, dim=-1, in_keys=["observation"]))
    >>> frames = env.reset()["observation"].unflatten(-1, (2, 4))  # [B, N, 4]
    >>> bool((frames[:, 0] == frames[:, 1]).all())  # padding="same": the reset frame, twice
    True
"""

from __future__ import annotations

from typing import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.kernels import cat_frames_update, masked_fill_rows_, select
from gpusim.kernels.cat_frames import refill_rows_cpu_
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms._levels import default_levels, done_levels_of, mask_at, reset_mask_for, tget, tset
from gpusim.transforms.transform import Transform

__all__ = ["CatFrames"]

_PADDINGS = ("same", "constant")


def _cat_spec(spec, n: int, dim: int, padding: str, padding_value: float):
    """The spec of ``n`` frames of ``spec`` concatenated along ``dim``."""
    shape = list(spec.shape)
    if -dim > len(shape):
        raise ValueError(f"CatFrames dim {dim} is out of range for a spec of shape {shape}")
    shape[dim] *= n
    low, high = getattr(spec, "low", None), getattr(spec, "high", None)
    if isinstance(low, torch.Tensor) and isinstance(high, torch.Tensor):
        low = torch.cat([low] * n, dim)
        high = torch.cat([high] * n, dim)
        if padding == "constant":
            low = low.clamp_max(padding_value)
            high = high.clamp_min(padding_value)
        return Bounded(low, high, shape=shape, dtype=spec.dtype, device=spec.device)
    return Unbounded(shape=shape, dtype=spec.dtype, device=spec.device)


class CatFrames(Transform):
    """Concatenates successive observation frames into a single tensor.

    Args:
        N: number of frames to concatenate (>= 1).
        dim: the (negative) dim along which frames are concatenated.
        in_keys: the frames (default ``["pixels"]``).
        out_keys: where the stacks are written (default: ``in_keys``).
        padding: ``"same"`` or ``"constant"``.
        padding_value: the pad for ``padding="constant"``.
        as_inverse: apply the (offline) stacking on the inverse path instead (replay buffers).
        reset_key: a ``"_reset"`` key to read instead of the parent's done levels.
        done_key: the done entry that ends trajectories offline (default ``"done"``, read under
            ``"next"``).

    Raises:
        ValueError: ``dim >= 0``, ``N < 1`` or an unknown ``padding``.
        KeyError: (when the env is built) an ``in_key`` that is not an observation of the parent.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import CatFrames, TransformedEnv
        >>> cat = CatFrames(3, dim=-1, in_keys=["observation"], out_keys=["stacked"])
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), cat)
        >>> env.observation_spec["stacked"].shape  # 3 frames of 4 features
        torch.Size([2, 12])
        >>> td = env.rollout(2)
        >>> frames = td["next", "stacked"][0, 1].unflatten(-1, (3, 4))  # row 0 after 2 steps
        >>> expected = torch.stack([td["observation"][0, 0], td["next", "observation"][0, 0],
        ...                         td["next", "observation"][0, 1]])  # reset, step 1, step 2
        >>> torch.equal(frames, expected)
        True
    """

    def __init__(
        self,
        N: int,
        dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        padding: str = "same",
        padding_value: float = 0,
        as_inverse: bool = False,
        reset_key: NestedKey | None = None,
        done_key: NestedKey | None = None,
    ) -> None:
        if isinstance(N, bool) or not isinstance(N, int) or N < 1:
            raise ValueError(f"CatFrames N must be an int >= 1, got {N!r}")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim >= 0:
            raise ValueError(f"CatFrames dim must be a negative int (batch-size independent), got {dim!r}")
        if padding not in _PADDINGS:
            raise ValueError(f"CatFrames padding must be one of {_PADDINGS}, got {padding!r}")
        if in_keys is None:
            in_keys = ["pixels"]
        if as_inverse:
            super().__init__(in_keys_inv=in_keys, out_keys_inv=out_keys)
        else:
            super().__init__(in_keys=in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.N = N
        self.dim = dim
        self.padding = padding
        self.padding_value = padding_value
        self.as_inverse = as_inverse
        self.reset_key = None if reset_key is None else _keys.unravel(reset_key)
        self.done_key = "done" if done_key is None else _keys.unravel(done_key)
        self.__dict__["_levels"] = None

    # ------------------------------------------------------------------ specs and buffers
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self.as_inverse:
            return output_spec
        self.__dict__["_levels"] = done_levels_of(output_spec)
        obs_spec = output_spec["full_observation_spec"]
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            if in_key not in obs_spec.keys(True, True):
                raise KeyError(
                    f"CatFrames: in_key {in_key!r} is not an observation key of the parent env "
                    f"(observation keys: {_keys.leaf_keys(obs_spec)})"
                )
            spec = obs_spec[in_key]
            out_spec = _cat_spec(spec, self.N, self.dim, self.padding, self.padding_value)
            obs_spec[out_key] = out_spec
            self._ensure_buffer(i, out_spec.shape, out_spec.dtype, out_spec.device)
        return output_spec

    def _buffer_name(self, i: int) -> str:
        return f"_cat_buffer_{i}"

    def _ensure_buffer(self, i: int, shape, dtype, device) -> tuple[torch.Tensor, bool]:
        """The buffer of key ``i`` (allocated when missing or mismatched; ``True`` if new)."""
        name = self._buffer_name(i)
        buf = self._buffers.get(name)
        if buf is not None and buf.shape == torch.Size(shape) and buf.dtype == dtype and buf.device == torch.device(device):
            return buf, False
        buf = torch.zeros(shape, dtype=dtype, device=device)
        self.register_buffer(name, buf, persistent=False)
        return buf, True

    def _buffer_for(self, i: int, frame: torch.Tensor) -> tuple[torch.Tensor, bool]:
        shape = list(frame.shape)
        shape[self.dim] *= self.N
        return self._ensure_buffer(i, shape, frame.dtype, frame.device)

    def _refill(self, frame: torch.Tensor) -> torch.Tensor:
        if self.padding == "same":
            return torch.cat([frame] * self.N, self.dim)
        shape = list(frame.shape)
        shape[self.dim] *= self.N - 1
        pad = torch.full(shape, self.padding_value, dtype=frame.dtype, device=frame.device)
        return torch.cat([pad, frame], self.dim)

    def _refill_rows_cpu_(self, buf: torch.Tensor, frame: torch.Tensor, mask: torch.Tensor) -> None:
        """Refills the ``mask`` rows of ``buf`` in place (one row scatter, no full refill)."""
        if not buf.is_contiguous():
            masked_fill_rows_([buf], [self._refill(frame)], [mask])
            return
        refill_rows_cpu_(buf, frame, mask, self.dim, self.N, self.padding, float(self.padding_value))

    def _mask_for(self, tensordict: TensorDictBase, in_key: NestedKey, batch_size) -> torch.Tensor | None:
        if self.reset_key is not None:
            return mask_at(tensordict, self.reset_key, torch.Size(batch_size))
        levels = self.__dict__["_levels"] or default_levels(batch_size)
        return reset_mask_for(tensordict, in_key, levels, torch.Size(batch_size))

    def reset(self, tensordict: TensorDictBase | None = None) -> None:
        """Zeroes the frame buffers (they are refilled by the next env reset).

        Args:
            tensordict: ignored (TorchRL's signature).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> cat = CatFrames(2, dim=-1, in_keys=["observation"])
            >>> env = TransformedEnv(CartPoleEnv(seed=0), cat)
            >>> _ = env.reset()
            >>> cat.reset()
            >>> [float(buf.abs().sum()) for buf in cat.buffers()]
            [0.0]
        """
        for name, buf in self._buffers.items():
            if name.startswith("_cat_buffer_"):
                buf.zero_()

    # ------------------------------------------------------------------ env hooks
    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.as_inverse:
            return tensordict_reset
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            frame = tget(tensordict_reset, in_key)
            if frame is None:
                continue
            buf, _ = self._buffer_for(i, frame)
            mask = self._mask_for(tensordict, in_key, tensordict_reset.batch_size)
            if mask is None:
                out = self._refill(frame)
                buf.copy_(out)
            elif select("cat_frames_update", buf.device, buf.numel()) == "cpu":
                self._refill_rows_cpu_(buf, frame, mask)
                out = buf.clone()
            else:  # device (one fused launch) or compiled (fused by Inductor)
                out = self._refill(frame)
                masked_fill_rows_([buf], [out], [mask])
                # the rows not reset take their previous stack from the input (the reset merge)
            tset(tensordict_reset, out_key, out)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.as_inverse:
            return next_tensordict
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            frame = tget(next_tensordict, in_key)
            if frame is None:
                continue
            buf, new = self._buffer_for(i, frame)
            if new:  # stepped before any reset: start from the padding
                buf.copy_(self._refill(frame))
            tset(next_tensordict, 
                out_key, cat_frames_update(buf, frame, None, self.dim, self.padding, float(self.padding_value))
            )
        return next_tensordict

    # ------------------------------------------------------------------ offline
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Stacks frames of stored trajectories ``[*B, T]`` (time last), root and ``"next"``.

        The windows restart after every ``("next", done_key)``, as they would in the env.

        Args:
            tensordict: stored data with a time dim last (written in place).

        Returns:
            ``tensordict`` with the stacked entries.

        Raises:
            ValueError: data without a time dim (``batch_dims == 0``).

        Examples:
            >>> from tensordict import TensorDict
            >>> obs = torch.arange(4.0).reshape(1, 4, 1)  # one trajectory of 4 steps
            >>> done = torch.tensor([False, True, False, False]).reshape(1, 4, 1)
            >>> td = TensorDict({"observation": obs, "next": {"observation": obs + 1, "done": done}}, [1, 4])
            >>> CatFrames(2, dim=-1, in_keys=["observation"])(td)["observation"][0].tolist()
            [[0.0, 0.0], [0.0, 1.0], [2.0, 2.0], [2.0, 3.0]]
        """
        if self.as_inverse:
            return tensordict
        return self._unfold(tensordict, self.in_keys, self.out_keys)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Shifts the frames of ``next_tensordict`` into the buffers (a step without root)."""
        return self._step(next_tensordict, next_tensordict)

    def _has_inverse(self) -> bool:
        return self.as_inverse

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.as_inverse:
            return tensordict
        return self._unfold(tensordict, self.in_keys_inv, self.out_keys_inv)

    def _unfold(self, tensordict: TensorDictBase, in_keys, out_keys) -> TensorDictBase:
        if tensordict.batch_dims < 1:
            raise ValueError("CatFrames offline needs data with a time dimension (batch_dims >= 1)")
        tdim = tensordict.batch_dims - 1
        T = tensordict.batch_size[tdim]
        device = tensordict.device
        done = tensordict.get(_keys.unravel(("next", self.done_key)), None)
        ar = torch.arange(T, device=device)
        if done is not None:
            d = done.reshape(*tensordict.batch_size, -1).any(-1)
            starts = torch.zeros_like(d)
            starts.narrow(tdim, 1, T - 1).copy_(d.narrow(tdim, 0, T - 1))
            starts.select(tdim, 0).fill_(True)
            idx = ar.reshape(T, *([1] * (d.ndim - tdim - 1))).expand_as(d)
            ep_start = torch.where(starts, idx, torch.zeros_like(idx)).cummax(tdim).values
        else:
            shape = list(tensordict.batch_size)
            ep_start = torch.zeros(shape, dtype=torch.long, device=device)
        for in_key, out_key in zip(in_keys, out_keys):
            root = tget(tensordict, in_key)
            nxt = tensordict.get(_keys.unravel(("next", in_key)), None)
            if root is not None:
                tset(tensordict, out_key, self._windows(root, None, ep_start, tdim))
            if nxt is not None:
                tset(tensordict, _keys.unravel(("next", out_key)), self._windows(nxt, root, ep_start, tdim))
        return tensordict

    def _windows(self, x: torch.Tensor, root: torch.Tensor | None, ep_start: torch.Tensor, tdim: int) -> torch.Tensor:
        """Windows of ``N`` frames ending at every t; ``root`` given: ``x`` is the "next" series
        and the frame before an episode's first next-frame is ``root`` at the episode start."""
        T = x.shape[tdim]
        extra = x.ndim - ep_start.ndim

        def expand(idx: torch.Tensor) -> torch.Tensor:
            return idx.reshape(*idx.shape, *([1] * extra)).expand_as(x)

        def gather(src: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            return torch.gather(src, tdim, expand(idx))

        t = torch.arange(T, device=x.device).reshape(T, *([1] * (ep_start.ndim - tdim - 1)))
        first = gather(root if root is not None else x, ep_start)
        frames = []
        for k in range(self.N - 1, -1, -1):
            j = t - k
            valid = expand(j >= ep_start)
            value = gather(x, torch.maximum(j.expand_as(ep_start), ep_start))
            if self.padding == "same":
                pad = first
            else:
                pad = torch.full_like(x, self.padding_value)
                if root is not None:
                    pad = torch.where(expand(j == ep_start - 1), first, pad)
            frames.append(torch.where(valid, value, pad))
        return torch.cat(frames, self.dim)

    def __repr__(self) -> str:
        keys = self.in_keys_inv if self.as_inverse else self.in_keys
        return (
            f"CatFrames(N={self.N}, dim={self.dim}, keys={keys}, padding={self.padding!r}"
            + (f", padding_value={self.padding_value}" if self.padding == "constant" else "")
            + ")"
        )
