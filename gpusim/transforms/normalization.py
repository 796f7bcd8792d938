"""Affine and clipping transforms: ``ObservationNorm``, ``RewardScaling``, ``RewardClipping``,
``BinarizeReward`` and ``ClipTransform``.

All of them are elementwise tensor ops on the env device (no host reads). Their specs follow
the op: ``Bounded`` bounds go through the same affine map or clamp; clipping an ``Unbounded``
entry makes it ``Bounded``; ``BinarizeReward`` gives a ``Binary`` reward.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.normalization import ObservationNorm, ClipTransform
    >>> td = TensorDict({"observation": torch.tensor([[1.0, 3.0]])}, [1])
    >>> ObservationNorm(loc=1.0, scale=2.0, standard_normal=True)(td)["observation"]
    tensor([[0., 1.]])
    >>> ClipTransform(in_keys=["observation"], low=-0.5, high=0.5)(td)["observation"]
    tensor([[0.0000, 0.5000]])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpusim.envs._keys import NestedKey
from gpusim.specs import Binary, Bounded, Composite, TensorSpec, Unbounded
from gpusim.transforms._keyed import KeyedTransform
from gpusim.transforms._spec_utils import (
    check_finite_number,
    fmt_key,
    map_leaf,
)
from gpusim.transforms.transform import Transform

__all__ = ["ObservationNorm", "RewardScaling", "RewardClipping", "BinarizeReward", "ClipTransform"]


def _as_param(value, name: str, owner: str) -> torch.Tensor | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)):
        raise TypeError(f"{owner}: {name} must be a number or a tensor, got {value!r}")
    check_finite_number(value, name, owner)
    t = torch.as_tensor(value)
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t.clone()


def _as_bounded(spec: TensorSpec) -> TensorSpec:
    """An ``Unbounded`` spec as ``Bounded`` by its dtype range (so that a clamp can narrow it)."""
    if isinstance(spec, Unbounded) and spec.dtype != torch.bool:
        if spec.dtype.is_floating_point:
            lo, hi = -float("inf"), float("inf")
        else:
            info = torch.iinfo(spec.dtype)
            lo, hi = info.min, info.max
        return Bounded(lo, hi, shape=spec.shape, dtype=spec.dtype, device=spec.device)
    return spec


def _chain_before(t: Transform) -> list:
    """The transforms that come before ``t`` in its env (empty without one)."""
    found = t._preceding()
    return [] if found is None else found[1]


class _Affine(KeyedTransform):
    """``x * scale + loc`` (or ``(x - loc) / scale`` with ``standard_normal``), inverse included."""

    _spec_bounds = "sorted"  # scale may be negative

    def _check_scale(self, scale: torch.Tensor | None, standard_normal: bool) -> None:
        if scale is not None and standard_normal and bool((scale == 0).any()):
            raise ValueError(
                f"{self._name}: scale must be non-zero with standard_normal=True (it divides), got "
                f"scale={scale.tolist()}"
            )

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        loc, scale = self.loc, self.scale
        if loc is None or scale is None:
            raise RuntimeError(
                f"{self._name}: Loc/Scale have not been initialized. Either pass in values in the constructor "
                "or call the init_stats method"
            )
        if self.standard_normal:
            return (obs - loc) / scale
        return obs * scale + loc

    def _inv_apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        loc, scale = self.loc, self.scale
        if loc is None or scale is None:
            raise RuntimeError(
                f"{self._name}: Loc/Scale have not been initialized. Either pass in values in the constructor "
                "or call the init_stats method"
            )
        if self.standard_normal:
            return obs * scale + loc
        return (obs - loc) / scale

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        if self.loc is None or self.scale is None:  # not initialized yet: shape and dtype only
            dtype = spec.dtype if spec.dtype.is_floating_point else torch.get_default_dtype()
            return Unbounded(shape=spec.shape, dtype=dtype, device=spec.device)
        return super()._transform_leaf_spec(spec, key)

    _inv_transform_leaf_spec = _transform_leaf_spec


class ObservationNorm(_Affine):
    """Observation affine transformation layer: ``obs * scale + loc``.

    With ``standard_normal=True`` the map is ``(obs - loc) / scale`` (standardization). The
    statistics can be given or computed from the parent env with :meth:`init_stats`.

    Args:
        loc: location (number or tensor broadcastable to the observation); ``None`` with
            ``scale=None`` leaves the transform uninitialized (call :meth:`init_stats`); ``None``
            with a ``scale`` means 0.
        scale: scale (number or tensor); ``None`` with a ``loc`` means 1.
        in_keys: entries to normalize (default: those of ``"observation"`` and ``"pixels"``
            that the env has).
        out_keys: output entries (default ``in_keys``).
        in_keys_inv: inner names of entries mapped by the inverse before the base env steps.
        out_keys_inv: outer names of those entries (default ``in_keys_inv``).
        standard_normal: use ``(obs - loc) / scale``.
        eps: lower bound of the scale computed by :meth:`init_stats` (default: the machine
            epsilon of the scale's dtype).

    Raises:
        ValueError: NaN ``loc``/``scale``, a zero ``scale`` with ``standard_normal``, or key
            lists of different lengths.

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[16]), ObservationNorm(in_keys=["observation"]))
        >>> env.transform.init_stats(num_iter=50, reduce_dim=(0, 1), cat_dim=1)
        >>> env.transform.loc.shape
        torch.Size([3])
    """

    def __init__(
        self,
        loc: float | torch.Tensor | None = None,
        scale: float | torch.Tensor | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        standard_normal: bool = False,
        eps: float | None = None,
    ) -> None:
        self._default_keys = in_keys is None
        if in_keys is None:
            if out_keys is not None:
                raise ValueError("ObservationNorm: out_keys cannot be given without in_keys")
            in_keys = ["observation", "pixels"]
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        if self._default_keys:  # "observation" and/or "pixels": whichever the data has
            self.set_missing_tolerance(True)
        loc_t = _as_param(loc, "loc", "ObservationNorm")
        scale_t = _as_param(scale, "scale", "ObservationNorm")
        if loc_t is None and scale_t is not None:
            loc_t = torch.zeros((), dtype=scale_t.dtype)
        if scale_t is None and loc_t is not None:
            scale_t = torch.ones((), dtype=loc_t.dtype)
        if eps is not None and not eps > 0:
            raise ValueError(f"ObservationNorm: eps must be > 0, got {eps!r}")
        self.standard_normal = bool(standard_normal)
        self.eps = eps
        self._check_scale(scale_t, self.standard_normal)
        self.register_buffer("loc", loc_t)
        self.register_buffer("scale", scale_t)

    @property
    def initialized(self) -> bool:
        """Whether ``loc`` and ``scale`` are set.

        Examples:
            >>> ObservationNorm(in_keys=["observation"]).initialized
            False
            >>> ObservationNorm(loc=0.0, scale=1.0, in_keys=["observation"]).initialized
            True
        """
        return self.loc is not None and self.scale is not None

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self._default_keys:
            obs = output_spec["full_observation_spec"]
            present = [k for k in ("observation", "pixels") if k in obs.keys(True, True)]
            if not present:
                raise KeyError(
                    "ObservationNorm: the env has neither 'observation' nor 'pixels'; pass in_keys "
                    f"(observation keys: {[fmt_key(k) for k in obs.keys(True, True)]})"
                )
            self.in_keys = present
        return super().transform_output_spec(output_spec)

    def init_stats(
        self,
        num_iter: int,
        reduce_dim: int | tuple[int, ...] = 0,
        cat_dim: int | None = None,
        key: NestedKey | None = None,
        keep_dims: tuple[int, ...] | None = None,
    ) -> None:
        """Sets ``loc`` and ``scale`` from random rollouts of the parent env.

        The parent env (the env up to this transform) runs ``num_iter`` random steps (resetting
        the rows that finish). The mean and standard deviation of ``key`` over ``reduce_dim``
        of the collected data (shape ``[*batch_size, num_iter, *feature]``) become ``loc`` and
        ``scale`` (the scale is clamped to ``eps``); with ``standard_normal=False`` they are
        stored as the equivalent ``scale = 1 / std``, ``loc = -mean / std``, so that either way
        the normalized data has zero mean and unit variance.

        Args:
            num_iter: number of steps collected.
            reduce_dim: dim(s) of the collected data to reduce (for a batched env, include the
                batch dims and the time dim ``len(batch_size)``).
            cat_dim: the collection dim; must be one of ``reduce_dim`` (default: the first).
            key: the entry to compute the statistics of (default: the first ``in_key``).
            keep_dims: reduced dims kept as size-1 dims in ``loc``/``scale`` (e.g. ``(-1, -2)``
                to get ``[C, 1, 1]`` statistics of images).

        Raises:
            RuntimeError: no parent env, the statistics are already set, several in_keys and no
                ``key``, or an ObservationNorm before this one is not initialized.
            ValueError: ``num_iter < 1``, ``cat_dim`` not among ``reduce_dim``, or no ``cat_dim``
                with several ``reduce_dim``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> norm = ObservationNorm(in_keys=["observation"], standard_normal=True)
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[32], seed=0), norm)
            >>> norm.init_stats(num_iter=20, reduce_dim=(0, 1), cat_dim=1)  # batch and time dims
            >>> norm.loc.shape, norm.scale.shape  # one per observation feature
            (torch.Size([4]), torch.Size([4]))
            >>> obs = env.rollout(20, break_when_any_done=False)["observation"]
            >>> bool(obs.mean((0, 1)).abs().max() < 0.5), bool((obs.std((0, 1)) - 1).abs().max() < 0.5)
            (True, True)
        """
        if not isinstance(num_iter, int) or num_iter < 1:
            raise ValueError(f"ObservationNorm.init_stats: num_iter must be a positive int, got {num_iter!r}")
        dims = (reduce_dim,) if isinstance(reduce_dim, int) else tuple(reduce_dim)
        if cat_dim is None:
            if not isinstance(reduce_dim, int):
                raise ValueError(
                    f"ObservationNorm.init_stats: cat_dim must be specified if reduce_dim is not an integer "
                    f"(reduce_dim={reduce_dim})"
                )
            cat_dim = reduce_dim
        if cat_dim not in dims:
            raise ValueError(
                f"ObservationNorm.init_stats: cat_dim must be part of or equal to reduce_dim, got cat_dim={cat_dim}, "
                f"reduce_dim={reduce_dim}"
            )
        if self.initialized:
            raise RuntimeError(
                f"ObservationNorm.init_stats: Loc/Scale are already initialized: ({self.loc}, {self.scale})"
            )
        if len(self.in_keys) > 1 and key is None:
            raise RuntimeError(
                "ObservationNorm.init_stats: Transform has multiple in_keys but no specific key was passed as an "
                f"argument (in_keys={self.in_keys}); pass key="
            )
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                "ObservationNorm.init_stats: Cannot initialize the transform if parent env is not defined "
                "(attach it to an env first)"
            )
        for t in _chain_before(self):
            if isinstance(t, ObservationNorm) and not t.initialized:
                raise RuntimeError(
                    "ObservationNorms need to be initialized in the right order."
                    "Trying to initialize an ObservationNorm while a parent ObservationNorm transform is still "
                    "uninitialized"
                )
        if key is None:
            key = self.in_keys[0]
        data = parent.rollout(num_iter, break_when_any_done=False).get(key)
        ndim = data.ndim
        norm = sorted({d % ndim for d in dims})
        count = 1
        for d in norm:
            count *= data.shape[d]
        mean = data.mean(dim=norm, keepdim=True)
        std = data.std(dim=norm, keepdim=True) if count > 1 else torch.zeros_like(mean)
        keep = {d % ndim for d in (keep_dims or ())}
        squeeze = tuple(d for d in norm if d not in keep)
        if squeeze:
            mean, std = mean.squeeze(squeeze), std.squeeze(squeeze)
        std = std.clamp_min(self.eps if self.eps is not None else float(torch.finfo(std.dtype).eps))
        if self.standard_normal:
            loc, scale = mean, std
        else:
            scale = 1 / std
            loc = -mean * scale
        self.loc = loc
        self.scale = scale
        container = self.container
        if container is not None:
            container._chain_changed()

    def __repr__(self) -> str:
        stats = (
            "uninitialized" if not self.initialized else f"loc={tuple(self.loc.shape)}, scale={tuple(self.scale.shape)}"
        )
        return f"ObservationNorm(in_keys={self.in_keys}, {stats}, standard_normal={self.standard_normal})"


class RewardScaling(_Affine):
    """Affine transform of the reward: ``reward * scale + loc``.

    Args:
        loc: location (number or tensor).
        scale: scale (number or tensor); ``0`` is allowed unless ``standard_normal``.
        in_keys: reward entries (default ``["reward"]``).
        out_keys: output entries (default ``in_keys``).
        standard_normal: use ``(reward - loc) / scale``.
        eps: kept for API compatibility (the scale is used as given).

    Raises:
        ValueError: NaN ``loc``/``scale``, or a zero ``scale`` with ``standard_normal``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RewardScaling(loc=1.0, scale=0.5)
        >>> t(TensorDict({"reward": torch.tensor([[2.0]])}, [1]))["reward"]
        tensor([[2.]])
    """

    def __init__(
        self,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        standard_normal: bool = False,
        eps: float | None = None,
    ) -> None:
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        loc_t = _as_param(loc, "loc", "RewardScaling")
        scale_t = _as_param(scale, "scale", "RewardScaling")
        if loc_t is None or scale_t is None:
            raise TypeError(f"RewardScaling needs loc and scale, got loc={loc!r}, scale={scale!r}")
        self.standard_normal = bool(standard_normal)
        self.eps = eps
        self._check_scale(scale_t, self.standard_normal)
        self.register_buffer("loc", loc_t)
        self.register_buffer("scale", scale_t)

    def __repr__(self) -> str:
        return (
            f"RewardScaling(in_keys={self.in_keys}, loc={self.loc.tolist()}, scale={self.scale.tolist()}, "
            f"standard_normal={self.standard_normal})"
        )


class _Clamp(KeyedTransform):
    """Clamps values to ``[low, high]``; specs are narrowed the same way."""

    def _clamp(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(self._low, self._high)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._clamp(obs)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return self._clamp(state)

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        return map_leaf(_as_bounded(spec), self._clamp, key=key, owner=self._name)

    def _inv_transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        # The outer spec is the env's own spec: any value it admits is accepted and clipped
        # before the env sees it (a state the env emits at reset is not clipped, so a narrowed
        # outer spec would not hold the data). A clip range outside the env's range is a mistake.
        if isinstance(spec, Bounded):
            lo = -float("inf") if self._low is None else self._low
            hi = float("inf") if self._high is None else self._high
            if bool(((spec.high < lo) | (spec.low > hi)).any()):
                raise ValueError(
                    f"{self._name}: the clip range [{lo}, {hi}] does not meet the range of the env's "
                    f"{fmt_key(key)} spec (low={spec.low.min().item()}, high={spec.high.max().item()})"
                )
        return spec.clone()


def _clip_scalar(value, name: str, low, high) -> float | None:
    """A ``ClipTransform`` bound as a Python number (a one-element tensor or array is read once)."""
    if value is None or isinstance(value, bool) or isinstance(value, (int, float)):
        return value
    numel = getattr(value, "numel", None)
    size = numel() if callable(numel) else getattr(value, "size", None)
    if size != 1:
        raise TypeError(
            f"ClipTransform: low and high must be scalars or None, got {name}={value!r} (low={low!r}, high={high!r})"
        )
    return float(value.reshape(-1)[0])


def _check_range(low, high, owner: str, names=("low", "high")) -> None:
    for value, name in ((low, names[0]), (high, names[1])):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
            check_finite_number(value, name, owner)
    if low is not None and high is not None and low > high:
        raise ValueError(f"{owner}: {names[0]} must be <= {names[1]}, got {names[0]}={low!r} > {names[1]}={high!r}")


class RewardClipping(_Clamp):
    """Clips the reward between ``clamp_min`` and ``clamp_max``.

    Args:
        clamp_min: minimum reward (``None``: no lower bound).
        clamp_max: maximum reward (``None``: no upper bound).
        in_keys: reward entries (default ``["reward"]``).
        out_keys: output entries (default ``in_keys``).

    Raises:
        ValueError: both bounds ``None``, or ``clamp_min > clamp_max`` (naming the values).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RewardClipping(-1.0, 1.0)
        >>> t(TensorDict({"reward": torch.tensor([[3.0], [-0.5]])}, [2]))["reward"]
        tensor([[ 1.0000],
                [-0.5000]])
    """

    def __init__(
        self,
        clamp_min: float | None = None,
        clamp_max: float | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        if clamp_min is None and clamp_max is None:
            raise ValueError("RewardClipping needs clamp_min or clamp_max (both are None)")
        _check_range(clamp_min, clamp_max, "RewardClipping", ("clamp_min", "clamp_max"))
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max
        self._low, self._high = clamp_min, clamp_max

    def __repr__(self) -> str:
        return f"RewardClipping(in_keys={self.in_keys}, clamp_min={self.clamp_min}, clamp_max={self.clamp_max})"


class ClipTransform(_Clamp):
    """Clips input (state, action) or output (observation, reward) values to ``[low, high]``.

    Forward keys are clipped after each step and reset (their spec becomes ``Bounded`` by
    ``[low, high]``). Inverse keys are clipped before the base env steps; their outer spec is the
    env's spec unchanged, as in TorchRL: any value it admits is accepted and clipped.

    Args:
        in_keys: output entries to clip.
        out_keys: where to write them (default ``in_keys``).
        in_keys_inv: inner names of input entries (actions, states) to clip.
        out_keys_inv: outer names of those entries (default ``in_keys_inv``).

    Keyword Args:
        low: lower bound (``None``: none): a number or a one-element tensor.
        high: upper bound (``None``: none): a number or a one-element tensor.

    Raises:
        TypeError: both bounds ``None``, or a bound that is not a scalar.
        ValueError: ``low >= high`` or a NaN bound (naming the values), or (when attached) an
            inverse clip range that does not meet the env's range.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ClipTransform(in_keys=["observation"], low=-1, high=0.1)
        >>> t(TensorDict({"observation": torch.tensor([-3.0, 0.0, 3.0])}, []))["observation"]
        tensor([-1.0000,  0.0000,  0.1000])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        low: float | torch.Tensor | None = None,
        high: float | torch.Tensor | None = None,
    ) -> None:
        if low is None and high is None:
            raise TypeError(
                "ClipTransform: Either one or both of `high` and `low` must be provided, got low=None, high=None"
            )
        low, high = _clip_scalar(low, "low", low, high), _clip_scalar(high, "high", low, high)
        _check_range(low, None, "ClipTransform")
        _check_range(None, high, "ClipTransform")
        if low is not None and high is not None and not low < high:
            raise ValueError(f"ClipTransform: `low` must be strictly lower than `high`, got low={low!r}, high={high!r}")
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self.low = low
        self.high = high
        self._low, self._high = low, high

    def __repr__(self) -> str:
        return (
            f"ClipTransform(in_keys={self.in_keys}, in_keys_inv={self.in_keys_inv}, low={self.low}, high={self.high})"
        )


class BinarizeReward(KeyedTransform):
    """Maps the reward to 0 (null reward) or 1 (non-null reward).

    Args:
        in_keys: reward entries (default ``["reward"]``).
        out_keys: output entries (default ``in_keys``).
        dtype: the dtype of the binarized reward (default ``torch.int8``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = BinarizeReward()
        >>> t(TensorDict({"reward": torch.tensor([[0.0], [-2.0], [0.5]])}, [3]))["reward"].squeeze(-1)
        tensor([0, 1, 1], dtype=torch.int8)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        dtype: torch.dtype = torch.int8,
    ) -> None:
        if not isinstance(dtype, torch.dtype) or dtype.is_floating_point or dtype.is_complex:
            raise TypeError(f"BinarizeReward: dtype must be an integer or bool torch.dtype, got {dtype!r}")
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        self.dtype = dtype

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        return (reward != 0).to(self.dtype)

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        if spec.ndim == 0:
            raise ValueError(f"BinarizeReward: the reward {fmt_key(key)} needs at least one dim, got a scalar spec")
        return Binary(spec.shape[-1], shape=spec.shape, dtype=self.dtype, device=spec.device)
