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
tensor needs them; update + normalize is two launches; that module does not import this one);
this module holds the torch references, the eager-CPU paths (in-place sums, one allocation per
call) and the op-table rows (:mod:`gpusim.kernels._registry`) that build the public functions
and ``torch.ops.gpusim.vecnorm_update_``, ``vecnorm_normalize``, ``vecnorm_update_normalize_``.
The backend is chosen by :func:`gpusim.kernels._dispatch.select` (table key ``"vecnorm"``).

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
from gpusim.kernels._inductor import in_cpu_graph, realized
from gpusim.kernels._registry import kernel_op

__all__ = [
    "vecnorm_update_",
    "vecnorm_normalize",
    "vecnorm_update_normalize_",
    "vecnorm_update_reference_",
    "vecnorm_normalize_reference",
    "vecnorm_update_normalize_reference_",
    "vecnorm_update_cpu_",
    "vecnorm_normalize_cpu",
    "vecnorm_update_normalize_cpu_",
    "row_sums",
]

#: compiled CPU graphs compute the normalization's mean and std once per call (:func:`realized`),
#: not per row (read at trace time). Not on CUDA: Inductor's C++ code recomputed them per element,
#: its Triton code need not, and Triton 3.6 (torch 2.11, H100) failed to compile the fused
#: reduction holding the realize at 65536 envs ("PassManager::run failed" in make_ttgir)
REALIZE_STATS = True
#: compiled CPU graphs sum ``[R, F]`` rows of fewer than 16 features as ``[R * F / 16, 16]`` rows
#: (full 16-lane vectors), then fold the 16 sums into ``F`` (read at trace time; see
#: :func:`row_sums`)
REGROUP_SUMS = True
_LANES = 16


def row_sums(x: torch.Tensor) -> torch.Tensor:
    """The sums over the rows of a ``[R, F]`` tensor (``x.sum(0)``, in another order while traced).

    Inductor vectorizes a ``[R, F] -> [F]`` sum over the ``F`` features: with ``F = 4`` every row
    is one 4-lane masked vector. While ``torch.compile`` traces (and ``F`` divides 16 and ``R * F``
    is a multiple of 16, on CPU), the rows are regrouped as ``[R * F / 16, 16]`` (contiguous memory, full
    16-lane vectors) and the 16 sums folded into ``F``: the same sum, added in another order.

    Examples:
        >>> row_sums(torch.arange(8.0).view(4, 2))
        tensor([12., 16.])
    """
    r, f = x.shape
    if REGROUP_SUMS and in_cpu_graph(x) and f < _LANES and _LANES % f == 0 and (r * f) % _LANES == 0:
        return x.reshape(-1, _LANES).sum(0).reshape(_LANES // f, f).sum(0)
    return x.sum(0)


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
        if torch.compiler.is_compiling():  # full-vector sums (see row_sums)
            rows = xa.reshape(n_rows, -1)
            s1, s2 = row_sums(rows).reshape(loc_sum.shape), row_sums(rows * rows).reshape(loc_sum.shape)
        else:
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
    std = (sq_sum.to(acc) / c - mean * mean).clamp_min(eps).sqrt()
    if REALIZE_STATS and in_cpu_graph(x):  # compiled: mean and std once, not per row of x
        mean, std = realized(mean), realized(std)
    return ((x.to(acc) - mean) / std).to(_out_dtype(x, loc_sum))


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


# --- eager-CPU paths: the same arithmetic in place, one allocation per call -------------------
# On the CPU, fresh tensors of the size of the batch cost page faults that dominate these
# memory-bound ops: the sums are updated in place and one tensor shaped like ``x`` serves as the
# scratch for ``x * x`` and then as the output.


def _cpu_applies(x: torch.Tensor, loc_sum: torch.Tensor, count: torch.Tensor) -> bool:
    """Whether the in-place arithmetic equals the reference's bit for bit: ``x`` and the
    statistics share the accumulation dtype (float32 or float64) and ``x`` needs no gradient
    (``out=`` ops do not record one)."""
    return (
        x.dtype == loc_sum.dtype == count.dtype
        and loc_sum.dtype in (torch.float32, torch.float64)
        and not x.requires_grad
    )


def _update_into_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
    scratch: torch.Tensor,
) -> None:
    """The reference's update in place; ``scratch`` (shaped like ``x``) receives ``x * x``."""
    dims = tuple(range(batch_ndim))
    torch.mul(x, x, out=scratch)
    n_rows = 1
    for s in x.shape[:batch_ndim]:
        n_rows *= s
    loc_sum.mul_(decay).add_(x.sum(dims) if dims else x)
    sq_sum.mul_(decay).add_(scratch.sum(dims) if dims else scratch)
    count.mul_(decay).add_(n_rows)


def _normalize_into(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
    out: torch.Tensor,
) -> torch.Tensor:
    """The reference's normalization written into ``out`` (shaped like ``x``)."""
    c = count.reshape(())
    mean = loc_sum / c
    std = (sq_sum / c - mean * mean).clamp_min(eps).sqrt()
    torch.sub(x, mean, out=out)
    return out.div_(std)


def vecnorm_update_cpu_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
) -> None:
    """Eager-CPU :func:`vecnorm_update_reference_` (same results): the sums are updated in place.

    Inputs whose dtypes differ from the statistics', or that require grad, go to the reference.

    Examples:
        >>> loc, sq, cnt = torch.zeros(1), torch.zeros(1), torch.zeros(())
        >>> vecnorm_update_cpu_(torch.tensor([[1.0], [3.0]]), loc, sq, cnt, 1.0, 1)
        >>> loc, sq, cnt
        (tensor([4.]), tensor([10.]), tensor(2.))
    """
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)
    if not _cpu_applies(x, loc_sum, count):
        vecnorm_update_reference_(x, loc_sum, sq_sum, count, decay, batch_ndim)
        return
    _update_into_(x, loc_sum, sq_sum, count, decay, batch_ndim, torch.empty_like(x))


def vecnorm_normalize_cpu(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """Eager-CPU :func:`vecnorm_normalize_reference` (same results) with one allocation.

    Inputs whose dtypes differ from the statistics', or that require grad, go to the reference.

    Examples:
        >>> vecnorm_normalize_cpu(torch.tensor([3.0]), torch.tensor([2.0]),
        ...                       torch.tensor([10.0]), torch.tensor(2.0), 1e-4)
        tensor([1.])
    """
    check_vecnorm_args(x, loc_sum, sq_sum, count)
    if not _cpu_applies(x, loc_sum, count):
        return vecnorm_normalize_reference(x, loc_sum, sq_sum, count, eps)
    return _normalize_into(x, loc_sum, sq_sum, count, eps, torch.empty_like(x))


def vecnorm_update_normalize_cpu_(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    eps: float,
    batch_ndim: int,
) -> torch.Tensor:
    """Eager-CPU :func:`vecnorm_update_normalize_reference_` (same results) with one allocation:
    the output, which first serves as the scratch for ``x * x``.

    Inputs whose dtypes differ from the statistics', or that require grad, go to the reference.

    Examples:
        >>> loc, sq, cnt = torch.zeros(1), torch.zeros(1), torch.zeros(())
        >>> vecnorm_update_normalize_cpu_(torch.tensor([[1.0], [3.0]]), loc, sq, cnt, 1.0, 1e-4, 1)
        tensor([[-1.],
                [ 1.]])
    """
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)
    if not _cpu_applies(x, loc_sum, count):
        return vecnorm_update_normalize_reference_(x, loc_sum, sq_sum, count, decay, eps, batch_ndim)
    out = torch.empty_like(x)
    _update_into_(x, loc_sum, sq_sum, count, decay, batch_ndim, out)
    return _normalize_into(x, loc_sum, sq_sum, count, eps, out)


# --- op table: public functions and torch.ops.gpusim.vecnorm_* ------------------------------


def _vecnorm_update_fake(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    batch_ndim: int,
) -> None:
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)


def _vecnorm_normalize_fake(
    x: torch.Tensor, loc_sum: torch.Tensor, sq_sum: torch.Tensor, count: torch.Tensor, eps: float
) -> torch.Tensor:
    check_vecnorm_args(x, loc_sum, sq_sum, count)
    return torch.empty(x.shape, dtype=_out_dtype(x, loc_sum), device=x.device)


def _vecnorm_update_normalize_fake(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    decay: float,
    eps: float,
    batch_ndim: int,
) -> torch.Tensor:
    check_vecnorm_args(x, loc_sum, sq_sum, count, batch_ndim)
    return torch.empty(x.shape, dtype=_out_dtype(x, loc_sum), device=x.device)


_STATS = ("loc_sum", "sq_sum", "count")
_TRITON = "gpusim.kernels.vecnorm_triton:"


@kernel_op(
    "vecnorm_update_",
    "vecnorm",
    reference=vecnorm_update_reference_,
    cpu=vecnorm_update_cpu_,
    triton=_TRITON + "vecnorm_update_triton_",
    fake=_vecnorm_update_fake,
    mutates_args=_STATS,
)
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
    ``count = decay*count + n_rows``. On CUDA (eager, Triton installed): two launches, no atomics;
    on eager CPU: in-place sums (:func:`vecnorm_update_cpu_`); compiled: the torch reference.

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


@kernel_op(
    "vecnorm_normalize",
    "vecnorm",
    reference=vecnorm_normalize_reference,
    cpu=vecnorm_normalize_cpu,
    triton=_TRITON + "vecnorm_normalize_triton",
    fake=_vecnorm_normalize_fake,
)
def vecnorm_normalize(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """Normalize ``x`` with the VecNorm sums: ``(x - mean) / sqrt(max(var, eps))``.

    On CUDA (eager, Triton installed): one launch; on eager CPU: one allocation
    (:func:`vecnorm_normalize_cpu`); compiled: the torch reference.

    Args:
        x: data ``(*batch, *feature)``; the feature shape is ``loc_sum.shape``.
        loc_sum: running sum.
        sq_sum: running sum of squares.
        count: running count (one element).
        eps: variance floor.

    Returns:
        A fresh tensor of dtype ``torch.promote_types(x.dtype, loc_sum.dtype)``.

    Raises:
        ValueError: shapes or devices disagree.
        TypeError: statistics are not floating point.

    Examples:
        >>> vecnorm_normalize(torch.tensor([[3.0]]), torch.tensor([2.0]), torch.tensor([10.0]),
        ...                   torch.tensor(2.0), 1e-4)
        tensor([[1.]])
    """


@kernel_op(
    "vecnorm_update_normalize_",
    "vecnorm",
    reference=vecnorm_update_normalize_reference_,
    cpu=vecnorm_update_normalize_cpu_,
    triton=_TRITON + "vecnorm_update_normalize_triton_",
    fake=_vecnorm_update_normalize_fake,
    mutates_args=_STATS,
)
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

    On CUDA (eager, Triton installed): two launches in all; on eager CPU: in-place sums and one
    allocation (:func:`vecnorm_update_normalize_cpu_`); compiled: the torch reference.

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

    Raises:
        ValueError: shapes or devices disagree.
        TypeError: statistics are not floating point.

    Examples:
        >>> loc, sq, cnt = torch.zeros(1), torch.zeros(1), torch.zeros(())
        >>> vecnorm_update_normalize_(torch.tensor([[0.0], [2.0]]), loc, sq, cnt, 1.0, 1e-4, 1)
        tensor([[-1.],
                [ 1.]])
    """
