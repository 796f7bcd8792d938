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
from collections.abc import Iterable
from typing import Any

import tensordict
import torch
from tensordict import TensorDict, TensorDictBase, is_non_tensor

__all__ = [
    "TESTED",
    "PRIVATE_API",
    "check_private_api",
    "new_td",
    "inner",
    "get_via",
    "is_plain",
    "fast_get",
    "fast_get_path",
    "fast_set",
    "fast_pop",
    "merge_plain",
    "stack_plain",
    "entry_trees",
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
        for v in source.values():
            if isinstance(v, dict):  # a nested level: new containers below
                source = {k: (new_td(v, batch_size, device) if isinstance(v, dict) else v) for k, v in source.items()}
                break
        return TensorDict._new_unsafe(source, batch_size, device=device)
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


def get_via(data: dict | None, td: TensorDictBase, key: Any) -> Any:
    """``td.get(key, None)``, read from ``data`` (``inner(td)``, taken once by a caller that reads
    several keys) for a string key when it is available, else through :func:`fast_get_path`.

    Examples:
        >>> td = TensorDict({"a": torch.zeros(1), "g": TensorDict({"b": torch.ones(1)}, [1])}, [1])
        >>> data = inner(td)
        >>> get_via(data, td, "a").tolist(), get_via(data, td, ("g", "b")).tolist(), get_via(data, td, "c")
        ([0.0], [1.0], None)
    """
    if data is not None and type(key) is str:
        return data.get(key)
    return fast_get_path(td, key)


def exclusion_tree(keys: Iterable[str | tuple]) -> ExclusionTree:
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


def fast_get_path(td: TensorDictBase, key: Any, default: Any = None) -> Any:
    """``td.get(key, default)`` for a string or tuple key, walking the inner dicts of plain
    ``TensorDict`` levels; anything else on the way (a lazy stack, a leaf where a container is
    expected) gives tensordict's own ``td.get(key, default)``, with its result or error.

    Examples:
        >>> td = TensorDict({"agents": TensorDict({"reward": torch.ones(3, 1)}, [3])}, [])
        >>> fast_get_path(td, ("agents", "reward")).shape, fast_get_path(td, ("agents", "done"))
        (torch.Size([3, 1]), None)
    """
    if isinstance(key, str):
        return fast_get(td, key, default)
    node = td
    for part in key:
        if not _plain(node):
            return td.get(key, default)  # tensordict's own result (or error) from the root
        node = node._tensordict.get(part, _ABSENT)
        if node is _ABSENT:
            return default
    return node


_ABSENT = object()


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


class _Node:
    """A tensordict being built: its entries (tensors, non-tensor data or sub-``_Node``), batch
    size and device."""

    __slots__ = ("items", "batch_size", "device")

    def __init__(self, items: dict, batch_size: torch.Size, device: Any) -> None:
        self.items = items
        self.batch_size = batch_size
        self.device = device


class _NotPlain(Exception):
    """A container on the way is not a plain ``TensorDict``: the caller takes the public API."""


def entry_trees(
    key: str, exclude: ExclusionTree | None, include: ExclusionTree | None
) -> tuple[bool, ExclusionTree | None, ExclusionTree | None]:
    """Whether entry ``key`` is kept by an ``exclude`` tree and an ``include`` tree (``None``:
    everything), and the trees that apply inside it.

    Examples:
        >>> entry_trees("a", {"a": {"b": True}}, None)
        (True, {'b': True}, None)
        >>> entry_trees("c", None, {"a": True})[0]
        False
    """
    sub_exclude = exclude.get(key) if exclude else None
    if sub_exclude is True:
        return False, None, None
    if include is None:
        return True, sub_exclude, None
    sub_include = include.get(key)
    if sub_include is None:
        return False, None, None
    return True, sub_exclude, None if sub_include is True else sub_include


def _collect(
    td: TensorDictBase, exclude: ExclusionTree | None, include: ExclusionTree | None, keep_empty: bool = False
) -> _Node | None:
    """The structure of plain ``td`` minus ``exclude`` (and restricted to ``include`` when given),
    in new containers; ``None`` when no leaf is left (containers without leaves are dropped;
    with ``keep_empty``, containers that were empty in ``td`` are kept)."""
    data = inner(td)
    if data is None:
        raise _NotPlain
    if keep_empty and not data:
        return _Node({}, td.batch_size, td.device)
    items = {}
    for k, v in data.items():
        keep, e, i = entry_trees(k, exclude, include)
        if not keep:
            continue
        if not isinstance(v, torch.Tensor) and isinstance(v, TensorDictBase) and not is_non_tensor(v):
            v = _collect(v, e, i, keep_empty)
            if v is None:
                continue
        items[k] = v
    if not items:
        return None
    return _Node(items, td.batch_size, td.device)


def _merge_into(dest: _Node, src: _Node) -> None:
    """Updates ``dest`` with ``src`` recursively (``src`` wins on leaves)."""
    for k, v in src.items.items():
        prev = dest.items.get(k)
        if isinstance(prev, _Node) and isinstance(v, _Node):
            _merge_into(prev, v)
        else:
            dest.items[k] = v


def _build(node: _Node) -> TensorDict:
    return new_td(
        {k: (_build(v) if isinstance(v, _Node) else v) for k, v in node.items.items()}, node.batch_size, node.device
    )


def merge_plain(
    root: TensorDictBase,
    nxt: TensorDictBase,
    root_exclude: ExclusionTree,
    root_include: ExclusionTree | None,
    next_exclude: ExclusionTree,
    keep_empty: bool = False,
) -> TensorDict | None:
    """The next root of a step from plain tensordicts, in new containers at every level: ``root``
    minus ``root_exclude`` (restricted to ``root_include`` unless ``None``), updated
    recursively with ``nxt`` minus ``next_exclude`` (``nxt`` wins). Containers left without a
    leaf are dropped (with ``keep_empty``, those that were empty in the input are kept); no
    tensor is copied. ``None`` when a container on the way is not a plain
    ``TensorDict`` (or the private API is off): the caller then takes the public API.

    Examples:
        >>> root = TensorDict({"obs": torch.zeros(2), "a": {"x": torch.zeros(2)}}, [2])
        >>> nxt = TensorDict({"obs": torch.ones(2), "r": torch.ones(2)}, [2])
        >>> out = merge_plain(root, nxt, {}, None, {"r": True})
        >>> sorted(out.keys()), out["a"] is root["a"]
        (['a', 'obs'], False)
    """
    flat = _merge_flat(root, nxt, root_exclude, root_include, next_exclude)
    if flat is not None:
        return flat
    try:
        node = _collect(root, root_exclude, root_include, keep_empty)
        nxt_node = _collect(nxt, next_exclude, None, keep_empty)
    except _NotPlain:
        return None
    if node is None:
        node = _Node({}, nxt.batch_size, nxt.device)
    else:
        node.batch_size, node.device = nxt.batch_size, nxt.device
    if nxt_node is not None:
        _merge_into(node, nxt_node)
    return _build(node)


_Tensor = torch.Tensor


def _merge_flat(
    root: TensorDictBase,
    nxt: TensorDictBase,
    root_exclude: ExclusionTree,
    root_include: ExclusionTree | None,
    next_exclude: ExclusionTree,
) -> TensorDict | None:
    """:func:`merge_plain` of plain tensordicts whose kept entries are all plain tensors (no
    sub-container, no non-tensor data): one dict per side, with the same keys in the same order;
    ``None`` for anything else (the caller takes the general path). Empty containers do not
    occur here, so ``keep_empty`` does not matter."""
    if not PRIVATE_API or type(root) is not TensorDict or type(nxt) is not TensorDict:
        return None
    if torch.compiler.is_compiling():
        return None
    items = {}
    for k, v in root._tensordict.items():
        if root_exclude.get(k) is True or (root_include is not None and k not in root_include):
            continue
        if type(v) is not _Tensor:
            return None
        items[k] = v
    for k, v in nxt._tensordict.items():
        if next_exclude.get(k) is True:
            continue
        if type(v) is not _Tensor:
            return None
        items[k] = v
    return TensorDict._new_unsafe(items, nxt.batch_size, device=nxt.device)


def _stack_nodes(datas: list, batch: torch.Size, device: Any, dim: int) -> TensorDict | None:
    """Stacks the inner dicts ``datas`` (one per step) leaf by leaf; ``None`` for anything that
    is not a tree of plain tensors and unnamed plain ``TensorDict``s with the same keys."""
    first = datas[0]
    keys = first.keys()
    if not all(d.keys() == keys for d in datas):
        return None
    out: dict = {}
    for key, v0 in first.items():
        values = [d[key] for d in datas]
        if type(v0) is torch.Tensor:
            if not all(type(v) is torch.Tensor for v in values):
                return None
            out[key] = torch.stack(values, dim)
        elif type(v0) is TensorDict:
            sub = _inner_steps(values, v0.batch_size, v0.device)
            if sub is None:
                return None
            node = _stack_nodes(sub, v0.batch_size, v0.device, dim)
            if node is None:
                return None
            out[key] = node
        else:
            return None
    stacked = list(batch)
    stacked.insert(dim, len(datas))
    return TensorDict._new_unsafe(out, torch.Size(stacked), device=device)


def _inner_steps(steps: list, batch: torch.Size, device: Any) -> list | None:
    """The inner dicts of ``steps`` when each is an unnamed plain ``TensorDict`` of ``batch`` and
    ``device``; else ``None``."""
    datas = []
    for td in steps:
        if type(td) is not TensorDict or td.batch_size != batch or td.device != device or td._td_dim_names is not None:
            return None
        datas.append(td._tensordict)
    return datas


def stack_plain(steps: list[TensorDictBase], dim: int) -> TensorDict | None:
    """``torch.stack(steps, dim)`` for a list of plain tensordicts with the same keys, batch
    sizes and device at every level, without names: one ``torch.stack`` per leaf and new
    containers, skipping tensordict's per-step checks (tens of microseconds a step at batch 1).
    ``None`` when a step is anything else (lazy stacks, non-tensor leaves, named dims, other
    keys or batch sizes) or the private API is off: the caller then stacks with ``torch.stack``,
    which gives the result or tensordict's error. A leaf of another shape raises
    ``torch.stack``'s ``RuntimeError``.

    Examples:
        >>> steps = [TensorDict({"x": torch.full((2,), float(t)), "n": {"y": torch.zeros(2, 1)}}, [2]) for t in range(3)]
        >>> out = stack_plain(steps, 1)
        >>> out.batch_size, out["n"].batch_size, out["x"][0].tolist()
        (torch.Size([2, 3]), torch.Size([2, 3]), [0.0, 1.0, 2.0])
        >>> stack_plain([TensorDict({"x": torch.zeros(2)}, [2], names=["env"])] * 2, 0) is None
        True
    """
    if not PRIVATE_API or not steps or torch.compiler.is_compiling():
        return None
    first = steps[0]
    if type(first) is not TensorDict or not 0 <= dim <= len(first.batch_size):
        return None
    datas = _inner_steps(steps, first.batch_size, first.device)
    if datas is None:
        return None
    return _stack_nodes(datas, first.batch_size, first.device, dim)
