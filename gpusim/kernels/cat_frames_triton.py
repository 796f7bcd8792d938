"""Triton kernel and host wrapper for the CatFrames update (imported lazily: it imports Triton).

The buffer ``(*batch, ..., N * L, ...)`` is viewed as ``(outer, N, S)``: ``outer`` is the product
of the dims before the concatenation dim, ``S`` the number of elements of one frame slot. Each
program owns a ``BLOCK_O x BLOCK_S`` tile of ``(outer, S)`` and walks the ``N`` slots in order,
so the in-place shift (slot ``k`` <- slot ``k + 1``) never races with another program. It writes
each updated slot both into the buffer and into a fresh output (the observation), so the copy-out
costs no extra launch. Reset rows skip reading the old slots.

Examples:
    Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
    the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
    Triton's interpreter.

    >>> import torch
    >>> from gpusim.kernels.cat_frames_triton import cat_frames_update_triton
    >>> buf, frame = torch.zeros(2, 6), torch.ones(2, 2)
    >>> cat_frames_update_triton(buf, frame, None, -1)  # doctest: +SKIP
    tensor([[0., 0., 0., 0., 1., 1.],
            [0., 0., 0., 0., 1., 1.]])
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpusim.kernels._checks import check_cat_frames_args, frame_layout
from gpusim.kernels._host import cdiv, device_guard, next_pow2

__all__ = ["cat_frames_update_triton"]

_TILE = 2048
_NUM_WARPS = 4


@triton.jit
def _cat_frames_kernel(
    buf_ptr,  # buffer (outer, N_FRAMES, S), contiguous, updated in place
    frame_ptr,  # newest frame (outer, S), contiguous
    out_ptr,  # fresh copy of the updated buffer (outer, N_FRAMES, S)
    mask_ptr,  # uint8 reset mask, one byte per batch row (read only when HAS_RESET)
    n_outer,  # number of outer rows
    S,  # elements of one frame slot
    outer_per_row,  # outer rows per reset-mask row
    N_FRAMES: tl.constexpr,  # frames held by the buffer
    HAS_RESET: tl.constexpr,  # whether a reset mask is given
    PAD_SAME: tl.constexpr,  # reset rows: repeat the frame (True) or pad with PAD_VALUE (False)
    PAD_VALUE: tl.constexpr,  # padding value for padding="constant"
    BLOCK_O: tl.constexpr,  # outer rows per program
    BLOCK_S: tl.constexpr,  # slot elements per program
):
    pid_o = tl.program_id(0)
    pid_s = tl.program_id(1)
    o = (pid_o * BLOCK_O + tl.arange(0, BLOCK_O)).to(tl.int64)
    s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    o_ok = o < n_outer
    ok = o_ok[:, None] & (s < S)[None, :]
    frame = tl.load(frame_ptr + o[:, None] * S + s[None, :], mask=ok)
    base = o[:, None] * (N_FRAMES * S) + s[None, :]
    keep = ok
    if HAS_RESET:
        reset = tl.load(mask_ptr + o // outer_per_row, mask=o_ok, other=0) != 0
        reset2 = reset[:, None] & ok
        keep = ok & (~reset2)
    for k in tl.static_range(N_FRAMES - 1):
        val = tl.load(buf_ptr + base + (k + 1) * S, mask=keep, other=0)
        if HAS_RESET:
            if PAD_SAME:
                val = tl.where(reset2, frame, val)
            else:
                val = tl.where(reset2, tl.full(val.shape, PAD_VALUE, val.dtype), val)
        tl.store(buf_ptr + base + k * S, val, mask=ok)
        tl.store(out_ptr + base + k * S, val, mask=ok)
    tl.store(buf_ptr + base + (N_FRAMES - 1) * S, frame, mask=ok)
    tl.store(out_ptr + base + (N_FRAMES - 1) * S, frame, mask=ok)


def cat_frames_update_triton(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor | None,
    dim: int,
    padding: str = "same",
    padding_value: float = 0.0,
) -> torch.Tensor:
    """Triton host wrapper of :func:`gpusim.kernels.cat_frames_update` (one launch).

    Args:
        buffer: the last ``N`` frames concatenated along ``dim``; updated in place.
        frame: the newest frame ``(*batch, *feature)``.
        reset_mask: bool mask of shape ``batch`` (rows to refill), or ``None``.
        dim: negative concatenation dim, relative to the frame's trailing dims.
        padding: ``"same"`` (refill with the frame) or ``"constant"`` (``padding_value``, frame
            last).
        padding_value: value of the padding for ``padding="constant"``.

    Returns:
        A fresh tensor equal to the updated buffer.

    Examples:
        Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
        the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
        Triton's interpreter.

        >>> buf = torch.zeros(1, 4)
        >>> cat_frames_update_triton(buf, torch.ones(1, 2), None, -1)  # doctest: +SKIP
        tensor([[0., 0., 1., 1.]])
    """
    n = check_cat_frames_args(buffer, frame, reset_mask, dim, padding, padding_value)
    work = buffer.contiguous()
    out = torch.empty(buffer.shape, dtype=buffer.dtype, device=buffer.device)
    outer, slot = frame_layout(frame, dim)
    if outer * slot == 0:
        return out
    frame_c = frame.contiguous()
    buf_k, frame_k, out_k = work, frame_c, out
    if buffer.dtype == torch.bool:
        buf_k, frame_k, out_k = (t.view(torch.uint8) for t in (work, frame_c, out))
    if reset_mask is None:
        mask_k, per_row = buf_k, 1
    else:
        mask_k = reset_mask.contiguous().view(torch.uint8)
        per_row = outer // max(reset_mask.numel(), 1)
    if buffer.is_floating_point():
        pad: float | int = float(padding_value)
    elif buffer.dtype == torch.bool:
        pad = int(bool(padding_value))
    else:
        pad = int(padding_value)
    block_s = min(next_pow2(slot), 1024)
    block_o = max(1, _TILE // block_s)
    grid = (cdiv(outer, block_o), cdiv(slot, block_s))
    with device_guard(buffer.device):
        _cat_frames_kernel[grid](
            buf_k,
            frame_k,
            out_k,
            mask_k,
            outer,
            slot,
            per_row,
            N_FRAMES=n,
            HAS_RESET=reset_mask is not None,
            PAD_SAME=padding == "same",
            PAD_VALUE=pad,
            BLOCK_O=block_o,
            BLOCK_S=block_s,
            num_warps=_NUM_WARPS,
        )
    if work is not buffer:
        buffer.copy_(work)
    return out
