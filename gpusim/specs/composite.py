"""The :class:`Composite` spec: a (nested) mapping of string keys to specs with shared batch dims."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from gpusim.specs._composite_data import CompositeDataMixin
from gpusim.specs._keys import KeysView, NestedKey, pack, unravel
from gpusim.specs._lock import LockMixin
from gpusim.specs._names import NamesMixin
from gpusim.specs._shapes import DYNAMIC, as_size, expand_index, index_plan, safe_size, shape_args
from gpusim.specs.base import (
    DEVICE_TYPING,
    TensorSpec,
    is_index,
    make_device,
    spec_torch_function,
)

__all__ = ["Composite", "NestedKey"]


_NO_DEFAULT = object()
_RESERVED = frozenset({"shape", "device", "dtype", "space"})
_ATTRS = frozenset({"shape", "device", "batch_size", "names", "is_locked", "data_cls", "step_mdp_static"})


def _is_composite_cls(cls: type) -> bool:
    return issubclass(cls, Composite)


class Composite(NamesMixin, CompositeDataMixin, LockMixin):
    """A mapping of string keys to specs (or nested Composites) sharing leading batch dims.

    Every child's shape must start with the composite's ``shape``. Keys may be nested tuples:
    ``c["a", "b"]`` reaches into nested Composites, and setting a nested key creates the missing
    intermediate Composites (with the shape and device of the Composite being set into). ``None``
    values are placeholders. A nested Composite with fewer dims than ``shape`` (e.g. ``()``) is
    copied with its shape set to ``shape``.

    Args:
        *args: at most one mapping of entries (dict values become nested Composites; tuple keys
            make nested entries).
        shape: the batch dims shared by all children (default ``()``; ``batch_size`` is an
            alias).
        device: the device of all children (they are moved there), or None (heterogeneous).
        data_cls: the tensordict class ``rand``/``zero``/``one`` build (default ``TensorDict``).
        step_mdp_static: whether the whole entry is copied as is by ``step_mdp``.
        names: names of the batch dims (passed on to nested Composites and generated data).
        **kwargs: more entries.

    Raises:
        ValueError: if a child's shape does not start with ``shape`` (naming the key).
        RuntimeError: on modification while locked (see :meth:`lock_`).

    Examples:
        >>> from gpusim.specs import Bounded, Categorical, Unbounded
        >>> spec = Composite(
        ...     obs=Unbounded(shape=(4, 3)),
        ...     agents={"action": Categorical(2, shape=(4, 2))},
        ...     shape=(4,),
        ... )
        >>> spec["agents", "action"].shape
        torch.Size([4, 2])
        >>> td = spec.rand()
        >>> td.batch_size, spec.is_in(td)
        (torch.Size([4]), True)
        >>> spec[:2]["obs"].shape
        torch.Size([2, 3])
    """

    domain = "composite"

    @classmethod
    def __torch_function__(cls, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        return spec_torch_function(func, types, args, kwargs)

    def __init__(
        self,
        *args: Any,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        data_cls: type | None = None,
        step_mdp_static: bool = False,
        names: list | None = None,
        **kwargs: Any,
    ) -> None:
        batch_size = kwargs.pop("batch_size", None)
        if batch_size is not None:
            if shape is not None:
                raise TypeError("Composite: cannot specify both batch_size and shape")
            shape = batch_size
        object.__setattr__(self, "_locked", False)
        object.__setattr__(self, "_lock_parents", [])
        self._shape = as_size(shape)
        self._device = None if device is None else make_device(device)
        self._specs: dict[str, Any] = {}
        self._names: list | None = None
        self._memo: bool = False
        self.data_cls = data_cls
        self.step_mdp_static = bool(step_mdp_static)
        if len(args) > 1:
            raise TypeError(f"Composite: expected at most one positional mapping of specs, got {len(args)}")
        entries: list[tuple[Any, Any]] = []
        if args and args[0] is not None:
            spec_dict = args[0]
            if isinstance(spec_dict, Composite):
                entries.extend(spec_dict._specs.items())
            elif isinstance(spec_dict, Mapping):
                entries.extend(spec_dict.items())
            else:
                raise TypeError(f"Composite: expected a dict of specs, got {type(spec_dict).__name__}")
        entries.extend(kwargs.items())
        for key, value in entries:
            self.set(key, value)
        if names is not None:
            self.names = names

    # ------------------------------------------------------------------ attrs
    @property
    def shape(self) -> torch.Size:
        """The batch dims shared by every child (``batch_size`` is the same property).

        Setting it checks the leaves and sets the shape of nested Composites whose shape does not
        start with the new one.

        Raises:
            ValueError: on setting a shape that a leaf's shape does not start with.
            RuntimeError: on setting the shape of a locked Composite.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded(shape=(4, 3)), shape=(4,))
            >>> spec.shape, spec.batch_size
            (torch.Size([4]), torch.Size([4]))
            >>> spec.shape = (4, 3)
            >>> spec.shape
            torch.Size([4, 3])
            >>> spec.shape = (2,)
            Traceback (most recent call last):
            ...
            ValueError: Composite: cannot set shape (2,): child 'obs' has shape (4, 3) which ...
        """
        return self._shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._check_unlocked("set the shape of")
        new = as_size(value)
        for key, spec in self._specs.items():
            if spec is None or spec.shape[: len(new)] == new:
                continue
            if isinstance(spec, Composite):
                spec.shape = new
            else:
                raise ValueError(
                    f"Composite: cannot set shape {tuple(new)}: child {key!r} has shape "
                    f"{tuple(spec.shape)} which does not start with it"
                )
        if len(new) != len(self._shape):
            self._names = None
        self._shape = new

    batch_size = shape

    @property
    def ndim(self) -> int:
        """Number of batch dims.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(obs=Unbounded(shape=(4, 3)), shape=(4,)).ndim
            1
        """
        return len(self._shape)

    def ndimension(self) -> int:
        """Number of batch dims (same as :attr:`ndim`).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(obs=Unbounded(shape=(4, 3)), shape=(4,)).ndimension()
            1
        """
        return self.ndim

    def numel(self) -> int:
        """Number of batch elements (dynamic dims count as 1).

        Examples:
            >>> Composite(shape=(4, 3)).numel(), Composite(shape=(-1, 3)).numel()
            (12, 3)
        """
        return safe_size(self._shape).numel()

    @property
    def _safe_shape(self) -> torch.Size:
        return safe_size(self._shape)

    @property
    def device(self) -> torch.device | None:
        """The device of every child, or None when unspecified (children may differ then).

        Setting a device moves every child there; use :meth:`clear_device_` to erase it.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded())
            >>> spec.device is None
            True
            >>> spec.device = "cpu"
            >>> spec.device, spec["obs"].device
            (device(type='cpu'), device(type='cpu'))
        """
        return self._device

    @device.setter
    def device(self, value: DEVICE_TYPING | None) -> None:
        self._check_unlocked("set the device of")
        if value is None:
            if self._device is not None:
                raise RuntimeError("To erase the device of a Composite, call spec.clear_device_().")
            return
        device = make_device(value)
        for key, spec in self._specs.items():
            if spec is not None:
                if isinstance(spec, Composite):
                    spec.device = device
                else:
                    self._specs[key] = spec.to(device)
        self._device = device

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype shared by every leaf, or None when the leaves differ (or there are none).

        Examples:
            >>> from gpusim.specs import Bounded, Unbounded
            >>> Composite(a=Unbounded(2), b=Composite(c=Bounded(0, 1, (2,)))).dtype
            torch.float32
            >>> Composite(a=Unbounded(2), b=Unbounded(2, dtype=torch.int64)).dtype is None
            True
        """
        dtypes = {getattr(leaf, "dtype", None) for _, leaf in self.items(True, True) if leaf is not None}
        return dtypes.pop() if len(dtypes) == 1 else None

    def clear_device_(self) -> Composite:
        """Erases the device of the composite and of its nested Composites; returns self.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded(), device="cpu").clear_device_().device is None
            True
        """
        self._check_unlocked("clear the device of")
        self._device = None
        for spec in self._specs.values():
            if spec is not None:
                spec.clear_device_()
        return self

    def _nested_composites(self) -> list[Composite]:
        return [s for s in self._specs.values() if isinstance(s, Composite)]

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name in _ATTRS:
            if getattr(self, "_locked", False) and name in ("_shape", "_device", "_specs"):
                raise RuntimeError(f"Cannot modify a locked Composite (tried to set {name}).")
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"Composite has no attribute {name!r}; use composite[{name!r}] = spec to add entries")

    # ------------------------------------------------------------------ mapping
    def _validate(self, key: NestedKey, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, Mapping) and not isinstance(value, Composite):
            value = Composite(value, shape=self._shape, device=self._device)
        if not isinstance(value, (TensorSpec, Composite)):
            raise TypeError(
                f"Composite: value for key {key!r} must be a TensorSpec, a Composite, a dict or "
                f"None, got {type(value).__name__}"
            )
        if self._device is not None and value.device != self._device:
            if isinstance(value, Composite) and not value.is_locked and value.device is None:
                value.device = self._device  # in place: the caller's object is the one stored
            else:
                value = value.to(self._device)
        shape = value.shape
        if shape[: self.ndim] != self._shape:
            from gpusim.specs.nontensor import NonTensor

            grows = (
                isinstance(value, (Composite, NonTensor))
                and value.ndim < self.ndim
                and self._shape[: value.ndim] == shape
            )
            if not grows:
                raise ValueError(
                    f"Composite: the shape of key {key!r} is {tuple(shape)}, which does not "
                    f"start with the Composite shape {tuple(self._shape)}"
                )
            value = value.clone()
            try:
                value.shape = self._shape
            except ValueError as err:
                raise ValueError(
                    f"Composite: the entry {key!r} of shape {tuple(shape)} cannot take the "
                    f"Composite shape {tuple(self._shape)}: {err}"
                ) from err
        register = getattr(value, "_register_batch_size", None)
        if register is not None:
            register(self._shape)
        return value

    def set(self, key: NestedKey, spec: Any) -> Composite:
        """Sets ``key`` (str or nested tuple) to ``spec``; returns self.

        Missing intermediate Composites are created with the shape and device of the Composite
        they are created in. Only the Composite that receives the entry must be unlocked.

        Raises:
            AttributeError: for the reserved names ``shape``, ``device``, ``dtype``, ``space``.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite()
            >>> c.set(("a", "b"), Unbounded()).keys(include_nested=True)
            keys([('a', 'b'), 'a'])
        """
        parts = unravel(key)
        node = self
        for i, part in enumerate(parts[:-1]):
            if not isinstance(node._specs, dict):  # a lazy stack of Composites: its own set
                node.set(pack(parts[i:]), spec)
                return self
            child = node._specs.get(part)
            if child is None:
                node._check_unlocked(f"set key {pack(parts)!r}")
                child = Composite(shape=node._shape, device=node._device)
                node._specs[part] = child
            elif not isinstance(child, Composite):
                raise KeyError(f"cannot set {pack(parts)!r}: {part!r} holds a {type(child).__name__}, not a Composite")
            node = child
        leaf = parts[-1]
        if not isinstance(node._specs, dict):
            node.set(leaf, spec)
            return self
        if leaf in _RESERVED:
            raise AttributeError(
                f"Composite[{leaf!r}] cannot be set: {leaf!r} is a reserved name "
                "(shape, device, dtype and space are attributes)"
            )
        node._check_unlocked(f"set key {pack(parts)!r}")
        node._specs[leaf] = node._validate(pack(parts), spec)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        if is_index(key):
            raise TypeError(f"Composite: setting by index ({key!r}) is not supported; set string keys")
        self.set(key, value)

    def _get_node(self, parts: tuple[str, ...]) -> Any:
        node: Any = self
        for i, part in enumerate(parts):
            if not isinstance(node, Composite):
                raise KeyError(
                    f"key {pack(parts)!r} not found: {pack(parts[:i])!r} is a {type(node).__name__}, not a Composite"
                )
            node = node._get_child(part, parts)
        return node

    def _get_child(self, part: str, parts: tuple[str, ...]) -> Any:
        if part not in self._specs:
            if part in _RESERVED:
                raise AttributeError(f"Composite has no key {part!r} ({part!r} is an attribute)")
            raise KeyError(f"key {pack(parts)!r} not found in Composite with keys {list(self._specs)}")
        return self._specs[part]

    def __getitem__(self, key: Any) -> Any:
        if is_index(key):
            return self._index(key)
        return self._get_node(unravel(key))

    def get(self, key: NestedKey, default: Any = _NO_DEFAULT) -> Any:
        """Returns the entry at ``key``, or ``default`` when missing (KeyError without one).

        Examples:
            >>> from gpusim.specs import Categorical
            >>> spec = Composite(agents={"action": Categorical(2)})
            >>> spec.get(("agents", "action")).n
            2
            >>> spec.get("reward", None) is None
            True
        """
        try:
            return self._get_node(unravel(key))
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default

    def __delitem__(self, key: NestedKey) -> None:
        parts = unravel(key)
        parent = self._get_node(parts[:-1]) if len(parts) > 1 else self
        if not isinstance(parent, Composite) or parts[-1] not in parent._specs:
            raise KeyError(f"key {pack(parts)!r} not found")
        parent._check_unlocked(f"delete key {pack(parts)!r}")
        del parent._specs[parts[-1]]

    def pop(self, key: NestedKey, default: Any = _NO_DEFAULT) -> Any:
        """Removes and returns the entry at ``key`` (``default`` when missing, if given).

        Raises:
            KeyError: when ``key`` is missing and no ``default`` is given.
            RuntimeError: when the Composite holding ``key`` is locked.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> spec = Composite(obs=Unbounded(), agents={"action": Categorical(2)})
            >>> spec.pop(("agents", "action")).n
            2
            >>> list(spec.keys(include_nested=True))
            ['obs', 'agents']
            >>> spec.pop("reward", None) is None
            True
        """
        try:
            value = self._get_node(unravel(key))
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default
        del self[key]
        return value

    def separates(self, *keys: NestedKey, default: Any = None) -> Composite | None:
        """Pops ``keys`` into a new Composite (None when none of them held a spec).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite(a=Unbounded(), b=Unbounded())
            >>> list(c.separates("a").keys()), list(c.keys())
            (['a'], ['b'])
        """
        out = None
        for key in keys:
            value = self.pop(key, default)
            if value is not None:
                if out is None:
                    out = Composite(shape=self._shape, device=self._device)
                out[key] = value
        return out

    def __contains__(self, key: object) -> bool:
        try:
            self._get_node(unravel(key))
        except (KeyError, AttributeError):
            return False
        return True

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._specs))

    def _top_items(self) -> list[tuple[str, Any]]:
        return list(self._specs.items())

    def _walk(
        self,
        include_nested: bool,
        leaves_only: bool,
        is_leaf: Callable[[type], bool] | None,
        prefix: tuple[str, ...] = (),
    ) -> Iterator[tuple[NestedKey, Any]]:
        """Entries in TorchRL's (and TensorDict's) order: a nested Composite's entries come
        before its own key."""
        is_leaf = is_leaf or (lambda cls: not _is_composite_cls(cls))
        for key, spec in self._top_items():
            full = (*prefix, key)
            leaf = spec is None or is_leaf(type(spec))
            if include_nested and isinstance(spec, Composite) and not leaf:
                yield from spec._walk(include_nested, leaves_only, is_leaf, full)
            if not leaves_only or leaf:
                yield pack(full), spec

    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
        step_mdp_static_only: bool = False,
    ) -> KeysView:
        """The keys, nested ones as tuples when ``include_nested``; ``leaves_only`` skips
        Composites. ``is_leaf(spec_class)`` decides what counts as a leaf (default: not a
        Composite). Nested entries are listed before the key of their Composite.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite(a=Unbounded(), b={"c": Unbounded()})
            >>> list(c.keys(True, True))
            ['a', ('b', 'c')]
        """
        items = self.items(include_nested, leaves_only, is_leaf=is_leaf)
        if step_mdp_static_only:
            items = [(k, v) for k, v in items if getattr(v, "step_mdp_static", False)]
        return KeysView([k for k, _ in items])

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> list[tuple[NestedKey, Any]]:
        """``(key, spec)`` pairs, with the same flags as :meth:`keys`.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> spec = Composite(obs=Unbounded(), agents={"action": Categorical(2)})
            >>> [(key, type(value).__name__) for key, value in spec.items(True, True)]
            [('obs', 'Unbounded'), (('agents', 'action'), 'Categorical')]
        """
        return list(self._walk(include_nested, leaves_only, is_leaf))

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> list[Any]:
        """The specs, with the same flags as :meth:`keys`.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> spec = Composite(obs=Unbounded(), agents={"action": Categorical(2)})
            >>> [type(value).__name__ for value in spec.values()]
            ['Unbounded', 'Composite']
            >>> [type(value).__name__ for value in spec.values(True, True)]
            ['Unbounded', 'Categorical']
        """
        return [v for _, v in self._walk(include_nested, leaves_only, is_leaf)]

    def update(self, other: Mapping[str, Any] | Composite) -> Composite:
        """Sets every entry of ``other``; nested Composites are updated recursively. Returns self.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite(a={"b": Unbounded()})
            >>> _ = c.update({"a": Composite(c=Unbounded())})
            >>> list(c.keys(True, True))
            [('a', 'b'), ('a', 'c')]
        """
        self._check_unlocked("update")
        items = other.items() if isinstance(other, (Composite, Mapping)) else other
        for key, value in items:
            current = self.get(key, None)
            if isinstance(value, Composite) and isinstance(current, Composite):
                current.update(value)
            else:
                self.set(key, value)
        return self

    def _like(self, specs: dict[str, Any], shape: Any, device: Any, names: list | None) -> Composite:
        """A new Composite holding ``specs`` (set without checks) with this one's settings."""
        out = Composite(shape=shape, device=device, data_cls=self.data_cls, step_mdp_static=self.step_mdp_static)
        out._specs = specs
        if names is not None and len(names) == out.ndim and any(n is not None for n in names):
            out._names = list(names)
        return out

    def empty(self) -> Composite:
        """A Composite with the same shape and device and no entries.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded(shape=(4, 3)), shape=(4,), device="cpu").empty()
            >>> len(spec), spec.shape, spec.device
            (0, torch.Size([4]), device(type='cpu'))
        """
        return self._like({}, self._shape, self._device, None)

    def select(self, *keys: NestedKey, strict: bool = True) -> Composite:
        """A new Composite holding only ``keys`` (nested keys allowed); missing keys raise
        KeyError when ``strict``.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded(), b=Unbounded()).select("a").keys()
            keys(['a'])
        """
        out = self.empty()
        for key in keys:
            try:
                value = self[key]
            except KeyError:
                if strict:
                    raise
                continue
            out.set(key, value.clone() if value is not None else None)
        return out

    def exclude(self, *keys: NestedKey) -> Composite:
        """A copy without ``keys`` (nested keys allowed; missing keys are ignored).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> spec = Composite(obs=Unbounded(), agents={"action": Categorical(2)})
            >>> spec.exclude("obs", "reward").keys()
            keys(['agents'])
            >>> list(spec.exclude(("agents", "action")).keys(True, True))
            ['obs']
        """
        out = self.clone()
        for key in keys:
            if key in out:
                del out[key]
        return out

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether there are no entries (with ``recurse``: no leaves in nested Composites).

        Examples:
            >>> spec = Composite(agents={})
            >>> Composite().is_empty(), spec.is_empty(), spec.is_empty(recurse=True)
            (True, False, True)
        """
        if not recurse:
            return not self._specs
        return not any(v is not None for v in self.values(True, True))

    # ------------------------------------------------------------------ indexing / shape
    def _map(self, fn: Callable[[Any], Any], shape: torch.Size, device: Any, names: list | None = None) -> Composite:
        specs = {key: None if spec is None else fn(spec) for key, spec in self._specs.items()}
        return self._like(specs, shape, device, names)

    def _index(self, idx: Any) -> Composite:
        nidx = expand_index(idx, self.ndim)
        new_shape = index_plan(self._shape, nidx)[0]
        return self._map(lambda s: s[nidx], new_shape, self._device, self._names_after_index(nidx))

    def expand(self, *shape: Any) -> Composite:
        """Returns a Composite with new batch dims ``shape`` (must end with the current shape).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded(shape=(3, 2)), shape=(3,)).expand(5, 3)["a"].shape
            torch.Size([5, 3, 2])
        """
        new = shape_args(shape)
        ok = len(new) >= self.ndim and all(n == c or c == 1 for n, c in zip(new[len(new) - self.ndim :], self._shape))
        if not ok:
            raise ValueError(
                f"The last {self.ndim} of the expanded shape {tuple(new)} must match the shape "
                f"{tuple(self._shape)} of the Composite spec in expand()."
            )
        names = None
        if self._names is not None:
            names = [None] * (len(new) - self.ndim) + self._names
        return self._map(lambda s: s.expand(*new, *s.shape[self.ndim :]), new, self._device, names)

    def squeeze(self, dim: int | None = None) -> Composite:
        """Removes size-1 batch dims (all, or ``dim``); returns self when there is none.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded(shape=(1, 3, 2)), shape=(1, 3))
            >>> spec.squeeze().shape, spec.squeeze(0)["obs"].shape
            (torch.Size([3]), torch.Size([3, 2]))
        """
        if dim is None:
            out = self
            for d in reversed(range(self.ndim)):
                if self._shape[d] == 1:
                    out = out.squeeze(d)
            return out
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"squeeze: dim {dim} out of range for shape {tuple(self._shape)}")
        if self._shape[d] != 1:
            return self
        new_shape = torch.Size(s for i, s in enumerate(self._shape) if i != d)
        names = None
        if self._names is not None:
            names = [n for i, n in enumerate(self._names) if i != d]
        return self._map(lambda s: s.squeeze(d), new_shape, self._device, names)

    def unsqueeze(self, dim: int) -> Composite:
        """Inserts a size-1 batch dim at ``dim`` (negative dims count from the batch end).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded(shape=(3, 2)), shape=(3,)).unsqueeze(-1)
            >>> spec.shape, spec["obs"].shape
            (torch.Size([3, 1]), torch.Size([3, 1, 2]))
        """
        d = dim + self.ndim + 1 if dim < 0 else dim
        if not 0 <= d <= self.ndim:
            raise ValueError(f"unsqueeze: dim {dim} out of range for shape {tuple(self._shape)}")
        new_shape = torch.Size((*self._shape[:d], 1, *self._shape[d:]))
        names = None
        if self._names is not None:
            names = [*self._names[:d], None, *self._names[d:]]
        return self._map(lambda s: s.unsqueeze(d), new_shape, self._device, names)

    def unbind(self, dim: int = 0) -> tuple[Composite, ...]:
        """Splits along batch dim ``dim`` into a tuple of Composites.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> parts = Composite(a=Unbounded(shape=(2, 3)), shape=(2,)).unbind(0)
            >>> len(parts), parts[0]["a"].shape
            (2, torch.Size([3]))
        """
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"Cannot unbind along dim {dim} with shape {tuple(self._shape)}.")
        if self._shape[d] == DYNAMIC:
            raise ValueError(f"Cannot unbind along the dynamic dim {dim} of {tuple(self._shape)}.")
        lead = (slice(None),) * d
        return tuple(self[(*lead, i)] for i in range(self._shape[d]))

    def reshape(self, *shape: Any) -> Composite:
        """Reshapes the batch dims (children keep their trailing dims); ``view`` is the same.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded(shape=(2, 3, 5)), shape=(2, 3))
            >>> spec.reshape(6)["obs"].shape, spec.view(-1).shape
            (torch.Size([6, 5]), torch.Size([6]))
        """
        target = torch.empty((), dtype=torch.uint8).expand(self._safe_shape).reshape(shape_args(shape)).shape
        return self._map(lambda s: s.reshape(*target, *s.shape[self.ndim :]), target, self._device)

    view = reshape

    def flatten(self, start_dim: int, end_dim: int) -> Composite:
        """Flattens batch dims ``start_dim..end_dim`` into one.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(obs=Unbounded(shape=(2, 3, 5)), shape=(2, 3)).flatten(0, 1)["obs"].shape
            torch.Size([6, 5])
        """
        shape = torch.empty(self._safe_shape, device="meta").flatten(start_dim, end_dim).shape
        return self.reshape(shape)

    def unflatten(self, dim: int, sizes: Any) -> Composite:
        """Splits batch dim ``dim`` into ``sizes``.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(obs=Unbounded(shape=(6, 5)), shape=(6,)).unflatten(0, (3, 2))["obs"].shape
            torch.Size([3, 2, 5])
        """
        shape = torch.empty(self._safe_shape, device="meta").unflatten(dim, sizes).shape
        return self.reshape(shape)

    # ------------------------------------------------------------------ copies / devices
    def clone(self) -> Composite:
        """A deep, unlocked copy.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded()).lock_()
            >>> copy = spec.clone()
            >>> copy == spec, copy["obs"] is spec["obs"], copy.is_locked
            (True, False, False)
        """
        return self._map(lambda s: s.clone(), self._shape, self._device, self._names)

    def to(self, dest: DEVICE_TYPING | torch.dtype | None) -> Composite:
        """A copy on another device (sets :attr:`device`), or with every leaf cast to a dtype.

        Returns self when it is on ``dest`` already.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded()).to("cpu").device
            device(type='cpu')
        """
        if dest is None:
            return self
        if isinstance(dest, torch.dtype):
            return self._map(lambda s: s.to(dest), self._shape, self._device, self._names)
        device = make_device(dest)
        if self._device == device:
            return self
        return self._map(lambda s: s.to(device), self._shape, device, self._names)

    def cpu(self) -> Composite:
        """A copy on the cpu (self when it is there already).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(obs=Unbounded()).cpu().device
            device(type='cpu')
        """
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Composite:
        """A copy on a CUDA device (``device`` ordinal, default current).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Composite(obs=Unbounded()).cuda(0)  # holds no tensor: runs without a GPU
            >>> spec.device, spec["obs"].device
            (device(type='cuda', index=0), device(type='cuda', index=0))
        """
        return self.to("cuda" if device is None else torch.device("cuda", device))

    # ------------------------------------------------------------------ comparison / repr
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        if self._shape != other._shape or self._device != other._device:  # type: ignore[attr-defined]
            return False
        if set(self._specs) != set(other._specs):  # type: ignore[attr-defined]
            return False
        if self.data_cls != other.data_cls:  # type: ignore[attr-defined]
            return False
        return all(self._specs[k] == other._specs[k] for k in self._specs)  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        tail = f"device={self._device},\n    shape={self.shape},\n    data_cls={self.data_cls})"
        if not self._specs:
            return f"Composite(device={self._device}, shape={self.shape}, data_cls={self.data_cls})"
        fields = ",\n".join(textwrap.indent(f"{k}: {v}", "    ") for k, v in self._specs.items())
        return f"Composite(\n{fields},\n    {tail}"
