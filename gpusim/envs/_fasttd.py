"""Thin, validation-free tensordict access for the step path.

The env already knows its keys and shapes (the specs were checked at construction and by
``check_env_specs``), so the per-step bookkeeping skips tensordict's per-call validation when the
container is a plain ``TensorDict``; anything else (lazy stacks, persistent or shared-memory
containers) goes through the public API. Key plans are exclusion trees computed once.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2)}, [2])
    >>> fast_set(td, "b", torch.ones(2))["b"]
    tensor([1., 1.])
"""

from __future__ import annotations

from typing import Any, Iterable, Union

import torch
from tensordict import TensorDict, TensorDictBase

ExclusionTree = dict  # str -> True (drop the entry) or a nested ExclusionTree


def exclusion_tree(keys: Iterable[Union[str, tuple]]) -> ExclusionTree:
    """Turns a list of (nested) keys into a tree: ``[("a", "b"), "c"]`` -> ``{"a": {"b": True}, "c": True}``."""
    tree: ExclusionTree = {}
    for key in keys:
        path = (key,) if isinstance(key, str) else tuple(key)
        node = tree
        for part in path[:-1]:
            child = node.get(part)
            if child is True:
                break
            node = node.setdefault(part, {})
        else:
            node[path[-1]] = True
    return tree


def is_plain(td: Any) -> bool:
    """Whether ``td`` is a plain ``TensorDict`` (its leaves may be accessed directly)."""
    return type(td) is TensorDict


_plain = is_plain


def fast_get(td: TensorDictBase, key: str, default: Any = None) -> Any:
    """``td.get(key, default)`` for a root-level string key."""
    if _plain(td):
        return td._tensordict.get(key, default)
    return td.get(key, default)


def fast_set(td: TensorDictBase, key: str, value: Any) -> TensorDictBase:
    """``td.set(key, value)`` without validation for a root-level string key (plain TensorDicts)."""
    if _plain(td) and not td.is_locked:
        td._tensordict[key] = value
        return td
    return td.set(key, value)


def fast_pop(td: TensorDictBase, key: str) -> Any:
    """``td.pop(key, None)`` for a root-level string key."""
    if _plain(td) and not td.is_locked:
        return td._tensordict.pop(key, None)
    return td.pop(key, None)


def _filtered(td: TensorDictBase, tree: ExclusionTree) -> TensorDictBase | None:
    """``td`` minus the keys of ``tree``; ``None`` when the exclusion empties it (a group whose
    only entries were excluded, e.g. per-player rewards, is dropped, as the specs drop it)."""
    if not tree:
        return td
    if not _plain(td):
        out = td.exclude(*_tree_keys(tree))
        return None if out.is_empty() and not td.is_empty() else out
    out = {}
    for k, v in td._tensordict.items():
        e = tree.get(k)
        if e is True:
            continue
        if e is not None and isinstance(v, TensorDictBase):
            v = _filtered(v, e)
            if v is None:
                continue
        out[k] = v
    if not out and td._tensordict:
        return None
    return TensorDict._new_unsafe(out, td.batch_size, td.device)


def _tree_keys(tree: ExclusionTree, prefix: tuple = ()) -> list:
    keys = []
    for k, v in tree.items():
        if v is True:
            keys.append((*prefix, k) if prefix else k)
        else:
            keys.extend(_tree_keys(v, (*prefix, k)))
    return keys


def merge_excluding(
    root: TensorDictBase,
    nxt: TensorDictBase,
    root_exclude: ExclusionTree,
    next_exclude: ExclusionTree,
) -> TensorDictBase:
    """A new tensordict: ``root`` minus ``root_exclude``, updated (recursively, ``nxt`` winning)
    with ``nxt`` minus ``next_exclude``. No tensor is copied."""
    if not (_plain(root) and _plain(nxt)):
        out = root.exclude(*_tree_keys(root_exclude))
        out.update(nxt.exclude(*_tree_keys(next_exclude)) if next_exclude else nxt)
        return out
    out = {}
    for k, v in root._tensordict.items():
        e = root_exclude.get(k)
        if e is None:
            out[k] = v
        elif e is not True and isinstance(v, TensorDictBase):
            v = _filtered(v, e)
            if v is not None:
                out[k] = v
    for k, v in nxt._tensordict.items():
        e = next_exclude.get(k)
        if e is True:
            continue
        if not isinstance(v, torch.Tensor) and isinstance(v, TensorDictBase):
            if e is not None:
                v = _filtered(v, e)
                if v is None:
                    continue
            prev = out.get(k)
            if prev is not None and not isinstance(prev, torch.Tensor) and isinstance(prev, TensorDictBase):
                v = merge_excluding(prev, v, {}, {})
        out[k] = v
    return TensorDict._new_unsafe(out, root.batch_size, root.device)


def merge_flat(
    root: TensorDictBase, nxt: TensorDictBase, root_exclude: frozenset, next_exclude: frozenset
) -> TensorDictBase:
    """:func:`merge_excluding` when every excluded key is a root-level string (the common case)."""
    if not (_plain(root) and _plain(nxt)):
        return merge_excluding(root, nxt, dict.fromkeys(root_exclude, True), dict.fromkeys(next_exclude, True))
    out = {k: v for k, v in root._tensordict.items() if k not in root_exclude}
    for k, v in nxt._tensordict.items():
        if k in next_exclude:
            continue
        if type(v) is not torch.Tensor and isinstance(v, TensorDictBase):
            prev = out.get(k)
            if prev is not None and type(prev) is not torch.Tensor and isinstance(prev, TensorDictBase):
                v = merge_excluding(prev, v, {}, {})
        out[k] = v
    return TensorDict._new_unsafe(out, root.batch_size, root.device)
