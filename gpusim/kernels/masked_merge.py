"""Masked merge of many leaves: ``out[i] = where(masks[i], new[i], old[i])``.

This is the partial-reset and ``step_and_maybe_reset`` merge: for every leaf of a tensordict, the
rows whose (batch) mask is True take the reset value, the others keep the current value. The
Triton kernel and its host wrapper live in :mod:`gpusim.kernels.masked_merge_triton` (imported
only when a CUDA tensor needs it); this module holds the pure-torch references, the eager-CPU
row-scatter paths and the op-table rows (:mod:`gpusim.kernels._registry`) that build the public
functions and ``torch.ops.gpusim.masked_merge`` / ``torch.ops.gpusim.masked_fill_rows_``. The
backend is chosen by :func:`gpusim.kernels._dispatch.select` (table keys ``"masked_merge"`` and
``"masked_fill_rows"``: the CPU row paths from a threshold on the elements of the largest leaf).

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
from gpusim.kernels._dispatch import threshold
from gpusim.kernels._inductor import in_cpu_graph
from gpusim.kernels._registry import kernel_op, largest_leaf, leaves_device

__all__ = [
    "masked_merge",
    "masked_merge_reference",
    "masked_fill_rows_",
    "masked_fill_rows_reference_",
    "masked_merge_cpu_rows",
    "masked_fill_rows_cpu_rows_",
]

# Eager CPU: ``torch.where`` with a row mask runs a scalar loop (about 13x an elementwise op at
# 65536 x 4 float32 here); copying the old leaf and scattering the selected rows is vectorised.
# Reading the mask on the host is free on CPU (no device to wait for).


CPU_ROWS_MIN_NUMEL = threshold("masked_merge")
"""Below this many elements in the largest leaf, one ``torch.where`` is cheaper than the row
path's few ops (``BACKEND_TABLE["masked_merge"]``, kept here for older callers)."""


def _selected_rows(mask: torch.Tensor, cache: dict) -> torch.Tensor:
    """Flat indices of the True entries of ``mask``, computed once per mask object."""
    rows = cache.get(id(mask))
    if rows is None:
        rows = cache[id(mask)] = mask.reshape(-1).nonzero().squeeze(-1)
    return rows


def _merge_rows_cpu(new: torch.Tensor, old: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``where(mask, new, old)`` as a copy of ``old`` with the selected rows of ``new`` scattered in."""
    n_rows = mask.numel()
    if rows.numel() == n_rows:
        return new.clone(memory_format=torch.contiguous_format)
    out = old.clone(memory_format=torch.contiguous_format)
    if rows.numel():
        _as_rows(out, n_rows).index_copy_(0, rows, _as_rows(new, n_rows).index_select(0, rows))
    return out


def _as_rows(leaf: torch.Tensor, n_rows: int) -> torch.Tensor:
    """``leaf`` as ``(n_rows, rest)`` (a view when contiguous); ``n_rows`` > 0."""
    return leaf.reshape(n_rows, leaf.numel() // n_rows)


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
    return [_where_rows(m, n, o) for n, o, m in zip(new, old, masks)]


def _where_rows(mask: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """``where(mask, new, old)`` for one leaf; byte leaves (frames) of a CPU graph by a bitwise
    select.

    In a CPU graph, uint8/int8 leaves take their rows as ``((new ^ old) & m) ^ old`` with ``m``
    all ones in the selected rows: the same bytes as ``where``, but Inductor's CPU code for a
    byte ``where`` under a row mask widens the mask to 64 byte lanes one lane at a time (a
    4096 x 32 x 32 x 3 frame merge: 52 ms, the bitwise select 1.1 ms). Eager and on GPUs one
    ``where`` is the cheaper form.
    """
    if (new.dtype == torch.uint8 or new.dtype == torch.int8) and in_cpu_graph(new):
        ones = mask.to(new.dtype) * 255 if new.dtype == torch.uint8 else -mask.to(new.dtype)
        return ((new ^ old) & _expand_mask(ones, new)) ^ old
    return torch.where(_expand_mask(mask, new), new, old)


def masked_merge_cpu_rows(
    new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Eager-CPU masked merge: copy ``old``, scatter the selected rows of ``new`` (same result as
    :func:`masked_merge_reference`).

    The selected rows are read once per distinct mask (``nonzero`` on a CPU tensor: no device
    sync); every leaf then costs one copy plus a row gather/scatter instead of a scalar
    ``torch.where`` loop. A leaf passed twice (same ``new``, ``old`` and mask objects, e.g. an
    observation that is also the state) is merged once and returned twice.

    Examples:
        >>> m = torch.tensor([True, False])
        >>> masked_merge_cpu_rows([torch.ones(2, 3)], [torch.zeros(2, 3)], [m])[0][:, 0]
        tensor([1., 0.])
    """
    check_merge_args(new, old, masks)
    cache: dict = {}
    merged: dict = {}  # a leaf aliased under two keys (e.g. observation is state) is merged once
    out = []
    for n, o, m in zip(new, old, masks):
        key = (id(n), id(o), id(m))
        if key not in merged:
            merged[key] = _merge_rows_cpu(n, o, m, _selected_rows(m, cache))
        out.append(merged[key])
    return out


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


def masked_fill_rows_cpu_rows_(
    dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> None:
    """Eager-CPU in-place row fill: the selected rows are copied with one gather/scatter per leaf
    (same result as :func:`masked_fill_rows_reference_`).

    Examples:
        >>> dst = [torch.zeros(2, 2)]
        >>> masked_fill_rows_cpu_rows_(dst, [torch.ones(2, 2)], [torch.tensor([False, True])])
        >>> dst[0][:, 0]
        tensor([0., 1.])
    """
    check_merge_args(src, dst, masks)
    cache: dict = {}
    for d, s, m in zip(dst, src, masks):
        if not d.is_contiguous():
            d.copy_(torch.where(_expand_mask(m, d), s, d))
            continue
        rows = _selected_rows(m, cache)
        if rows.numel():
            _as_rows(d, m.numel()).index_copy_(0, rows, _as_rows(s, m.numel()).index_select(0, rows))


# --- op table: public functions and torch.ops.gpusim.* ----------------------------------------


def _masked_merge_fake(
    new: list[torch.Tensor], old: list[torch.Tensor], masks: list[torch.Tensor]
) -> list[torch.Tensor]:
    check_merge_args(new, old, masks)
    return [torch.empty(n.shape, dtype=n.dtype, device=n.device) for n in new]


def _masked_fill_rows_fake(dst: list[torch.Tensor], src: list[torch.Tensor], masks: list[torch.Tensor]) -> None:
    check_merge_args(src, dst, masks)


@kernel_op(
    "masked_merge",
    "masked_merge",
    reference=masked_merge_reference,
    cpu=masked_merge_cpu_rows,
    triton="gpusim.kernels.masked_merge_triton:masked_merge_triton",
    fake=_masked_merge_fake,
    device=leaves_device,
    size=largest_leaf,
)
def masked_merge(
    new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Merge many leaves by row masks: ``out[i] = where(masks[i], new[i], old[i])``.

    On CUDA (eager, Triton installed) all leaves are merged by ONE kernel launch, whatever their
    dtypes; on eager CPU from ``threshold("masked_merge")`` elements in the largest leaf, a copy
    of ``old`` with the selected rows scattered in; elsewhere (small CPU inputs, ``torch.compile``) the torch
    reference, which Inductor fuses. Same results on every path.

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


@kernel_op(
    "masked_fill_rows_",
    "masked_fill_rows",
    reference=masked_fill_rows_reference_,
    cpu=masked_fill_rows_cpu_rows_,
    triton="gpusim.kernels.masked_merge_triton:masked_fill_rows_triton_",
    fake=_masked_fill_rows_fake,
    mutates_args=("dst",),
    device=leaves_device,
    size=largest_leaf,
)
def masked_fill_rows_(dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]) -> None:
    """In-place masked row fill: ``dst[i][masks[i]] = src[i][masks[i]]`` for every leaf.

    On CUDA (eager, Triton installed) one launch reads and writes only the selected rows; on
    eager CPU from ``threshold("masked_fill_rows")`` elements in the largest leaf, one row
    gather/scatter per leaf; elsewhere the torch reference.

    Args:
        dst: tensors updated in place.
        src: values copied into the rows whose mask is True (same shape and dtype as ``dst``).
        masks: bool masks whose shape is a prefix of the leaf's shape.

    Raises:
        ValueError: mismatched lengths, shapes or devices.
        TypeError: mismatched dtypes or non-bool masks.

    Examples:
        >>> dst = [torch.zeros(3, 2)]
        >>> masked_fill_rows_(dst, [torch.ones(3, 2)], [torch.tensor([False, True, False])])
        >>> dst[0][:, 0]
        tensor([0., 1., 0.])
    """
