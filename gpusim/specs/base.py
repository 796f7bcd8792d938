"""The abstract :class:`TensorSpec` base class and shared helpers for gpusim specs.

A spec describes one tensor: its shape (batch dims included), dtype, device and the set of valid
values. Every shape or device operation returns a new spec.

Subclasses describe their parameters (bounds, masks) as *shape-aligned* tensors: each parameter
has layout ``(*batch_shape, *event)`` where ``batch_shape`` is the spec shape minus its event
dims (with dynamic ``-1`` dims stored as size 1). That lets :meth:`TensorSpec.expand`, indexing,
squeeze, unsqueeze, reshape and unbind be written once here for every leaf class.
"""

from __future__ import annotations

import abc
import copy
import os
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from gpusim.specs._shape_ops import ShapeOpsMixin
from gpusim.specs._shapes import DYNAMIC, as_size, safe_size
from gpusim.specs.spaces import squash

__all__ = [
    "DEVICE_TYPING",
    "TensorSpec",
    "SpecValueError",
    "make_device",
    "as_size",
    "HANDLED_FUNCTIONS",
    "spec_torch_function",
    "check_spec_encode",
]

DEVICE_TYPING = torch.device | str | int

_INDEX_TYPES = (int, slice, type(Ellipsis), type(None), torch.Tensor, np.ndarray, list, range)

#: torch functions (``torch.stack``, ``torch.index_select``, ...) that specs implement, filled by
#: :mod:`gpusim.specs.stacked` and :mod:`gpusim.specs._torch_fn`.
HANDLED_FUNCTIONS: dict[Callable, Callable] = {}


class SpecValueError(ValueError, AssertionError):
    """A value is not in a spec (raised by ``assert_is_in``, or ``to_numpy(safe=True)``).

    It is a :class:`ValueError` (gpusim's contract for bad values) and an :class:`AssertionError`
    (what TorchRL raises there), so that code written for either catches it.

    Examples:
        >>> issubclass(SpecValueError, ValueError), issubclass(SpecValueError, AssertionError)
        (True, True)
    """


def make_device(device: DEVICE_TYPING | None) -> torch.device:
    """Turns a device-like value into an ordinal :class:`torch.device` (``None`` -> cpu).

    Args:
        device: a ``torch.device``, a string such as ``"cuda:0"``, an int (CUDA ordinal) or None.

    Returns:
        The device; a bare ``"cuda"`` gets the current CUDA ordinal (0 without CUDA).

    Examples:
        >>> make_device(None)
        device(type='cpu')
        >>> make_device(1)
        device(type='cuda', index=1)
    """
    if device is None:
        return torch.device("cpu")
    if isinstance(device, bool):
        raise TypeError(f"device must be a torch.device, str or int, got {device!r}")
    if isinstance(device, int):
        return torch.device("cuda", device)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise TypeError(f"device must be a torch.device, str or int, got {device!r}") from err
    if dev.type == "cuda" and dev.index is None:
        index = torch.cuda.current_device() if torch.cuda.is_available() else 0
        dev = torch.device("cuda", index)
    return dev


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def check_spec_encode() -> bool:
    """Whether ``encode`` and ``to_numpy`` check values against the spec by default.

    On when the ``CHECK_SPEC_ENCODE`` environment variable is set (``1``/``true``), as in
    TorchRL, in gpusim's debug mode (``GPUSIM_VALIDATE=1``), or when the module flag
    ``gpusim.data.tensor_specs._CHECK_SPEC_ENCODE`` (TorchRL's switch, same name) is true; off
    by default (a check synchronizes with the device). A value out of the spec then raises
    :class:`SpecValueError` (an ``AssertionError``, as in TorchRL, and a ``ValueError``).

    Examples:
        >>> import gpusim.data.tensor_specs as ts
        >>> from gpusim.specs import Categorical
        >>> ts._CHECK_SPEC_ENCODE = True
        >>> try:
        ...     Categorical(10).encode(11)
        ... except AssertionError as err:
        ...     print(type(err).__name__)
        SpecValueError
        >>> ts._CHECK_SPEC_ENCODE = False
        >>> check_spec_encode()  # (with neither environment variable set)
        False
    """
    if _env_flag("CHECK_SPEC_ENCODE") or _env_flag("GPUSIM_VALIDATE"):
        return True
    module = sys.modules.get("gpusim.data.tensor_specs")
    return bool(getattr(module, "_CHECK_SPEC_ENCODE", False))


def spec_torch_function(func: Callable, types: tuple, args: tuple, kwargs: dict | None) -> Any:
    """``__torch_function__`` of specs: runs the handler registered for ``func``, if any.

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> torch.stack([Unbounded(shape=(2,)), Unbounded(shape=(2,))], 0).shape
        torch.Size([2, 2])
    """
    from gpusim.specs.composite import Composite

    handler = HANDLED_FUNCTIONS.get(func)
    if handler is None or not all(issubclass(t, (TensorSpec, Composite)) for t in types):
        return NotImplemented
    return handler(*args, **(kwargs or {}))


def _to_tensor(val: Any, dtype: torch.dtype | None, device: torch.device) -> torch.Tensor:
    """Converts numpy arrays, lists, scalars and tensors into a tensor of ``dtype`` on ``device``."""
    if isinstance(val, torch.Tensor):
        return val.to(device=device, dtype=dtype)
    if isinstance(val, np.ndarray) and not val.flags.writeable:
        val = val.copy()
    if isinstance(val, np.ndarray) and val.dtype == np.float64 and dtype is not None:
        return torch.from_numpy(val).to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(val), device=device).to(dtype=dtype)


def _signature(val: Any) -> tuple:
    """What ``encode`` memoizes on: the kind, shape and dtype of the input."""
    if isinstance(val, (torch.Tensor, np.ndarray)):
        return (type(val), tuple(val.shape), str(val.dtype))
    if isinstance(val, list):
        return (list, len(val))
    return (type(val),)


def _compact_clone(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` that keeps expanded (stride-0) dims expanded."""
    return squash(t).clone().expand(t.shape)


class TensorSpec(ShapeOpsMixin, abc.ABC):
    """Abstract description of a tensor: shape (batch dims included), dtype, device, valid values.

    Subclasses implement :meth:`_rand`, :meth:`_invalid_reason` and :meth:`_project`, and list
    their shape-aligned tensor parameters in ``_tensor_params``. A ``-1`` in the shape is a
    dynamic dim (any extent is accepted; samples use 1).

    Attributes:
        shape: the full shape, batch dims included.
        device: where the tensors it produces live.
        dtype: the dtype of the tensors it produces.
        domain: ``"continuous"`` or ``"discrete"``.

    Examples:
        >>> from gpusim.specs import Bounded
        >>> spec = Bounded(-1.0, 1.0, shape=(4, 3))
        >>> spec.rand().shape, spec.ndim
        (torch.Size([4, 3]), 2)
        >>> spec[0].shape
        torch.Size([3])
    """

    #: number of trailing dims of ``shape`` that are event dims (not indexable / reshapable)
    _event_ndim: int = 0
    #: (attribute name, number of trailing param dims after the batch dims)
    _tensor_params: tuple[tuple[str, int], ...] = ()
    #: non-tensor parameters compared by ``__eq__`` and shown by ``__repr__``
    _plain_params: tuple[str, ...] = ()

    dtype: torch.dtype
    domain: str

    @classmethod
    def __torch_function__(cls, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        return spec_torch_function(func, types, args, kwargs)

    # ------------------------------------------------------------------ basics
    @property
    def shape(self) -> torch.Size:
        """The full shape, batch dims included (``-1``: dynamic dim).

        Examples:
            >>> from gpusim.specs import OneHot
            >>> OneHot(3, shape=(4, 3)).shape
            torch.Size([4, 3])
        """
        return self._shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._shape = as_size(value)

    @property
    def device(self) -> torch.device:
        """The device of the tensors the spec produces (use :meth:`to` to move a spec).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).device
            device(type='cpu')
        """
        return self._device

    @device.setter
    def device(self, value: DEVICE_TYPING | None) -> None:
        self._device = make_device(value)

    @property
    def ndim(self) -> int:
        """Number of dims of :attr:`shape`.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(4, 3)).ndim
            2
        """
        return len(self.shape)

    def ndimension(self) -> int:
        """Number of dims of :attr:`shape` (same as :attr:`ndim`).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(4, 3)).ndimension()
            2
        """
        return self.ndim

    def numel(self) -> int:
        """Number of elements of a tensor of this spec (dynamic dims count as 1).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(4, 3)).numel(), Unbounded(shape=(-1, 3)).numel()
            (12, 3)
        """
        return self._safe_shape.numel()

    @property
    def batch_shape(self) -> torch.Size:
        """Leading dims that index/expand/reshape act on (``shape`` minus event dims).

        The event dims are the trailing dims a single value needs whole, e.g. the last dim of a
        :class:`~gpusim.specs.OneHot`.

        Examples:
            >>> from gpusim.specs import OneHot, Unbounded
            >>> OneHot(3, shape=(4, 3)).batch_shape, Unbounded(shape=(4, 3)).batch_shape
            (torch.Size([4]), torch.Size([4, 3]))
        """
        return self.shape[: self.ndim - self._event_ndim]

    @property
    def _safe_shape(self) -> torch.Size:
        """The shape with dynamic (``-1``) dims replaced by 1."""
        return safe_size(self.shape)

    @property
    def _eq_class(self) -> type:
        return type(self)

    def _full_shape(self, shape: Any) -> torch.Size:
        if shape is None or (type(shape) is torch.Size and not shape):  # the step loop's draws
            safe = self._safe_shape
            return safe if type(safe) is torch.Size else torch.Size(safe)
        return torch.Size((*as_size(shape), *self._safe_shape))

    def _init_common(self, shape: Any, device: Any, dtype: torch.dtype, domain: str) -> None:
        self._shape = as_size(shape)
        self._device = make_device(device)
        self.dtype = dtype
        self.domain = domain
        self._memo: dict | None = None

    def _replace(self, params: dict[str, torch.Tensor] | None = None, **attrs: Any) -> TensorSpec:
        """Shallow copy with some attributes and tensor parameters replaced (no re-validation)."""
        new = copy.copy(self)
        new._memo = None if self._memo is None else {}
        for name, value in attrs.items():
            setattr(new, name, value)
        if params:
            new._set_params(params)
        new._post_replace()
        return new

    def _set_params(self, params: dict[str, torch.Tensor]) -> None:
        """Stores new tensor parameters (full-shape tensors)."""
        for name, value in params.items():
            object.__setattr__(self, name, value)

    def _post_replace(self) -> None:
        """Hook to refresh cached values derived from the parameters (default: nothing)."""

    def _params(self) -> dict[str, torch.Tensor]:
        """The tensor parameters, full shape (possibly expanded views)."""
        return {name: getattr(self, name) for name, _ in self._tensor_params if getattr(self, name) is not None}

    def _param_event(self, name: str) -> int:
        return dict(self._tensor_params)[name]

    def _map_params(self, fn: Callable[[torch.Tensor, int], torch.Tensor]) -> dict:
        """Applies ``fn(tensor, n_param_event_dims)`` to every tensor parameter."""
        return {name: fn(t, self._param_event(name)) for name, t in self._params().items()}

    def clear_device_(self) -> TensorSpec:
        """A no-op for leaf specs (which always have a device); returns self.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded().clear_device_().device
            device(type='cpu')
        """
        return self

    # ------------------------------------------------------------ generation
    @abc.abstractmethod
    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        """Draws a random tensor of ``full_shape`` (``(*prefix, *safe_shape)``)."""

    def rand(self, shape: Any = None) -> torch.Tensor:
        """Draws a random value inside the spec, with ``shape`` prepended to the spec shape.

        Args:
            shape: extra leading dims (default none).

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Categorical(3, shape=(4,)).rand((2,)).shape
            torch.Size([2, 4])
        """
        return self._rand(self._full_shape(shape))

    def sample(self, shape: Any = None) -> torch.Tensor:
        """Same as :meth:`rand`.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> x = Bounded(0.0, 1.0, shape=(3,)).sample((2,))
            >>> x.shape, bool(((x >= 0) & (x <= 1)).all())
            (torch.Size([2, 3]), True)
        """
        return self.rand(shape)

    def zero(self, shape: Any = None) -> torch.Tensor:
        """Returns zeros of the spec dtype/device, with ``shape`` prepended.

        Like TorchRL's, the result is a buffer: zero need not be a valid value of the spec.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).zero()
            tensor([0., 0.])
        """
        return torch.zeros(self._full_shape(shape), dtype=self.dtype, device=self.device)

    def zeros(self, shape: Any = None) -> torch.Tensor:
        """Same as :meth:`zero`.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Categorical(3, shape=(2,)).zeros((2,))
            tensor([[0, 0],
                    [0, 0]])
        """
        return self.zero(shape)

    def one(self, shape: Any = None) -> torch.Tensor:
        """Returns ones of the spec dtype/device, with ``shape`` prepended.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).one()
            tensor([1., 1.])
        """
        return torch.ones(self._full_shape(shape), dtype=self.dtype, device=self.device)

    def ones(self, shape: Any = None) -> torch.Tensor:
        """Same as :meth:`one`.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Categorical(3, shape=(2,)).ones((2,))
            tensor([[1, 1],
                    [1, 1]])
        """
        return self.one(shape)

    # ------------------------------------------------------------ membership
    def _shape_matches(self, shape: torch.Size) -> bool:
        """Whether a value shape ends with the spec shape (dynamic dims match any extent)."""
        n = self.ndim
        if len(shape) < n:
            return False
        tail = shape[len(shape) - n :]
        return all(s == DYNAMIC or s == v for s, v in zip(self.shape, tail))

    def _shape_reason(self, val: Any) -> str | None:
        if not isinstance(val, torch.Tensor):
            return f"expected a torch.Tensor, got {type(val).__name__}"
        if val.dtype != self.dtype:
            return f"dtype mismatch: value has {val.dtype}, spec has {self.dtype}"
        if not self._shape_matches(val.shape):
            return f"shape mismatch: value shape {tuple(val.shape)} does not end with spec shape {tuple(self.shape)}"
        return None

    @abc.abstractmethod
    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        """Returns why ``val`` (already shape/dtype-checked) is outside the spec, or None."""

    def invalid_reason(self, val: Any) -> str | None:
        """Returns a message saying why ``val`` is not in the spec, or None when it is.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(2,)).invalid_reason(torch.tensor([0.5, 2.0]))
            'values out of bounds: 1 element(s) outside [low, high], e.g. 2.0'
        """
        reason = self._shape_reason(val)
        if reason is not None:
            return reason
        return self._invalid_reason(val)

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` has the spec dtype, ends with the spec shape and holds valid values.

        This synchronizes with the device; it is meant for checks, not for the step path.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> spec = Categorical(3, shape=(2,))
            >>> spec.is_in(torch.tensor([0, 2])), spec.is_in(torch.tensor([0, 3]))
            (True, False)
        """
        return self.invalid_reason(val) is None

    def contains(self, val: Any) -> bool:
        """Same as :meth:`is_in`.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Bounded(0.0, 1.0, shape=(2,))
            >>> spec.contains(torch.tensor([0.0, 1.0])), spec.contains(torch.tensor([0.0, 1.5]))
            (True, False)
        """
        return self.is_in(val)

    def assert_is_in(self, val: Any) -> None:
        """Raises :class:`SpecValueError` naming what is wrong when ``val`` is not in the spec.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Categorical(3).assert_is_in(torch.tensor(5))
            Traceback (most recent call last):
            ...
            gpusim.specs.base.SpecValueError: value not in Categorical(n=3, ...): values out ...
        """
        reason = self.invalid_reason(val)
        if reason is not None:
            raise SpecValueError(f"value not in {type(self).__name__}({self._short()}): {reason}")

    def type_check(self, value: Any, key: Any = None) -> None:
        """Raises :class:`TypeError` when ``value`` is not a tensor of the spec dtype.

        Args:
            value: the tensor to check.
            key: the key the value was read from (only used in the message).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded().type_check(torch.zeros(1))
        """
        if not isinstance(value, torch.Tensor) or value.dtype != self.dtype:
            got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
            where = f" for key {key!r}" if key is not None else ""
            raise TypeError(f"{type(self).__name__}: expected a tensor of dtype {self.dtype}{where}, got {got}")

    # ------------------------------------------------------------ conversion
    @abc.abstractmethod
    def _project(self, val: torch.Tensor) -> torch.Tensor:
        """Maps ``val`` (a tensor) to the nearest valid value, unconditionally."""

    def project(self, val: Any) -> torch.Tensor:
        """Maps ``val`` to a valid value (clamp / round), in the spec dtype and device.

        A value already in the spec is returned as is (the same object).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(2,)).project(torch.tensor([-3.0, 0.5]))
            tensor([0.0000, 0.5000])
        """
        if not isinstance(val, torch.Tensor):
            val = torch.as_tensor(np.asarray(val), device=self.device)
        if self.is_in(val):
            return val
        return self._project(val.to(self.device))

    def memoize_encode(self, mode: bool = True) -> None:
        """Caches how :meth:`encode` converts each kind of input (type, shape, dtype).

        Later calls with the same kind of input skip the checks that chose the conversion.

        Args:
            mode: True to memoize, False to go back to eager encoding.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Unbounded(shape=(2,))
            >>> spec.memoize_encode()
            >>> spec.encode([1.0, 2.0])
            tensor([1., 2.])
        """
        self._memo = {} if mode else None

    def erase_memoize_cache(self) -> None:
        """Forgets the conversions cached by :meth:`memoize_encode`.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Unbounded(shape=(2,))
            >>> spec.memoize_encode()
            >>> spec.erase_memoize_cache()
        """
        if self._memo is not None:
            self._memo.clear()

    def encode(self, val: Any, *, ignore_device: bool = False) -> Any:
        """Turns a numpy array, list or scalar into a tensor of the spec dtype, device and shape.

        As in TorchRL, a tensor is returned as is. A list of one element is unwrapped; a value
        whose shape is not the spec shape is reshaped to it.

        Args:
            val: the value.
            ignore_device: if True, the result stays on the cpu (the caller moves it).

        Raises:
            RuntimeError: ``Shape mismatch`` when the value cannot be reshaped to the spec shape.
            SpecValueError: when the ``CHECK_SPEC_ENCODE`` environment variable is set and the
                result is not in the spec.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> import numpy as np
            >>> Unbounded(shape=(2,)).encode(np.array([1.0, 2.0]))
            tensor([1., 2.])
        """
        memo = self._memo
        if memo is None:
            out = self._encoder(val, ignore_device)(val)
        else:
            key = (ignore_device, _signature(val))
            fn = memo.get(key)
            if fn is None:
                fn = memo[key] = self._encoder(val, ignore_device)
            out = fn(val)
        if check_spec_encode():
            self.assert_is_in(out)
        return out

    def _as_tensor_steps(self, val: Any, ignore_device: bool, dtype: Any) -> list[Callable]:
        """The conversion steps of a non-tensor input into a tensor (lists, numpy views)."""
        steps: list[Callable] = []
        if isinstance(val, list):
            steps.append((lambda v: v[0]) if len(val) == 1 else np.array)
            val = steps[-1](val)
        if isinstance(val, np.ndarray) and not all(s > 0 for s in val.strides):
            steps.append(np.copy)
        device = None if ignore_device else self.device
        steps.append(lambda v: torch.as_tensor(v, device=device, dtype=dtype))
        return steps

    def _encoder(self, val: Any, ignore_device: bool) -> Callable[[Any], Any]:
        """Builds the function that encodes inputs like ``val``."""
        if isinstance(val, torch.Tensor):
            return lambda v: v
        steps = self._as_tensor_steps(val, ignore_device, self.dtype)
        steps.append(self._fit_shape)
        return _chain(steps)

    def _fit_shape(self, val: torch.Tensor) -> torch.Tensor:
        if val.shape == self.shape:
            return val
        try:
            return val.reshape(self.shape)
        except RuntimeError as err:
            raise RuntimeError(
                f"Shape mismatch: the value has shape {tuple(val.shape)} which is incompatible "
                f"with the spec shape {tuple(self.shape)} of {type(self).__name__}."
            ) from err

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Returns ``val`` as a numpy array (on host); ``safe=True`` checks it first.

        Args:
            val: the tensor.
            safe: check ``val`` against the spec (default: the ``CHECK_SPEC_ENCODE``
                environment variable).

        Raises:
            SpecValueError: with ``safe=True``, when ``val`` is not in the spec.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).to_numpy(torch.ones(2))
            array([1., 1.], dtype=float32)
        """
        if check_spec_encode() if safe is None else safe:
            self.assert_is_in(val)
        return val.detach().cpu().numpy()

    def cardinality(self) -> int:
        """The number of possible outcomes (discrete specs only).

        Raises:
            NotImplementedError: for specs whose outcomes cannot be counted.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> Categorical(3, shape=(2,)).cardinality()
            3
            >>> Unbounded().cardinality()
            Traceback (most recent call last):
            ...
            NotImplementedError: cardinality is not implemented for Unbounded specs
        """
        raise NotImplementedError(f"cardinality is not implemented for {type(self).__name__} specs")

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every possible outcome, stacked on a new leading dim (discrete specs only).

        Args:
            use_mask: drop the outcomes the spec mask forbids (specs with a mask only).

        Raises:
            NotImplementedError: for specs whose outcomes cannot be listed.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical
            >>> Categorical(3, shape=(2,)).enumerate()
            tensor([[0, 0],
                    [1, 1],
                    [2, 2]])
            >>> Bounded(0.0, 1.0, shape=(2,)).enumerate()
            Traceback (most recent call last):
            ...
            NotImplementedError: enumerate is not implemented for Bounded specs
        """
        raise NotImplementedError(f"enumerate is not implemented for {type(self).__name__} specs")

    # ------------------------------------------------------------ device/dtype
    def _cast_params(self, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """Parameters to replace when the spec dtype changes (default: none)."""
        return {}

    def to(self, dest: DEVICE_TYPING | torch.dtype | None) -> TensorSpec:
        """Returns the spec on another device, or with another dtype (self if unchanged).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0, 5, shape=(2,), dtype=torch.int64).to(torch.float32).dtype
            torch.float32
        """
        if dest is None:
            return self
        if isinstance(dest, torch.dtype):
            if dest == self.dtype:
                return self
            return self._replace(params=self._cast_params(dest), dtype=dest, domain=self.domain)
        device = make_device(dest)
        if device == self.device:
            return self
        moved = self._map_params(lambda t, ev: squash(t).to(device).expand(t.shape))
        return self._replace(params=moved, _device=device)

    def cpu(self) -> TensorSpec:
        """Returns the spec on the cpu (self if it is there already).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Bounded(0.0, 1.0, shape=(2,))
            >>> spec.cpu() is spec, spec.cpu().device
            (True, device(type='cpu'))
        """
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> TensorSpec:
        """Returns the spec on a CUDA device (``device`` ordinal, default current).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).cuda(0).device  # holds no tensor: runs without a GPU too
            device(type='cuda', index=0)
        """
        return self.to("cuda" if device is None else torch.device("cuda", device))

    def clone(self) -> TensorSpec:
        """Returns a copy whose tensor parameters are cloned.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Bounded(0.0, 1.0, shape=(2,))
            >>> spec.clone() == spec
            True
        """
        return self._replace(params=self._map_params(lambda t, ev: _compact_clone(t)))

    # ------------------------------------------------------------ comparison
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorSpec) or other._eq_class is not self._eq_class:
            return False
        if (self.shape, self.dtype, self.device) != (other.shape, other.dtype, other.device):
            return False
        for name in self._plain_params:
            if getattr(self, name) != getattr(other, name):
                return False
        mine, theirs = self._params(), other._params()
        if set(mine) != set(theirs):
            return False
        for name, a in mine.items():
            b = theirs[name]
            if a.shape != b.shape or not torch.equal(a, b.to(a.device)):
                return False
        return True

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def _short(self) -> str:
        parts = [f"{name}={getattr(self, name)!r}" for name in self._plain_params]
        parts += [f"shape={tuple(self.shape)}", f"dtype={self.dtype}", f"device={self.device}"]
        return ", ".join(parts)

    def _repr_name(self) -> str:
        """The class name shown by ``repr`` (TorchRL's naming)."""
        return type(self).__name__

    def _repr_fields(self) -> list[str]:
        return [
            f"shape={self.shape}",
            f"space={self.space}",
            f"device={self.device}",
            f"dtype={self.dtype}",
            f"domain={self.domain}",
        ]

    def __repr__(self) -> str:
        body = ",\n".join(textwrap.indent(field, "    ") for field in self._repr_fields())
        return f"{self._repr_name()}(\n{body})"


def _chain(steps: list[Callable]) -> Callable[[Any], Any]:
    def run(val: Any) -> Any:
        for step in steps:
            val = step(val)
        return val

    return run


def is_index(key: Any) -> bool:
    """Whether ``key`` is an index (int/slice/tensor/...) rather than a (nested) string key.

    Examples:
        >>> is_index(0), is_index((slice(None), 1)), is_index(("a", "b"))
        (True, True, False)
    """
    if isinstance(key, str):
        return False
    if isinstance(key, tuple):
        if not key:
            return True
        return not all(isinstance(k, (str, tuple)) and not is_index(k) for k in key)
    return isinstance(key, _INDEX_TYPES) or isinstance(key, np.integer)
