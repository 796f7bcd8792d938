"""Every backend of every op against its reference, at the op's CPU threshold and one below it
(and at 65536 rows): the recorded backend proves which path ran, so no case passes by silently
taking the reference. Results must be bit-exact (``torch.equal``)."""

from __future__ import annotations

import pytest
import torch

import gpusim.kernels as K
from gpusim.kernels import force_backend, record_backends, threshold


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _expected(table: str, size: int) -> str:
    return "cpu" if size >= threshold(table) else "reference"


# --- masked merge / fill: size = elements of the largest leaf -----------------------------------

MERGE_T = threshold("masked_merge")
# (rows, width of the widest leaf): largest leaf = T - 1, T, and 65536 rows
MERGE_SIZES = [(MERGE_T - 1, 1), (MERGE_T, 1), (MERGE_T // 4, 4), (65536, 4)]


def _merge_leaves(rows: int, width: int, seed: int):
    gen = _gen(seed)
    mask = torch.rand(rows, generator=gen) > 0.5
    agents = torch.rand(rows, 1, generator=gen) > 0.5  # a per-agent mask (one agent)
    shapes_dtypes = [((rows, width), torch.float32), ((rows,), torch.int64), ((rows, 1), torch.bool),
                     ((rows, 1, 1), torch.float64)]  # fmt: skip
    new, old = [], []
    for shape, dtype in shapes_dtypes:
        for side in (new, old):
            side.append((torch.randn(shape, generator=gen) * 50).to(dtype))
    return new, old, [mask, mask, mask, agents]


@pytest.mark.parametrize("rows, width", MERGE_SIZES)
def test_masked_merge_at_threshold(rows, width):
    new, old, masks = _merge_leaves(rows, width, seed=rows)
    assert max(t.numel() for t in new) == rows * width
    ref = K.masked_merge_reference(new, old, masks)
    with record_backends() as calls:
        outs = [K.masked_merge(new, old, masks), torch.ops.gpusim.masked_merge(new, old, masks)]
    backend = _expected("masked_merge", rows * width)
    assert calls == [("masked_merge", backend)] * 2
    for out in outs:
        assert all(o.dtype == r.dtype and torch.equal(o, r) for o, r in zip(out, ref))


@pytest.mark.parametrize("rows, width", MERGE_SIZES)
def test_masked_fill_rows_at_threshold(rows, width):
    new, old, masks = _merge_leaves(rows, width, seed=rows + 1)
    ref = [t.clone() for t in old]
    K.masked_fill_rows_reference_(ref, new, masks)
    dst_pub, dst_op = [t.clone() for t in old], [t.clone() for t in old]
    with record_backends() as calls:
        K.masked_fill_rows_(dst_pub, new, masks)
        torch.ops.gpusim.masked_fill_rows_(dst_op, new, masks)
    assert calls == [("masked_fill_rows", _expected("masked_fill_rows", rows * width))] * 2
    for a, b, r in zip(dst_pub, dst_op, ref):
        assert torch.equal(a, r) and torch.equal(b, r)


# --- CatFrames: size = elements of the buffer ---------------------------------------------------

CAT_T = threshold("cat_frames_update")
# (rows, N frames, frame width): buffer elements T - 1, T, T, and 65536 rows
CAT_SIZES = [(CAT_T - 1, 1, 1), (CAT_T, 1, 1), (CAT_T // 4, 4, 1), (65536, 4, 3)]


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("rows, n, width", CAT_SIZES)
def test_cat_frames_update_at_threshold(rows, n, width, padding):
    gen = _gen(rows + n)
    buf = torch.randn(rows, n * width, generator=gen)
    bufs = [buf.clone() for _ in range(3)]  # reference, public, operator
    backend = _expected("cat_frames_update", buf.numel())
    for step in range(3):
        frame = torch.randn(rows, width, generator=gen)
        mask = None if step == 0 else torch.rand(rows, generator=gen) > 0.7
        ref = K.cat_frames_update_reference(bufs[0], frame, mask, -1, padding, -1.5)
        with record_backends() as calls:
            out_pub = K.cat_frames_update(bufs[1], frame, mask, -1, padding, -1.5)
            out_op = torch.ops.gpusim.cat_frames_update(bufs[2], frame, mask, -1, padding, -1.5)
        assert calls == [("cat_frames_update", backend)] * 2
        assert torch.equal(out_pub, ref) and torch.equal(out_op, ref)
        assert torch.equal(bufs[1], bufs[0]) and torch.equal(bufs[2], bufs[0])


# --- VecNorm: size = elements of x (threshold 1: every non-empty x) ------------------------------

VN_T = threshold("vecnorm")
VN_CASES = [((0, 3), torch.float32), ((VN_T, 1), torch.float32), ((7, 3), torch.float64),
            ((65536, 4), torch.float32), ((64, 2, 3), torch.float32)]  # fmt: skip


def _vn_ops():
    return [
        ("update", K.vecnorm_update_, torch.ops.gpusim.vecnorm_update_, K.vecnorm_update_reference_),
        ("normalize", K.vecnorm_normalize, torch.ops.gpusim.vecnorm_normalize, K.vecnorm_normalize_reference),
        ("both", K.vecnorm_update_normalize_, torch.ops.gpusim.vecnorm_update_normalize_,
         K.vecnorm_update_normalize_reference_),
    ]  # fmt: skip


def _vn_args(kind: str, x: torch.Tensor, stats: list, batch_ndim: int) -> tuple:
    if kind == "update":
        return (x, *stats, 0.99, batch_ndim)
    if kind == "normalize":
        return (x, *stats, 1e-4)
    return (x, *stats, 0.99, 1e-4, batch_ndim)


@pytest.mark.parametrize("shape, dtype", VN_CASES)
def test_vecnorm_at_threshold(shape, dtype):
    gen = _gen(sum(shape))
    batch_ndim = 1
    feature = shape[batch_ndim:]
    for kind, public, op, reference in _vn_ops():
        loc = torch.randn(feature, generator=gen, dtype=dtype)
        start = [loc * 3, loc * loc * 9 + 1, torch.tensor(3.0, dtype=dtype)]
        stats = [[t.clone() for t in start] for _ in range(3)]  # reference, public, operator
        for _ in range(2):
            x = torch.randn(shape, generator=gen, dtype=dtype) * 2 + 1
            ref = reference(*_vn_args(kind, x, stats[0], batch_ndim))
            with record_backends() as calls:
                outs = [fn(*_vn_args(kind, x, s, batch_ndim)) for fn, s in ((public, stats[1]), (op, stats[2]))]
            assert calls == [("vecnorm", _expected("vecnorm", x.numel()))] * 2, kind
            for out, st in zip(outs, stats[1:]):
                assert (out is None) == (ref is None)
                assert ref is None or (out.dtype == ref.dtype and torch.equal(out, ref)), kind
                assert all(torch.equal(a, b) for a, b in zip(st, stats[0])), kind


def test_vecnorm_cpu_path_hands_other_dtypes_and_grads_to_the_reference():
    x = torch.randn(64, 3)
    for x_in, stats in (
        (x.half(), [torch.ones(3), torch.full((3,), 2.0), torch.tensor(2.0)]),  # x dtype != stats
        (x, [torch.ones(3), torch.full((3,), 2.0), torch.tensor(2.0, dtype=torch.float64)]),  # count
        (x.requires_grad_(), [torch.ones(3), torch.full((3,), 2.0), torch.tensor(2.0)]),  # grad
    ):
        ref_stats = [t.clone() for t in stats]
        y = K.vecnorm_update_normalize_(x_in, *stats, 0.9, 1e-4, 1)
        y_ref = K.vecnorm_update_normalize_reference_(x_in, *ref_stats, 0.9, 1e-4, 1)
        assert torch.equal(y, y_ref) and all(torch.equal(a, b) for a, b in zip(stats, ref_stats))
        assert y.requires_grad == x_in.requires_grad


# --- categorical draws: size = values drawn -----------------------------------------------------

CAT_RAND_T = threshold("categorical_rand")


def _packed_by_hand(n: int, numel: int, seed: int) -> torch.Tensor:
    """The packed scheme spelled out: ``31 // bits`` fields of ``bits`` bits per 31-bit draw,
    lowest bits first, from torch's default generator."""
    bits = n.bit_length() - 1
    per = 31 // bits
    torch.manual_seed(seed)
    draws = torch.empty(-(-numel // per), dtype=torch.int32).random_().tolist()
    values = [(d >> (k * bits)) & (n - 1) for d in draws for k in range(per)]
    return torch.tensor(values[:numel])


@pytest.mark.parametrize("numel", [CAT_RAND_T - 1, CAT_RAND_T, 65536])
@pytest.mark.parametrize("n", [2, 16])
def test_categorical_rand_at_threshold(n, numel):
    from gpusim.specs import Categorical

    shape = (numel // 2, 2) if numel % 2 == 0 else (numel,)
    backend = _expected("categorical_rand", numel)
    torch.manual_seed(5)
    with record_backends() as calls:
        drawn = [K.categorical_rand(n, shape)]
        torch.manual_seed(5)
        drawn.append(Categorical(n, shape=shape).rand())
    assert calls == [("categorical_rand", backend)] * 2
    if backend == "cpu":
        expected = _packed_by_hand(n, numel, 5).reshape(shape)
    else:
        torch.manual_seed(5)
        expected = torch.randint(0, n, shape)
    for x in drawn:
        assert x.dtype == torch.int64 and torch.equal(x, expected)
    if numel == 65536:  # uniform: every category about numel / n times
        counts = torch.bincount(drawn[0].reshape(-1), minlength=n).float()
        assert (counts / (numel / n) - 1).abs().max() < 0.1


def test_categorical_rand_packed_only_where_it_applies():
    torch.manual_seed(0)
    ref = torch.randint(0, 3, (CAT_RAND_T,), dtype=torch.int32)
    torch.manual_seed(0)
    with record_backends() as calls:
        out = K.categorical_rand(3, (CAT_RAND_T,), torch.int32)  # not a power of two
    assert calls == [("categorical_rand", "cpu")] and torch.equal(out, ref)
    with force_backend("reference"):
        torch.manual_seed(0)
        assert torch.equal(K.categorical_rand(3, (CAT_RAND_T,), torch.int32), ref)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        K.categorical_rand(0, (3,))


# --- forcing: every public function and operator runs the Triton kernel on request --------------


def test_forced_triton_runs_the_kernels_through_the_public_functions(spy_kernel):
    merge = spy_kernel("gpusim.kernels.masked_merge_triton", "_masked_merge_kernel")
    cat = spy_kernel("gpusim.kernels.cat_frames_triton", "_cat_frames_kernel")
    vn = spy_kernel("gpusim.kernels.vecnorm_triton", "_vecnorm_apply_kernel")
    new, old, masks = _merge_leaves(33, 3, seed=9)
    buf, frame = torch.randn(33, 6), torch.randn(33, 2)
    x, stats = torch.randn(33, 3), [torch.ones(3), torch.full((3,), 2.0), torch.tensor(2.0)]
    ref_buf, ref_stats = buf.clone(), [t.clone() for t in stats]
    with force_backend("triton"), record_backends() as calls:
        merged = K.masked_merge(new, old, masks)
        dst = [t.clone() for t in old]
        torch.ops.gpusim.masked_fill_rows_(dst, new, masks)
        obs = K.cat_frames_update(buf, frame, masks[0], -1)
        y = torch.ops.gpusim.vecnorm_update_normalize_(x, *stats, 0.9, 1e-4, 1)
    assert [b for _, b in calls] == ["triton"] * 4
    assert len(merge.grids) == 2 and len(cat.grids) == 1 and len(vn.grids) == 1
    ref = K.masked_merge_reference(new, old, masks)
    assert all(torch.equal(a, r) and torch.equal(d, r) for a, d, r in zip(merged, dst, ref))
    assert torch.equal(obs, K.cat_frames_update_reference(ref_buf, frame, masks[0], -1))
    y_ref = K.vecnorm_update_normalize_reference_(x, *ref_stats, 0.9, 1e-4, 1)
    torch.testing.assert_close(y, y_ref, rtol=2e-5, atol=2e-5)
