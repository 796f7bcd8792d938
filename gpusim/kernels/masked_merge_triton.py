"""Triton kernel and host wrapper for the masked merge (imported lazily: it imports Triton).

One launch merges many leaves of any dtypes (each leaf keeps its own element type; the kernel
is specialized on the tuple of dtypes, fixed for a given env). Leaves are passed as tuples of
pointers (one kernel argument each, no pointer table on the
device), so the launch is safe under CUDA-graph capture. The grid is the concatenation of every
leaf's blocks; each program finds its leaf by comparing its id with the leaves' first block.
Loads are masked by row, so a row reads only the side it keeps (``new`` or ``old``).

Examples:
    Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
    the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
    Triton's interpreter.

    >>> import torch
    >>> from gpusim.kernels.masked_merge_triton import masked_merge_triton
    >>> new, old = torch.ones(4, 2), torch.zeros(4, 2)
    >>> m = torch.tensor([True, False, True, False])
    >>> masked_merge_triton([new], [old], [m])[0][:, 0]  # doctest: +SKIP
    tensor([1., 0., 1., 0.])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from gpusim.kernels._checks import check_merge_args
from gpusim.kernels._host import device_guard

__all__ = ["masked_merge_triton", "masked_fill_rows_triton_", "MAX_LEAVES_PER_LAUNCH"]

#: Leaves handled by one launch; more leaves are split over several launches.
MAX_LEAVES_PER_LAUNCH = 16
_BLOCK = 1024
_NUM_WARPS = 4


@triton.jit
def _merge_block(
    new_ptr,  # elements taken where the row mask is True
    old_ptr,  # elements kept where the row mask is False (unused when IN_PLACE)
    out_ptr,  # destination (== old_ptr when IN_PLACE)
    mask_ptr,  # bool row mask, one element per row
    numel,  # number of elements of the leaf
    row_size,  # elements per mask row
    block,  # block index inside the leaf
    BLOCK: tl.constexpr,  # elements per program
    IN_PLACE: tl.constexpr,  # store only the rows whose mask is True
    INT64: tl.constexpr,  # 64-bit offsets (leaves of 2**31 elements or more)
):
    if INT64:
        offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    else:
        offs = block * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offs < numel
    take_new = tl.load(mask_ptr + offs // row_size, mask=in_bounds, other=0) != 0
    if IN_PLACE:
        val = tl.load(new_ptr + offs, mask=in_bounds & take_new)
        tl.store(out_ptr + offs, val, mask=in_bounds & take_new)
    else:
        a = tl.load(new_ptr + offs, mask=in_bounds & take_new, other=0)
        b = tl.load(old_ptr + offs, mask=in_bounds & (~take_new), other=0)
        tl.store(out_ptr + offs, tl.where(take_new, a, b), mask=in_bounds)


@triton.jit
def _masked_merge_kernel(
    new_ptrs,  # tuple of NUM_LEAVES pointers: rows taken where the mask is True
    old_ptrs,  # tuple of pointers: rows kept where the mask is False
    out_ptrs,  # tuple of pointers: destinations
    mask_ptrs,  # tuple of bool pointers: one element per mask row
    numels,  # tuple of ints: elements per leaf
    row_sizes,  # tuple of ints: elements per mask row of each leaf
    block_starts,  # tuple of NUM_LEAVES + 1 ints: first program id of each leaf, then the total
    NUM_LEAVES: tl.constexpr,  # leaves in this launch
    BLOCK: tl.constexpr,  # elements per program
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
                numels[i],
                row_sizes[i],
                pid - start,
                BLOCK,
                IN_PLACE,
                INT64,
            )


def _launch(
    new: Sequence[torch.Tensor],
    old: Sequence[torch.Tensor],
    out: Sequence[torch.Tensor],
    masks: Sequence[torch.Tensor],
    in_place: bool,
) -> None:
    """Launch the merge over contiguous leaves (``out`` may alias ``old`` when ``in_place``).

    Host work is kept to a few attribute reads per leaf: this runs every env step.
    """
    sizes = [t.numel() for t in new]
    keep = [i for i, n in enumerate(sizes) if n]
    for c in range(0, len(keep), MAX_LEAVES_PER_LAUNCH):
        idx = keep[c : c + MAX_LEAVES_PER_LAUNCH]
        numels = tuple(sizes[i] for i in idx)
        row_sizes = tuple(sizes[i] // masks[i].numel() for i in idx)
        starts = [0]
        for n in numels:
            starts.append(starts[-1] + (n + _BLOCK - 1) // _BLOCK)
        with device_guard(new[idx[0]].device):
            _masked_merge_kernel[(starts[-1],)](
                tuple(new[i] for i in idx),
                tuple(old[i] for i in idx),
                tuple(out[i] for i in idx),
                tuple(masks[i] for i in idx),
                numels,
                row_sizes,
                tuple(starts),
                NUM_LEAVES=len(idx),
                BLOCK=_BLOCK,
                IN_PLACE=in_place,
                INT64=max(numels) + _BLOCK >= 2**31,
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
        Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
        the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
        Triton's interpreter.

        >>> new, old = [torch.ones(3)], [torch.zeros(3)]
        >>> masked_merge_triton(new, old, [torch.tensor([True, False, True])])  # doctest: +SKIP
        [tensor([1., 0., 1.])]
    """
    check_merge_args(new, old, masks)
    new_c = [n.contiguous() for n in new]
    old_c = [o.contiguous() for o in old]
    masks_c = [m.contiguous() for m in masks]
    out = [torch.empty_like(n, memory_format=torch.contiguous_format) for n in new]
    _launch(new_c, old_c, out, masks_c, in_place=False)
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
        Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
        the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
        Triton's interpreter.

        >>> dst = [torch.zeros(3)]
        >>> m = [torch.tensor([True, False, True])]
        >>> masked_fill_rows_triton_(dst, [torch.ones(3)], m)  # doctest: +SKIP
        >>> dst  # doctest: +SKIP
        [tensor([1., 0., 1.])]
    """
    check_merge_args(src, dst, masks)
    dst_c = [d.contiguous() for d in dst]
    src_c = [s.contiguous() for s in src]
    masks_c = [m.contiguous() for m in masks]
    _launch(src_c, dst_c, dst_c, masks_c, in_place=True)
    for d, c in zip(dst, dst_c):
        if c is not d:
            d.copy_(c)
