"""``CatFrames``: concatenates the last ``N`` observations along a (negative) dim.

In an environment, each in_key has a ring buffer of the last ``N`` frames, preallocated on the
env device when the specs are built and updated in place: a step shifts the new frame in
(:func:`gpusim.kernels.cat_frames_update`, one fused op), a reset refills the reset rows only
(``padding="same"`` repeats the reset frame ``N`` times; ``"constant"`` pads with
``padding_value`` and puts the frame last), reading the ``"_reset"`` masks of the input. The
observation written is a fresh copy of the buffer, so stored rollouts never alias it.

Offline (``forward``/``unfolding`` on stored data ``[*B, T]``; the time dim is the one named
``"time"``, else the last), the same windows are built for every step at once
(:func:`gpusim.transforms.functional.frame_windows`), restarted after each ``("next", done)``.
Every in_key is one series: list ``("next", key)`` next to ``key`` to process both (the
``"next"`` windows then start from the root frame, as in the env). ``future=True`` builds
forward windows ``[t, ..., t + N - 1]`` instead (offline only) and ``mask_key`` writes which
slots were padded.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import CatFrames, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), CatFrames(2, dim=-1, in_keys=["observation"]))
    >>> frames = env.reset()["observation"].unflatten(-1, (2, 4))  # [B, N, 4]
    >>> bool((frames[:, 0] == frames[:, 1]).all())  # padding="same": the reset frame, twice
    True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.kernels import cat_frames_update, masked_fill_rows_, select
from gpusim.kernels.cat_frames import refill_rows_cpu_
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms._levels import default_levels, done_levels_of, mask_at, reset_mask_for, tget, tset
from gpusim.transforms.functional import frame_windows
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
        future: offline only: windows of the ``N`` upcoming frames ``[t, ..., t + N - 1]``
            (padded at the trajectory end).
        mask_key: offline only: where to write the ``[*B, T, N]`` mask of padded slots.

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
        future: bool = False,
        mask_key: NestedKey | None = None,
    ) -> None:
        if isinstance(N, bool) or not isinstance(N, int) or N < 1:
            raise ValueError(f"CatFrames N must be an int >= 1, got {N!r}")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim >= 0:
            raise ValueError(
                f"CatFrames: dim must be < 0 to accommodate for tensordict of different batch-sizes (negative dims "
                f"are batch-size invariant), got {dim!r}"
            )
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
        self.future = bool(future)
        self.mask_key = None if mask_key is None else _keys.unravel(mask_key)
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
                continue  # TorchRL's behaviour: a key the env lacks leaves the specs alone
            spec = obs_spec[in_key]
            out_spec = _cat_spec(spec, self.N, self.dim, self.padding, self.padding_value)
            obs_spec[out_key] = out_spec
            self._ensure_buffer(i, out_spec.shape, out_spec.dtype, out_spec.device)
        return output_spec

    def transform_observation_spec(self, observation_spec):
        """The stacked spec of every in_key of ``observation_spec`` (a Composite, or a leaf taken
        as the first in_key's).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> t = CatFrames(N=3, dim=-1, in_keys=["observation"])
            >>> spec = t.transform_observation_spec(CartPoleEnv().observation_spec.clone())
            >>> spec["observation"].shape  # 3 frames of 4 features
            torch.Size([12])
        """
        from gpusim.specs import Composite

        if not isinstance(observation_spec, Composite):
            return _cat_spec(observation_spec, self.N, self.dim, self.padding, self.padding_value)
        keys = set(observation_spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in keys:
                spec = observation_spec[in_key]
                observation_spec[out_key] = _cat_spec(spec, self.N, self.dim, self.padding, self.padding_value)
        return observation_spec

    def _buffer_name(self, i: int) -> str:
        """``_cat_buffers_<in_key>`` (TorchRL's attribute names)."""
        return f"_cat_buffers_{self.in_keys[i]}"

    def _ensure_buffer(self, i: int, shape, dtype, device) -> tuple[torch.Tensor, bool]:
        """The buffer of key ``i`` (allocated when missing or mismatched; ``True`` if new)."""
        name = self._buffer_name(i)
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
            if name.startswith("_cat_buffers_"):
                buf.zero_()

    # ------------------------------------------------------------------ env hooks
    def _check_online(self) -> None:
        if self.as_inverse:
            raise RuntimeError(
                "CatFrames as inverse is not supported as a transform for environments, only for replay buffers."
            )
        if self.future or self.mask_key is not None:
            raise RuntimeError(
                "CatFrames(future=True) and CatFrames(mask_key=...) are only available offline (forward/unfolding "
                "on stored trajectories): an env step has no future frames and builds no padding mask"
            )

    def _reset_on_native_autoreset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """A native auto-reset: the restarted rows' stacks restart from the new episode's first
        frame (the newest frame of the stack the step built, where the stack replaced its
        input entry)."""
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            value = tget(tensordict_reset, in_key)
            buf = self._buffers.get(self._buffer_name(i))
            if in_key != out_key or value is None or buf is None or buf.shape[self.dim] != value.shape[self.dim]:
                continue
            frame = value.shape[self.dim] // self.N
            tset(tensordict_reset, in_key, value.narrow(self.dim, value.shape[self.dim] - frame, frame))
        return self._reset(tensordict, tensordict_reset)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        self._check_online()
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
        self._check_online()
        for i, (in_key, out_key) in enumerate(zip(self.in_keys, self.out_keys)):
            frame = tget(next_tensordict, in_key)
            if frame is None:
                if not self.missing_tolerance:
                    raise self._missing(in_key, next_tensordict)
                continue
            buf, new = self._buffer_for(i, frame)
            if new:  # stepped before any reset: older slots hold padding_value (TorchRL's behaviour)
                buf.fill_(self.padding_value)
            tset(
                next_tensordict,
                out_key,
                cat_frames_update(buf, frame, None, self.dim, self.padding, float(self.padding_value)),
            )
        return next_tensordict

    # ------------------------------------------------------------------ offline
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Stacks frames of stored trajectories ``[*B, T]`` (time last), root and ``"next"`` (see :meth:`unfolding`).

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
        return self.unfolding(tensordict)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Shifts the frames of ``next_tensordict`` into the buffers (a step without root)."""
        return self._step(next_tensordict, next_tensordict)

    def _has_inverse(self) -> bool:
        return self.as_inverse

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.as_inverse:
            return tensordict
        return self._unfold(tensordict, self.in_keys_inv, self.out_keys_inv)

    def unfolding(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The windows of every in_key of stored trajectories, written to the out_keys.

        The time dim is the batch dim named ``"time"`` (else the last one, with a warning);
        trajectories end at every ``("next", done_key)`` (required, except with ``future=True``
        where a missing entry means one trajectory per row).

        Raises:
            ValueError: data without batch dims.
            KeyError: no ``("next", done_key)`` entry (history windows).
            NotImplementedError: ``future=True`` with a ``("next", key)`` in_key next to ``key``.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"obs": torch.arange(4.0).view(1, 4, 1),
            ...                  ("next", "done"): torch.tensor([[[False], [True], [False], [False]]])}, [1, 4])
            >>> CatFrames(2, -1, in_keys=["obs"], out_keys=["s"]).unfolding(td.refine_names(None, "time"))["s"][0]
            tensor([[0., 0.],
                    [0., 1.],
                    [2., 2.],
                    [2., 3.]])
        """
        return self._unfold(tensordict, self.in_keys, self.out_keys)

    def _time_dim(self, tensordict: TensorDictBase) -> int:
        if tensordict.batch_dims < 1:
            raise ValueError(
                "CatFrames cannot process unbatched tensordict instances: stored trajectories need a time "
                "dim (name it 'time', e.g. td.refine_names(None, 'time'))"
            )
        names = tensordict.names
        if "time" in names:
            return names.index("time")
        warnings.warn(
            "CatFrames: no batch dim of the data is named 'time'; the last batch dim is taken as the time "
            "dim (name it, e.g. td.refine_names(..., 'time'), to silence this warning)",
            UserWarning,
            stacklevel=3,
        )
        return tensordict.batch_dims - 1

    def _unfold(self, tensordict: TensorDictBase, in_keys, out_keys) -> TensorDictBase:
        tdim = self._time_dim(tensordict)
        batch = tensordict.batch_size
        T = batch[tdim]
        done = tensordict.get(_keys.unravel(("next", self.done_key)), None)
        if done is None:
            if not self.future:
                raise KeyError(
                    f"CatFrames.unfolding needs the {('next', self.done_key)} entry to delimit trajectories "
                    "(or future=True, which takes every row as one trajectory)"
                )
            first = tget(tensordict, in_keys[0])
            d = torch.zeros(batch, dtype=torch.bool, device=None if first is None else first.device)
        else:
            d = done.reshape(*batch, -1).any(-1)
        t = torch.arange(T, device=d.device).reshape(T, *([1] * (len(batch) - tdim - 1)))
        if self.future:  # the last step of each step's trajectory
            ends = d.clone()
            ends.select(tdim, T - 1).fill_(True)
            idx = torch.where(ends, t, torch.full_like(t, T - 1))
            bound = idx.flip(tdim).cummin(tdim).values.flip(tdim)
            n_pad = (t + self.N - 1 - bound).clamp_min(0)
        else:  # the first step of each step's trajectory
            starts = torch.zeros_like(d)
            starts.narrow(tdim, 1, T - 1).copy_(d.narrow(tdim, 0, T - 1))
            starts.select(tdim, 0).fill_(True)
            bound = torch.where(starts, t, torch.zeros_like(t)).cummax(tdim).values
            n_pad = (self.N - 1 - (t - bound)).clamp_min(0)
        # windows are computed with the time dim last among the batch dims
        n_pad_last = n_pad.movedim(tdim, -1)
        if self.mask_key is not None:
            k = torch.arange(self.N, device=n_pad.device)
            pad = n_pad_last.unsqueeze(-1)
            mask = k > (self.N - 1 - pad) if self.future else k < pad
            tset(tensordict, self.mask_key, mask.movedim(-2, tdim))
        pairs = dict(zip(in_keys, out_keys))
        for in_key, out_key in zip(in_keys, out_keys):
            x = tget(tensordict, in_key)
            if x is None:
                continue
            tin = _keys.as_tuple(in_key)
            root = None
            if tin[0] == "next" and _keys.unravel(tin[1:]) in pairs:
                if self.future:
                    raise NotImplementedError(
                        "CatFrames(future=True) does not support a ('next', key) in_key next to key: the one-step "
                        "offset between them only applies to history windows"
                    )
                root = tget(tensordict, _keys.unravel(tin[1:]))
            x_last = x.movedim(tdim, len(batch) - 1)
            root_last = None if root is None else root.movedim(tdim, len(batch) - 1)
            out = frame_windows(
                x_last,
                self.N,
                self.dim,
                len(batch) - 1,
                n_pad_last,
                self.padding,
                self.padding_value,
                future=self.future,
                root=root_last,
            )
            tset(tensordict, out_key, out.movedim(len(batch) - 1, tdim))
        return tensordict

    def __repr__(self) -> str:
        keys = self.in_keys_inv if self.as_inverse else self.in_keys
        return (
            f"CatFrames(N={self.N}, dim={self.dim}, keys={keys}, padding={self.padding!r}"
            + (f", padding_value={self.padding_value}" if self.padding == "constant" else "")
            + ")"
        )
