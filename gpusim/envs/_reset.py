"""Partial resets: which ``"_reset"`` masks apply, and the masked merge of reset output with
previous data.

The rules (DESIGN.md section 3, TorchRL's documented ``"_reset"`` semantics):

* a ``"_reset"`` entry at a done level selects the rows of that level to reset;
* no ``"_reset"`` at a level means a full reset of that level, unless a ``"_reset"`` exists above;
* a root ``"_reset"`` annihilates nested ones;
* rows not selected keep the previous data; the ``"_reset"`` entries are erased.

The merge never reads mask values on the host: it is one ``where`` per leaf (one fused kernel
launch on CUDA through :func:`gpusim.kernels.masked_merge`).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> new = TensorDict({"val": torch.zeros(2)}, [2])
    >>> old = TensorDict({"val": torch.ones(2)}, [2])
    >>> merge_level(new, old, torch.tensor([False, True]), torch.Size([2]))["val"]
    tensor([1., 0.])
"""

from __future__ import annotations

from typing import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import DoneLevel, as_tuple
from gpusim.kernels.masked_merge import masked_merge


def collect_reset_masks(
    tensordict: TensorDictBase, levels: Sequence[DoneLevel]
) -> list[tuple[tuple, torch.Tensor, torch.Size]]:
    """Returns ``(prefix, mask, level_shape)`` for every ``"_reset"`` that applies, popping all
    ``"_reset"`` entries from ``tensordict``.

    A root ``"_reset"`` (present even when the root has no done level) wins over nested ones.
    """
    root = tensordict.pop("_reset", None)
    root_shape = None  # no root done level: the mask keeps its own shape
    nested = []
    for level in levels:
        if level.prefix == ():
            root_shape = level.shape
            continue
        mask = tensordict.pop(level.reset_key, None)
        if mask is not None:
            nested.append((level.prefix, mask, level.shape))
    if root is not None:
        return [((), root, root_shape)]
    return nested


def _row_mask(mask: torch.Tensor, shape: torch.Size | None) -> torch.Tensor:
    """Reshapes a ``"_reset"`` mask (usually ``(*shape, 1)``) to the level's batch ``shape``."""
    if mask.dtype is not torch.bool:
        mask = mask.bool()
    if shape is None:
        return mask.squeeze(-1) if mask.ndim and mask.shape[-1] == 1 else mask
    if mask.shape == shape:
        return mask
    return mask.reshape(shape)


def merge_level(
    node_new: TensorDictBase,
    node_old: TensorDictBase | None,
    mask: torch.Tensor,
    shape: torch.Size | None,
) -> TensorDictBase:
    """Writes into ``node_new`` the previous values of ``node_old`` wherever ``mask`` is False.

    Leaves missing from ``node_old`` keep their reset values. Returns ``node_new``.
    """
    if node_old is None:
        return node_new
    mask = _row_mask(mask, shape)
    keys, new_leaves, old_leaves = [], [], []
    for key, new in node_new.items(True, True):
        if not isinstance(new, torch.Tensor):
            continue
        old = node_old.get(key, None)
        if not isinstance(old, torch.Tensor) or old.shape != new.shape:
            continue
        keys.append(key)
        new_leaves.append(new)
        old_leaves.append(old if old.dtype == new.dtype else old.to(new.dtype))
    if keys:
        merged = masked_merge(new_leaves, old_leaves, [mask] * len(keys))
        for key, value in zip(keys, merged):
            node_new.set(key, value)
    return node_new


def apply_reset_masks(
    tensordict_reset: TensorDictBase,
    tensordict: TensorDictBase,
    masks: list[tuple[tuple, torch.Tensor, torch.Size]],
) -> TensorDictBase:
    """Applies every ``(prefix, mask, shape)`` of :func:`collect_reset_masks`."""
    for prefix, mask, shape in masks:
        if prefix == ():
            merge_level(tensordict_reset, tensordict, mask, shape)
            continue
        node_new = tensordict_reset.get(prefix, None)
        if node_new is None:
            continue
        node_old = tensordict.get(prefix, None)
        merge_level(node_new, node_old, mask, shape)
    return tensordict_reset


def reset_key_prefix(key) -> tuple:
    """The level path of a ``"_reset"`` key."""
    return as_tuple(key)[:-1]
