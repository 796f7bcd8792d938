"""Data-facing methods of Composite specs: generation, membership, projection, encoding,
enumeration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from gpusim.specs._keys import KeysView, NestedKey
from gpusim.specs._shapes import as_size
from gpusim.specs.base import SpecValueError

__all__ = ["CompositeDataMixin"]

_MISSING = object()


def _is_empty_composite(spec: Any) -> bool:
    """Whether ``spec`` is a Composite without entries (skipped by membership checks)."""
    is_empty = getattr(spec, "is_empty", None)
    return is_empty is not None and getattr(spec, "domain", None) == "composite" and is_empty()


class CompositeDataMixin:
    """What a :class:`~gpusim.specs.Composite` does with data (mixed into it).

    Examples:
        >>> from gpusim.specs import Composite, Unbounded
        >>> spec = Composite(a=Unbounded(shape=(2, 3)), shape=(2,))
        >>> td = spec.rand()
        >>> spec.is_in(td), spec.zero((4,)).batch_size
        (True, torch.Size([4, 2]))
    """

    _specs: dict
    _names: list | None
    _device: Any
    data_cls: Any

    def _make_td(self, source: dict, batch: torch.Size, device: Any) -> Any:
        from tensordict import TensorDict

        kwargs: dict = {}
        if self._names is not None and self.data_cls is None and len(batch) >= self.ndim:
            kwargs["names"] = [None] * (len(batch) - self.ndim) + self._names
        if self.data_cls is not None:
            return self.data_cls.from_dict(source, batch_size=batch, device=device)
        return TensorDict(source, batch_size=batch, device=device, **kwargs)

    def _build(self, shape: Any, method: str) -> Any:
        prefix = as_size(shape)
        source = {}
        for key, spec in self._specs.items():
            if spec is not None:
                source[key] = getattr(spec, method)(prefix)
        return self._make_td(source, torch.Size((*prefix, *self._safe_shape)), self._device)

    def rand(self, shape: Any = None) -> Any:
        """A random TensorDict with batch size ``(*shape, *self.shape)``.

        Args:
            shape: extra leading dims (default none).

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.rand((4,))
            >>> td.batch_size, td["obs"].shape, spec.is_in(td)
            (torch.Size([4, 2]), torch.Size([4, 2, 3]), True)
        """
        return self._build(shape, "rand")

    def sample(self, shape: Any = None) -> Any:
        """Same as :meth:`rand`.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.sample().batch_size
            torch.Size([2])
        """
        return self.rand(shape)

    def zero(self, shape: Any = None) -> Any:
        """A TensorDict of zeros with batch size ``(*shape, *self.shape)``.

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> Composite(a=Unbounded(shape=(2, 3)), shape=(2,)).zero()["a"].shape
            torch.Size([2, 3])
        """
        return self._build(shape, "zero")

    def zeros(self, shape: Any = None) -> Any:
        """Same as :meth:`zero`.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.zeros()["action"]
            tensor([0, 0])
        """
        return self.zero(shape)

    def one(self, shape: Any = None) -> Any:
        """A TensorDict of ones with batch size ``(*shape, *self.shape)``.

        Like :meth:`zero`, a buffer: one need not be a valid value of every entry.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.one()["action"]
            tensor([1, 1])
        """
        return self._build(shape, "one")

    def ones(self, shape: Any = None) -> Any:
        """Same as :meth:`one`.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.ones((3,))["obs"].shape
            torch.Size([3, 2, 3])
        """
        return self.one(shape)

    def rand_update(self, td: Any) -> Any:
        """Updates ``td`` (in place) with random values of this spec; returns it.

        Entries of ``td`` that the spec does not hold are kept.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.rand_update(TensorDict({"other": torch.zeros(2)}, batch_size=(2,)))
            >>> sorted(td.keys()), spec.is_in(td)
            (['action', 'obs', 'other'], True)
        """
        return td.update(self.rand())

    def zeros_update(self, td: Any) -> Any:
        """Updates ``td`` (in place) with zeros of this spec; returns it.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.zeros_update(TensorDict({"other": torch.ones(2)}, batch_size=(2,)))
            >>> td["action"], td["other"]
            (tensor([0, 0]), tensor([1., 1.]))
        """
        return td.update(self.zero())

    def ones_update(self, td: Any) -> Any:
        """Updates ``td`` (in place) with ones of this spec; returns it.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.ones_update(TensorDict({}, batch_size=(2,)))["action"]
            tensor([1, 1])
        """
        return td.update(self.one())

    def invalid_reason(self, td: Any) -> str | None:
        """Why ``td`` is not in the spec (naming the key), or None when it is.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.zero()
            >>> spec.invalid_reason(td) is None
            True
            >>> td["obs"][0, 0] = 2.0
            >>> spec.invalid_reason(td)
            "key 'obs': values out of bounds: 1 element(s) outside [low, high], e.g. 2.0"
        """
        for key, spec in self._specs.items():
            if spec is None or (_is_empty_composite(spec)):
                continue
            if key not in td.keys():
                return f"key {key!r} is missing"
            reason = spec.invalid_reason(td.get(key))
            if reason is not None:
                return f"key {key!r}: {reason}"
        return None

    def is_in(self, td: Any) -> bool:
        """Whether every spec entry of ``td`` is inside its spec (extra entries are ignored).

        Raises:
            KeyError: when ``td`` lacks a key of the spec (as in TorchRL).

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.rand()
            >>> spec.is_in(td)
            True
            >>> spec.is_in(td.exclude("action"))
            Traceback (most recent call last):
            ...
            KeyError: "Composite.is_in: the value has no entry 'action'"
        """
        for key, spec in self._specs.items():
            if spec is None or (_is_empty_composite(spec)):
                continue
            value = td.get(key, _MISSING)
            if value is _MISSING:
                raise KeyError(f"Composite.is_in: the value has no entry {key!r}")
            if not spec.is_in(value):
                return False
        return True

    def contains(self, td: Any) -> bool:
        """Same as :meth:`is_in`.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.zero()
            >>> td["action"][0] = 5
            >>> spec.contains(td)
            False
        """
        return self.is_in(td)

    def assert_is_in(self, td: Any) -> None:
        """Raises :class:`SpecValueError` naming the first key whose value is missing or outside
        its spec.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.zero()
            >>> spec.assert_is_in(td)
            >>> td["obs"][0, 0] = 2.0
            >>> spec.assert_is_in(td)
            Traceback (most recent call last):
            ...
            gpusim.specs.base.SpecValueError: value not in Composite: key 'obs': values out of ...
        """
        reason = self.invalid_reason(td)
        if reason is not None:
            raise SpecValueError(f"value not in Composite: {reason}")

    def type_check(self, value: Any, selected_keys: NestedKey | list | None = None) -> None:
        """Checks the dtypes of the entries of ``value``; a tensor is checked against the entry
        ``selected_keys`` (a key).

        Args:
            value: a TensorDict, or a tensor (with the key in ``selected_keys``).
            selected_keys: the keys to check (default: every leaf of the spec).

        Raises:
            TypeError: naming the key whose dtype differs.
            ValueError: for a tensor without a key.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.type_check(spec.zero())
            >>> spec.type_check(torch.zeros(2), "action")
            Traceback (most recent call last):
            ...
            TypeError: Categorical: expected a tensor of dtype torch.int64 for key 'action', got ...
        """
        if isinstance(value, torch.Tensor):
            if selected_keys is None or isinstance(selected_keys, list):
                raise ValueError("Composite.type_check: a tensor value needs a key to check against")
            spec = self[selected_keys]
            if spec is not None:
                spec.type_check(value, selected_keys)
            return
        selected = None
        if selected_keys is not None:
            if isinstance(selected_keys, (str, tuple)):
                selected_keys = [selected_keys]
            selected = KeysView(list(selected_keys))
        for key, spec in self.items(include_nested=True, leaves_only=True):
            if spec is None or (selected is not None and key not in selected):
                continue
            if key in value.keys(include_nested=True):
                spec.type_check(value.get(key), key)

    def _project(self, td: Any) -> Any:
        for key, spec in self._specs.items():
            if spec is not None:
                td.set(key, spec._project(td.get(key)))
        return td

    def project(self, td: Any) -> Any:
        """Projects (in place) every entry of ``td`` that is not in its spec; returns ``td``.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> td = spec.zero()
            >>> td["obs"][0, 0] = 2.0
            >>> spec.project(td)["obs"][0]
            tensor([1., 0., 0.])
        """
        for key, spec in self._specs.items():
            if spec is None:
                continue
            value = td.get(key)
            if not spec.is_in(value):
                td.set(key, spec.project(value))
        return td

    def memoize_encode(self, mode: bool = True) -> None:
        """Memoizes the encoding of every leaf (see :meth:`TensorSpec.memoize_encode`).

        Args:
            mode: True to memoize, False to go back to eager encoding.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.memoize_encode()
            >>> spec.encode({"action": [1, 0]})["action"]
            tensor([1, 0])
        """
        self._memo = bool(mode)
        for spec in self._specs.values():
            if spec is not None:
                spec.memoize_encode(mode)

    def erase_memoize_cache(self) -> None:
        """Forgets the encodings memoized by every leaf.

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.memoize_encode()
            >>> spec.erase_memoize_cache()
        """
        for spec in self._specs.values():
            if spec is not None:
                spec.erase_memoize_cache()

    def encode(self, vals: Mapping[str, Any], *, ignore_device: bool = False) -> Any:
        """A TensorDict built from a (nested) dict of numpy arrays / lists / scalars / tensors.

        Raises:
            KeyError: for a key the spec does not hold.
            RuntimeError: for a missing (None) value, or when a leaf fails to encode (chained).

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> Composite(a=Unbounded(shape=(2,))).encode({"a": [1.0, 2.0]})["a"]
            tensor([1., 2.])
        """
        source = {}
        for key, val in vals.items():
            if val is None:
                raise RuntimeError(f"Composite.encode cannot be used with missing values (key {key!r})")
            spec = self._specs.get(key) if isinstance(key, str) else self.get(key, None)
            if spec is None:
                raise KeyError(f"The Composite instance with keys {list(self.keys())} does not have a {key!r} key.")
            try:
                source[key] = spec.encode(val, ignore_device=ignore_device)
            except RuntimeError as err:
                raise RuntimeError(f"Encoding key {key!r} raised a RuntimeError. Scroll up to know more.") from err
        return self._make_td(source, self._safe_shape, None if ignore_device else self._device)

    def to_numpy(self, td: Any, safe: bool | None = None) -> dict:
        """A nested dict of numpy arrays (keys held by the spec only).

        Args:
            td: the TensorDict.
            safe: check every entry against its spec first (default: the ``CHECK_SPEC_ENCODE``
                environment variable).

        Examples:
            >>> from gpusim.specs import Bounded, Categorical, Composite
            >>> leaves = {"obs": Bounded(0.0, 1.0, (2, 3)), "action": Categorical(2, (2,))}
            >>> spec = Composite(leaves, shape=(2,))
            >>> spec.to_numpy(spec.zero())["action"]
            array([0, 0])
        """
        out = {}
        for key, spec in self._specs.items():
            if spec is not None and key in td.keys():
                out[key] = spec.to_numpy(td.get(key), safe)
        return out

    def cardinality(self) -> int | float:
        """The number of joint outcomes: the product over the entries (0 when empty).

        Examples:
            >>> from gpusim.specs import Categorical, Composite
            >>> Composite(a=Categorical(3), b=Categorical(4)).cardinality()
            12
        """
        n = None
        for spec in self._specs.values():
            if spec is None:
                continue
            n = spec.cardinality() if n is None else n * spec.cardinality()
        return 0 if n is None else n

    def enumerate(self, use_mask: bool = False) -> Any:
        """Every joint outcome, as a TensorDict with batch ``(cardinality, *shape)``.

        Examples:
            >>> from gpusim.specs import Categorical, Composite
            >>> Composite(a=Categorical(2), b=Categorical(3)).enumerate().batch_size
            torch.Size([6])
        """
        base = self
        while base.ndim:
            base = base[0]
        samples = {k: s.enumerate(use_mask) for k, s in base._specs.items() if s is not None}
        if not samples:
            return self._make_td({}, self._safe_shape, self._device)
        grids = torch.meshgrid(*(torch.arange(s.shape[0]) for s in samples.values()), indexing="ij")
        picks = [g.reshape(-1) for g in grids]
        source = {k: s[i] for (k, s), i in zip(samples.items(), picks)}
        out = base._make_td(source, picks[0].shape, self._device)
        if self.ndim:
            out = out.reshape(-1, *([1] * self.ndim)).expand(out.shape[0], *self._safe_shape)
        return out
