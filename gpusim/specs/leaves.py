"""Leaf specs: Unbounded, Bounded, Categorical, OneHot, MultiCategorical, MultiOneHot, Binary, NonTensor.

Every ``rand`` is one to a few torch ops over the whole batch (no Python loop over elements), so
``spec.rand()`` can serve as a random policy on the step path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from gpusim.kernels.categorical import categorical_rand
from gpusim.specs.base import DEVICE_TYPING, TensorSpec, _to_tensor, as_size, make_device
from gpusim.specs.spaces import BinaryBox, CategoricalBox, ContinuousBox, MultiCategoricalBox

__all__ = [
    "Unbounded",
    "Bounded",
    "Categorical",
    "OneHot",
    "MultiCategorical",
    "MultiOneHot",
    "Binary",
    "NonTensor",
    "UnboundedDiscrete",
]

_UNBOUNDED_INT_RANGE = 100


def _reject_kwargs(cls: str, kwargs: dict) -> None:
    if kwargs:
        raise TypeError(f"{cls}() got unexpected keyword argument(s): {sorted(kwargs)}")


def _resolve_dtype(dtype: Any) -> torch.dtype:
    if dtype is None:
        return torch.get_default_dtype()
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return torch.from_numpy(np.zeros((), dtype=np.dtype(dtype))).dtype
    except TypeError as err:
        raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}") from err


def _is_int(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _check_discrete_dtype(cls: str, dtype: torch.dtype, n_max: int) -> None:
    """Discrete specs hold integers (or bools); float dtypes are rejected."""
    if dtype.is_floating_point or dtype.is_complex:
        raise ValueError(f"{cls} needs an integer or bool dtype, got dtype={dtype}")
    if dtype == torch.bool:
        if n_max > 2:
            raise ValueError(f"{cls} with dtype=torch.bool can hold at most 2 values, got n={n_max}")
    elif n_max - 1 > torch.iinfo(dtype).max:
        raise ValueError(f"{cls}: n={n_max} does not fit in dtype={dtype}")


def _check_n(cls: str, name: str, n: Any) -> int:
    if isinstance(n, torch.Tensor):
        n = n.item()
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ValueError(f"{cls}: {name} must be a positive int, got {name}={n!r}")
    return int(n)


def _check_nvec(cls: str, nvec: Any) -> tuple[int, ...]:
    if isinstance(nvec, torch.Tensor):
        if nvec.ndim > 1:
            raise ValueError(f"{cls}: nvec must be 1-D, got shape {tuple(nvec.shape)}")
        nvec = nvec.reshape(-1).tolist()
    if isinstance(nvec, (int, np.integer)):
        nvec = [nvec]
    nvec = list(nvec)
    if not nvec:
        raise ValueError(f"{cls}: nvec must not be empty")
    return tuple(_check_n(cls, "nvec entry", n) for n in nvec)


def _prep_mask(cls: str, mask: Any, shape: torch.Size, device: torch.device) -> torch.Tensor | None:
    """Validates a boolean mask and returns it expanded to ``shape`` (None stays None)."""
    if mask is None:
        return None
    mask = torch.as_tensor(mask, device=device)
    if mask.dtype != torch.bool:
        raise ValueError(f"{cls}: mask must be a bool tensor, got dtype={mask.dtype}")
    try:
        return mask.expand(shape)
    except RuntimeError as err:
        raise ValueError(
            f"{cls}: mask of shape {tuple(mask.shape)} does not broadcast to {tuple(shape)}"
        ) from err


def _masked_choice(mask: torch.Tensor, full_shape: torch.Size) -> torch.Tensor:
    """Uniform index over the True entries of ``mask`` along its last dim (argmax of masked noise).

    ``full_shape`` is the output shape without the choice dim; rows with no True entry give 0.
    """
    noise = torch.rand((*full_shape, mask.shape[-1]), device=mask.device)
    return torch.where(mask, noise, -1.0).argmax(-1)


def _rand_bits(full_shape: torch.Size, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(full_shape, device=device) < 0.5
    return torch.randint(0, 2, full_shape, dtype=dtype, device=device)


def _bad_msg(what: str, bad: torch.Tensor, val: torch.Tensor) -> str:
    count = int(bad.sum())
    example = val[bad].reshape(-1)[0].item()
    return f"{count} element(s) {what}, e.g. {example!r}"


# ============================================================================ Unbounded
class Unbounded(TensorSpec):
    """A tensor with any value of the given dtype (only shape and dtype are checked).

    ``rand`` is ``randn`` for float dtypes, ``randint`` in ``[-100, 100)`` (clipped to the dtype)
    for integer dtypes and fair coin flips for bool.

    Args:
        shape: full shape, batch dims included.
        device: device of the tensors (default cpu).
        dtype: dtype of the tensors (default float32).

    Examples:
        >>> spec = Unbounded(shape=(4, 3))
        >>> spec.rand().shape, spec.is_in(torch.zeros(4, 3))
        (torch.Size([4, 3]), True)
        >>> Unbounded(dtype=torch.int64).rand().dtype
        torch.int64
    """

    def __init__(
        self,
        shape: Any = (),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.float32,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs(type(self).__name__, kwargs)
        self.shape = as_size(shape)
        self.device = make_device(device)
        self.dtype = _resolve_dtype(dtype)

    @property
    def domain(self) -> str:
        """``"continuous"`` for float dtypes, ``"discrete"`` otherwise."""
        return "continuous" if self.dtype.is_floating_point else "discrete"

    @property
    def space(self) -> ContinuousBox:
        """Bounds of the dtype: ``-inf/inf`` for floats, the integer limits otherwise."""
        if self.dtype.is_floating_point:
            lo, hi = -float("inf"), float("inf")
        elif self.dtype == torch.bool:
            lo, hi = False, True
        else:
            info = torch.iinfo(self.dtype)
            lo, hi = info.min, info.max
        low = torch.full(self.shape, lo, dtype=self.dtype, device=self.device)
        high = torch.full(self.shape, hi, dtype=self.dtype, device=self.device)
        return ContinuousBox(low, high)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.dtype.is_floating_point or self.dtype.is_complex:
            return torch.randn(full_shape, dtype=self.dtype, device=self.device)
        if self.dtype == torch.bool:
            return _rand_bits(full_shape, self.dtype, self.device)
        info = torch.iinfo(self.dtype)
        lo = max(-_UNBOUNDED_INT_RANGE, info.min)
        hi = min(_UNBOUNDED_INT_RANGE, info.max)
        return torch.randint(lo, hi, full_shape, dtype=self.dtype, device=self.device)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        if val.is_floating_point() and not self.dtype.is_floating_point:
            val = torch.nan_to_num(val.round(), nan=0.0)
        return val.to(self.dtype)


class UnboundedDiscrete(Unbounded):
    """:class:`Unbounded` with an int64 default dtype (the old ``UnboundedDiscreteTensorSpec``).

    It compares equal to an :class:`Unbounded` with the same shape/dtype/device.

    Examples:
        >>> UnboundedDiscrete(shape=(2,)) == Unbounded(shape=(2,), dtype=torch.int64)
        True
    """

    def __init__(
        self,
        shape: Any = (),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int64,
        **kwargs: Any,
    ) -> None:
        super().__init__(shape=shape, device=device, dtype=dtype, **kwargs)

    @property
    def _eq_class(self) -> type:
        return Unbounded


# ============================================================================ Bounded
class Bounded(TensorSpec):
    """A tensor with elementwise bounds ``low <= x <= high``.

    Args:
        low: lower bound, a scalar or a tensor broadcastable to ``shape``.
        high: upper bound, a scalar or a tensor broadcastable to ``shape``.
        shape: full shape; inferred from ``low``/``high`` when None.
        device: device of the tensors (default: the device of ``low`` if it is a tensor, else
            cpu).
        dtype: dtype (default float32). Integer dtypes draw ``randint(low, high + 1)``.
        domain: ``"continuous"`` or ``"discrete"``; inferred from the dtype when None.

    Raises:
        ValueError: if ``low > high`` anywhere (naming the values), if a bound is NaN, or if the
            bounds do not broadcast to ``shape``.

    Examples:
        >>> spec = Bounded(low=-2.0, high=2.0, shape=(4, 1))
        >>> x = spec.rand()
        >>> bool((x >= -2).all() and (x <= 2).all()), spec.low.shape
        (True, torch.Size([4, 1]))
        >>> spec.project(torch.full((4, 1), 5.0))[0]
        tensor([2.])
        >>> Bounded(0, 4, shape=(3,), dtype=torch.int64).rand().dtype
        torch.int64
    """

    _tensor_params = (("low", 0), ("high", 0))
    _plain_params = ("domain",)

    def __init__(
        self,
        low: Any = None,
        high: Any = None,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.float32,
        domain: str | None = None,
        **kwargs: Any,
    ) -> None:
        if "minimum" in kwargs:
            low = kwargs.pop("minimum")
        if "maximum" in kwargs:
            high = kwargs.pop("maximum")
        _reject_kwargs("Bounded", kwargs)
        if low is None or high is None:
            raise TypeError("Bounded() needs both low and high")
        if device is None and isinstance(low, torch.Tensor):
            device = low.device
        self.device = make_device(device)
        self.dtype = _resolve_dtype(dtype)
        if domain is None:
            domain = "continuous" if self.dtype.is_floating_point else "discrete"
        if domain not in ("continuous", "discrete"):
            raise ValueError(f"Bounded: domain must be 'continuous' or 'discrete', got {domain!r}")
        self.domain = domain
        low_t = _to_tensor(low, None, self.device)
        high_t = _to_tensor(high, None, self.device)
        if shape is None:
            try:
                shape = torch.broadcast_shapes(low_t.shape, high_t.shape)
            except RuntimeError as err:
                raise ValueError(
                    f"Bounded: low shape {tuple(low_t.shape)} and high shape "
                    f"{tuple(high_t.shape)} do not broadcast"
                ) from err
        self.shape = as_size(shape)
        for name, t in (("low", low_t), ("high", high_t)):
            if t.is_floating_point() and bool(t.isnan().any()):
                raise ValueError(f"Bounded: {name} contains NaN: {name}={t}")
            try:
                t.expand(self.shape)
            except RuntimeError as err:
                raise ValueError(
                    f"Bounded: {name} of shape {tuple(t.shape)} does not broadcast to shape "
                    f"{tuple(self.shape)}"
                ) from err
        bad = low_t > high_t
        if bool(bad.any()):
            lo_b, hi_b = torch.broadcast_tensors(low_t, high_t)
            raise ValueError(
                f"Bounded: low must be <= high everywhere, got low={lo_b[bad].tolist()[:8]} > "
                f"high={hi_b[bad].tolist()[:8]} (low={low_t.tolist()}, high={high_t.tolist()})"
            )
        self.low = low_t.to(self.dtype).expand(self.shape).clone()
        self.high = high_t.to(self.dtype).expand(self.shape).clone()
        if bool((self.low > self.high).any()):
            raise ValueError(
                f"Bounded: low > high after casting to {self.dtype}: low={low!r}, high={high!r}"
            )
        self._post_replace()

    def _post_replace(self) -> None:
        """Picks the fastest sampler the bounds allow (scalar bounds, finite bounds, ...)."""
        low, high = self.low, self.high
        self._lo_scalar = self._hi_scalar = None
        if low.numel() == 0:
            self._mode = "empty"
            return
        lo0, hi0 = low.reshape(-1)[0], high.reshape(-1)[0]
        scalar = bool((low == lo0).all() and (high == hi0).all())
        if self.dtype.is_floating_point:
            scale = high - low
            if bool(torch.isfinite(scale).all()):
                # Round the scale down until low + scale <= high: then low + r * scale stays in
                # [low, high] for r in [0, 1) by monotonic rounding, and rand needs no clamp.
                for _ in range(8):
                    over = (low + scale) > high
                    if not bool(over.any()):
                        break
                    scale = torch.where(over, torch.nextafter(scale, torch.zeros_like(scale)), scale)
                self._mode = "float" if not bool(((low + scale) > high).any()) else "float_clamp"
                self._scale = scale
            else:
                self._mode = "float_inf"
        else:
            span = (int(hi0.item()) - int(lo0.item())) if scalar else None
            if scalar and span is not None and span < 2**62:
                self._mode = "int_scalar"
                self._lo_scalar, self._hi_scalar = int(lo0.item()), int(hi0.item())
            else:
                self._mode = "int_tensor"

    def _cast_params(self, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        return {"low": self.low.to(dtype), "high": self.high.to(dtype)}

    @property
    def space(self) -> ContinuousBox:
        """The bounds, as ``space.low`` / ``space.high`` (same tensors as ``low`` / ``high``)."""
        return ContinuousBox(self.low, self.high)

    @property
    def minimum(self) -> torch.Tensor:
        """Old name of :attr:`low`."""
        return self.low

    @property
    def maximum(self) -> torch.Tensor:
        """Old name of :attr:`high`."""
        return self.high

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        mode, dev, dtype = self._mode, self.device, self.dtype
        if mode == "float":
            r = torch.rand(full_shape, dtype=dtype, device=dev)
            return torch.addcmul(self.low, r, self._scale)
        if mode == "float_clamp":
            r = torch.rand(full_shape, dtype=dtype, device=dev)
            return torch.addcmul(self.low, r, self._scale).clamp_(self.low, self.high)
        if mode == "int_scalar":
            if dtype == torch.bool:
                out = torch.randint(self._lo_scalar, self._hi_scalar + 1, full_shape, device=dev)
                return out.bool()
            return torch.randint(
                self._lo_scalar, self._hi_scalar + 1, full_shape, dtype=dtype, device=dev
            )
        if mode == "empty":
            return torch.empty(full_shape, dtype=dtype, device=dev)
        if mode == "int_tensor":
            low, high = self.low.double(), self.high.double()
            r = torch.rand(full_shape, dtype=torch.float64, device=dev)
            out = (low + (r * (high - low + 1)).floor()).clamp_(low, high)
            return out.to(dtype)
        # float with infinite bounds: uniform where both finite, else half-normal / normal.
        low, high = self.low, self.high
        r = torch.rand(full_shape, dtype=dtype, device=dev)
        n = torch.randn(full_shape, dtype=dtype, device=dev)
        lo_fin, hi_fin = torch.isfinite(low), torch.isfinite(high)
        uniform = low * (1 - r) + high * r
        out = torch.where(
            lo_fin & hi_fin,
            uniform,
            torch.where(lo_fin, low + n.abs(), torch.where(hi_fin, high - n.abs(), n)),
        )
        return out.clamp_(low, high)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        low, high = self.low.to(val.device), self.high.to(val.device)
        bad = ~((val >= low) & (val <= high))
        if bool(bad.any()):
            return "values out of bounds: " + _bad_msg("outside [low, high]", bad, val)
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        work = torch.promote_types(val.dtype, self.dtype)
        if work == torch.bool:
            work = torch.int64
        v = val.to(work)
        if v.is_floating_point():
            if not self.dtype.is_floating_point:
                v = v.round()
            v = torch.nan_to_num(v, nan=0.0)
        low, high = self.low.to(val.device, work), self.high.to(val.device, work)
        return torch.maximum(torch.minimum(v, high), low).to(self.dtype)


# ============================================================================ Categorical
class Categorical(TensorSpec):
    """Integer values in ``[0, n)`` (one integer per element of ``shape``).

    Args:
        n: number of categories (> 0).
        shape: full shape (default ``()``), e.g. ``(4,)`` for a batch of 4.
        device: device of the tensors (default cpu).
        dtype: an integer dtype, or ``torch.bool`` when ``n <= 2`` (done flags).
        mask: optional bool tensor broadcastable to ``(*shape, n)``: the allowed categories.

    Raises:
        ValueError: if ``n <= 0``, the dtype is a float dtype, or the mask shape is wrong.

    Examples:
        >>> spec = Categorical(3, shape=(4,))
        >>> spec.rand().shape
        torch.Size([4])
        >>> spec.update_mask(torch.tensor([True, False, False]).expand(4, 3))
        >>> spec.rand()
        tensor([0, 0, 0, 0])
        >>> Categorical(2, shape=(4, 1), dtype=torch.bool).zero().dtype
        torch.bool
    """

    _tensor_params = (("mask", 1),)
    _plain_params = ("n",)

    def __init__(
        self,
        n: int,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int64,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs(type(self).__name__, kwargs)
        self.n = _check_n(type(self).__name__, "n", n)
        self.dtype = torch.int64 if dtype is None else _resolve_dtype(dtype)
        _check_discrete_dtype(type(self).__name__, self.dtype, self.n)
        self.shape = as_size(shape)
        self.device = make_device(device)
        self.mask = _prep_mask(type(self).__name__, mask, self._mask_shape(), self.device)

    def _mask_shape(self) -> torch.Size:
        return torch.Size((*self.shape, self.n))

    @property
    def space(self) -> CategoricalBox:
        """The number of categories."""
        return CategoricalBox(self.n)

    @property
    def domain(self) -> str:
        """Always ``"discrete"``."""
        return "discrete"

    def cardinality(self) -> int:
        """Number of categories."""
        return self.n

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories; ``None`` removes the mask.

        No device sync: rows with no allowed category are not detected.

        Examples:
            >>> spec = Categorical(3)
            >>> spec.update_mask(torch.tensor([False, False, True]))
            >>> spec.rand()
            tensor(2)
        """
        self.mask = _prep_mask(type(self).__name__, mask, self._mask_shape(), self.device)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.mask is not None:
            return _masked_choice(self.mask, full_shape).to(self.dtype)
        if self.dtype == torch.bool:
            if self.n == 1:
                return torch.zeros(full_shape, dtype=torch.bool, device=self.device)
            return _rand_bits(full_shape, torch.bool, self.device)
        return categorical_rand(self.n, full_shape, self.dtype, self.device)  # packed on large CPU draws

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        if val.dtype != torch.bool:
            bad = (val < 0) | (val >= self.n)
            if bool(bad.any()):
                return "values out of range: " + _bad_msg(f"outside [0, {self.n})", bad, val)
        elif self.n == 1 and bool(val.any()):
            return "values out of range: True is not a valid category when n=1"
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*val.shape, self.n)
            ok = mask.gather(-1, val.long().unsqueeze(-1)).squeeze(-1)
            if not bool(ok.all()):
                return "values not allowed by mask: " + _bad_msg("masked out", ~ok, val)
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        if val.is_floating_point():
            val = torch.nan_to_num(val.round(), nan=0.0)
        v = val.long().clamp(0, self.n - 1)
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*v.shape, self.n)
            ok = mask.gather(-1, v.unsqueeze(-1)).squeeze(-1)
            v = torch.where(ok, v, mask.to(torch.uint8).argmax(-1))
        return v.to(self.dtype)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Converts category indices to a bool one-hot tensor (new trailing dim ``n``).

        Examples:
            >>> Categorical(3).to_one_hot(torch.tensor(1))
            tensor([False,  True, False])
        """
        if safe:
            self.assert_is_in(val)
        return F.one_hot(val.long(), self.n).bool()

    def enumerate(self) -> torch.Tensor:
        """Every category, stacked on a new leading dim: shape ``(n, *shape)`` (mask ignored).

        Examples:
            >>> Categorical(3).enumerate()
            tensor([0, 1, 2])
        """
        values = torch.arange(self.n, device=self.device).to(self.dtype)
        return values.reshape(self.n, *([1] * self.ndim)).expand(self.n, *self.shape).clone()

    def to_one_hot_spec(self) -> OneHot:
        """The matching :class:`OneHot` spec (shape ``(*shape, n)``)."""
        return OneHot(self.n, shape=(*self.shape, self.n), device=self.device, mask=self.mask)


# ============================================================================ OneHot
class OneHot(TensorSpec):
    """One-hot vectors of length ``n`` (the last dim); exactly one 1 per vector.

    Args:
        n: number of categories; must equal the last dim of ``shape``.
        shape: full shape (default ``(n,)``).
        device: device of the tensors (default cpu).
        dtype: dtype of the tensors (default bool).
        mask: optional bool tensor broadcastable to ``shape``: the allowed categories.

    Examples:
        >>> spec = OneHot(4, shape=(2, 4))
        >>> x = spec.rand()
        >>> x.sum(-1)
        tensor([1, 1])
        >>> spec.to_categorical(spec.to_one_hot(torch.tensor([3, 0])))
        tensor([3, 0])
    """

    _event_ndim = 1
    _tensor_params = (("mask", 1),)
    _plain_params = ("n",)

    def __init__(
        self,
        n: int,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.bool,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs(type(self).__name__, kwargs)
        self.n = _check_n(type(self).__name__, "n", n)
        self.shape = torch.Size((self.n,)) if shape is None else as_size(shape)
        if not self.shape or self.shape[-1] != self.n:
            raise ValueError(
                f"OneHot: the last dim of shape must be n={self.n}, got shape={tuple(self.shape)}"
            )
        self.device = make_device(device)
        self.dtype = torch.bool if dtype is None else _resolve_dtype(dtype)
        self.mask = _prep_mask("OneHot", mask, self.shape, self.device)
        self._post_replace()

    def _post_replace(self) -> None:
        self._arange = torch.arange(self.n, device=self.device)

    @property
    def space(self) -> CategoricalBox:
        """The number of categories."""
        return CategoricalBox(self.n)

    @property
    def domain(self) -> str:
        """Always ``"discrete"``."""
        return "discrete"

    def cardinality(self) -> int:
        """Number of categories."""
        return self.n

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories (a bool tensor broadcastable to ``shape``)."""
        self.mask = _prep_mask("OneHot", mask, self.shape, self.device)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.mask is not None:
            idx = _masked_choice(self.mask, full_shape[:-1])
        else:
            idx = torch.randint(0, self.n, full_shape[:-1], device=self.device)
        out = idx.unsqueeze(-1) == self._arange
        return out if self.dtype == torch.bool else out.to(self.dtype)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        bad = (val != 0) & (val != 1)
        if bool(bad.any()):
            return "values not one-hot: " + _bad_msg("not 0/1", bad, val)
        counts = val.long().sum(-1) if val.dtype == torch.bool else (val != 0).sum(-1)
        if not bool((counts == 1).all()):
            return f"values not one-hot: vectors with {counts[counts != 1][0].item()} ones"
        if self.mask is not None and bool((val.bool() & ~self.mask.to(val.device)).any()):
            return "values not allowed by mask"
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        v = val.float()
        if self.mask is not None:
            v = torch.where(self.mask.to(val.device), v, -float("inf"))
        return F.one_hot(v.argmax(-1), self.n).to(self.dtype)

    def encode(self, val: Any) -> torch.Tensor:
        """Like :meth:`TensorSpec.encode`; integer indices of shape ``shape[:-1]`` become one-hot.

        Examples:
            >>> OneHot(3).encode(2)
            tensor([False, False,  True])
        """
        t = torch.as_tensor(np.asarray(val) if not isinstance(val, torch.Tensor) else val)
        if t.shape == self.shape[:-1] and not t.is_floating_point() and t.dtype != torch.bool:
            return self.to_one_hot(t.to(self.device))
        return super().encode(val)

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Category indices (int64) of one-hot vectors (argmax over the last dim)."""
        if safe:
            self.assert_is_in(val)
        return val.float().argmax(-1) if val.dtype == torch.bool else val.argmax(-1)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """One-hot vectors (spec dtype) from category indices."""
        out = F.one_hot(val.long(), self.n).to(self.dtype)
        if safe:
            self.assert_is_in(out)
        return out

    def enumerate(self) -> torch.Tensor:
        """Every one-hot vector, stacked on a new leading dim: shape ``(n, *shape)``.

        Examples:
            >>> OneHot(2).enumerate()
            tensor([[ True, False],
                    [False,  True]])
        """
        eye = torch.eye(self.n, dtype=self.dtype, device=self.device)
        lead = [1] * (self.ndim - 1)
        return eye.reshape(self.n, *lead, self.n).expand(self.n, *self.shape).clone()

    def to_categorical_spec(self) -> Categorical:
        """The matching :class:`Categorical` spec (shape ``shape[:-1]``)."""
        return Categorical(self.n, shape=self.shape[:-1], device=self.device, mask=self.mask)

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Category indices as a numpy array (what gymnasium ``Discrete`` spaces expect)."""
        if safe:
            self.assert_is_in(val)
        return self.to_categorical(val).detach().cpu().numpy()


# ============================================================================ MultiCategorical
class MultiCategorical(TensorSpec):
    """One integer in ``[0, nvec[i])`` per position ``i`` of the last dim.

    Args:
        nvec: number of categories of each position.
        shape: full shape (default ``(len(nvec),)``); the last dim must be ``len(nvec)``.
        device: device of the tensors (default cpu).
        dtype: an integer dtype (default int64).
        mask: optional bool tensor broadcastable to ``(*shape[:-1], sum(nvec))``.

    Examples:
        >>> spec = MultiCategorical([2, 5], shape=(3, 2))
        >>> x = spec.rand()
        >>> bool((x[:, 0] < 2).all() and (x[:, 1] < 5).all())
        True
    """

    _event_ndim = 1
    _tensor_params = (("mask", 1),)
    _plain_params = ("nvec",)

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int64,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs(type(self).__name__, kwargs)
        self.nvec = _check_nvec(type(self).__name__, nvec)
        self.shape = torch.Size((len(self.nvec),)) if shape is None else as_size(shape)
        if not self.shape or self.shape[-1] != len(self.nvec):
            raise ValueError(
                f"MultiCategorical: the last dim of shape must be len(nvec)={len(self.nvec)}, "
                f"got shape={tuple(self.shape)}"
            )
        self.dtype = torch.int64 if dtype is None else _resolve_dtype(dtype)
        _check_discrete_dtype(type(self).__name__, self.dtype, max(self.nvec))
        self.device = make_device(device)
        self.mask = _prep_mask(type(self).__name__, mask, self._mask_shape(), self.device)
        self._post_replace()

    def _mask_shape(self) -> torch.Size:
        return torch.Size((*self.shape[:-1], sum(self.nvec)))

    def _post_replace(self) -> None:
        self._nvec_t = torch.tensor(self.nvec, device=self.device)

    @property
    def n(self) -> int:
        """Number of positions (``len(nvec)``)."""
        return len(self.nvec)

    @property
    def space(self) -> MultiCategoricalBox:
        """The category counts."""
        return MultiCategoricalBox(self.nvec)

    @property
    def domain(self) -> str:
        """Always ``"discrete"``."""
        return "discrete"

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories, concatenated over positions."""
        self.mask = _prep_mask(type(self).__name__, mask, self._mask_shape(), self.device)

    def _segments(self):
        off = 0
        for i, n in enumerate(self.nvec):
            yield i, off, n
            off += n

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.mask is None:
            r = torch.rand(full_shape, device=self.device)
            out = (r * self._nvec_t).floor_().to(self.dtype)
            return torch.minimum(out, (self._nvec_t - 1).to(self.dtype))
        outs = [
            _masked_choice(self.mask[..., off : off + n], full_shape[:-1])
            for _, off, n in self._segments()
        ]
        return torch.stack(outs, -1).to(self.dtype)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        nvec = self._nvec_t.to(val.device)
        bad = (val < 0) | (val >= nvec)
        if bool(bad.any()):
            return "values out of range: " + _bad_msg(f"outside [0, nvec={list(self.nvec)})", bad, val)
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*val.shape[:-1], -1)
            offsets = torch.tensor([off for _, off, _ in self._segments()], device=val.device)
            ok = mask.gather(-1, val.long() + offsets)
            if not bool(ok.all()):
                return "values not allowed by mask"
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        if val.is_floating_point():
            val = torch.nan_to_num(val.round(), nan=0.0)
        nvec = self._nvec_t.to(val.device)
        v = torch.maximum(torch.minimum(val.long(), nvec - 1), torch.zeros_like(nvec))
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*v.shape[:-1], -1)
            cols = []
            for i, off, n in self._segments():
                seg = mask[..., off : off + n]
                vi = v[..., i]
                ok = seg.gather(-1, vi.unsqueeze(-1)).squeeze(-1)
                cols.append(torch.where(ok, vi, seg.to(torch.uint8).argmax(-1)))
            v = torch.stack(cols, -1)
        return v.to(self.dtype)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Concatenated bool one-hot segments (last dim ``sum(nvec)``)."""
        if safe:
            self.assert_is_in(val)
        return torch.cat(
            [F.one_hot(val[..., i].long(), n) for i, _, n in self._segments()], -1
        ).bool()

    def to_one_hot_spec(self) -> MultiOneHot:
        """The matching :class:`MultiOneHot` spec."""
        return MultiOneHot(
            self.nvec, shape=(*self.shape[:-1], sum(self.nvec)), device=self.device, mask=self.mask
        )


# ============================================================================ MultiOneHot
class MultiOneHot(TensorSpec):
    """Concatenated one-hot segments of lengths ``nvec`` (last dim ``sum(nvec)``).

    Args:
        nvec: segment lengths.
        shape: full shape (default ``(sum(nvec),)``); the last dim must be ``sum(nvec)``.
        device: device of the tensors (default cpu).
        dtype: dtype of the tensors (default bool).
        mask: optional bool tensor broadcastable to ``shape``: the allowed categories.

    Examples:
        >>> spec = MultiOneHot([2, 3])
        >>> x = spec.rand()
        >>> x[:2].sum().item(), x[2:].sum().item()
        (1, 1)
    """

    _event_ndim = 1
    _tensor_params = (("mask", 1),)
    _plain_params = ("nvec",)

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.bool,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs(type(self).__name__, kwargs)
        self.nvec = _check_nvec(type(self).__name__, nvec)
        total = sum(self.nvec)
        self.shape = torch.Size((total,)) if shape is None else as_size(shape)
        if not self.shape or self.shape[-1] != total:
            raise ValueError(
                f"MultiOneHot: the last dim of shape must be sum(nvec)={total}, "
                f"got shape={tuple(self.shape)}"
            )
        self.device = make_device(device)
        self.dtype = torch.bool if dtype is None else _resolve_dtype(dtype)
        self.mask = _prep_mask("MultiOneHot", mask, self.shape, self.device)
        self._post_replace()

    def _post_replace(self) -> None:
        self._nvec_t = torch.tensor(self.nvec, device=self.device)
        offsets = [0]
        for n in self.nvec[:-1]:
            offsets.append(offsets[-1] + n)
        self._offsets = torch.tensor(offsets, device=self.device)

    @property
    def n(self) -> int:
        """Total length ``sum(nvec)``."""
        return sum(self.nvec)

    @property
    def space(self) -> MultiCategoricalBox:
        """The segment lengths."""
        return MultiCategoricalBox(self.nvec)

    @property
    def domain(self) -> str:
        """Always ``"discrete"``."""
        return "discrete"

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories (bool tensor broadcastable to ``shape``)."""
        self.mask = _prep_mask("MultiOneHot", mask, self.shape, self.device)

    def _split(self, val: torch.Tensor) -> list[torch.Tensor]:
        return list(val.split(list(self.nvec), dim=-1))

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        lead = full_shape[:-1]
        if self.mask is None:
            r = torch.rand((*lead, len(self.nvec)), device=self.device)
            idx = torch.minimum((r * self._nvec_t).long(), self._nvec_t - 1)
        else:
            idx = torch.stack(
                [_masked_choice(m, lead) for m in self._split(self.mask)], -1
            )
        out = torch.zeros(full_shape, dtype=self.dtype, device=self.device)
        return out.scatter_(-1, idx + self._offsets, 1)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        bad = (val != 0) & (val != 1)
        if bool(bad.any()):
            return "values not one-hot: " + _bad_msg("not 0/1", bad, val)
        for i, seg in enumerate(self._split(val)):
            if not bool(((seg != 0).sum(-1) == 1).all()):
                return f"values not one-hot: segment {i} (n={self.nvec[i]}) has not exactly one 1"
        if self.mask is not None and bool((val.bool() & ~self.mask.to(val.device)).any()):
            return "values not allowed by mask"
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        v = val.float()
        if self.mask is not None:
            v = torch.where(self.mask.to(val.device), v, -float("inf"))
        segs = [F.one_hot(s.argmax(-1), n) for s, n in zip(self._split(v), self.nvec)]
        return torch.cat(segs, -1).to(self.dtype)

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Per-segment category indices (int64, last dim ``len(nvec)``)."""
        if safe:
            self.assert_is_in(val)
        return torch.stack([s.float().argmax(-1) for s in self._split(val)], -1)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """One-hot segments (spec dtype) from per-segment indices."""
        out = torch.cat(
            [F.one_hot(val[..., i].long(), n) for i, n in enumerate(self.nvec)], -1
        ).to(self.dtype)
        if safe:
            self.assert_is_in(out)
        return out

    def to_categorical_spec(self) -> MultiCategorical:
        """The matching :class:`MultiCategorical` spec."""
        return MultiCategorical(
            self.nvec, shape=(*self.shape[:-1], len(self.nvec)), device=self.device, mask=self.mask
        )

    def encode(self, val: Any) -> torch.Tensor:
        """Like :meth:`TensorSpec.encode`; indices of shape ``(*shape[:-1], len(nvec))`` are
        turned into one-hot segments.

        Examples:
            >>> MultiOneHot([2, 2]).encode([1, 0])
            tensor([False,  True,  True, False])
        """
        t = torch.as_tensor(np.asarray(val) if not isinstance(val, torch.Tensor) else val)
        idx_shape = torch.Size((*self.shape[:-1], len(self.nvec)))
        if (
            idx_shape != self.shape
            and t.shape == idx_shape
            and not t.is_floating_point()
            and t.dtype != torch.bool
        ):
            return self.to_one_hot(t.to(self.device))
        return super().encode(val)

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Per-segment indices as a numpy array (what gymnasium ``MultiDiscrete`` expects)."""
        return self.to_categorical(val, safe).detach().cpu().numpy()


# ============================================================================ Binary
class Binary(TensorSpec):
    """``n`` independent 0/1 values (the last dim).

    Args:
        n: number of bits; inferred from ``shape[-1]`` when None.
        shape: full shape (default ``(n,)``); the last dim must be ``n``.
        device: device of the tensors (default cpu).
        dtype: dtype (default int8).

    Examples:
        >>> spec = Binary(3, shape=(2, 3))
        >>> spec.is_in(torch.tensor([[0, 1, 1], [1, 1, 0]], dtype=torch.int8))
        True
    """

    _event_ndim = 1
    _plain_params = ("n",)

    def __init__(
        self,
        n: int | None = None,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int8,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs("Binary", kwargs)
        if n is None and shape is None:
            raise ValueError("Binary: n or shape must be given")
        if shape is None:
            shape = (n,)
        self.shape = as_size(shape)
        if not self.shape:
            raise ValueError("Binary: shape must have at least one dim (the bits)")
        if n is None:
            n = self.shape[-1]
        self.n = _check_n("Binary", "n", n)
        if self.shape[-1] != self.n:
            raise ValueError(
                f"Binary: the last dim of shape must be n={self.n}, got shape={tuple(self.shape)}"
            )
        self.device = make_device(device)
        self.dtype = torch.int8 if dtype is None else _resolve_dtype(dtype)

    @property
    def space(self) -> BinaryBox:
        """The number of bits."""
        return BinaryBox(self.n)

    @property
    def domain(self) -> str:
        """Always ``"discrete"``."""
        return "discrete"

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.dtype.is_floating_point:
            return (torch.rand(full_shape, device=self.device) < 0.5).to(self.dtype)
        return _rand_bits(full_shape, self.dtype, self.device)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        bad = (val != 0) & (val != 1)
        if bool(bad.any()):
            return "values not binary: " + _bad_msg("not 0/1", bad, val)
        return None

    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        if val.dtype == torch.bool:
            return val.to(self.dtype)
        v = torch.nan_to_num(val.float(), nan=0.0)
        return (v > 0.5).to(self.dtype)


# ============================================================================ NonTensor
class NonTensor(TensorSpec):
    """Non-tensor data (strings, objects), carried as ``tensordict.NonTensorData``.

    Args:
        shape: batch size of the non-tensor data.
        device: device of the data containers (default cpu).
        dtype: unused, kept for API compatibility (None).
        example_data: the value ``rand``/``zero`` carry.

    Examples:
        >>> spec = NonTensor(shape=(2,), example_data="hello")
        >>> data = spec.rand()
        >>> data.batch_size, spec.is_in(data)
        (torch.Size([2]), True)
    """

    def __init__(
        self,
        shape: Any = (),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = None,
        example_data: Any = None,
        **kwargs: Any,
    ) -> None:
        _reject_kwargs("NonTensor", kwargs)
        self.shape = as_size(shape)
        self.device = make_device(device)
        self.dtype = dtype
        self.example_data = example_data

    def _make(self, full_shape: torch.Size, data: Any) -> Any:
        from tensordict import NonTensorData

        return NonTensorData(data=data, batch_size=full_shape, device=self.device)

    def _rand(self, full_shape: torch.Size) -> Any:
        return self._make(full_shape, self.example_data)

    def zero(self, shape: Any = ()) -> Any:
        """Non-tensor data carrying ``example_data`` with batch size ``(*shape, *self.shape)``."""
        return self._make(self._full_shape(shape), self.example_data)

    one = zero

    def invalid_reason(self, val: Any) -> str | None:
        """Why ``val`` is not non-tensor data of the right batch size (None when it is)."""
        from tensordict import NonTensorData, NonTensorStack

        if not isinstance(val, (NonTensorData, NonTensorStack)):
            return f"expected NonTensorData or NonTensorStack, got {type(val).__name__}"
        bs = val.batch_size
        if len(bs) < self.ndim or bs[len(bs) - self.ndim :] != self.shape:
            return f"batch size {tuple(bs)} does not end with spec shape {tuple(self.shape)}"
        return None

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        return None

    def project(self, val: Any) -> Any:
        """Returns ``val`` unchanged (any non-tensor value is valid)."""
        return val

    def encode(self, val: Any) -> Any:
        """Wraps ``val`` into ``NonTensorData`` of batch size ``shape`` (kept as is if already)."""
        from tensordict import NonTensorData, NonTensorStack

        if isinstance(val, (NonTensorData, NonTensorStack)):
            return val
        return self._make(self.shape, val)

    def to_numpy(self, val: Any, safe: bool | None = None) -> Any:
        """Returns the wrapped data."""
        return getattr(val, "data", val)

    def type_check(self, value: Any, key: Any = None) -> None:
        """Non-tensor values are not type checked."""

    def to(self, dest: DEVICE_TYPING | torch.dtype) -> NonTensor:
        """Returns the spec on another device (a dtype is ignored)."""
        if isinstance(dest, torch.dtype):
            return self
        return super().to(dest)
