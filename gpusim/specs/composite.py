"""The :class:`Composite` spec: a (nested) mapping of string keys to specs with shared batch dims."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from gpusim.specs.base import (
    DEVICE_TYPING,
    TensorSpec,
    _expand_ellipsis,
    _indexed_shape,
    _shape_args,
    as_size,
    is_index,
    make_device,
)

__all__ = ["Composite", "NestedKey"]

NestedKey = str | tuple

_NO_DEFAULT = object()


def _unravel(key: Any) -> tuple[str, ...]:
    """Flattens a (nested) string key into a tuple of strings."""
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple):
        out: list[str] = []
        for k in key:
            out.extend(_unravel(k))
        if not out:
            raise KeyError("empty key ()")
        return tuple(out)
    raise KeyError(f"keys must be strings or tuples of strings, got {key!r}")


def _pack(key: tuple[str, ...]) -> NestedKey:
    return key[0] if len(key) == 1 else key


class _KeysView:
    """A list of (nested) keys supporting ``in`` with str or tuple keys, ``len`` and iteration."""

    def __init__(self, keys: list[NestedKey]) -> None:
        self._keys = keys
        self._set = {_unravel(k) for k in keys}

    def __iter__(self) -> Iterator[NestedKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        try:
            return _unravel(key) in self._set
        except KeyError:
            return False

    def __eq__(self, other: object) -> bool:
        try:
            return {_unravel(k) for k in other} == self._set  # type: ignore[union-attr]
        except (TypeError, KeyError):
            return False

    def __repr__(self) -> str:
        return f"keys({self._keys!r})"


def _is_composite_cls(cls: type) -> bool:
    return issubclass(cls, Composite)


class Composite:
    """A mapping of string keys to specs (or nested Composites) sharing leading batch dims.

    Every child's shape must start with the composite's ``shape``. Keys may be nested tuples:
    ``c["a", "b"]`` reaches into nested Composites, and setting a nested key creates the missing
    intermediate Composites (with the parent's shape and device). ``None`` values are placeholders.

    Args:
        spec_dict: optional mapping of entries (dict values become nested Composites).
        shape: the batch dims shared by all children (default ``()``).
        device: the device of all children (they are moved there), or None (heterogeneous).
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

    def __init__(
        self,
        spec_dict: Mapping[str, Any] | None = None,
        shape: Any = (),
        device: DEVICE_TYPING | None = None,
        **kwargs: Any,
    ) -> None:
        object.__setattr__(self, "_locked", False)
        self._shape = as_size(shape)
        self._device = None if device is None else make_device(device)
        self._specs: dict[str, Any] = {}
        entries: dict[str, Any] = {}
        if spec_dict is not None:
            if isinstance(spec_dict, Composite):
                entries.update(spec_dict._specs)
            elif isinstance(spec_dict, Mapping):
                entries.update(spec_dict)
            else:
                raise TypeError(
                    f"Composite: spec_dict must be a mapping, got {type(spec_dict).__name__}"
                )
        entries.update(kwargs)
        for key, value in entries.items():
            self.set(key, value)

    # ------------------------------------------------------------------ attrs
    @property
    def shape(self) -> torch.Size:
        """The batch dims shared by every child."""
        return self._shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._check_unlocked("set the shape of")
        new = as_size(value)
        for key, spec in self._specs.items():
            if spec is not None and spec.shape[: len(new)] != new:
                raise ValueError(
                    f"Composite: cannot set shape {tuple(new)}: child {key!r} has shape "
                    f"{tuple(spec.shape)} which does not start with it"
                )
        self._shape = new

    batch_size = shape

    @property
    def ndim(self) -> int:
        """Number of batch dims."""
        return len(self._shape)

    def numel(self) -> int:
        """Number of batch elements."""
        return self._shape.numel()

    @property
    def device(self) -> torch.device | None:
        """The device of every child, or None when unspecified."""
        return self._device

    @device.setter
    def device(self, value: DEVICE_TYPING | None) -> None:
        self._check_unlocked("set the device of")
        if value is None:
            self._device = None
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
    def is_locked(self) -> bool:
        """Whether modifications raise."""
        return self._locked

    @property
    def locked(self) -> bool:
        """Alias of :attr:`is_locked`."""
        return self._locked

    def lock_(self, recurse: bool = True) -> Composite:
        """Locks the composite (and nested Composites when ``recurse``); returns self.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite(a=Unbounded()).lock_()
            >>> c["b"] = Unbounded()
            Traceback (most recent call last):
            ...
            RuntimeError: Cannot modify a locked Composite (tried to set key 'b').
        """
        object.__setattr__(self, "_locked", True)
        if recurse:
            for spec in self._specs.values():
                if isinstance(spec, Composite):
                    spec.lock_(recurse=True)
        return self

    def unlock_(self, recurse: bool = True) -> Composite:
        """Unlocks the composite (and nested Composites when ``recurse``); returns self."""
        object.__setattr__(self, "_locked", False)
        if recurse:
            for spec in self._specs.values():
                if isinstance(spec, Composite):
                    spec.unlock_(recurse=True)
        return self

    def _check_unlocked(self, what: str) -> None:
        if self._locked:
            raise RuntimeError(f"Cannot modify a locked Composite (tried to {what}).")

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name in ("shape", "device", "batch_size"):
            if getattr(self, "_locked", False) and name in ("_shape", "_device", "_specs"):
                raise RuntimeError(f"Cannot modify a locked Composite (tried to set {name}).")
            object.__setattr__(self, name, value)
            return
        raise AttributeError(
            f"Composite has no attribute {name!r}; use composite[{name!r}] = spec to add entries"
        )

    # ------------------------------------------------------------------ mapping
    def _validate(self, key: str, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, Mapping) and not isinstance(value, Composite):
            value = Composite(value, shape=self._shape, device=self._device)
        if not isinstance(value, (TensorSpec, Composite)):
            raise TypeError(
                f"Composite: value for key {key!r} must be a TensorSpec, a Composite, a dict or "
                f"None, got {type(value).__name__}"
            )
        if value.shape[: self.ndim] != self._shape:
            raise ValueError(
                f"Composite: the shape of key {key!r} is {tuple(value.shape)}, which does not "
                f"start with the Composite shape {tuple(self._shape)}"
            )
        if self._device is not None and value.device != self._device:
            if isinstance(value, Composite) and not value.is_locked:
                value.device = self._device  # in place: the caller's object is the one stored
            else:
                value = value.to(self._device)
        if self._locked and isinstance(value, Composite):
            value.lock_()
        return value

    def set(self, key: NestedKey, spec: Any) -> Composite:
        """Sets ``key`` (str or nested tuple) to ``spec``; returns self.

        Missing intermediate Composites are created with this composite's shape and device.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite()
            >>> c.set(("a", "b"), Unbounded()).keys(include_nested=True)
            keys(['a', ('a', 'b')])
        """
        parts = _unravel(key)
        self._check_unlocked(f"set key {_pack(parts)!r}")
        node = self
        for part in parts[:-1]:
            child = node._specs.get(part)
            if child is None:
                child = Composite(shape=node._shape, device=node._device)
                node._specs[part] = child
            elif not isinstance(child, Composite):
                raise KeyError(
                    f"cannot set {_pack(parts)!r}: {part!r} holds a {type(child).__name__}, "
                    "not a Composite"
                )
            child._check_unlocked(f"set key {_pack(parts)!r}")
            node = child
        node._specs[parts[-1]] = node._validate(_pack(parts), spec)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        if is_index(key):
            raise TypeError(
                f"Composite: setting by index ({key!r}) is not supported; set string keys"
            )
        self.set(key, value)

    def _get_node(self, parts: tuple[str, ...]) -> Any:
        node: Any = self
        for i, part in enumerate(parts):
            if not isinstance(node, Composite):
                raise KeyError(
                    f"key {_pack(parts)!r} not found: {_pack(parts[:i])!r} is a "
                    f"{type(node).__name__}, not a Composite"
                )
            if part not in node._specs:
                raise KeyError(
                    f"key {_pack(parts)!r} not found in Composite with keys {list(node._specs)}"
                )
            node = node._specs[part]
        return node

    def __getitem__(self, key: Any) -> Any:
        if is_index(key):
            return self._index(key)
        return self._get_node(_unravel(key))

    def get(self, key: NestedKey, default: Any = _NO_DEFAULT) -> Any:
        """Returns the entry at ``key``, or ``default`` when missing (KeyError without one)."""
        try:
            return self._get_node(_unravel(key))
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default

    def __delitem__(self, key: NestedKey) -> None:
        parts = _unravel(key)
        parent = self._get_node(parts[:-1]) if len(parts) > 1 else self
        if not isinstance(parent, Composite) or parts[-1] not in parent._specs:
            raise KeyError(f"key {_pack(parts)!r} not found")
        self._check_unlocked(f"delete key {_pack(parts)!r}")
        parent._check_unlocked(f"delete key {_pack(parts)!r}")
        del parent._specs[parts[-1]]

    def pop(self, key: NestedKey, default: Any = _NO_DEFAULT) -> Any:
        """Removes and returns the entry at ``key`` (``default`` when missing, if given)."""
        try:
            value = self._get_node(_unravel(key))
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default
        del self[key]
        return value

    def __contains__(self, key: object) -> bool:
        try:
            self._get_node(_unravel(key))
        except KeyError:
            return False
        return True

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._specs))

    def _walk(
        self,
        include_nested: bool,
        leaves_only: bool,
        is_leaf: Callable[[type], bool] | None,
        prefix: tuple[str, ...] = (),
    ) -> Iterator[tuple[NestedKey, Any]]:
        is_leaf = is_leaf or (lambda cls: not _is_composite_cls(cls))
        for key, spec in self._specs.items():
            full = (*prefix, key)
            leaf = spec is None or is_leaf(type(spec))
            if not leaves_only or leaf:
                yield _pack(full), spec
            if include_nested and isinstance(spec, Composite) and not leaf:
                yield from spec._walk(include_nested, leaves_only, is_leaf, full)

    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> _KeysView:
        """The keys, nested ones as tuples when ``include_nested``; ``leaves_only`` skips
        Composites. ``is_leaf(spec_class)`` decides what counts as a leaf (default: not a
        Composite).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> c = Composite(a=Unbounded(), b={"c": Unbounded()})
            >>> list(c.keys(True, True))
            ['a', ('b', 'c')]
        """
        return _KeysView([k for k, _ in self._walk(include_nested, leaves_only, is_leaf)])

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> list[tuple[NestedKey, Any]]:
        """``(key, spec)`` pairs, with the same flags as :meth:`keys`."""
        return list(self._walk(include_nested, leaves_only, is_leaf))

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> list[Any]:
        """The specs, with the same flags as :meth:`keys`."""
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
        items = other._specs.items() if isinstance(other, Composite) else other.items()
        for key, value in items:
            current = self.get(key, None)
            if isinstance(value, Composite) and isinstance(current, Composite):
                current.update(value)
            else:
                self.set(key, value)
        return self

    def empty(self) -> Composite:
        """A Composite with the same shape and device and no entries."""
        return Composite(shape=self._shape, device=self._device)

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
        """A copy without ``keys`` (missing keys are ignored)."""
        out = self.clone()
        for key in keys:
            if key in out:
                del out[key]
        return out

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether there are no entries (with ``recurse``: no leaves in nested Composites)."""
        if not recurse:
            return not self._specs
        return not self.keys(True, True)

    # ------------------------------------------------------------------ indexing / shape
    def _map(self, fn: Callable[[Any], Any], shape: torch.Size, device: Any) -> Composite:
        out = Composite(shape=shape, device=device)
        for key, spec in self._specs.items():
            out._specs[key] = None if spec is None else fn(spec)
        return out

    def _index(self, idx: Any) -> Composite:
        nidx = _expand_ellipsis(idx, self.ndim)
        new_shape = _indexed_shape(self._shape, nidx)
        return self._map(lambda s: s[nidx], new_shape, self._device)

    def expand(self, *shape: Any) -> Composite:
        """Returns a Composite with new batch dims ``shape`` (must end with the current shape).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded(shape=(3, 2)), shape=(3,)).expand(5, 3)["a"].shape
            torch.Size([5, 3, 2])
        """
        new = list(_shape_args(shape))
        if len(new) < self.ndim:
            raise ValueError(
                f"expand: new shape {tuple(new)} has fewer dims than Composite shape "
                f"{tuple(self._shape)}"
            )
        lead = len(new) - self.ndim
        for i, cur in enumerate(self._shape):
            if new[lead + i] == -1:
                new[lead + i] = cur
            elif new[lead + i] != cur and cur != 1:
                raise ValueError(
                    f"expand: new shape {tuple(new)} must end with the Composite shape "
                    f"{tuple(self._shape)}"
                )
        new_shape = torch.Size(new)
        return self._map(
            lambda s: s.expand(*new_shape, *s.shape[self.ndim :]), new_shape, self._device
        )

    def squeeze(self, dim: int | None = None) -> Composite:
        """Removes size-1 batch dims (all, or ``dim``)."""
        if dim is None:
            out = self
            for d in reversed(range(self.ndim)):
                if self._shape[d] == 1:
                    out = out.squeeze(d)
            return out if out is not self else self.clone()
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"squeeze: dim {dim} out of range for shape {tuple(self._shape)}")
        if self._shape[d] != 1:
            return self.clone()
        new_shape = torch.Size(s for i, s in enumerate(self._shape) if i != d)
        return self._map(lambda s: s.squeeze(d), new_shape, self._device)

    def unsqueeze(self, dim: int) -> Composite:
        """Inserts a size-1 batch dim at ``dim`` (negative dims count from the batch end)."""
        d = dim + self.ndim + 1 if dim < 0 else dim
        if not 0 <= d <= self.ndim:
            raise ValueError(f"unsqueeze: dim {dim} out of range for shape {tuple(self._shape)}")
        new_shape = torch.Size((*self._shape[:d], 1, *self._shape[d:]))
        return self._map(lambda s: s.unsqueeze(d), new_shape, self._device)

    def reshape(self, *shape: Any) -> Composite:
        """Reshapes the batch dims (children keep their trailing dims)."""
        target = torch.empty((), dtype=torch.uint8).expand(self._shape).reshape(
            _shape_args(shape)
        ).shape
        return self._map(
            lambda s: s.reshape(*target, *s.shape[self.ndim :]), target, self._device
        )

    # ------------------------------------------------------------------ copies / devices
    def clone(self) -> Composite:
        """A deep, unlocked copy."""
        return self._map(lambda s: s.clone(), self._shape, self._device)

    def to(self, dest: DEVICE_TYPING | torch.dtype) -> Composite:
        """A copy on another device (sets :attr:`device`), or with every leaf cast to a dtype.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded()).to("cpu").device
            device(type='cpu')
        """
        if isinstance(dest, torch.dtype):
            return self._map(lambda s: s.to(dest), self._shape, self._device)
        device = make_device(dest)
        return self._map(lambda s: s.to(device), self._shape, device)

    def cpu(self) -> Composite:
        """A copy on the cpu."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Composite:
        """A copy on a CUDA device."""
        return self.to("cuda" if device is None else torch.device("cuda", device))

    # ------------------------------------------------------------------ generation
    def _build(self, shape: Any, method: str) -> Any:
        from tensordict import TensorDict

        prefix = as_size(shape)
        source = {}
        for key, spec in self._specs.items():
            if spec is not None:
                source[key] = getattr(spec, method)(prefix)
        return TensorDict(
            source, batch_size=torch.Size((*prefix, *self._shape)), device=self._device
        )

    def rand(self, shape: Any = ()) -> Any:
        """A random TensorDict with batch size ``(*shape, *self.shape)``."""
        return self._build(shape, "rand")

    def zero(self, shape: Any = ()) -> Any:
        """A TensorDict of zeros with batch size ``(*shape, *self.shape)``.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded(shape=(2, 3)), shape=(2,)).zero()["a"].shape
            torch.Size([2, 3])
        """
        return self._build(shape, "zero")

    def one(self, shape: Any = ()) -> Any:
        """A TensorDict of ones with batch size ``(*shape, *self.shape)``."""
        return self._build(shape, "one")

    # ------------------------------------------------------------------ membership
    def invalid_reason(self, td: Any) -> str | None:
        """Why ``td`` is not in the spec (naming the key), or None when it is."""
        for key, spec in self.items(include_nested=True, leaves_only=True):
            if spec is None:
                continue
            if key not in td.keys(include_nested=True):
                return f"key {key!r} is missing"
            value = td.get(key)
            reason = spec.invalid_reason(value)
            if reason is not None:
                return f"key {key!r}: {reason}"
        return None

    def is_in(self, td: Any) -> bool:
        """Whether every spec key is in ``td`` with a value inside its spec."""
        return self.invalid_reason(td) is None

    def assert_is_in(self, td: Any) -> None:
        """Raises ValueError naming the first key whose value is missing or outside its spec."""
        reason = self.invalid_reason(td)
        if reason is not None:
            raise ValueError(f"value not in Composite: {reason}")

    def type_check(self, value: Any, selected_keys: NestedKey | list | None = None) -> None:
        """Type-checks the leaves of ``value`` (a TensorDict) present in the spec."""
        for key, spec in self.items(include_nested=True, leaves_only=True):
            if spec is None or (selected_keys is not None and key not in selected_keys):
                continue
            if key in value.keys(include_nested=True):
                spec.type_check(value.get(key), key)

    def project(self, td: Any) -> Any:
        """A shallow copy of ``td`` with every spec leaf projected inside its spec."""
        out = td.clone(False)
        for key, spec in self.items(include_nested=True, leaves_only=True):
            if spec is None or key not in td.keys(include_nested=True):
                continue
            out.set(key, spec.project(td.get(key)))
        return out

    def encode(self, vals: Mapping[str, Any]) -> Any:
        """A TensorDict built from a (nested) dict of numpy arrays / lists / scalars / tensors.

        Raises:
            KeyError: for a key the spec does not hold.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Composite(a=Unbounded(shape=(2,))).encode({"a": [1.0, 2.0]})["a"]
            tensor([1., 2.])
        """
        from tensordict import TensorDict

        source = {}
        for key, val in vals.items():
            if key not in self._specs:
                raise KeyError(f"encode: key {key!r} is not in the spec (keys {list(self._specs)})")
            spec = self._specs[key]
            if spec is None:
                raise KeyError(f"encode: key {key!r} has no spec (None)")
            source[key] = spec.encode(val)
        return TensorDict(source, batch_size=self._shape, device=self._device)

    def to_numpy(self, td: Any, safe: bool | None = None) -> dict:
        """A nested dict of numpy arrays (keys held by the spec only)."""
        out = {}
        for key, spec in self._specs.items():
            if spec is not None and key in td.keys():
                out[key] = spec.to_numpy(td.get(key), safe)
        return out

    # ------------------------------------------------------------------ comparison / repr
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Composite):
            return False
        if self._shape != other._shape or self._device != other._device:
            return False
        if set(self._specs) != set(other._specs):
            return False
        return all(self._specs[k] == other._specs[k] for k in self._specs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        lines = [f"{key}: {spec!r}" for key, spec in self._specs.items()]
        lines.append(f"shape={tuple(self._shape)}, device={self._device}, locked={self._locked}")
        body = ",\n".join("    " + line.replace("\n", "\n    ") for line in lines)
        return f"Composite(\n{body})"

    def ndimension(self) -> int:
        """Number of batch dims (same as :attr:`ndim`)."""
        return self.ndim
