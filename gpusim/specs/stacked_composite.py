"""The :class:`StackedComposite` spec: a lazy stack of Composites with different entries."""

from __future__ import annotations

from collections.abc import Mapping
from textwrap import indent
from typing import Any

import torch

from gpusim.specs._keys import unravel
from gpusim.specs._shapes import as_size
from gpusim.specs.base import SpecValueError, check_spec_encode
from gpusim.specs.composite import _NO_DEFAULT, Composite
from gpusim.specs.stacked import _LazyStack

__all__ = ["StackedComposite"]


class StackedComposite(_LazyStack, Composite):
    """A lazy stack of Composites with different keys or entries (heterogeneous agents, tasks).

    Built by ``torch.stack`` on unequal Composites of the same shape. It exposes the keys all the
    stacked Composites share (``spec[key]`` stacks their entries); ``rand``/``zero`` return a
    ``LazyStackedTensorDict``; setting or deleting a key acts on every stacked Composite.

    Args:
        *specs: the stacked Composites (same shape).
        dim: the stack dim.

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> a = Composite(x=Unbounded(shape=(3,)))
        >>> b = Composite(x=Unbounded(shape=(3,)), y=Unbounded(shape=(1,)))
        >>> spec = torch.stack([a, b], 0)
        >>> list(spec.keys()), spec.shape, spec[1] is b
        (['x'], torch.Size([2]), True)
        >>> type(spec.rand()).__name__
        'LazyStackedTensorDict'
    """

    def __init__(self, *specs: Composite, dim: int) -> None:
        self._init_stack(specs, dim)
        object.__setattr__(self, "_names", None)
        object.__setattr__(self, "_memo", False)
        object.__setattr__(self, "data_cls", None)
        object.__setattr__(self, "step_mdp_static", False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("shape", "batch_size", "_shape"):
            raise RuntimeError("StackedComposite: the shape of a lazy stack cannot be set")
        super().__setattr__(name, value)

    # ------------------------------------------------------------------ attrs
    @property
    def _shape(self) -> torch.Size:  # type: ignore[override]
        first = list(self._specs[0].shape)
        first.insert(self._dim, len(self._specs))
        return torch.Size(first)

    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        """The shared shape of the stacked Composites, with the stack dim (``batch_size`` is the
        same property; neither can be set).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.shape, spec.batch_size
            (torch.Size([2]), torch.Size([2]))
        """
        return self._shape

    batch_size = shape

    @property
    def _device(self) -> torch.device | None:  # type: ignore[override]
        devices = {s.device for s in self._specs}
        devices.discard(None)
        return devices.pop() if len(devices) == 1 else None

    @property
    def device(self) -> torch.device | None:  # type: ignore[override]
        """The device of the stacked Composites (None when it differs or is unset).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.device
            device(type='cpu')
        """
        return self._device

    @device.setter
    def device(self, value: Any) -> None:
        # a StackedComposite set into a Composite with a device takes that device, like a
        # Composite: every stacked Composite is moved there in place (None erases nothing)
        if value is None:
            if self._device is not None:
                raise RuntimeError("To erase the device of a StackedComposite, call spec.clear_device_().")
            return
        for spec in self._specs:
            spec.device = value

    @property
    def is_locked(self) -> bool:  # type: ignore[override]
        """Whether every stacked Composite is locked.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> _ = a.lock_()
            >>> a.is_locked, spec.is_locked
            (True, False)
        """
        return all(s.is_locked for s in self._specs)

    @property
    def locked(self) -> bool:  # type: ignore[override]
        """Alias of :attr:`is_locked`.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.lock_().locked
            True
        """
        return self.is_locked

    def lock_(self, recurse: bool | None = None) -> StackedComposite:
        """Locks every stacked Composite; returns self.

        Args:
            recurse: lock the nested Composites too (default True).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> _ = spec.lock_()
            >>> a.is_locked, b.is_locked
            (True, True)
        """
        for spec in self._specs:
            spec.lock_(recurse)
        return self

    def unlock_(self, recurse: bool | None = None) -> StackedComposite:
        """Unlocks every stacked Composite; returns self.

        Args:
            recurse: unlock the nested Composites too (default True).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.lock_().unlock_().is_locked, a.is_locked
            (False, False)
        """
        for spec in self._specs:
            spec.unlock_(recurse)
        return self

    def _check_unlocked(self, what: str) -> None:
        for spec in self._specs:
            spec._check_unlocked(what)

    def _propagate_lock(self, recurse: bool, parents: list | None) -> None:
        for spec in self._specs:
            spec._propagate_lock(recurse, parents)

    def _propagate_unlock(self, recurse: bool) -> list[Any]:
        subs: list = []
        for spec in self._specs:
            subs.extend(spec._propagate_unlock(recurse))
            subs.append(spec)
        return subs

    def _check_unlock(self) -> None:
        for spec in self._specs:
            spec._check_unlock()

    @property
    def names(self) -> list:  # type: ignore[override]
        """The names of the stacked Composites' dims (the stack dim is unnamed).

        Setting it names the dims of every stacked Composite; the name given to the stack dim
        is dropped.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> a = Composite(x=Unbounded(shape=(3, 1)), shape=(3,))
            >>> b = Composite(x=Unbounded(shape=(3, 2)), shape=(3,))
            >>> spec = torch.stack([a, b], 0)
            >>> spec.names = ["agent", "time"]
            >>> spec.names, a.names
            ([None, 'time'], ['time'])
        """
        inner = self._specs[0].names
        return [*inner[: self._dim], None, *inner[self._dim :]]

    @names.setter
    def names(self, value: Any) -> None:
        if value is not None:
            value = list(value)
            if len(value) != self.ndim:
                raise ValueError(f"Expected {self.ndim} names, but got {len(value)} names: {value}")
            value = value[: self._dim] + value[self._dim + 1 :]
        for spec in self._specs:
            spec.names = value

    def memoize_encode(self, mode: bool = True) -> None:
        """Memoizes the encoding of every stacked Composite (see :meth:`TensorSpec.memoize_encode`).

        Args:
            mode: True to memoize, False to go back to eager encoding.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.memoize_encode()
            >>> a["x"].encode([1.0, 2.0, 3.0])
            tensor([1., 2., 3.])
        """
        for spec in self._specs:
            spec.memoize_encode(mode)

    def erase_memoize_cache(self) -> None:
        """Forgets the memoized encodings of every stacked Composite.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.memoize_encode()
            >>> spec.erase_memoize_cache()
        """
        for spec in self._specs:
            spec.erase_memoize_cache()

    # ------------------------------------------------------------------ mapping
    def _common_keys(self) -> list[str]:
        keys = set(self._specs[0]._specs)
        for spec in self._specs[1:]:
            keys &= set(spec._specs)
        return sorted(keys, key=str)

    def _top_items(self) -> list[tuple[str, Any]]:
        return [(k, self[k]) for k in self._common_keys()]

    def _nested_composites(self) -> list[Composite]:
        return [v for _, v in self._top_items() if isinstance(v, Composite)]

    def __getitem__(self, key: Any) -> Any:
        """A (nested) key stacks the entries of every stacked Composite; an index picks along the
        stack dim."""
        is_key = isinstance(key, str) or (
            isinstance(key, tuple) and key and all(isinstance(k, (str, tuple)) for k in key)
        )
        if is_key:
            parts = unravel(key)
            values = [spec[parts] for spec in self._specs]
            if any(v is None for v in values):
                if all(v is None for v in values):
                    return None
                raise KeyError(f"key {key!r} is None in some of the stacked Composites only")
            return torch.stack(values, self._dim)
        return self._stack_index(key)

    def _get_child(self, part: str, parts: tuple[str, ...]) -> Any:
        return self[part]

    def get(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """The stacked entry at ``key`` (``default`` when a stacked Composite lacks it).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.get("x").shape
            torch.Size([2, 3])
            >>> spec.get("y", None) is None
            True
        """
        try:
            return self[key]
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default

    def __setitem__(self, key: Any, value: Any) -> None:
        is_key = isinstance(key, str) or (
            isinstance(key, tuple) and key and all(isinstance(k, (str, tuple)) for k in key)
        )
        if not is_key:
            raise RuntimeError(
                f"StackedComposite expects a (nested) string key to set entries: key should be "
                f"a Sequence<NestedKey>, got {key!r}"
            )
        self.set(key, value)

    def set(self, key: Any, spec: Any) -> StackedComposite:
        """Sets ``key`` in every stacked Composite, to the matching slice of ``spec``; returns
        self.

        Raises:
            ValueError: when ``spec`` does not have one slice per stacked Composite.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> _ = spec.set("reward", Unbounded(shape=(2, 1)))
            >>> a["reward"].shape, list(spec.keys())
            (torch.Size([1]), ['reward', 'x'])
        """
        if spec is None:
            parts: list = [None] * len(self._specs)
        else:
            parts = list(spec.unbind(self._dim))
        if len(parts) != len(self._specs):
            raise ValueError(
                f"StackedComposite.set: {key!r} has {len(parts)} entries along the stack dim, "
                f"expected {len(self._specs)}"
            )
        for sub, part in zip(self._specs, parts):
            sub[key] = part
        return self

    def __delitem__(self, key: Any) -> None:
        deleted = False
        for spec in self._specs:
            try:
                del spec[key]
                deleted = True
            except KeyError:
                continue
        if not deleted:
            raise KeyError(f"Key {key!r} must be present in at least one of the stacked specs.")

    def __contains__(self, key: object) -> bool:
        return all(key in spec for spec in self._specs)

    def __iter__(self):  # noqa: ANN204
        return iter([self[k] for k in self._common_keys()])

    def update(self, other: Mapping[str, Any] | Composite) -> StackedComposite:
        """Updates every stacked Composite: shared nested Composites are updated slice by slice,
        other entries are set (exclusive keys of ``other`` are left out). Returns self.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> _ = spec.update({"z": Unbounded(shape=(2, 4))})
            >>> list(spec.keys()), b["z"].shape
            (['x', 'z'], torch.Size([4]))
        """
        items = other.items() if isinstance(other, (Composite, Mapping)) else other
        mine = set(self._common_keys())
        for key, value in items:
            if key in mine and isinstance(value, (Composite, Mapping)):
                if isinstance(value, Mapping) and not isinstance(value, Composite):
                    value = Composite(value, shape=self.shape)
                for spec, part in zip(self._specs, value.unbind(self._dim)):
                    spec[key].update(part)
                continue
            self[key] = value
        return self

    def empty(self) -> StackedComposite:
        """The stack of the empty versions of the stacked Composites.

        Empty Composites of one shape are equal, so this is a dense :class:`Composite` unless
        their devices or settings differ.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> empty = spec.empty()
            >>> type(empty).__name__, empty.shape, empty.is_empty()
            ('Composite', torch.Size([2]), True)
        """
        return torch.stack([s.empty() for s in self._specs], self._dim)

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether every stacked Composite is empty.

        Args:
            recurse: count only leaves (nested Composites without leaves are empty).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.is_empty()
            False
        """
        return all(s.is_empty(recurse) for s in self._specs)

    # ------------------------------------------------------------------ shape ops
    def expand(self, *shape: Any) -> Any:
        """Expands every stacked Composite (the new shape must end with the current one).

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.expand(5, 2).shape, spec.expand(5, 2)["x"].shape
            (torch.Size([5, 2]), torch.Size([5, 2, 3]))
        """
        return self._expand_stack(*shape)

    def reshape(self, *shape: Any) -> Any:
        """Lazy stacks cannot be reshaped (``view`` is the same method).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.reshape(1, 2)
            Traceback (most recent call last):
            ...
            NotImplementedError: reshape is not implemented for StackedComposite specs
        """
        raise NotImplementedError("reshape is not implemented for StackedComposite specs")

    view = reshape

    def flatten(self, start_dim: int, end_dim: int) -> Any:
        """Lazy stacks cannot be flattened.

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.flatten(0, 0)
            Traceback (most recent call last):
            ...
            NotImplementedError: flatten is not implemented for StackedComposite specs
        """
        raise NotImplementedError("flatten is not implemented for StackedComposite specs")

    # ------------------------------------------------------------------ generation
    def _stack_values(self, samples: list, dim: int) -> Any:
        from tensordict import LazyStackedTensorDict

        return LazyStackedTensorDict.maybe_dense_stack(samples, dim)

    def _build(self, shape: Any, method: str) -> Any:
        prefix = as_size(shape)
        return self._stack_values([getattr(s, method)(prefix) for s in self._specs], self._dim + len(prefix))

    def invalid_reason(self, td: Any) -> str | None:
        """Why ``td`` is not in the stack (checked Composite by Composite), or None.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> td = spec.zero()
            >>> spec.invalid_reason(td) is None
            True
            >>> td[1]["y"] = torch.tensor(5)
            >>> spec.invalid_reason(td)
            "stacked Composite 1: key 'y': values out of range: 1 element(s) outside [0, 2), e.g. 5"
        """
        parts = self._unbind_value(td)
        for i, (spec, part) in enumerate(zip(self._specs, parts)):
            reason = spec.invalid_reason(part)
            if reason is not None:
                return f"stacked Composite {i}: {reason}"
        return None

    def is_in(self, td: Any) -> bool:
        """Whether each slice of ``td`` is in its stacked Composite.

        Raises:
            KeyError: when a slice lacks a key of its Composite.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> td = spec.rand()
            >>> type(td).__name__, spec.is_in(td)
            ('LazyStackedTensorDict', True)
        """
        return all(s.is_in(p) for s, p in zip(self._specs, self._unbind_value(td)))

    def project(self, td: Any) -> Any:
        """Projects each slice of ``td`` on its stacked Composite; returns the restacked data.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> td = spec.zero()
            >>> td[1]["y"] = torch.tensor(5)
            >>> spec.project(td)[1]["y"]
            tensor(1)
        """
        from tensordict import LazyStackedTensorDict

        dim = self._value_dim(td)
        parts = [s.project(p) if not s.is_in(p) else p for s, p in zip(self._specs, td.unbind(dim))]
        out = LazyStackedTensorDict.maybe_dense_stack(parts, dim)
        if not isinstance(td, LazyStackedTensorDict) and isinstance(out, LazyStackedTensorDict):
            out = out.to_tensordict()
        return out

    def type_check(self, value: Any, selected_keys: Any = None) -> None:
        """Checks dtypes slice by slice (a tensor is checked against the entry ``selected_keys``).

        Raises:
            ValueError: for a tensor without a key.
            TypeError: naming the key whose dtype differs.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.type_check(spec.rand())
            >>> spec.type_check(torch.zeros(2, 3, dtype=torch.int64), "x")
            Traceback (most recent call last):
            ...
            TypeError: Unbounded: expected a tensor of dtype torch.float32 for key 'x', got ...
        """
        if isinstance(value, torch.Tensor):
            if not isinstance(selected_keys, (str, tuple)):
                raise ValueError("StackedComposite.type_check: a tensor value needs a key")
            self[selected_keys].type_check(value, selected_keys)
            return
        for spec, part in zip(self._specs, self._unbind_value(value)):
            spec.type_check(part, selected_keys)

    def encode(self, vals: Any, *, ignore_device: bool = False) -> Any:
        """Lazy stacks of Composites cannot encode (encode with a stacked Composite instead).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.encode({"x": [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]})
            Traceback (most recent call last):
            ...
            NotImplementedError: encode is not implemented for StackedComposite specs
            >>> b.encode({"x": [1.0, 1.0, 1.0], "y": 1})["y"]
            tensor(1)
        """
        raise NotImplementedError("encode is not implemented for StackedComposite specs")

    def to_numpy(self, td: Any, safe: bool | None = None) -> dict:
        """A dict of numpy arrays for the keys of ``td`` (each must be shared by the stack);
        ``safe=True`` checks ``td`` first.

        Raises:
            SpecValueError: with ``safe=True``, when a slice is not in its Composite.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.to_numpy(spec.one())
            {'x': array([[1., 1., 1.],
                   [1., 1., 1.]], dtype=float32)}
        """
        if check_spec_encode() if safe is None else safe:
            for i, (spec, part) in enumerate(zip(self._specs, self._unbind_value(td))):
                reason = spec.invalid_reason(part)
                if reason is not None:
                    raise SpecValueError(f"value not in stacked Composite {i}: {reason}")
        return {key: self[key].to_numpy(val) for key, val in td.items()}

    def cardinality(self) -> int:
        """Lazy stacks have no cardinality.

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Categorical, Unbounded
            >>> a = Composite(x=Unbounded(shape=(3,)), device="cpu")
            >>> b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2), device="cpu")
            >>> spec = torch.stack([a, b], 0)
            >>> spec.cardinality()
            Traceback (most recent call last):
            ...
            NotImplementedError: cardinality is not implemented for StackedComposite specs
        """
        raise NotImplementedError("cardinality is not implemented for StackedComposite specs")

    def enumerate(self, use_mask: bool = False) -> Any:
        """The enumerations of the stacked Composites, stacked (after the outcome dim).

        Examples:
            >>> from gpusim.specs import Categorical
            >>> a = Composite(action=Categorical(3))
            >>> b = Composite(action=Categorical(3), mode=Categorical(1))
            >>> outcomes = torch.stack([a, b], 0).enumerate()
            >>> outcomes.batch_size, outcomes[:, 1]["mode"]
            (torch.Size([3, 2]), tensor([0, 0, 0]))
        """
        return self._stack_values([s.enumerate(use_mask) for s in self._specs], self._dim + 1)

    # ------------------------------------------------------------------ comparison / repr
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StackedComposite) or len(self._specs) != len(other._specs):
            return False
        if self._dim != other._dim or self.device != other.device:
            return False
        return all(a == b for a, b in zip(self._specs, other._specs))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        common = self._common_keys()
        fields = ",\n".join(indent(f"{k}: {self[k]!r}", "    ") for k in common)
        exclusive = []
        for i, spec in enumerate(self._specs):
            own = [indent(f"{k}: {v!r}", "    ") for k, v in spec._specs.items() if k not in common]
            if own:
                exclusive.append(indent(f"{i} ->\n" + ",\n".join(own), "    "))
        body = ",\n".join(
            [
                indent(f"fields={{\n{fields}}}", "    "),
                indent("exclusive_fields={\n" + ",\n".join(exclusive) + "}", "    "),
                indent(f"device={self._specs[0].device}", "    "),
                indent(f"shape={self.shape}", "    "),
                indent(f"stack_dim={self._dim}", "    "),
            ]
        )
        return f"StackedComposite(\n{body})"
