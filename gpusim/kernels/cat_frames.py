"""CatFrames update: shift the newest frame into a buffer of the last ``N`` frames, in place.

``buffer`` holds the last ``N`` frames concatenated along ``dim`` (negative, relative to the
frame's trailing dims). Rows that are not reset drop their oldest frame and append ``frame``;
reset rows are refilled: ``padding="same"`` repeats ``frame`` ``N`` times, ``"constant"`` fills
``padding_value`` and puts ``frame`` last. The function returns a fresh copy of the updated
buffer (the transform's observation), so stored rollout data never aliases the buffer.

The Triton kernel lives in :mod:`gpusim.kernels.cat_frames_triton` (imported only when a CUDA
tensor needs it); this module holds the torch reference, the eager-CPU block-shift path and the
op-table row (:mod:`gpusim.kernels._registry`) that builds the public function and
``torch.ops.gpusim.cat_frames_update``. The backend is chosen by
:func:`gpusim.kernels._dispatch.select` (table key ``"cat_frames_update"``: the CPU path from a
threshold on the buffer's elements).

Examples:
    >>> import torch
    >>> from gpusim.kernels import cat_frames_update
    >>> buf = torch.zeros(1, 6)
    >>> cat_frames_update(buf, torch.tensor([[1.0, 2.0]]), None, -1)
    tensor([[0., 0., 0., 0., 1., 2.]])
    >>> cat_frames_update(buf, torch.tensor([[3.0, 4.0]]), torch.tensor([True]), -1)
    tensor([[3., 4., 3., 4., 3., 4.]])
"""

import torch

from gpusim.kernels._checks import check_cat_frames_args
from gpusim.kernels._dispatch import threshold
from gpusim.kernels._registry import kernel_op
from gpusim.kernels._wide import as_wide

__all__ = ["cat_frames_update", "cat_frames_update_reference", "cat_frames_update_cpu", "refill_rows_cpu_"]

CPU_PATH_MIN_NUMEL = threshold("cat_frames_update")
"""Smaller buffers take the reference (fewer ops; per-op cost dominates at that size):
``BACKEND_TABLE["cat_frames_update"]``, kept here for older callers."""


def cat_frames_update_reference(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor | None,
    dim: int,
    padding: str = "same",
    padding_value: float = 0.0,
) -> torch.Tensor:
    """Pure-torch CatFrames update (same contract as :func:`cat_frames_update`).

    Args:
        buffer: the last ``N`` frames concatenated along ``dim``; updated in place.
        frame: the newest frame ``(*batch, *feature)``.
        reset_mask: bool mask over the frame's batch dims (rows to refill), or ``None``.
        dim: negative concatenation dim, relative to the frame's trailing dims.
        padding: ``"same"`` or ``"constant"``.
        padding_value: padding for ``padding="constant"``.

    Returns:
        A fresh tensor equal to the updated buffer.

    Examples:
        >>> buf = torch.zeros(2, 2)
        >>> cat_frames_update_reference(buf, torch.ones(2, 1), torch.tensor([False, True]), -1,
        ...                             "constant", -1.0)
        tensor([[ 0.,  1.],
                [-1.,  1.]])
    """
    n = check_cat_frames_args(buffer, frame, reset_mask, dim, padding, padding_value)
    length = frame.shape[dim]
    shifted = torch.cat([buffer.narrow(dim, length, (n - 1) * length), frame], dim)
    if reset_mask is not None:
        if padding == "same":
            refill = torch.cat([frame] * n, dim)
        else:
            pad_shape = list(frame.shape)
            pad_shape[dim] = (n - 1) * length
            pad = torch.full(pad_shape, padding_value, dtype=frame.dtype, device=frame.device)
            refill = torch.cat([pad, frame], dim)
        m = reset_mask.reshape(tuple(reset_mask.shape) + (1,) * (frame.ndim - reset_mask.ndim))
        shifted = torch.where(m, refill, shifted)
    buffer.copy_(shifted)
    return shifted


def refill_rows_cpu_(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor,
    dim: int,
    n: int,
    padding: str = "same",
    padding_value: float = 0.0,
) -> None:
    """Refills the ``reset_mask`` rows of a contiguous CatFrames ``buffer`` in place (eager CPU).

    ``"same"``: the row's ``n`` frame slots all take ``frame``; ``"constant"``: ``padding_value``
    then ``frame`` last. The selected rows are read on the host (a CPU mask: no device sync) and
    written with one row scatter; the other rows are not touched.

    Examples:
        >>> buf = torch.zeros(2, 4)
        >>> refill_rows_cpu_(buf, torch.ones(2, 2), torch.tensor([True, False]), -1, 2)
        >>> buf
        tensor([[1., 1., 1., 1.],
                [0., 0., 0., 0.]])
    """
    n_rows = reset_mask.numel()
    if n_rows == 0 or buffer.numel() == 0:
        return
    rows = reset_mask.reshape(-1).nonzero().squeeze(-1)
    if rows.numel() == 0:
        return
    lead = buffer.shape[: buffer.ndim + dim]
    width = buffer.numel() // (lead.numel() * n)
    inner = lead[reset_mask.ndim :]
    fr_rows = frame.reshape(n_rows, *inner, 1, width).index_select(0, rows)
    if padding == "same":
        refill = fr_rows.expand(*fr_rows.shape[:-2], n, width)
    else:
        refill = torch.full((rows.numel(), *inner, n, width), padding_value, dtype=frame.dtype, device=frame.device)
        refill[..., n - 1 :, :] = fr_rows
    buffer.view(n_rows, *inner, n, width).index_copy_(0, rows, refill.contiguous())


def cat_frames_update_cpu(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor | None,
    dim: int,
    padding: str = "same",
    padding_value: float = 0.0,
) -> torch.Tensor:
    """Eager-CPU CatFrames update (same contract and result as :func:`cat_frames_update_reference`).

    The buffer is seen as ``[..., N, E]`` blocks of one frame each: the output is written with
    two block copies (as wide integer elements), the reset rows (read on the host: a CPU mask
    needs no device sync) are refilled by one row scatter, and the buffer takes a copy of the
    output. Non-contiguous or empty buffers go to the reference.

    Examples:
        >>> buf = torch.zeros(2, 4)
        >>> cat_frames_update_cpu(buf, torch.ones(2, 2), torch.tensor([False, True]), -1)
        tensor([[0., 0., 1., 1.],
                [1., 1., 1., 1.]])
    """
    n = check_cat_frames_args(buffer, frame, reset_mask, dim, padding, padding_value)
    if not buffer.is_contiguous() or buffer.numel() == 0:
        return cat_frames_update_reference(buffer, frame, reset_mask, dim, padding, padding_value)
    k = buffer.ndim + dim
    lead = buffer.shape[:k]
    width = buffer.numel() // (lead.numel() * n)
    out = torch.empty_like(buffer)
    out_b, buf_b, fr_b = as_wide(
        out.view(*lead, n, width), buffer.view(*lead, n, width), frame.reshape(*lead, 1, width)
    )
    out_b[..., : n - 1, :].copy_(buf_b[..., 1:, :])
    out_b[..., n - 1 :, :].copy_(fr_b)
    if reset_mask is not None:
        refill_rows_cpu_(out, frame, reset_mask, dim, n, padding, padding_value)
    buffer.copy_(out)
    return out


# --- op table: public function and torch.ops.gpusim.cat_frames_update ---------------------------


def _cat_frames_update_fake(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor | None,
    dim: int,
    padding: str = "same",
    padding_value: float = 0.0,
) -> torch.Tensor:
    check_cat_frames_args(buffer, frame, reset_mask, dim, padding, padding_value)
    return torch.empty(buffer.shape, dtype=buffer.dtype, device=buffer.device)


@kernel_op(
    "cat_frames_update",
    "cat_frames_update",
    reference=cat_frames_update_reference,
    cpu=cat_frames_update_cpu,
    triton="gpusim.kernels.cat_frames_triton:cat_frames_update_triton",
    fake=_cat_frames_update_fake,
    mutates_args=("buffer",),
)
def cat_frames_update(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor | None,
    dim: int,
    padding: str = "same",
    padding_value: float = 0.0,
) -> torch.Tensor:
    """Shift ``frame`` into the CatFrames ``buffer`` in place; refill reset rows.

    On CUDA (eager, Triton installed) one launch updates the buffer and writes the returned
    copy; on eager CPU from ``threshold("cat_frames_update")`` buffer elements, block copies of
    whole frames; elsewhere (small CPU buffers, ``torch.compile``) the torch reference. Same results on every path.

    Args:
        buffer: the last ``N`` frames concatenated along ``dim``
            (``buffer.shape[dim] == N * frame.shape[dim]``); updated in place.
        frame: the newest frame ``(*batch, *feature)``, same dtype as ``buffer``.
        reset_mask: bool mask whose shape is the frame's batch shape (rows to refill), or
            ``None`` for no reset.
        dim: negative concatenation dim, relative to the frame's trailing dims.
        padding: ``"same"`` (reset rows repeat ``frame`` ``N`` times) or ``"constant"``
            (``padding_value`` everywhere, ``frame`` in the last slot). For float64 buffers the
            Triton kernel applies ``padding_value`` exactly; integer buffers truncate it.
        padding_value: padding for ``padding="constant"``.

    Returns:
        A fresh tensor equal to the updated buffer (never aliases ``buffer``).

    Raises:
        ValueError: bad ``dim``, ``padding`` or shapes.
        TypeError: dtype mismatch or non-bool mask.

    Examples:
        >>> buf = torch.zeros(2, 3, 4, 4)  # 3 frames of (1, 4, 4) along dim=-3
        >>> obs = cat_frames_update(buf, torch.ones(2, 1, 4, 4), torch.tensor([True, False]), -3)
        >>> obs[:, :, 0, 0]
        tensor([[1., 1., 1.],
                [0., 0., 1.]])
    """
