"""The abstract :class:`TensorSpec` base class and shared helpers for gpusim specs.

A spec describes one tensor: its shape (batch dims included), dtype, device and the set of valid
values. Leaf specs are immutable-ish values: every shape or device operation returns a new spec.

Subclasses describe their parameters (bounds, masks) as *shape-aligned* tensors: each parameter
has layout ``(*batch_shape, *event)`` where ``batch_shape`` is the spec shape minus its event
dims. That lets :meth:`TensorSpec.expand`, indexing, squeeze, unsqueeze and reshape be written
once here for every leaf class.
"""

from __future__ import annotations

import abc
import copy
from typing import Any, Union

import numpy as np
import torch

__all__ = ["DEVICE_TYPING", "TensorSpec", "make_device", "as_size"]

DEVICE_TYPING = Union[torch.device, str, int]

_INDEX_TYPES = (int, slice, type(Ellipsis), type(None), torch.Tensor, np.ndarray, list, range)


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


def as_size(shape: Any) -> torch.Size:
    """Turns an int, a sequence of ints or None into a :class:`torch.Size`.

    Examples:
        >>> as_size(3), as_size((2, 3)), as_size(None)
        (torch.Size([3]), torch.Size([2, 3]), torch.Size([]))
    """
    if shape is None:
        return torch.Size(())
    if isinstance(shape, torch.Size):
        return shape
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return torch.Size((int(shape),))
    if isinstance(shape, torch.Tensor):
        return torch.Size(int(s) for s in shape.reshape(-1).tolist())
    try:
        dims = tuple(int(s) for s in shape)
    except TypeError as err:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from err
    if any(d < 0 for d in dims):
        raise ValueError(f"shape must have non-negative dims, got {tuple(dims)}")
    return torch.Size(dims)


def _shape_args(shape: tuple) -> torch.Size:
    """Accepts ``f(2, 3)``, ``f((2, 3))`` and ``f(torch.Size([2, 3]))`` call styles."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return torch.Size(int(s) for s in shape[0])
    return torch.Size(int(s) for s in shape)


def _expand_ellipsis(idx: Any, ndim: int) -> tuple:
    """Normalizes an index to a tuple without Ellipsis, relative to ``ndim`` leading dims.

    The result only touches the first ``ndim`` dims of any tensor it is applied to, so the same
    index can be applied to parameters or children that carry extra trailing dims.
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    consumed = 0
    for item in idx:
        if item is None or item is Ellipsis:
            continue
        if isinstance(item, torch.Tensor) and item.dtype == torch.bool:
            consumed += max(item.ndim, 1)
        elif isinstance(item, np.ndarray) and item.dtype == np.bool_:
            consumed += max(item.ndim, 1)
        else:
            consumed += 1
    n_ellipsis = sum(item is Ellipsis for item in idx)
    if n_ellipsis > 1:
        raise IndexError(f"an index can only have a single ellipsis, got {idx!r}")
    if consumed > ndim:
        raise IndexError(f"too many indices for a spec with {ndim} indexable dims: {idx!r}")
    if n_ellipsis == 0:
        return idx
    out: list = []
    for item in idx:
        if item is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(item)
    return tuple(out)


def _indexed_shape(shape: torch.Size, idx: tuple) -> torch.Size:
    """Shape of a tensor of ``shape`` indexed by ``idx`` (no real allocation)."""
    idx = tuple(i.cpu() if isinstance(i, torch.Tensor) else i for i in idx)
    dummy = torch.empty((), dtype=torch.uint8).expand(shape)
    return dummy[idx].shape


def _to_tensor(val: Any, dtype: torch.dtype | None, device: torch.device) -> torch.Tensor:
    """Converts numpy arrays, lists, scalars and tensors into a tensor of ``dtype`` on ``device``."""
    if isinstance(val, torch.Tensor):
        return val.to(device=device, dtype=dtype)
    if isinstance(val, np.ndarray) and not val.flags.writeable:
        val = val.copy()
    if isinstance(val, np.ndarray) and val.dtype == np.float64 and dtype is not None:
        return torch.from_numpy(val).to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(val), device=device).to(dtype=dtype)


class TensorSpec(abc.ABC):
    """Abstract description of a tensor: shape (batch dims included), dtype, device, valid values.

    Subclasses implement :meth:`_rand`, :meth:`_invalid_reason` and :meth:`_project_values`,
    and list their shape-aligned tensor parameters in ``_tensor_params``.

    Attributes:
        shape: the full shape, batch dims included.
        device: where the tensors it produces live.
        dtype: the dtype of the tensors it produces.

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

    shape: torch.Size
    device: torch.device
    dtype: torch.dtype

    # ------------------------------------------------------------------ basics
    @property
    def ndim(self) -> int:
        """Number of dims of :attr:`shape`."""
        return len(self.shape)

    def ndimension(self) -> int:
        """Number of dims of :attr:`shape` (same as :attr:`ndim`)."""
        return self.ndim

    def numel(self) -> int:
        """Number of elements of a tensor of this spec."""
        return self.shape.numel()

    @property
    def batch_shape(self) -> torch.Size:
        """Leading dims that index/expand/reshape act on (``shape`` minus event dims)."""
        return self.shape[: self.ndim - self._event_ndim]

    @property
    def _eq_class(self) -> type:
        return type(self)

    def _full_shape(self, shape: Any) -> torch.Size:
        return torch.Size((*as_size(shape), *self.shape))

    def _replace(self, **attrs: Any) -> TensorSpec:
        """Shallow copy with some attributes replaced (no re-validation)."""
        new = copy.copy(self)
        for name, value in attrs.items():
            object.__setattr__(new, name, value)
        new._post_replace()
        return new

    def _post_replace(self) -> None:
        """Hook to refresh cached values derived from the parameters (default: nothing)."""

    def _params(self) -> dict[str, torch.Tensor]:
        return {
            name: getattr(self, name)
            for name, _ in self._tensor_params
            if getattr(self, name) is not None
        }

    def _param_event(self, name: str) -> int:
        return dict(self._tensor_params)[name]

    # ------------------------------------------------------------ generation
    @abc.abstractmethod
    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        """Draws a random tensor of ``full_shape`` (``(*prefix, *self.shape)``)."""

    def rand(self, shape: Any = ()) -> torch.Tensor:
        """Draws a random value inside the spec, with ``shape`` prepended to the spec shape.

        Args:
            shape: extra leading dims.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Categorical(3, shape=(4,)).rand((2,)).shape
            torch.Size([2, 4])
        """
        return self._rand(self._full_shape(shape))

    def zero(self, shape: Any = ()) -> torch.Tensor:
        """Returns zeros of the spec dtype/device, with ``shape`` prepended.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).zero()
            tensor([0., 0.])
        """
        return torch.zeros(self._full_shape(shape), dtype=self.dtype, device=self.device)

    def one(self, shape: Any = ()) -> torch.Tensor:
        """Returns ones of the spec dtype/device, with ``shape`` prepended.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).one()
            tensor([1., 1.])
        """
        return torch.ones(self._full_shape(shape), dtype=self.dtype, device=self.device)

    # ------------------------------------------------------------ membership
    def _shape_reason(self, val: Any) -> str | None:
        if not isinstance(val, torch.Tensor):
            return f"expected a torch.Tensor, got {type(val).__name__}"
        if val.dtype != self.dtype:
            return f"dtype mismatch: value has {val.dtype}, spec has {self.dtype}"
        if val.ndim < self.ndim or val.shape[val.ndim - self.ndim :] != self.shape:
            return (
                f"shape mismatch: value shape {tuple(val.shape)} does not end with spec shape "
                f"{tuple(self.shape)}"
            )
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

    def assert_is_in(self, val: Any) -> None:
        """Raises :class:`ValueError` naming what is wrong when ``val`` is not in the spec.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Categorical(3).assert_is_in(torch.tensor(5))
            Traceback (most recent call last):
            ...
            ValueError: value not in Categorical(n=3, ...): values out of range: ...
        """
        reason = self.invalid_reason(val)
        if reason is not None:
            raise ValueError(f"value not in {type(self).__name__}({self._short()}): {reason}")

    def type_check(self, value: Any, key: Any = None) -> None:
        """Raises :class:`TypeError` when ``value`` is not a tensor of the spec dtype.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded().type_check(torch.zeros(()))
        """
        if not isinstance(value, torch.Tensor) or value.dtype != self.dtype:
            got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
            where = f" for key {key!r}" if key is not None else ""
            raise TypeError(f"expected a tensor of dtype {self.dtype}{where}, got {got}")

    # ------------------------------------------------------------ conversion
    def _project_values(self, val: torch.Tensor) -> torch.Tensor:
        return val

    def project(self, val: Any) -> torch.Tensor:
        """Maps ``val`` to the nearest valid value (clamp / round), in the spec dtype and device.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(2,)).project(torch.tensor([-3.0, 0.5]))
            tensor([0.0000, 0.5000])
        """
        if not isinstance(val, torch.Tensor):
            val = torch.as_tensor(np.asarray(val), device=self.device)
        return self._project_values(val.to(self.device))

    def encode(self, val: Any) -> torch.Tensor:
        """Turns a numpy array, list, scalar or tensor into a tensor of the spec dtype/device/shape.

        A value whose shape neither ends with the spec shape nor broadcasts to it, but has as many
        elements, is reshaped to the spec shape.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> import numpy as np
            >>> Unbounded(shape=(2,)).encode(np.array([1.0, 2.0]))
            tensor([1., 2.])
        """
        out = _to_tensor(val, self.dtype, self.device)
        return self._fit_shape(out, val)

    def _fit_shape(self, out: torch.Tensor, val: Any) -> torch.Tensor:
        if out.shape[out.ndim - self.ndim :] == self.shape and out.ndim >= self.ndim:
            return out
        if out.numel() == self.numel():
            return out.reshape(self.shape)
        try:
            return out.expand(self.shape).clone()
        except RuntimeError as err:
            raise ValueError(
                f"cannot encode a value of shape {tuple(out.shape)} into {type(self).__name__} "
                f"of shape {tuple(self.shape)}"
            ) from err

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Returns ``val`` as a numpy array (on host); ``safe=True`` checks it first.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2,)).to_numpy(torch.ones(2))
            array([1., 1.], dtype=float32)
        """
        if safe:
            self.assert_is_in(val)
        return val.detach().cpu().numpy()

    # ------------------------------------------------------------ shape ops
    def _check_new_batch(self, op: str, new_shape: torch.Size) -> None:
        event = self.shape[self.ndim - self._event_ndim :]
        if self._event_ndim and new_shape[len(new_shape) - self._event_ndim :] != event:
            raise ValueError(
                f"{op}: the last {self._event_ndim} dim(s) of {type(self).__name__} must stay "
                f"{tuple(event)}, got new shape {tuple(new_shape)}"
            )

    def _map_params(self, fn) -> dict[str, torch.Tensor]:
        """Applies ``fn(tensor, n_param_event_dims)`` to every tensor parameter."""
        return {name: fn(t, self._param_event(name)) for name, t in self._params().items()}

    def expand(self, *shape: Any) -> TensorSpec:
        """Returns the spec with extra leading dims; the new shape must end with the current one.

        Size-1 dims can be expanded and ``-1`` keeps a dim, as in :meth:`torch.Tensor.expand`.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(3,)).expand(4, 3).shape
            torch.Size([4, 3])
        """
        new = list(_shape_args(shape))
        if len(new) < self.ndim:
            raise ValueError(
                f"expand: new shape {tuple(new)} has fewer dims than spec shape {tuple(self.shape)}"
            )
        lead = len(new) - self.ndim
        for i, cur in enumerate(self.shape):
            if new[lead + i] == -1:
                new[lead + i] = cur
            elif new[lead + i] != cur and cur != 1:
                raise ValueError(
                    f"expand: new shape {tuple(new)} must end with the spec shape "
                    f"{tuple(self.shape)}"
                )
        if any(d < 0 for d in new):
            raise ValueError(f"expand: invalid new shape {tuple(shape)}")
        new_shape = torch.Size(new)
        self._check_new_batch("expand", new_shape)
        new_batch = new_shape[: len(new_shape) - self._event_ndim]

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.expand(*new_batch, *t.shape[t.ndim - ev :])

        return self._replace(shape=new_shape, **self._map_params(fn))

    def __getitem__(self, idx: Any) -> TensorSpec:
        """Indexes the spec over its leading (batch) dims.

        Examples:
            >>> from gpusim.specs import OneHot
            >>> OneHot(5, shape=(4, 3, 5))[1:3].shape
            torch.Size([2, 3, 5])
        """
        bshape = self.batch_shape
        nidx = _expand_ellipsis(idx, len(bshape))
        new_batch = _indexed_shape(bshape, nidx)
        event = self.shape[len(bshape) :]

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            dev_idx = tuple(i.to(t.device) if isinstance(i, torch.Tensor) else i for i in nidx)
            return t[dev_idx]

        return self._replace(shape=torch.Size((*new_batch, *event)), **self._map_params(fn))

    def squeeze(self, dim: int | None = None) -> TensorSpec:
        """Removes size-1 batch dims (all of them, or ``dim``).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(1, 3, 1)).squeeze().shape
            torch.Size([3])
        """
        bnd = len(self.batch_shape)
        if dim is None:
            dims = [i for i in range(bnd) if self.shape[i] == 1]
        else:
            d = dim + self.ndim if dim < 0 else dim
            if not 0 <= d < bnd:
                raise ValueError(
                    f"squeeze: dim {dim} is not a batch dim of {type(self).__name__} with shape "
                    f"{tuple(self.shape)}"
                )
            dims = [d] if self.shape[d] == 1 else []
        if not dims:
            return self
        new_shape = torch.Size(s for i, s in enumerate(self.shape) if i not in dims)

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.squeeze(tuple(dims))

        return self._replace(shape=new_shape, **self._map_params(fn))

    def unsqueeze(self, dim: int) -> TensorSpec:
        """Inserts a size-1 dim at ``dim`` (which must fall among the batch dims).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(3,)).unsqueeze(-1).shape
            torch.Size([3, 1])
        """
        d = dim + self.ndim + 1 if dim < 0 else dim
        if not 0 <= d <= len(self.batch_shape):
            raise ValueError(
                f"unsqueeze: dim {dim} is out of the batch dims of {type(self).__name__} with "
                f"shape {tuple(self.shape)}"
            )
        new_shape = torch.Size((*self.shape[:d], 1, *self.shape[d:]))

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.unsqueeze(d)

        return self._replace(shape=new_shape, **self._map_params(fn))

    def reshape(self, *shape: Any) -> TensorSpec:
        """Reshapes the batch dims (event dims must be kept); ``-1`` is inferred.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(4, 3)).reshape(2, 6).shape
            torch.Size([2, 6])
        """
        target = list(_shape_args(shape))
        if target.count(-1) > 1:
            raise ValueError(f"reshape: at most one -1 allowed, got {tuple(target)}")
        if -1 in target:
            known = int(np.prod([d for d in target if d != -1]))
            target[target.index(-1)] = self.numel() // known if known else 0
        new_shape = torch.Size(target)
        if new_shape.numel() != self.numel():
            raise ValueError(
                f"reshape: cannot reshape {type(self).__name__} of shape {tuple(self.shape)} "
                f"into {tuple(new_shape)}"
            )
        self._check_new_batch("reshape", new_shape)
        new_batch = new_shape[: len(new_shape) - self._event_ndim]

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.reshape(*new_batch, *t.shape[t.ndim - ev :])

        return self._replace(shape=new_shape, **self._map_params(fn))

    view = reshape

    # ------------------------------------------------------------ device/dtype
    def _cast_params(self, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """Parameters to replace when the spec dtype changes (default: none)."""
        return {}

    def to(self, dest: DEVICE_TYPING | torch.dtype) -> TensorSpec:
        """Returns the spec on another device, or with another dtype.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0, 5, shape=(2,), dtype=torch.int64).to(torch.float32).dtype
            torch.float32
        """
        if isinstance(dest, torch.dtype):
            if dest == self.dtype:
                return self
            return self._replace(dtype=dest, **self._cast_params(dest))
        device = make_device(dest)
        if device == self.device:
            return self
        return self._replace(
            device=device, **self._map_params(lambda t, ev: t.to(device, non_blocking=True))
        )

    def cpu(self) -> TensorSpec:
        """Returns the spec on the cpu."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> TensorSpec:
        """Returns the spec on a CUDA device (``device`` ordinal, default current)."""
        return self.to("cuda" if device is None else torch.device("cuda", device))

    def clone(self) -> TensorSpec:
        """Returns a copy whose tensor parameters are cloned.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Bounded(0.0, 1.0, shape=(2,))
            >>> spec.clone() == spec
            True
        """
        return self._replace(**self._map_params(lambda t, ev: t.clone()))

    # ------------------------------------------------------------ comparison
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorSpec) or other._eq_class is not self._eq_class:
            return False
        if (self.shape, self.dtype, self.device) != (other.shape, other.dtype, other.device):
            return False
        for name in self._plain_params:
            if getattr(self, name) != getattr(other, name):
                return False
        for name, _ in self._tensor_params:
            a, b = getattr(self, name), getattr(other, name)
            if (a is None) != (b is None):
                return False
            if a is not None and not (a.shape == b.shape and torch.equal(a, b.to(a.device))):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def _short(self) -> str:
        parts = [f"{name}={getattr(self, name)!r}" for name in self._plain_params]
        parts += [f"shape={tuple(self.shape)}", f"dtype={self.dtype}", f"device={self.device}"]
        return ", ".join(parts)

    def __repr__(self) -> str:
        extra = []
        for name, _ in self._tensor_params:
            t = getattr(self, name)
            if t is not None:
                extra.append(f"{name}={_tensor_repr(t)}")
        body = ", ".join([self._short(), *extra])
        return f"{type(self).__name__}({body})"


def _tensor_repr(t: torch.Tensor) -> str:
    """Short repr of a parameter tensor: the unique value when constant, else shape+dtype."""
    if t.numel() == 0:
        return f"Tensor(shape={tuple(t.shape)})"
    flat = t.reshape(-1)
    if t.device.type == "cpu" and bool((flat == flat[0]).all()):
        return f"{flat[0].item()!r}"
    return f"Tensor(shape={tuple(t.shape)}, dtype={t.dtype})"


def is_index(key: Any) -> bool:
    """Whether ``key`` is an index (int/slice/tensor/...) rather than a (nested) string key."""
    if isinstance(key, str):
        return False
    if isinstance(key, tuple):
        if not key:
            return True
        return not all(isinstance(k, (str, tuple)) and not is_index(k) for k in key)
    return isinstance(key, _INDEX_TYPES) or isinstance(key, np.integer)

