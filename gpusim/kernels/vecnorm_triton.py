"""Triton kernels and host wrappers for VecNorm (imported lazily: it imports Triton).

``x`` is viewed as ``(R, F)`` (rows = batch elements, F = features). Two launches at most:

1. ``_vecnorm_partial_kernel`` (grid ``P x F-blocks``): each program sums ``x`` and ``x**2``
   over a grid-stride set of row tiles into a workspace row ``(P, 2, F)``; program row 0 also
   adds ``decay * old_stats`` and writes ``decay * count + R``. No atomics: deterministic.
2. ``_vecnorm_apply_kernel``: every program reduces the ``P`` workspace rows of its features
   (the new statistics), program row 0 writes them into the statistics tensors (nobody reads
   those in this launch, so there is no race), and, when normalizing, every program normalizes
   a grid-stride set of row tiles with the new statistics. Normalizing with given statistics
   is this kernel alone, reading the statistics tensors.

Accumulation is float32, or float64 when the statistics are float64.

Examples:
    Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
    the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
    Triton's interpreter.

    >>> import torch
    >>> from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_
    >>> x = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    >>> loc, sq, cnt = torch.zeros(2), torch.zeros(2), torch.zeros(())
    >>> vecnorm_update_normalize_triton_(x, loc, sq, cnt, 1.0, 1e-4, 1)  # doctest: +SKIP
    tensor([[-1., -1.],
            [ 1.,  1.]])
"""

from __future__ import annotations

import struct

import torch
import triton
import triton.language as tl

from gpusim.kernels._checks import check_vecnorm_args
from gpusim.kernels._host import cdiv, device_guard, next_pow2

__all__ = [
    "vecnorm_update_triton_",
    "vecnorm_normalize_triton",
    "vecnorm_update_normalize_triton_",
]

_TILE = 4096
_MAX_PROGRAMS = 1024
_MAX_ROW_PROGRAMS = 256
_NUM_WARPS = 4


@triton.jit
def _vecnorm_partial_kernel(
    x_ptr,  # data (R, F), contiguous
    loc_ptr,  # running sum (F,)
    sq_ptr,  # running sum of squares (F,)
    count_ptr,  # running count, one element
    ws_ptr,  # workspace (P, 2, F) of partial sums, then one element: the new count
    R,  # rows of x
    F,  # features of x
    P,  # programs along the rows (grid axis 0)
    decay_hi,  # decay = decay_hi + decay_lo (two float32 numbers: exact for float64 stats)
    decay_lo,  # low part of decay
    ACC: tl.constexpr,  # accumulation dtype (tl.float32 or tl.float64)
    BLOCK_R: tl.constexpr,  # rows per tile
    BLOCK_F: tl.constexpr,  # features per program
):
    pid_p = tl.program_id(0)
    pid_f = tl.program_id(1)
    f = pid_f * BLOCK_F + tl.arange(0, BLOCK_F)
    f_ok = f < F
    acc = tl.zeros([BLOCK_R, BLOCK_F], dtype=ACC)
    acc2 = tl.zeros([BLOCK_R, BLOCK_F], dtype=ACC)
    for r0 in range(pid_p * BLOCK_R, R, P * BLOCK_R):
        r = (r0 + tl.arange(0, BLOCK_R)).to(tl.int64)
        ok = (r < R)[:, None] & f_ok[None, :]
        v = tl.load(x_ptr + r[:, None] * F + f[None, :], mask=ok, other=0).to(ACC)
        acc += v
        acc2 += v * v
    s = tl.sum(acc, axis=0)
    s2 = tl.sum(acc2, axis=0)
    if pid_p == 0:
        decay = tl.cast(decay_hi, ACC) + tl.cast(decay_lo, ACC)
        s += decay * tl.load(loc_ptr + f, mask=f_ok, other=0).to(ACC)
        s2 += decay * tl.load(sq_ptr + f, mask=f_ok, other=0).to(ACC)
        if pid_f == 0:
            new_count = decay * tl.load(count_ptr).to(ACC) + R
            tl.store(ws_ptr + P * 2 * F, new_count)
    tl.store(ws_ptr + pid_p * 2 * F + f, s, mask=f_ok)
    tl.store(ws_ptr + pid_p * 2 * F + F + f, s2, mask=f_ok)


@triton.jit
def _vecnorm_apply_kernel(
    x_ptr,  # data (R, F), contiguous (read only when NORMALIZE)
    out_ptr,  # normalized output (R, F) (written only when NORMALIZE)
    loc_ptr,  # running sum (F,): read (not FROM_WS) or written (FROM_WS)
    sq_ptr,  # running sum of squares (F,)
    count_ptr,  # running count, one element
    ws_ptr,  # workspace of _vecnorm_partial_kernel (read only when FROM_WS)
    R,  # rows of x
    F,  # features of x
    P_WS,  # workspace rows (programs of the partial kernel)
    P,  # programs along the rows in this launch (grid axis 0)
    eps,  # variance floor
    FROM_WS: tl.constexpr,  # statistics come from the workspace (and are written back)
    NORMALIZE: tl.constexpr,  # write (x - mean) / sqrt(max(var, eps))
    ACC: tl.constexpr,  # accumulation dtype
    BLOCK_R: tl.constexpr,  # rows per tile
    BLOCK_F: tl.constexpr,  # features per program
):
    pid_p = tl.program_id(0)
    pid_f = tl.program_id(1)
    f = pid_f * BLOCK_F + tl.arange(0, BLOCK_F)
    f_ok = f < F
    if FROM_WS:
        s = tl.zeros([BLOCK_F], dtype=ACC)
        s2 = tl.zeros([BLOCK_F], dtype=ACC)
        for p in range(0, P_WS):
            s += tl.load(ws_ptr + p * 2 * F + f, mask=f_ok, other=0)
            s2 += tl.load(ws_ptr + p * 2 * F + F + f, mask=f_ok, other=0)
        c = tl.load(ws_ptr + P_WS * 2 * F)
        # normalize with the statistics as stored (rounded to their dtypes), like the reference
        s = s.to(loc_ptr.dtype.element_ty).to(ACC)
        s2 = s2.to(sq_ptr.dtype.element_ty).to(ACC)
        c = c.to(count_ptr.dtype.element_ty).to(ACC)
        if pid_p == 0:
            tl.store(loc_ptr + f, s, mask=f_ok)
            tl.store(sq_ptr + f, s2, mask=f_ok)
            if pid_f == 0:
                tl.store(count_ptr, c)
    else:
        s = tl.load(loc_ptr + f, mask=f_ok, other=0).to(ACC)
        s2 = tl.load(sq_ptr + f, mask=f_ok, other=0).to(ACC)
        c = tl.load(count_ptr).to(ACC)
    if NORMALIZE:
        mean = s / c
        var = tl.maximum(s2 / c - mean * mean, eps)
        std = tl.sqrt(var)
        for r0 in range(pid_p * BLOCK_R, R, P * BLOCK_R):
            r = (r0 + tl.arange(0, BLOCK_R)).to(tl.int64)
            ok = (r < R)[:, None] & f_ok[None, :]
            offs = r[:, None] * F + f[None, :]
            v = tl.load(x_ptr + offs, mask=ok, other=0).to(ACC)
            y = (v - mean[None, :]) / std[None, :]
            tl.store(out_ptr + offs, y, mask=ok)


def _plan(x: torch.Tensor, loc_sum: torch.Tensor, batch_ndim: int) -> dict:
    """Shapes, block sizes and grid of one VecNorm call."""
    rows = 1
    for s in x.shape[:batch_ndim]:
        rows *= s
    feats = loc_sum.numel()
    block_f = min(next_pow2(feats), 128)
    block_r = max(1, min(next_pow2(max(rows, 1)), _TILE // block_f))
    f_blocks = max(1, cdiv(feats, block_f))  # one block even without features: it updates count
    p = max(1, min(cdiv(rows, block_r), _MAX_ROW_PROGRAMS, _MAX_PROGRAMS // f_blocks))
    acc = tl.float64 if loc_sum.dtype == torch.float64 else tl.float32
    acc_torch = torch.float64 if loc_sum.dtype == torch.float64 else torch.float32
    return dict(
        R=rows,
        F=feats,
        P=p,
        f_blocks=f_blocks,
        BLOCK_R=block_r,
        BLOCK_F=block_f,
        ACC=acc,
        acc_torch=acc_torch,
    )


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().reshape(-1)


def _update(
    x2: torch.Tensor,
    loc: torch.Tensor,
    sq: torch.Tensor,
    cnt: torch.Tensor,
    decay: float,
    plan: dict,
) -> torch.Tensor:
    """Launch the partial-sum kernel; return the workspace."""
    p, feats = plan["P"], plan["F"]
    ws = torch.empty(p * 2 * feats + 1, dtype=plan["acc_torch"], device=x2.device)
    decay_hi = struct.unpack("f", struct.pack("f", decay))[0]
    _vecnorm_partial_kernel[(p, plan["f_blocks"])](
        x2, loc, sq, cnt, ws, plan["R"], feats, p, decay_hi, float(decay - decay_hi),
        ACC=plan["ACC"], BLOCK_R=plan["BLOCK_R"], BLOCK_F=plan["BLOCK_F"], num_warps=_NUM_WARPS,
    )  # fmt: skip
    return ws


def _write_back(dst: torch.Tensor, src: torch.Tensor) -> None:
    if src.data_ptr() != dst.data_ptr() or not dst.is_contiguous():
        dst.copy_(src.reshape(dst.shape))


def _out_dtype(x: torch.Tensor, loc_sum: torch.Tensor) -> torch.dtype:
    return torch.promote_types(x.dtype, loc_sum.dtype)


def _run(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float | None,
    eps: float | None,
    batch_ndim: int,
) -> torch.Tensor | None:
    """Update (``decay`` given) and/or normalize (``eps`` given) in at most two launches."""
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)
    plan = _plan(x, loc_sum, batch_ndim)
    x2 = _flat(x)
    loc, sq, cnt = _flat(loc_sum), _flat(sq_sum), _flat(count)
    out = None
    out2 = x2  # dummy pointer when not normalizing
    if eps is not None:
        out = torch.empty(x.shape, dtype=_out_dtype(x, loc_sum), device=x.device)
        out2 = out.reshape(-1)
    with device_guard(x.device):
        ws = loc
        if decay is not None:
            ws = _update(x2, loc, sq, cnt, decay, plan)
        grid_p = plan["P"] if eps is not None else 1
        if decay is not None or eps is not None:
            _vecnorm_apply_kernel[(grid_p, plan["f_blocks"])](
                x2, out2, loc, sq, cnt, ws, plan["R"], plan["F"], plan["P"], grid_p,
                float(eps if eps is not None else 0.0),
                FROM_WS=decay is not None, NORMALIZE=eps is not None, ACC=plan["ACC"],
                BLOCK_R=plan["BLOCK_R"], BLOCK_F=plan["BLOCK_F"], num_warps=_NUM_WARPS,
            )  # fmt: skip
    if decay is not None:
        _write_back(loc_sum, loc)
        _write_back(sq_sum, sq)
        _write_back(count, cnt)
    return out


def vecnorm_update_triton_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
) -> None:
    """Triton host wrapper of :func:`gpusim.kernels.vecnorm_update_` (two launches).

    Args:
        x: data ``(*batch, *feature)`` with ``batch_ndim`` batch dims.
        loc_sum: running sum (shape ``feature``), updated in place.
        sq_sum: running sum of squares, updated in place.
        count: running count (one element), updated in place.
        decay: weight of the old statistics.
        batch_ndim: number of leading batch dims of ``x`` reduced over.

    Examples:
        Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
        the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
        Triton's interpreter.

        >>> loc, sq, cnt = torch.zeros(2), torch.zeros(2), torch.zeros(())
        >>> vecnorm_update_triton_(torch.ones(5, 2), loc, sq, cnt, 1.0, 1)  # doctest: +SKIP
        >>> cnt, loc  # doctest: +SKIP
        (tensor(5.), tensor([5., 5.]))
    """
    _run(x, loc_sum, sq_sum, count, decay, None, batch_ndim)


def vecnorm_normalize_triton(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """Triton host wrapper of :func:`gpusim.kernels.vecnorm_normalize` (one launch).

    Args:
        x: data ``(*batch, *feature)``; the feature shape is ``loc_sum.shape``.
        loc_sum: running sum.
        sq_sum: running sum of squares.
        count: running count (one element).
        eps: variance floor.

    Returns:
        ``(x - mean) / sqrt(max(var, eps))``.

    Examples:
        Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
        the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
        Triton's interpreter.

        >>> vecnorm_normalize_triton(torch.ones(3, 2), torch.ones(2), torch.ones(2),
        ...                          torch.ones(()), 1e-4)  # doctest: +SKIP
        tensor([[0., 0.],
                [0., 0.],
                [0., 0.]])
    """
    out = _run(x, loc_sum, sq_sum, count, None, eps, x.ndim - loc_sum.ndim)
    assert out is not None
    return out


def vecnorm_update_normalize_triton_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    eps: float,
    batch_ndim: int,
) -> torch.Tensor:
    """Triton host wrapper of :func:`gpusim.kernels.vecnorm_update_normalize_` (two launches).

    Args:
        x: data ``(*batch, *feature)``.
        loc_sum: running sum, updated in place.
        sq_sum: running sum of squares, updated in place.
        count: running count (one element), updated in place.
        decay: weight of the old statistics.
        eps: variance floor.
        batch_ndim: number of leading batch dims of ``x``.

    Returns:
        ``x`` normalized with the updated statistics.

    Examples:
        Triton launches need CUDA, or ``TRITON_INTERPRET=1`` set before this module is imported:
        the doctest run skips them; ``tests/kernels/test_triton_docstrings.py`` runs them in
        Triton's interpreter.

        >>> loc, sq, cnt = torch.zeros(2), torch.zeros(2), torch.zeros(())
        >>> x = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
        >>> vecnorm_update_normalize_triton_(x, loc, sq, cnt, 1.0, 1e-4, 1)  # doctest: +SKIP
        tensor([[-1., -1.],
                [ 1.,  1.]])
        >>> cnt  # doctest: +SKIP
        tensor(2.)
    """
    out = _run(x, loc_sum, sq_sum, count, decay, eps, batch_ndim)
    assert out is not None
    return out
