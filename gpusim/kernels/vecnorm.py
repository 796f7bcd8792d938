"""VecNorm: running (decayed) statistics over the batch and normalization, fused.

Statistics are kept as sums: ``loc_sum`` (sum of x), ``sq_sum`` (sum of x**2) and ``count``
(number of rows), each decayed by ``decay`` before the new batch is added::

    loc_sum = decay * loc_sum + x.sum(batch dims)
    sq_sum  = decay * sq_sum  + (x ** 2).sum(batch dims)
    count   = decay * count   + n_rows
    mean = loc_sum / count;  var = sq_sum / count - mean ** 2
    y = (x - mean) / sqrt(max(var, eps))

With ``decay=1.0`` this is the exact running mean and biased standard deviation of all data
seen. Accumulation is float32, or float64 when the statistics are float64.

The Triton kernels live in :mod:`gpusim.kernels.vecnorm_triton` (imported only when a CUDA
tensor needs them; update + normalize is two launches); this module holds the torch references,
the dispatch and the ``torch.library`` registration (``torch.ops.gpusim.vecnorm_update_``,
``vecnorm_normalize``, ``vecnorm_update_normalize_``).

Examples:
    >>> import torch
    >>> from gpusim.kernels import vecnorm_update_normalize_
    >>> loc, sq, cnt = torch.zeros(2), torch.zeros(2), torch.zeros(())
    >>> y = vecnorm_update_normalize_(torch.tensor([[1.0, 2.0], [3.0, 6.0]]), loc, sq, cnt,
    ...                               1.0, 1e-4, 1)
    >>> y
    tensor([[-1., -1.],
            [ 1.,  1.]])
"""

import torch

from gpusim.kernels._checks import check_vecnorm_args
from gpusim.kernels._dispatch import use_triton_kernel

__all__ = [
    "vecnorm_update_",
    "vecnorm_normalize",
    "vecnorm_update_normalize_",
    "vecnorm_update_reference_",
    "vecnorm_normalize_reference",
    "vecnorm_update_normalize_reference_",
]


def _acc_dtype(stats: torch.Tensor) -> torch.dtype:
    return torch.float64 if stats.dtype == torch.float64 else torch.float32


def _out_dtype(x: torch.Tensor, loc_sum: torch.Tensor) -> torch.dtype:
    """Dtype of the normalized output: ``torch.promote_types(x.dtype, loc_sum.dtype)``."""
    return torch.promote_types(x.dtype, loc_sum.dtype)


def vecnorm_update_reference_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
) -> None:
    """Pure-torch in-place update of the VecNorm sums (same contract as :func:`vecnorm_update_`).

    Args:
        x: data ``(*batch, *feature)``.
        loc_sum: running sum (shape ``feature``), updated in place.
        sq_sum: running sum of squares, updated in place.
        count: running count (one element), updated in place.
        decay: weight of the old statistics.
        batch_ndim: number of leading batch dims of ``x`` reduced over.

    Examples:
        >>> loc, sq, cnt = torch.zeros(1), torch.zeros(1), torch.zeros(())
        >>> vecnorm_update_reference_(torch.tensor([[1.0], [3.0]]), loc, sq, cnt, 1.0, 1)
        >>> loc, sq, cnt
        (tensor([4.]), tensor([10.]), tensor(2.))
    """
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)
    acc = _acc_dtype(loc_sum)
    n_rows = 1
    for s in x.shape[:batch_ndim]:
        n_rows *= s
    xa = x.to(acc)
    if batch_ndim:
        dims = tuple(range(batch_ndim))
        s1, s2 = xa.sum(dims), (xa * xa).sum(dims)
    else:
        s1, s2 = xa, xa * xa
    loc_sum.copy_(loc_sum.to(acc) * decay + s1)
    sq_sum.copy_(sq_sum.to(acc) * decay + s2)
    count.copy_(count.to(acc) * decay + n_rows)


def vecnorm_normalize_reference(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """Pure-torch normalization ``(x - mean) / sqrt(max(var, eps))`` from the VecNorm sums.

    Args:
        x: data ``(*batch, *feature)``; the feature shape is ``loc_sum.shape``.
        loc_sum: running sum.
        sq_sum: running sum of squares.
        count: running count (one element).
        eps: variance floor.

    Returns:
        A fresh tensor of dtype ``torch.promote_types(x.dtype, loc_sum.dtype)``.

    Examples:
        >>> vecnorm_normalize_reference(torch.tensor([3.0]), torch.tensor([2.0]),
        ...                             torch.tensor([10.0]), torch.tensor(2.0), 1e-4)
        tensor([1.])
    """
    check_vecnorm_args(x, loc_sum, sq_sum, count)
    acc = _acc_dtype(loc_sum)
    c = count.to(acc).reshape(())
    mean = loc_sum.to(acc) / c
    var = (sq_sum.to(acc) / c - mean * mean).clamp_min(eps)
    return ((x.to(acc) - mean) / var.sqrt()).to(_out_dtype(x, loc_sum))


def vecnorm_update_normalize_reference_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    eps: float,
    batch_ndim: int,
) -> torch.Tensor:
    """Pure-torch update then normalize with the updated statistics.

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
        >>> loc, sq, cnt = torch.zeros(1), torch.zeros(1), torch.zeros(())
        >>> vecnorm_update_normalize_reference_(torch.tensor([[1.0], [3.0]]), loc, sq, cnt,
        ...                                     1.0, 1e-4, 1)
        tensor([[-1.],
                [ 1.]])
    """
    vecnorm_update_reference_(x, loc_sum, sq_sum, count, decay, batch_ndim)
    return vecnorm_normalize_reference(x, loc_sum, sq_sum, count, eps)


def vecnorm_update_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
) -> None:
    """Update the VecNorm sums in place with a new batch ``x``.

    ``loc_sum = decay*loc_sum + x.sum(batch)``, ``sq_sum = decay*sq_sum + (x**2).sum(batch)``,
    ``count = decay*count + n_rows``. On CUDA (eager, Triton installed): two launches, no atomics.

    Args:
        x: data ``(*batch, *feature)``.
        loc_sum: running sum of shape ``x.shape[batch_ndim:]``, updated in place.
        sq_sum: running sum of squares, same shape and dtype, updated in place.
        count: running count, a 0-d or one-element float tensor, updated in place.
        decay: weight of the old statistics (1.0: exact running sums).
        batch_ndim: number of leading batch dims of ``x`` reduced over.

    Raises:
        ValueError: shapes or devices disagree.
        TypeError: statistics are not floating point.

    Examples:
        >>> loc, sq, cnt = torch.zeros(2), torch.zeros(2), torch.zeros(())
        >>> vecnorm_update_(torch.ones(4, 2), loc, sq, cnt, 1.0, 1)
        >>> loc, cnt
        (tensor([4., 4.]), tensor(4.))
    """
    if use_triton_kernel(x.device):
        from gpusim.kernels.vecnorm_triton import vecnorm_update_triton_

        vecnorm_update_triton_(x, loc_sum, sq_sum, count, decay, batch_ndim)
        return
    vecnorm_update_reference_(x, loc_sum, sq_sum, count, decay, batch_ndim)


def vecnorm_normalize(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """Normalize ``x`` with the VecNorm sums: ``(x - mean) / sqrt(max(var, eps))``.

    Args:
        x: data ``(*batch, *feature)``; the feature shape is ``loc_sum.shape``.
        loc_sum: running sum.
        sq_sum: running sum of squares.
        count: running count (one element).
        eps: variance floor.

    Returns:
        A fresh tensor of dtype ``torch.promote_types(x.dtype, loc_sum.dtype)``.

    Examples:
        >>> vecnorm_normalize(torch.tensor([[3.0]]), torch.tensor([2.0]), torch.tensor([10.0]),
        ...                   torch.tensor(2.0), 1e-4)
        tensor([[1.]])
    """
    if use_triton_kernel(x.device):
        from gpusim.kernels.vecnorm_triton import vecnorm_normalize_triton

        return vecnorm_normalize_triton(x, loc_sum, sq_sum, count, eps)
    return vecnorm_normalize_reference(x, loc_sum, sq_sum, count, eps)


def vecnorm_update_normalize_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    eps: float,
    batch_ndim: int,
) -> torch.Tensor:
    """Update the VecNorm sums with ``x``, then normalize ``x`` with the updated statistics.

    On CUDA (eager, Triton installed): two launches in all.

    Args:
        x: data ``(*batch, *feature)``.
        loc_sum: running sum, updated in place.
        sq_sum: running sum of squares, updated in place.
        count: running count (one element), updated in place.
        decay: weight of the old statistics.
        eps: variance floor.
        batch_ndim: number of leading batch dims of ``x``.

    Returns:
        ``x`` normalized with the updated statistics (a fresh tensor).

    Examples:
        >>> loc, sq, cnt = torch.zeros(1), torch.zeros(1), torch.zeros(())
        >>> vecnorm_update_normalize_(torch.tensor([[0.0], [2.0]]), loc, sq, cnt, 1.0, 1e-4, 1)
        tensor([[-1.],
                [ 1.]])
    """
    if use_triton_kernel(x.device):
        from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

        return vecnorm_update_normalize_triton_(x, loc_sum, sq_sum, count, decay, eps, batch_ndim)
    return vecnorm_update_normalize_reference_(x, loc_sum, sq_sum, count, decay, eps, batch_ndim)


# --- torch.library registration ---------------------------------------------------------------


def _kernel_ok(x: torch.Tensor) -> bool:
    from gpusim.kernels._dispatch import triton_available

    return x.device.type == "cuda" and triton_available()


@torch.library.custom_op("gpusim::vecnorm_update_", mutates_args=("loc_sum", "sq_sum", "count"))
def _vecnorm_update_op(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
) -> None:
    """``torch.ops.gpusim.vecnorm_update_``: Triton on CUDA, the reference elsewhere."""
    if _kernel_ok(x):
        from gpusim.kernels.vecnorm_triton import vecnorm_update_triton_

        vecnorm_update_triton_(x, loc_sum, sq_sum, count, decay, batch_ndim)
        return
    vecnorm_update_reference_(x, loc_sum, sq_sum, count, decay, batch_ndim)


@_vecnorm_update_op.register_fake
def _vecnorm_update_fake(x, loc_sum, sq_sum, count, decay, batch_ndim):  # noqa: ANN001, ANN202
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)


@torch.library.custom_op("gpusim::vecnorm_normalize", mutates_args=())
def _vecnorm_normalize_op(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """``torch.ops.gpusim.vecnorm_normalize``: Triton on CUDA, the reference elsewhere."""
    if _kernel_ok(x):
        from gpusim.kernels.vecnorm_triton import vecnorm_normalize_triton

        return vecnorm_normalize_triton(x, loc_sum, sq_sum, count, eps)
    return vecnorm_normalize_reference(x, loc_sum, sq_sum, count, eps)


@_vecnorm_normalize_op.register_fake
def _vecnorm_normalize_fake(x, loc_sum, sq_sum, count, eps):  # noqa: ANN001, ANN202
    check_vecnorm_args(x, loc_sum, sq_sum, count)
    return torch.empty(x.shape, dtype=_out_dtype(x, loc_sum), device=x.device)


@torch.library.custom_op(
    "gpusim::vecnorm_update_normalize_", mutates_args=("loc_sum", "sq_sum", "count")
)
def _vecnorm_update_normalize_op(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    eps: float,
    batch_ndim: int,
) -> torch.Tensor:
    """``torch.ops.gpusim.vecnorm_update_normalize_``: Triton on CUDA, the reference elsewhere."""
    if _kernel_ok(x):
        from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

        return vecnorm_update_normalize_triton_(x, loc_sum, sq_sum, count, decay, eps, batch_ndim)
    return vecnorm_update_normalize_reference_(x, loc_sum, sq_sum, count, decay, eps, batch_ndim)


@_vecnorm_update_normalize_op.register_fake
def _vecnorm_update_normalize_fake(  # noqa: ANN202
    x, loc_sum, sq_sum, count, decay, eps, batch_ndim  # noqa: ANN001
):
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)
    return torch.empty(x.shape, dtype=_out_dtype(x, loc_sum), device=x.device)
