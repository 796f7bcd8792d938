"""Done levels and ``"_reset"`` masks for stateful transforms.

Stateful transforms learn the done levels of their parent when the specs are transformed
(``transform_output_spec`` receives the parent's ``full_done_spec``), so nothing is looked up
per step. At reset time they read the applicable ``"_reset"`` mask of a level from the input of
``reset``, with the base env's rules: a root ``"_reset"`` applies to every level (it annihilates
nested ones); otherwise a level's own ``"_reset"`` applies; without any, the level is fully
reset (``None``).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.envs._keys import DoneLevel
    >>> root = DoneLevel((), ("done",), "_reset", torch.Size([3]))
    >>> td = TensorDict({"_reset": torch.tensor([[True], [False], [True]])}, [3])
    >>> reset_mask(td, root)
    tensor([ True, False,  True])
    >>> reset_mask(TensorDict({}, [3]), root) is None
    True
"""

from __future__ import annotations

from typing import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get, fast_set
from gpusim.envs._keys import DoneLevel, NestedKey

__all__ = ["done_levels_of", "level_for_key", "reset_mask", "row_mask", "default_levels", "tget", "tset"]


def done_levels_of(output_spec) -> list[DoneLevel]:
    """The done levels (root first) of an ``output_spec`` Composite."""
    if "full_done_spec" not in output_spec.keys():
        return []
    return _keys.done_levels(output_spec["full_done_spec"], output_spec.shape)


def default_levels(batch_size: torch.Size) -> list[DoneLevel]:
    """A root-only level list (transforms used without an env)."""
    return [DoneLevel((), ("done",), "_reset", torch.Size(batch_size))]


def level_for_key(levels: Sequence[DoneLevel], key: NestedKey) -> DoneLevel | None:
    """The deepest level whose prefix contains ``key`` (the root level for root keys)."""
    tkey = _keys.as_tuple(key)
    best = None
    for level in levels:
        p = level.prefix
        if len(p) < len(tkey) and tkey[: len(p)] == p:
            if best is None or len(p) > len(best.prefix):
                best = level
    return best


def _is_prefix(prefix, shape) -> bool:
    return len(prefix) <= len(shape) and tuple(shape[: len(prefix)]) == tuple(prefix)


def _reshape_mask(mask: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Brings a ``"_reset"`` mask (``(*L, 1)``, ``L``, or a coarser root mask) to ``shape``."""
    if mask.dtype is not torch.bool:
        mask = mask.bool()
    if mask.shape == shape:
        return mask
    if mask.ndim and mask.shape[-1] == 1 and _is_prefix(mask.shape[:-1], shape):
        mask = mask.squeeze(-1)
    if mask.shape == shape:
        return mask
    if _is_prefix(mask.shape, shape):  # a coarser (root) mask for a finer level: broadcast
        return mask.reshape(*mask.shape, *([1] * (len(shape) - mask.ndim))).expand(shape)
    return mask.reshape(shape)


def reset_mask(tensordict: TensorDictBase | None, level: DoneLevel) -> torch.Tensor | None:
    """The rows of ``level`` to reset (bool, shape ``level.shape``), or ``None`` for all rows.

    Args:
        tensordict: the input of ``reset`` (``"_reset"`` entries still in it), or ``None``.
        level: the done level.
    """
    if tensordict is None:
        return None
    root = fast_get(tensordict, "_reset")
    if root is not None:
        return _reshape_mask(root, level.shape)
    if level.prefix == ():
        return None
    own = tget(tensordict, level.reset_key)
    if own is None:
        return None
    return _reshape_mask(own, level.shape)


def row_mask(mask: torch.Tensor, batch_shape: torch.Size) -> torch.Tensor:
    """Reduces a (possibly finer) level mask to ``batch_shape`` rows (any over extra dims)."""
    if mask.shape == batch_shape:
        return mask
    extra = mask.ndim - len(batch_shape)
    if extra > 0 and tuple(mask.shape[: len(batch_shape)]) == tuple(batch_shape):
        return mask.reshape(*batch_shape, -1).any(-1)
    return mask.reshape(batch_shape)


def expand_mask(mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Appends singleton dims so a row ``mask`` broadcasts over ``value``'s trailing dims."""
    return mask.reshape(*mask.shape, *([1] * (value.ndim - mask.ndim)))


def tget(td: TensorDictBase, key: NestedKey, default=None):
    """Validation-free ``td.get(key, default)`` for str or tuple keys (plain TensorDicts)."""
    if isinstance(key, str):
        return fast_get(td, key, default)
    node = td
    for part in key[:-1]:
        node = fast_get(node, part)
        if node is None or isinstance(node, torch.Tensor):
            return default
    return fast_get(node, key[-1], default)


def tset(td: TensorDictBase, key: NestedKey, value: torch.Tensor) -> TensorDictBase:
    """Validation-free ``td.set(key, value)`` for str or tuple keys (falls back to ``set`` when
    an intermediate node is missing)."""
    if isinstance(key, str):
        return fast_set(td, key, value)
    node = td
    for part in key[:-1]:
        child = fast_get(node, part)
        if child is None or isinstance(child, torch.Tensor):
            return td.set(key, value)
        node = child
    fast_set(node, key[-1], value)
    return td
