"""VecNorm: Triton kernels (interpreted on CPU) and dispatch against the torch reference."""

from __future__ import annotations

import pytest
import torch

from gpusim.kernels import (
    vecnorm_normalize,
    vecnorm_normalize_reference,
    vecnorm_update_,
    vecnorm_update_normalize_,
    vecnorm_update_normalize_reference_,
    vecnorm_update_reference_,
)
from tests.kernels._marks import needs_compiled_cuda

KMOD = "gpusim.kernels.vecnorm_triton"
EPS = 1e-4


def _stats(feature, dtype=torch.float32):
    return torch.zeros(feature, dtype=dtype), torch.zeros(feature, dtype=dtype), torch.zeros(())


def _tol(dtype):
    return dict(rtol=1e-9, atol=1e-9) if dtype == torch.float64 else dict(rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("stats_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("width", [1, 3, 5])
@pytest.mark.parametrize("rows", [1, 7, 1023, 4097])
def test_decay_one_is_exact_running_mean_std(rows, width, stats_dtype, spy_kernel):
    """Fused update+normalize over several batches == mean / biased std of all data seen."""
    from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

    part = spy_kernel(KMOD, "_vecnorm_partial_kernel")
    apply = spy_kernel(KMOD, "_vecnorm_apply_kernel")
    gen = torch.Generator().manual_seed(rows * 10 + width)
    loc, sq, cnt = _stats((width,), stats_dtype)
    seen = []
    for step in range(3):
        x = torch.randn(rows, width, generator=gen, dtype=stats_dtype) * 3 + 2 + step
        seen.append(x)
        y = vecnorm_update_normalize_triton_(x, loc, sq, cnt, 1.0, EPS, 1)
        data = torch.cat(seen).double()
        mean, var = data.mean(0), data.var(0, unbiased=False)
        expected = (x.double() - mean) / var.clamp_min(EPS).sqrt()
        assert y.dtype == stats_dtype
        torch.testing.assert_close(y.double(), expected, rtol=1e-4, atol=1e-4)
        assert cnt.item() == rows * (step + 1)
        torch.testing.assert_close(loc.double() / cnt.double(), mean, rtol=1e-5, atol=1e-5)
    assert len(part.grids) == 3 and len(apply.grids) == 3  # two launches per call


@pytest.mark.parametrize("stats_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rows", [1, 7, 1023])
def test_decay_099_matches_reference(rows, stats_dtype, spy_kernel):
    from gpusim.kernels.vecnorm_triton import (
        vecnorm_normalize_triton,
        vecnorm_update_normalize_triton_,
        vecnorm_update_triton_,
    )

    spy = spy_kernel(KMOD, "_vecnorm_apply_kernel")
    gen = torch.Generator().manual_seed(rows)
    k_stats, r_stats = _stats((3,), stats_dtype), _stats((3,), stats_dtype)
    for step in range(4):
        x = torch.randn(rows, 3, generator=gen) * (step + 1) - step
        if step % 2:
            y_k = vecnorm_update_normalize_triton_(x, *k_stats, 0.99, EPS, 1)
            y_r = vecnorm_update_normalize_reference_(x, *r_stats, 0.99, EPS, 1)
        else:
            vecnorm_update_triton_(x, *k_stats, 0.99, 1)
            vecnorm_update_reference_(x, *r_stats, 0.99, 1)
            y_k = vecnorm_normalize_triton(x, *k_stats, EPS)
            y_r = vecnorm_normalize_reference(x, *r_stats, EPS)
        assert y_k.dtype == y_r.dtype
        torch.testing.assert_close(y_k, y_r, **_tol(stats_dtype))
        for a, b in zip(k_stats, r_stats):
            torch.testing.assert_close(a, b, **_tol(stats_dtype))
    assert len(spy.grids) == 6


@pytest.mark.parametrize(
    "shape, batch_ndim",
    [((7, 2, 3), 2), ((7, 2, 3), 1), ((5,), 1), ((4, 3), 0), ((6, 2, 3, 5), 1)],
)
def test_batch_dims_and_feature_shapes(shape, batch_ndim, spy_kernel):
    from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

    spy = spy_kernel(KMOD, "_vecnorm_partial_kernel")
    gen = torch.Generator().manual_seed(11)
    feature = shape[batch_ndim:]
    k_stats, r_stats = _stats(feature), _stats(feature)
    for _ in range(2):
        x = torch.randn(shape, generator=gen)
        y_k = vecnorm_update_normalize_triton_(x, *k_stats, 0.9, EPS, batch_ndim)
        y_r = vecnorm_update_normalize_reference_(x, *r_stats, 0.9, EPS, batch_ndim)
        torch.testing.assert_close(y_k, y_r, **_tol(torch.float32))
        for a, b in zip(k_stats, r_stats):
            torch.testing.assert_close(a, b, **_tol(torch.float32))
    assert len(spy.grids) == 2


def test_kernel_mixed_dtypes_and_noncontiguous(spy_kernel):
    from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

    spy_kernel(KMOD, "_vecnorm_partial_kernel")
    x = torch.randn(5, 9).t()[:, :4]  # (9, 4) non-contiguous
    stats_k = (torch.zeros(8)[::2], torch.zeros(4), torch.zeros(1, dtype=torch.float64))
    stats_r = (torch.zeros(4), torch.zeros(4), torch.zeros(1, dtype=torch.float64))
    y_k = vecnorm_update_normalize_triton_(x.half(), *stats_k, 0.99, EPS, 1)
    y_r = vecnorm_update_normalize_reference_(x.half(), *stats_r, 0.99, EPS, 1)
    assert y_k.dtype == y_r.dtype == torch.float32
    torch.testing.assert_close(y_k, y_r, rtol=1e-5, atol=1e-5)
    for a, b in zip(stats_k, stats_r):
        torch.testing.assert_close(a, b)
    assert stats_k[2].item() == 9


def test_kernel_empty_features_and_rows(spy_kernel):
    from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

    spy_kernel(KMOD, "_vecnorm_partial_kernel")
    loc, sq, cnt = _stats((0,))
    y = vecnorm_update_normalize_triton_(torch.zeros(5, 0), loc, sq, cnt, 0.5, EPS, 1)
    assert y.shape == (5, 0) and cnt.item() == 5
    loc, sq, cnt = torch.ones(3), torch.full((3,), 2.0), torch.full((), 1.0)
    y = vecnorm_update_normalize_triton_(torch.zeros(0, 3), loc, sq, cnt, 0.5, EPS, 1)
    assert y.shape == (0, 3) and cnt.item() == 0.5
    assert torch.equal(loc, torch.full((3,), 0.5)) and torch.equal(sq, torch.ones(3))


def test_dispatch_and_ops_on_cpu():
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(33, 3, generator=gen)
    stats = [_stats((3,)) for _ in range(4)]
    vecnorm_update_(x, *stats[0], 0.99, 1)
    vecnorm_update_reference_(x, *stats[1], 0.99, 1)
    torch.ops.gpusim.vecnorm_update_(x, *stats[2], 0.99, 1)
    y = vecnorm_update_normalize_(x, *stats[3], 0.99, EPS, 1)
    for s in stats[1:]:
        for a, b in zip(stats[0], s):
            torch.testing.assert_close(a, b)
    y_r = vecnorm_normalize_reference(x, *stats[0], EPS)
    torch.testing.assert_close(y, y_r)
    torch.testing.assert_close(vecnorm_normalize(x, *stats[0], EPS), y_r)
    torch.testing.assert_close(torch.ops.gpusim.vecnorm_normalize(x, *stats[0], EPS), y_r)
    y_op = torch.ops.gpusim.vecnorm_update_normalize_(x, *stats[1], 0.99, EPS, 1)
    torch.testing.assert_close(y_op, vecnorm_normalize_reference(x, *stats[1], EPS))


@pytest.mark.parametrize(
    "x, stats, batch_ndim, exc, match",
    [
        (torch.zeros(4, 3), (torch.zeros(2), torch.zeros(2), torch.zeros(())), 1, ValueError,
         r"statistics shape \(2,\) != feature shape \(3,\)"),
        (torch.zeros(4, 3), (torch.zeros(3), torch.zeros(3), torch.zeros(2)), 1, ValueError,
         r"count must have one element, got shape \(2,\)"),
        (torch.zeros(4, 3), (torch.zeros(3, dtype=torch.long), torch.zeros(3), torch.zeros(())), 1,
         TypeError, "loc_sum must be a floating point tensor"),
        (torch.zeros(4, 3), (torch.zeros(3), torch.zeros(3), torch.zeros(())), 3, ValueError,
         r"batch_ndim must be in \[0, 2\], got 3"),
    ],
)  # fmt: skip
def test_bad_input_raises(x, stats, batch_ndim, exc, match):
    with pytest.raises(exc, match=match):
        vecnorm_update_(x, *stats, 1.0, batch_ndim)


@needs_compiled_cuda
@pytest.mark.parametrize("rows", [1, 7, 1023, 100_003])
def test_cuda_dispatch_matches_reference(rows):
    gen = torch.Generator().manual_seed(13)
    k_stats = [t.cuda() for t in _stats((5,))]
    r_stats = [t.clone() for t in k_stats]
    for _ in range(3):
        x = (torch.randn(rows, 5, generator=gen) * 2 + 1).cuda()
        y_k = vecnorm_update_normalize_(x, *k_stats, 0.999, EPS, 1)
        y_r = vecnorm_update_normalize_reference_(x, *r_stats, 0.999, EPS, 1)
        torch.testing.assert_close(y_k, y_r, rtol=1e-4, atol=1e-4)
        for a, b in zip(k_stats, r_stats):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-3)


def test_compiled_normalize_computes_stats_once_and_matches_eager():
    """Compiled, the normalization's mean and std are realized once per call
    (``gpusim.kernels._inductor.realized``): the eager reference's values (to an ulp: Inductor's
    division and square root round like eager's to within one ulp, with or without the hint)."""
    from gpusim.kernels.vecnorm import vecnorm_normalize_reference

    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(37, 2, 3, generator=gen)
    loc, sq = x.sum(0) * 0.5, (x * x).sum(0) * 0.5
    count = torch.tensor(18.5)
    compiled = torch.compile(vecnorm_normalize_reference, fullgraph=True)
    torch.testing.assert_close(
        compiled(x, loc, sq, count, 1e-4), vecnorm_normalize_reference(x, loc, sq, count, 1e-4), rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("shape", [(12, 4), (6, 2, 2), (5, 3)])  # regrouped as 16-wide rows; (5, 3): not
def test_compiled_update_sums_match_eager(shape):
    """Compiled, rows of fewer than 16 features are summed as 16-wide rows and folded
    (``gpusim.kernels.vecnorm.row_sums``): the eager sums up to the order of the additions."""
    from gpusim.kernels.vecnorm import row_sums

    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=gen)
    feat = x.shape[1:]
    stats = [torch.ones(feat), torch.full(feat, 2.0), torch.tensor(3.0)]
    eager = [t.clone() for t in stats]
    torch.compile(vecnorm_update_reference_, fullgraph=True)(x, *stats, 0.9, 1)
    vecnorm_update_reference_(x, *eager, 0.9, 1)
    for got, want in zip(stats, eager):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert torch.equal(row_sums(x.reshape(shape[0], -1)), x.reshape(shape[0], -1).sum(0))  # eager: x.sum(0)
