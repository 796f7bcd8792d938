"""Wide-element views: blocks of bytes seen as the widest integer/complex element that divides them.

Copying ``N`` float32 rows of 4 values element by element moves ``4N`` elements; seen as
complex128 (16 bytes) the same copy moves ``N`` elements, several times faster on CPU and bit-exact
(a copy between views of one dtype is a plain byte move). Used by the CPU CatFrames update and the
rollout's final stack.

Examples:
    >>> import torch
    >>> as_wide(torch.zeros(3, 4))[0].dtype
    torch.complex128
    >>> as_wide(torch.zeros(3, 3))[0].dtype  # 12 bytes: int64 does not divide them, nor does int32 widen
    torch.float32
"""

from __future__ import annotations

import torch

__all__ = ["as_wide"]

_WIDE = (torch.complex128, torch.int64, torch.int32, torch.int16)


def as_wide(*blocks: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Views of ``blocks`` (same dtype and last-dim size, last dim contiguous) as the widest element
    type wider than their dtype whose size divides a block's bytes; ``blocks`` unchanged when none
    applies (no wider divisor, or a storage offset the wider type cannot align to).

    Args:
        blocks: tensors whose last dim holds the bytes to move together.

    Returns:
        The views, in order.

    Examples:
        >>> a, b = as_wide(torch.zeros(2, 4, dtype=torch.int16), torch.ones(2, 4, dtype=torch.int16))
        >>> a.dtype, a.shape
        (torch.int64, torch.Size([2, 1]))
    """
    itemsize = blocks[0].element_size()
    nbytes = blocks[0].shape[-1] * itemsize
    for wide in _WIDE:
        if wide.itemsize <= itemsize or nbytes % wide.itemsize:
            continue
        try:
            return tuple(b.view(wide) for b in blocks)
        except RuntimeError:  # unaligned storage offset: try a narrower type
            continue
    return blocks
