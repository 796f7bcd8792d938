"""Masked merge of many leaves: ``out[i] = where(masks[i], new[i], old[i])``.

This is the partial-reset and ``step_and_maybe_reset`` merge: for every leaf of a tensordict, the
rows whose (batch) mask is True take the reset value, the others keep the current value. The
Triton kernel and its host wrapper live in :mod:`gpusim.kernels.masked_merge_triton` (imported
only when a CUDA tensor needs it); this module holds the pure-torch reference, the dispatch and
the ``torch.library`` registration (``torch.ops.gpusim.masked_merge`` and
``torch.ops.gpusim.masked_fill_rows_``).

Examples:
    >>> import torch
    >>> from gpusim.kernels import masked_merge
    >>> new, old = [torch.ones(3, 2)], [torch.zeros(3, 2)]
    >>> masked_merge(new, old, [torch.tensor([True, False, True])])[0][:, 0]
    tensor([1., 0., 1.])
"""

from collections.abc import Sequence

import torch

from gpusim.kernels._checks import check_merge_args
from gpusim.kernels._dispatch import use_triton_kernel

__all__ = [
    "masked_merge",
    "masked_merge_reference",
    "masked_fill_rows_",
    "masked_fill_rows_reference_",
]


def _expand_mask(mask: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    """Append singleton dims to a batch mask so it broadcasts over the leaf's trailing dims."""
    return mask.reshape(tuple(mask.shape) + (1,) * (leaf.ndim - mask.ndim))


def masked_merge_reference(
    new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Pure-torch masked merge: one ``torch.where`` per leaf.

    Args:
        new: values taken where the mask is True.
        old: values kept where the mask is False (same shape and dtype as ``new``).
        masks: bool masks; ``masks[i].shape`` is a prefix of ``new[i].shape`` (the leaf's batch
            dims), broadcast over the leaf's trailing dims.

    Returns:
        Fresh tensors; ``new`` and ``old`` are never written.

    Examples:
        >>> masked_merge_reference([torch.ones(2)], [torch.zeros(2)], [torch.tensor([False, True])])
        [tensor([0., 1.])]
    """
    check_merge_args(new, old, masks)
    return [torch.where(_expand_mask(m, n), n, o) for n, o, m in zip(new, old, masks)]


def masked_fill_rows_reference_(
    dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> None:
    """Pure-torch in-place row fill: ``dst[i][masks[i]] = src[i][masks[i]]`` (no host sync).

    Args:
        dst: tensors updated in place.
        src: values copied into the rows whose mask is True.
        masks: bool masks; ``masks[i].shape`` is a prefix of ``dst[i].shape``.

    Examples:
        >>> dst = [torch.zeros(2)]
        >>> masked_fill_rows_reference_(dst, [torch.ones(2)], [torch.tensor([True, False])])
        >>> dst
        [tensor([1., 0.])]
    """
    check_merge_args(src, dst, masks)
    for d, s, m in zip(dst, src, masks):
        d.copy_(torch.where(_expand_mask(m, d), s, d))


def masked_merge(
    new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Merge many leaves by row masks: ``out[i] = where(masks[i], new[i], old[i])``.

    On CUDA (eager, Triton installed) all leaves are merged by ONE kernel launch, whatever their
    dtypes; elsewhere (CPU, ``torch.compile``) the torch reference runs, which Inductor fuses.

    Args:
        new: values taken where the mask is True (any dtype).
        old: values kept where the mask is False (same shape and dtype as ``new``).
        masks: bool masks whose shape is a prefix of the leaf's shape, e.g. ``(N,)`` for a leaf
            ``(N, 4)``, or ``(N, n_agents)`` / ``(N,)`` for a leaf ``(N, n_agents, 3)``.

    Returns:
        Fresh tensors, one per leaf.

    Raises:
        ValueError: mismatched lengths, shapes or devices.
        TypeError: mismatched dtypes or non-bool masks.

    Examples:
        >>> new = [torch.ones(3, 2), torch.full((3,), 7)]
        >>> old = [torch.zeros(3, 2), torch.zeros(3, dtype=torch.long)]
        >>> m = torch.tensor([True, False, True])
        >>> masked_merge(new, old, [m, m])[1]
        tensor([7, 0, 7])
    """
    if len(new) and use_triton_kernel(new[0].device):
        from gpusim.kernels.masked_merge_triton import masked_merge_triton

        return masked_merge_triton(new, old, masks)
    return masked_merge_reference(new, old, masks)


def masked_fill_rows_(
    dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> None:
    """In-place masked row fill: ``dst[i][masks[i]] = src[i][masks[i]]`` for every leaf.

    On CUDA (eager, Triton installed) one launch reads and writes only the selected rows.

    Args:
        dst: tensors updated in place.
        src: values copied into the rows whose mask is True (same shape and dtype as ``dst``).
        masks: bool masks whose shape is a prefix of the leaf's shape.

    Examples:
        >>> dst = [torch.zeros(3, 2)]
        >>> masked_fill_rows_(dst, [torch.ones(3, 2)], [torch.tensor([False, True, False])])
        >>> dst[0][:, 0]
        tensor([0., 1., 0.])
    """
    if len(dst) and use_triton_kernel(dst[0].device):
        from gpusim.kernels.masked_merge_triton import masked_fill_rows_triton_

        masked_fill_rows_triton_(dst, src, masks)
        return
    masked_fill_rows_reference_(dst, src, masks)


# --- torch.library registration ---------------------------------------------------------------


@torch.library.custom_op("gpusim::masked_merge", mutates_args=())
def _masked_merge_op(
    new: list[torch.Tensor], old: list[torch.Tensor], masks: list[torch.Tensor]
) -> list[torch.Tensor]:
    """``torch.ops.gpusim.masked_merge``: the Triton kernel on CUDA, the reference elsewhere."""
    if len(new) and new[0].device.type == "cuda":
        from gpusim.kernels._dispatch import triton_available

        if triton_available():
            from gpusim.kernels.masked_merge_triton import masked_merge_triton

            return masked_merge_triton(new, old, masks)
    return masked_merge_reference(new, old, masks)


@_masked_merge_op.register_fake
def _masked_merge_fake(
    new: list[torch.Tensor], old: list[torch.Tensor], masks: list[torch.Tensor]
) -> list[torch.Tensor]:
    check_merge_args(new, old, masks)
    return [torch.empty(n.shape, dtype=n.dtype, device=n.device) for n in new]


@torch.library.custom_op("gpusim::masked_fill_rows_", mutates_args=("dst",))
def _masked_fill_rows_op(
    dst: list[torch.Tensor], src: list[torch.Tensor], masks: list[torch.Tensor]
) -> None:
    """``torch.ops.gpusim.masked_fill_rows_``: Triton on CUDA, the reference elsewhere."""
    if len(dst) and dst[0].device.type == "cuda":
        from gpusim.kernels._dispatch import triton_available

        if triton_available():
            from gpusim.kernels.masked_merge_triton import masked_fill_rows_triton_

            masked_fill_rows_triton_(dst, src, masks)
            return
    masked_fill_rows_reference_(dst, src, masks)


@_masked_fill_rows_op.register_fake
def _masked_fill_rows_fake(
    dst: list[torch.Tensor], src: list[torch.Tensor], masks: list[torch.Tensor]
) -> None:
    check_merge_args(src, dst, masks)
