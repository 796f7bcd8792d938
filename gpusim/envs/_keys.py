"""Key plans derived once from an environment's specs.

Everything here is computed when the specs are locked (construction, or a spec setter) and
cached by :class:`~gpusim.envs.common.EnvBase`; nothing in this module runs per step.

Examples:
    >>> import torch
    >>> from gpusim.specs import Categorical, Composite
    >>> done = Composite(done=Categorical(2, shape=(4, 1), dtype=torch.bool), shape=(4,))
    >>> [lvl.prefix for lvl in done_levels(done, torch.Size([4]))]
    [()]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import torch

NestedKey = str | tuple

DONE_NAMES = ("done", "terminated", "truncated")


def unravel(key: NestedKey) -> NestedKey:
    """Flattens a nested key: ``("a",)`` -> ``"a"``, ``("a", ("b", "c"))`` -> ``("a", "b", "c")``."""
    if isinstance(key, str):
        return key
    flat: list[str] = []
    stack = list(key)[::-1]
    while stack:
        k = stack.pop()
        if isinstance(k, str):
            flat.append(k)
        else:
            stack.extend(list(k)[::-1])
    return flat[0] if len(flat) == 1 else tuple(flat)


def as_tuple(key: NestedKey) -> tuple:
    """Returns ``key`` as a tuple of strings."""
    key = unravel(key)
    return (key,) if isinstance(key, str) else key


def fmt(key: NestedKey) -> str:
    """A key as written in error messages: ``'obs'`` or ``('agents', 'action')``.

    Examples:
        >>> fmt("obs"), fmt(("agents", "action"))
        ("'obs'", "('agents', 'action')")
    """
    key = unravel(key)
    return repr(key if isinstance(key, str) else tuple(key))


def join(prefix: tuple, name: str) -> NestedKey:
    """Joins a prefix tuple and a leaf name into an unravelled key."""
    return unravel((*prefix, name))


def leaf_keys(spec) -> list:
    """Unravelled leaf keys of a Composite (empty list for ``None``)."""
    if spec is None:
        return []
    return [unravel(k) for k in spec.keys(True, True)]


@dataclass(frozen=True)
class DoneLevel:
    """One level of done signals (root or a nested group such as ``"agents"``).

    Attributes:
        prefix: path of the level (``()`` for the root).
        keys: done keys present at the level (``done``, ``terminated``, maybe ``truncated``).
        reset_key: the matching ``"_reset"`` key.
        shape: the level's batch shape (the done shape without its trailing singleton).
    """

    prefix: tuple
    keys: tuple
    reset_key: NestedKey
    shape: torch.Size

    def key(self, name: str) -> NestedKey:
        """Full key of the entry ``name`` at this level."""
        return join(self.prefix, name)

    @functools.cached_property
    def has_truncated(self) -> bool:
        """Whether the level declares a ``truncated`` entry."""
        return any(as_tuple(k)[-1] == "truncated" for k in self.keys)


def done_levels(full_done_spec, batch_size: torch.Size) -> list[DoneLevel]:
    """Groups the leaves of ``full_done_spec`` by level, root first."""
    groups: dict[tuple, list] = {}
    shapes: dict[tuple, torch.Size] = {}
    for key in leaf_keys(full_done_spec):
        tkey = as_tuple(key)
        if tkey[-1] not in DONE_NAMES:
            continue
        prefix = tkey[:-1]
        groups.setdefault(prefix, []).append(key)
        shape = full_done_spec[key].shape
        shapes[prefix] = shape[:-1] if len(shape) and shape[-1] == 1 else shape
    levels = [
        DoneLevel(prefix, tuple(keys), join(prefix, "_reset"), torch.Size(shapes[prefix]))
        for prefix, keys in groups.items()
    ]
    levels.sort(key=lambda lvl: len(lvl.prefix))
    return levels


def exclusive(keys: Iterable[NestedKey]) -> list:
    """Deduplicates keys, keeping order."""
    seen, out = set(), []
    for k in keys:
        k = unravel(k)
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out
