"""Triton kernel and host wrapper for the masked merge (imported lazily: it imports Triton).

One launch merges many leaves of any dtypes: every leaf is viewed as a flat array of "words"
(1, 2, 4 or 8 bytes, the widest that divides the leaf's row size), so the kernel only moves
bits. Leaves are passed as tuples of pointers (one kernel argument each, no pointer table on the
device), so the launch is safe under CUDA-graph capture. The grid is the concatenation of every
leaf's blocks; each program finds its leaf by comparing its id with the leaves' first block.
Loads are masked by row, so a row reads only the side it keeps (``new`` or ``old``).

Examples:
    >>> import torch
    >>> from gpusim.kernels.masked_merge_triton import masked_merge_triton
    >>> new, old = torch.ones(4, 2), torch.zeros(4, 2)
    >>> m = torch.tensor([True, False, True, False])
    >>> masked_merge_triton([new], [old], [m])[0][:, 0]  # doctest: +SKIP
    tensor([1., 0., 1., 0.])
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from gpusim.kernels._checks import check_merge_args

__all__ = ["masked_merge_triton", "masked_fill_rows_triton_", "MAX_LEAVES_PER_LAUNCH"]

#: Leaves handled by one launch; more leaves are split over several launches.
MAX_LEAVES_PER_LAUNCH = 16
_BLOCK = 1024
_NUM_WARPS = 4
_WORD_DTYPES = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


@triton.jit
def _merge_block(
    new_ptr,  # words taken where the row mask is True
    old_ptr,  # words kept where the row mask is False (unused when IN_PLACE)
    out_ptr,  # destination words (== old_ptr when IN_PLACE)
    mask_ptr,  # uint8 row mask, one byte per row
    n_words,  # number of words of the leaf
    row_words,  # words per mask row
    block,  # block index inside the leaf
    BLOCK: tl.constexpr,  # words per program
    IN_PLACE: tl.constexpr,  # store only the rows whose mask is True
    INT64: tl.constexpr,  # 64-bit offsets (leaves of 2**31 words or more)
):
    if INT64:
        offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    else:
        offs = block * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offs < n_words
    take_new = tl.load(mask_ptr + offs // row_words, mask=in_bounds, other=0) != 0
    if IN_PLACE:
        val = tl.load(new_ptr + offs, mask=in_bounds & take_new)
        tl.store(out_ptr + offs, val, mask=in_bounds & take_new)
    else:
        a = tl.load(new_ptr + offs, mask=in_bounds & take_new, other=0)
        b = tl.load(old_ptr + offs, mask=in_bounds & (~take_new), other=0)
        tl.store(out_ptr + offs, tl.where(take_new, a, b), mask=in_bounds)


@triton.jit
def _masked_merge_kernel(
    new_ptrs,  # tuple of NUM_LEAVES word pointers: rows taken where the mask is True
    old_ptrs,  # tuple of word pointers: rows kept where the mask is False
    out_ptrs,  # tuple of word pointers: destinations
    mask_ptrs,  # tuple of uint8 pointers: one byte per mask row
    n_words,  # tuple of ints: words per leaf
    row_words,  # tuple of ints: words per mask row of each leaf
    block_starts,  # tuple of NUM_LEAVES + 1 ints: first program id of each leaf, then the total
    NUM_LEAVES: tl.constexpr,  # leaves in this launch
    BLOCK: tl.constexpr,  # words per program
    IN_PLACE: tl.constexpr,  # masked_fill_rows_: write only the True rows into out_ptrs
    INT64: tl.constexpr,  # 64-bit offsets
):
    pid = tl.program_id(0)
    for i in tl.static_range(NUM_LEAVES):
        start = block_starts[i]
        if (pid >= start) & (pid < block_starts[i + 1]):
            _merge_block(
                new_ptrs[i],
                old_ptrs[i],
                out_ptrs[i],
                mask_ptrs[i],
                n_words[i],
                row_words[i],
                pid - start,
                BLOCK,
                IN_PLACE,
                INT64,
            )


def _word_size(row_bytes: int, *tensors: torch.Tensor) -> int:
    """Widest word (8, 4, 2, 1 bytes) dividing the row size and every tensor's address."""
    for w in (8, 4, 2, 1):
        if row_bytes % w == 0 and all(t.data_ptr() % w == 0 for t in tensors):
            return w
    return 1


def _as_words(t: torch.Tensor, w: int) -> torch.Tensor:
    """Flat view of a contiguous tensor as ``w``-byte words."""
    flat = t.reshape(-1)
    if flat.dtype.itemsize != w or flat.dtype == torch.bool:
        flat = flat.view(torch.uint8).view(_WORD_DTYPES[w])
    return flat


def _launch(
    new: Sequence[torch.Tensor],
    old: Sequence[torch.Tensor],
    out: Sequence[torch.Tensor],
    masks: Sequence[torch.Tensor],
    in_place: bool,
) -> None:
    """Launch the merge over contiguous leaves (``out`` may alias ``old`` when ``in_place``)."""
    leaves = []
    for n, o, d, m in zip(new, old, out, masks):
        numel = n.numel()
        if numel == 0:
            continue
        rows = m.numel()
        row_bytes = (numel // rows) * n.element_size()
        w = _word_size(row_bytes, n, o, d)
        n_words = numel * n.element_size() // w
        mask_bytes = m.contiguous().reshape(-1).view(torch.uint8)
        leaves.append(
            (_as_words(n, w), _as_words(o, w), _as_words(d, w), mask_bytes, n_words, n_words // rows)
        )
    for c in range(0, len(leaves), MAX_LEAVES_PER_LAUNCH):
        chunk = leaves[c : c + MAX_LEAVES_PER_LAUNCH]
        starts = [0]
        for leaf in chunk:
            starts.append(starts[-1] + triton.cdiv(leaf[4], _BLOCK))
        int64 = any(leaf[4] + _BLOCK >= 2**31 for leaf in chunk)
        device = chunk[0][0].device
        with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
            _masked_merge_kernel[(starts[-1],)](
                tuple(leaf[0] for leaf in chunk),
                tuple(leaf[1] for leaf in chunk),
                tuple(leaf[2] for leaf in chunk),
                tuple(leaf[3] for leaf in chunk),
                tuple(leaf[4] for leaf in chunk),
                tuple(leaf[5] for leaf in chunk),
                tuple(starts),
                NUM_LEAVES=len(chunk),
                BLOCK=_BLOCK,
                IN_PLACE=in_place,
                INT64=int64,
                num_warps=_NUM_WARPS,
            )



def masked_merge_triton(
    new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Triton host wrapper: ``out[i] = where(masks[i], new[i], old[i])`` for every leaf, one launch.

    Args:
        new: values taken where the mask is True.
        old: values kept where the mask is False (same shape and dtype as ``new``).
        masks: bool masks; ``masks[i].shape`` is a prefix of ``new[i].shape``.

    Returns:
        Fresh contiguous tensors (``new``/``old`` are never written).

    Examples:
        >>> new, old = [torch.ones(3)], [torch.zeros(3)]
        >>> masked_merge_triton(new, old, [torch.tensor([True, False, True])])  # doctest: +SKIP
        [tensor([1., 0., 1.])]
    """
    check_merge_args(new, old, masks)
    new_c = [n.contiguous() for n in new]
    old_c = [o.contiguous() for o in old]
    out = [torch.empty(n.shape, dtype=n.dtype, device=n.device) for n in new]
    _launch(new_c, old_c, out, masks, in_place=False)
    return out


def masked_fill_rows_triton_(
    dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> None:
    """Triton host wrapper: ``dst[i][masks[i]] = src[i][masks[i]]`` in place, one launch.

    Only the selected rows are read from ``src`` and written to ``dst``.

    Args:
        dst: tensors updated in place.
        src: values copied into the selected rows (same shape and dtype as ``dst``).
        masks: bool masks; ``masks[i].shape`` is a prefix of ``dst[i].shape``.

    Examples:
        >>> dst = [torch.zeros(3)]
        >>> masked_fill_rows_triton_(dst, [torch.ones(3)], [torch.tensor([True, False, True])])  # doctest: +SKIP
        >>> dst  # doctest: +SKIP
        [tensor([1., 0., 1.])]
    """
    check_merge_args(src, dst, masks)
    dst_c = [d.contiguous() for d in dst]
    src_c = [s.contiguous() for s in src]
    _launch(src_c, dst_c, dst_c, masks, in_place=True)
    for d, c in zip(dst, dst_c):
        if c is not d:
            d.copy_(c)
