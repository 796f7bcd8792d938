"""Nested keys of Composite specs: flattening and the keys view."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["NestedKey", "unravel", "pack", "KeysView"]

NestedKey = str | tuple


def unravel(key: Any) -> tuple[str, ...]:
    """Flattens a (nested) string key into a tuple of strings.

    Examples:
        >>> unravel(("a", ("b", "c"))), unravel("a")
        (('a', 'b', 'c'), ('a',))
    """
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple):
        out: list[str] = []
        for k in key:
            out.extend(unravel(k))
        if not out:
            raise KeyError("empty key ()")
        return tuple(out)
    raise KeyError(f"keys must be strings or tuples of strings, got {key!r}")


def pack(key: tuple[str, ...]) -> NestedKey:
    """A flat key tuple as TorchRL writes it: a plain string for a single part.

    Examples:
        >>> pack(("a",)), pack(("a", "b"))
        ('a', ('a', 'b'))
    """
    return key[0] if len(key) == 1 else key


class KeysView:
    """A list of (nested) keys supporting ``in`` with str or tuple keys, ``len`` and iteration.

    Examples:
        >>> keys = KeysView(["a", ("b", "c")])
        >>> ("b", ("c",)) in keys, len(keys), ("a",) in keys
        (True, 2, True)
    """

    def __init__(self, keys: list[NestedKey]) -> None:
        self._keys = keys
        self._set = {unravel(k) for k in keys}

    def __iter__(self) -> Iterator[NestedKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        try:
            return unravel(key) in self._set
        except KeyError:
            return False

    def __eq__(self, other: object) -> bool:
        try:
            return {unravel(k) for k in other} == self._set  # type: ignore[union-attr]
        except (TypeError, KeyError):
            return False

    def __repr__(self) -> str:
        return f"keys({self._keys!r})"
