"""Box specs: :class:`Unbounded` and :class:`Bounded` (and their continuous/discrete flavours).

Every ``rand`` is one to a few torch ops over the whole batch, so ``spec.rand()`` can serve as a
random policy on the step path. Bounds are kept compact (a bound shared by every batch element is
stored once), see :class:`~gpusim.specs.ContinuousBox`.
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.specs._common import bad_msg, reject_kwargs, resolve_dtype
from gpusim.specs._shapes import as_size, safe_size
from gpusim.specs.base import DEVICE_TYPING, TensorSpec, _to_tensor
from gpusim.specs.spaces import ContinuousBox

__all__ = [
    "Unbounded",
    "UnboundedContinuous",
    "UnboundedDiscrete",
    "Bounded",
    "BoundedContinuous",
    "BoundedDiscrete",
]

_UNBOUNDED_INT_RANGE = 100
_DEFAULT_SHAPE = (1,)


def _default_domain(dtype: torch.dtype) -> str:
    return "continuous" if dtype.is_floating_point or dtype.is_complex else "discrete"


def _dtype_limits(dtype: torch.dtype) -> tuple[Any, Any]:
    """The smallest and largest values of a dtype (False/True for bool)."""
    if dtype == torch.bool:
        return False, True
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    return info.min, info.max


def _check_domain(cls: str, domain: str) -> str:
    if domain not in ("continuous", "discrete"):
        raise ValueError(f"{cls}: domain must be 'continuous' or 'discrete', got {domain!r}")
    return domain


# ============================================================================ Unbounded
class Unbounded(TensorSpec):
    """A tensor with any value of the given dtype (only shape and dtype are checked).

    ``rand`` is ``randn`` for float dtypes, ``randint`` in ``[-100, 100)`` (clipped to the dtype)
    for integer dtypes and fair coin flips for bool.

    Args:
        shape: full shape, batch dims included (default ``(1,)``, as in TorchRL).
        device: device of the tensors (default cpu).
        dtype: dtype of the tensors (default: torch's default dtype).
        domain: ``"continuous"`` or ``"discrete"`` (default: from the dtype).

    Examples:
        >>> spec = Unbounded(shape=(4, 3))
        >>> spec.rand().shape, spec.is_in(torch.zeros(4, 3))
        (torch.Size([4, 3]), True)
        >>> Unbounded().shape
        torch.Size([1])
        >>> Unbounded(dtype=torch.int64).rand().dtype
        torch.int64
    """

    def __init__(
        self,
        shape: Any = _DEFAULT_SHAPE,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = None,
        domain: str | None = None,
        **kwargs: Any,
    ) -> None:
        reject_kwargs(type(self).__name__, kwargs)
        dtype = resolve_dtype(dtype)
        domain = _check_domain(type(self).__name__, domain or _default_domain(dtype))
        self._init_common(shape, device, dtype, domain)
        self._space: Any = None

    @property
    def _eq_class(self) -> type:
        return Unbounded

    def _repr_name(self) -> str:
        if type(self) in (Unbounded, UnboundedContinuous, UnboundedDiscrete):
            return "UnboundedContinuous" if self.domain == "continuous" else "UnboundedDiscrete"
        return type(self).__name__

    @property
    def space(self) -> Any:
        """The limits of the dtype as a :class:`ContinuousBox` (or what was assigned).

        Examples:
            >>> box = Unbounded(shape=(2,), dtype=torch.int8).space
            >>> box.low, box.high
            (tensor([-128, -128], dtype=torch.int8), tensor([127, 127], dtype=torch.int8))
        """
        if self._space is not None:
            return self._space
        lo, hi = _dtype_limits(self.dtype)
        shape = self._safe_shape
        low = torch.full((), lo, dtype=self.dtype, device=self.device).expand(shape)
        high = torch.full((), hi, dtype=self.dtype, device=self.device).expand(shape)
        return ContinuousBox(low, high, self.device)

    @space.setter
    def space(self, value: Any) -> None:
        self._space = value

    def _post_replace(self) -> None:
        self._space = None

    def _domain_for(self, dtype: torch.dtype) -> str:
        return _default_domain(dtype)

    def to(self, dest: DEVICE_TYPING | torch.dtype | None) -> TensorSpec:
        """Returns the spec on another device, or with another dtype (self if unchanged).

        Examples:
            >>> Unbounded(shape=(2,)).to(torch.int64).domain
            'discrete'
        """
        if isinstance(dest, torch.dtype) and dest != self.dtype:
            return self._replace(dtype=dest, domain=self._domain_for(dest))
        return super().to(dest)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.dtype.is_floating_point or self.dtype.is_complex:
            return torch.randn(full_shape, dtype=self.dtype, device=self.device)
        if self.dtype == torch.bool:
            return torch.rand(full_shape, device=self.device) < 0.5
        info = torch.iinfo(self.dtype)
        lo = max(-_UNBOUNDED_INT_RANGE, info.min)
        hi = min(_UNBOUNDED_INT_RANGE, info.max)
        return torch.randint(lo, hi, full_shape, dtype=self.dtype, device=self.device)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        if val.is_floating_point() and not self.dtype.is_floating_point:
            val = torch.nan_to_num(val.round(), nan=0.0)
        return val.to(self.dtype)

    def cardinality(self) -> int:
        """Unbounded specs have no finite set of outcomes.

        Raises:
            NotImplementedError: always.

        Examples:
            >>> Unbounded(dtype=torch.int64).cardinality()
            Traceback (most recent call last):
            ...
            NotImplementedError: cardinality is not implemented for Unbounded specs
        """
        raise NotImplementedError("cardinality is not implemented for Unbounded specs")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Bounded):
            # An Unbounded spec equals the Bounded spec spanning its dtype's limits.
            lo, hi = _dtype_limits(self.dtype)
            as_bounded = Bounded(lo, hi, shape=self.shape, device=self.device, dtype=self.dtype, domain=self.domain)
            return as_bounded == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class UnboundedContinuous(Unbounded):
    """:class:`Unbounded` with the ``"continuous"`` domain (TorchRL's name for float specs).

    It compares equal to an :class:`Unbounded` with the same shape, dtype and device.

    Examples:
        >>> UnboundedContinuous(shape=(2,)) == Unbounded(shape=(2,))
        True
    """


class UnboundedDiscrete(Unbounded):
    """:class:`Unbounded` with an int64 default dtype (TorchRL's name for integer specs).

    It compares equal to an :class:`Unbounded` with the same shape/dtype/device.

    Examples:
        >>> UnboundedDiscrete(shape=(2,)) == Unbounded(shape=(2,), dtype=torch.int64)
        True
    """

    def __init__(
        self,
        shape: Any = _DEFAULT_SHAPE,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int64,
        **kwargs: Any,
    ) -> None:
        super().__init__(shape=shape, device=device, dtype=dtype, **kwargs)


# ============================================================================ Bounded
class Bounded(TensorSpec):
    """A tensor with elementwise bounds ``low <= x <= high``.

    Args:
        low: lower bound, a scalar or a tensor broadcastable to ``shape``.
        high: upper bound, a scalar or a tensor broadcastable to ``shape``.
        shape: full shape; inferred from ``low``/``high`` when None.
        device: device of the tensors (default: the device of ``low`` if it is a tensor, else
            cpu).
        dtype: dtype (default: torch's default dtype). Integer dtypes draw
            ``randint(low, high + 1)``.
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
        dtype: torch.dtype | None = None,
        domain: str | None = None,
        **kwargs: Any,
    ) -> None:
        if "minimum" in kwargs:
            low = kwargs.pop("minimum")
        if "maximum" in kwargs:
            high = kwargs.pop("maximum")
        cls = type(self).__name__
        reject_kwargs(cls, kwargs)
        if low is None or high is None:
            raise TypeError(f"{cls}() needs both low and high")
        if device is None and isinstance(low, torch.Tensor):
            device = low.device
        dtype = resolve_dtype(dtype)
        domain = _check_domain(cls, domain or _default_domain(dtype))
        self._init_common((), device, dtype, domain)
        low_t = _to_tensor(low, None, self.device)
        high_t = _to_tensor(high, None, self.device)
        if shape is None:
            try:
                shape = torch.broadcast_shapes(low_t.shape, high_t.shape)
            except RuntimeError as err:
                raise ValueError(
                    f"{cls}: low shape {tuple(low_t.shape)} and high shape {tuple(high_t.shape)} do not broadcast"
                ) from err
        self._shape = as_size(shape)
        safe = safe_size(self._shape)
        for name, t in (("low", low_t), ("high", high_t)):
            if t.is_floating_point() and bool(t.isnan().any()):
                raise ValueError(f"{cls}: {name} contains NaN: {name}={t}")
            try:
                t.expand(safe)
            except RuntimeError as err:
                raise ValueError(
                    f"{cls}: {name} of shape {tuple(t.shape)} does not broadcast to shape {tuple(self._shape)}"
                ) from err
        bad = low_t > high_t
        if bool(bad.any()):
            lo_b, hi_b = torch.broadcast_tensors(low_t, high_t)
            raise ValueError(
                f"{cls}: low must be <= high everywhere, got low={lo_b[bad].tolist()[:8]} > "
                f"high={hi_b[bad].tolist()[:8]} (low={low_t.tolist()}, high={high_t.tolist()})"
            )
        low_c, high_c = low_t.to(dtype).clone(), high_t.to(dtype).clone()
        if bool((low_c > high_c).any()):
            raise ValueError(f"{cls}: low > high after casting to {dtype}: low={low!r}, high={high!r}")
        # Stored as expanded views of the (small) given bounds: O(1) memory for scalar bounds.
        self._space: Any = ContinuousBox(low_c.expand(safe), high_c.expand(safe), self.device)
        self._space._owned = low_c.shape == safe and high_c.shape == safe
        self._cache_key: tuple | None = None

    @property
    def _eq_class(self) -> type:
        return Bounded

    def _repr_name(self) -> str:
        if type(self) in (Bounded, BoundedContinuous, BoundedDiscrete):
            return "BoundedContinuous" if self.domain == "continuous" else "BoundedDiscrete"
        return type(self).__name__

    # ------------------------------------------------------------------ bounds
    @property
    def space(self) -> Any:
        """The bounds, a :class:`ContinuousBox` (assignable).

        Examples:
            >>> box = Bounded(-1.0, torch.tensor([1.0, 2.0])).space
            >>> type(box).__name__, box.low, box.high
            ('ContinuousBox', tensor([-1., -1.]), tensor([1., 2.]))
        """
        return self._space

    @space.setter
    def space(self, value: Any) -> None:
        self._space = value
        self._cache_key = None

    @property
    def low(self) -> torch.Tensor:
        """The lower bound, full shape (``minimum`` is the same property).

        As in TorchRL, it can be changed in place: the spec sees the change.

        Examples:
            >>> spec = Bounded(-1.0, 1.0, shape=(2,))
            >>> spec.low
            tensor([-1., -1.])
            >>> spec.low[0] = 0.0
            >>> spec.minimum, spec.is_in(torch.tensor([-0.5, 0.0]))
            (tensor([ 0., -1.]), False)
        """
        return self._space.low

    @property
    def high(self) -> torch.Tensor:
        """The upper bound, full shape (``maximum`` is the same property).

        As in TorchRL, it can be changed in place: the spec sees the change.

        Examples:
            >>> spec = Bounded(-1.0, torch.tensor([1.0, 2.0]))
            >>> spec.high, spec.maximum
            (tensor([1., 2.]), tensor([1., 2.]))
        """
        return self._space.high

    minimum = low
    maximum = high

    def _params(self) -> dict[str, torch.Tensor]:
        return {"low": self._space._full("low"), "high": self._space._full("high")}

    def _set_params(self, params: dict[str, torch.Tensor]) -> None:
        self._space = ContinuousBox(params["low"], params["high"], self._device)
        self._cache_key = None

    def _register_batch_size(self, batch_size: torch.Size) -> None:
        """Lets the bounds drop ``batch_size`` leading dims when they do not vary along them."""
        if isinstance(self._space, ContinuousBox):
            self._space.batch_size = batch_size
            self._cache_key = None

    def _cast_params(self, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        return {name: t.to(dtype) for name, t in self._params().items()}

    def to(self, dest: DEVICE_TYPING | torch.dtype | None) -> TensorSpec:
        """Returns the spec on another device, or with another dtype (self if unchanged).

        Examples:
            >>> Bounded(0, 5, shape=(2,), dtype=torch.int64).to(torch.float32).domain
            'continuous'
        """
        if isinstance(dest, torch.dtype) and dest != self.dtype:
            return self._replace(params=self._cast_params(dest), dtype=dest, domain=_default_domain(dest))
        return super().to(dest)

    def _bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The bounds as the smallest tensors that broadcast (from the right) to the shape."""
        box = self._space
        return box._compact("low"), box._compact("high")

    def _sampler(self) -> tuple[str, Any]:
        """Picks (once per bounds version) the fastest sampler the bounds allow."""
        box = self._space
        key = (
            id(box._low),
            box._low._version,
            id(box._high),
            box._high._version,
            box._batch_size,
            self.dtype,
        )
        if key == self._cache_key:
            return self._mode, self._mode_data
        low, high = self._bounds()
        data: Any = None
        if low.numel() == 0 or high.numel() == 0:
            mode = "empty"
        elif self.dtype.is_floating_point:
            scale = high - low
            if bool(torch.isfinite(scale).all()):
                # Round the scale down until low + scale <= high: then low + r * scale stays in
                # [low, high] for r in [0, 1) by monotonic rounding, and rand needs no clamp.
                for _ in range(8):
                    over = (low + scale) > high
                    if not bool(over.any()):
                        break
                    scale = torch.where(over, torch.nextafter(scale, torch.zeros_like(scale)), scale)
                mode = "float" if not bool(((low + scale) > high).any()) else "float_clamp"
                data = scale
            else:
                mode = "float_inf"
        else:
            lo0, hi0 = low.reshape(-1)[0], high.reshape(-1)[0]
            scalar = bool((low == lo0).all() and (high == hi0).all())
            span = int(hi0.item()) - int(lo0.item()) if scalar else None
            if scalar and span is not None and span < 2**62:
                mode, data = "int_scalar", (int(lo0.item()), int(hi0.item()))
            else:
                mode = "int_tensor"
        self._mode, self._mode_data, self._cache_key = mode, data, key
        return mode, data

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        mode, data = self._sampler()
        dev, dtype = self.device, self.dtype
        low, high = self._bounds()
        if mode == "float":
            r = torch.rand(full_shape, dtype=dtype, device=dev)
            return torch.addcmul(low, r, data)
        if mode == "float_clamp":
            r = torch.rand(full_shape, dtype=dtype, device=dev)
            return torch.addcmul(low, r, data).clamp_(low, high)
        if mode == "int_scalar":
            lo, hi = data
            if dtype == torch.bool:
                return torch.randint(lo, hi + 1, full_shape, device=dev).bool()
            return torch.randint(lo, hi + 1, full_shape, dtype=dtype, device=dev)
        if mode == "empty":
            return torch.empty(full_shape, dtype=dtype, device=dev)
        if mode == "int_tensor":
            lo, hi = low.double(), high.double()
            r = torch.rand(full_shape, dtype=torch.float64, device=dev)
            out = (lo + (r * (hi - lo + 1)).floor()).clamp_(lo, hi)
            return out.to(dtype)
        # float with infinite bounds: uniform where both finite, else half-normal / normal.
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
        low, high = self._bounds()
        low, high = low.to(val.device), high.to(val.device)
        bad = ~((val >= low) & (val <= high))
        if bool(bad.any()):
            return "values out of bounds: " + bad_msg("outside [low, high]", bad, val)
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        work = torch.promote_types(val.dtype, self.dtype)
        if work == torch.bool:
            work = torch.int64
        v = val.to(work)
        if v.is_floating_point():
            if not self.dtype.is_floating_point:
                v = v.round()
            v = torch.nan_to_num(v, nan=0.0)
        low, high = self._bounds()
        low, high = low.to(val.device, work), high.to(val.device, work)
        return torch.maximum(torch.minimum(v, high), low).to(self.dtype)

    def cardinality(self) -> float:
        """``inf``: a box has infinitely many values (as in TorchRL, even for integer dtypes).

        Examples:
            >>> Bounded(0.0, 1.0, shape=(2,)).cardinality()
            inf
        """
        return float("inf")

    def unbind(self, dim: int = 0) -> tuple[TensorSpec, ...]:
        """Splits the spec along ``dim`` (TorchRL rejects ``dim=-1`` for Bounded; so does gpusim).

        Raises:
            ValueError: for ``dim=-1`` or a dim out of range.

        Examples:
            >>> [s.shape for s in Bounded(0.0, 1.0, shape=(2, 3)).unbind(0)]
            [torch.Size([3]), torch.Size([3])]
        """
        if dim == -1:
            raise ValueError(
                "Bounded.unbind: dim=-1 is not supported (as in TorchRL, the final dimension of a "
                f"Bounded spec must remain unchanged); pass dim={self.ndim - 1} explicitly"
            )
        return super().unbind(dim)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Bounded):
            return False
        if (self.shape, self.dtype, self.device, self.domain) != (
            other.shape,
            other.dtype,
            other.device,
            other.domain,
        ):
            return False
        return bool(self._space == other._space)

    __hash__ = None  # type: ignore[assignment]


class BoundedContinuous(Bounded):
    """:class:`Bounded` with the ``"continuous"`` domain by default (TorchRL's name).

    Examples:
        >>> BoundedContinuous(0, 1, shape=(2,), dtype=torch.int64).domain
        'continuous'
    """

    def __init__(
        self,
        low: Any = None,
        high: Any = None,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = None,
        domain: str = "continuous",
        **kwargs: Any,
    ) -> None:
        super().__init__(low, high, shape, device, dtype, domain, **kwargs)


class BoundedDiscrete(Bounded):
    """:class:`Bounded` with the ``"discrete"`` domain by default (TorchRL's name).

    Examples:
        >>> BoundedDiscrete(0, 3, shape=(2,), dtype=torch.int64).rand().dtype
        torch.int64
    """

    def __init__(
        self,
        low: Any = None,
        high: Any = None,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = None,
        domain: str = "discrete",
        **kwargs: Any,
    ) -> None:
        super().__init__(low, high, shape, device, dtype, domain, **kwargs)
