"""Every use of tensordict's private API in gpusim, in one module, with a public-API fallback.

The env already knows its keys and shapes (the specs were checked at construction and by
``check_env_specs``), so the per-step bookkeeping skips tensordict's per-call validation when the
container is a plain ``TensorDict``: it reads and writes the container's inner dict
(``TensorDict._tensordict``) and builds new containers with ``TensorDict._new_unsafe``. Those two
names are tensordict internals; nothing else in gpusim touches them.

At import, the installed tensordict's version is compared with the versions gpusim is tested on
(:data:`TESTED`, the same bounds as ``pyproject.toml``) and the two internals are probed. When
either check fails, :data:`PRIVATE_API` is ``False``, a warning says so once, and every function
here takes tensordict's public API instead (same results, more per-call validation). Anything
that is not a plain ``TensorDict`` (lazy stacks, persistent or shared-memory containers) always
goes through the public API. Key plans are exclusion trees computed once.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2)}, [2])
    >>> fast_set(td, "b", torch.ones(2))["b"]
    tensor([1., 1.])
    >>> new_td({"x": torch.zeros(3)}, torch.Size([3])).batch_size
    torch.Size([3])
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Iterable, Union

import tensordict
import torch
from tensordict import TensorDict, TensorDictBase

__all__ = [
    "TESTED",
    "PRIVATE_API",
    "check_private_api",
    "new_td",
    "inner",
    "is_plain",
    "fast_get",
    "fast_set",
    "fast_pop",
    "merge_excluding",
    "merge_flat",
    "exclusion_tree",
]

ExclusionTree = dict  # str -> True (drop the entry) or a nested ExclusionTree

TESTED = ((0, 14, 3), (0, 16, 0))
"""tensordict versions gpusim is tested with: ``>= 0.14.3, < 0.16`` (as in ``pyproject.toml``)."""


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def check_private_api(version: str | None = None) -> tuple[bool, str]:
    """Whether the private API gpusim uses is there and the tensordict version is a tested one.

    Args:
        version: a version string to check (default: the installed tensordict's).

    Returns:
        ``(ok, reason)``: ``reason`` says what failed (empty when ``ok``).

    Examples:
        >>> check_private_api("0.15.3")
        (True, '')
        >>> check_private_api("0.9.0")[0]
        False
    """
    version = tensordict.__version__ if version is None else version
    low, high = TESTED
    got = _version_tuple(version)
    if not low <= got < high:
        return False, (
            f"tensordict {version} is outside the versions gpusim is tested with "
            f"(>= {'.'.join(map(str, low))}, < {'.'.join(map(str, high))})"
        )
    try:
        probe = TensorDict._new_unsafe({"a": torch.zeros(1)}, torch.Size([1]), device=None)
        if not isinstance(probe._tensordict, dict) or "a" not in probe._tensordict:
            return False, "TensorDict._tensordict is not the inner dict"
    except Exception as err:  # noqa: BLE001 - any failure means: do not use it
        return False, f"TensorDict._new_unsafe/_tensordict are unusable ({type(err).__name__}: {err})"
    return True, ""


PRIVATE_API, _REASON = check_private_api()
"""Whether the validation-free paths are on (see the module docstring)."""
if not PRIVATE_API:
    warnings.warn(
        f"gpusim: {_REASON}; falling back to tensordict's public API (correct, slower per call)",
        RuntimeWarning,
        stacklevel=2,
    )


def new_td(source: dict, batch_size: torch.Size, device: torch.device | str | None = None) -> TensorDict:
    """A ``TensorDict`` of ``source`` (a nested dict of tensors or tensordicts whose shapes are
    known to be right), without per-leaf validation when the private API is on and nothing is
    being compiled.

    Examples:
        >>> new_td({"a": {"b": torch.ones(2, 1)}}, torch.Size([2]))["a", "b"].shape
        torch.Size([2, 1])
    """
    if PRIVATE_API and not torch.compiler.is_compiling():
        nested = {
            k: (new_td(v, batch_size, device) if isinstance(v, dict) else v) for k, v in source.items()
        }
        return TensorDict._new_unsafe(nested, batch_size, device=device)
    return TensorDict(source, batch_size, device=device)


def inner(td: TensorDictBase) -> dict | None:
    """The inner ``{key: value}`` dict of a plain ``TensorDict`` (read-only use), or ``None``
    when it may not be read directly (not plain, or the private API is off).

    Examples:
        >>> sorted(inner(TensorDict({"a": torch.zeros(1)}, [1])))
        ['a']
    """
    if PRIVATE_API and type(td) is TensorDict:
        return td._tensordict
    return None


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
    """Whether ``td`` is a plain ``TensorDict`` whose leaves may be accessed directly.

    Examples:
        >>> is_plain(TensorDict({}, [])) == PRIVATE_API
        True
    """
    return PRIVATE_API and type(td) is TensorDict


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
    return new_td(out, td.batch_size, td.device)


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
    return new_td(out, root.batch_size, root.device)


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
    return new_td(out, root.batch_size, root.device)
