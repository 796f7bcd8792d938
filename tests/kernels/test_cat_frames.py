"""CatFrames update: Triton kernel (interpreted on CPU) and dispatch against the torch reference."""

from __future__ import annotations

import pytest
import torch

from gpusim.kernels import cat_frames_update, cat_frames_update_reference
from tests.kernels._marks import needs_compiled_cuda

KMOD = "gpusim.kernels.cat_frames_triton"
DTYPES = [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64]


def _rand(shape, dtype, gen):
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    return torch.randint(0, 200, shape, generator=gen, dtype=dtype)


def _mask(shape, kind, gen):
    if kind == "none":
        return None
    if kind == "all_true":
        return torch.ones(shape, dtype=torch.bool)
    if kind == "all_false":
        return torch.zeros(shape, dtype=torch.bool)
    return torch.rand(shape, generator=gen) > 0.5


def _run_both(batch, feature, dim, n, dtype, padding, kinds, seed=0):
    """Several consecutive updates with the kernel and the reference; compare every step."""
    from gpusim.kernels.cat_frames_triton import cat_frames_update_triton

    gen = torch.Generator().manual_seed(seed)
    buf_shape = list(batch + feature)
    buf_shape[dim] *= n
    buf_k = _rand(tuple(buf_shape), dtype, gen)
    buf_r = buf_k.clone()
    for kind in kinds:
        frame = _rand(batch + feature, dtype, gen)
        mask = _mask(batch, kind, gen)
        out_k = cat_frames_update_triton(buf_k, frame, mask, dim, padding, 2.5)
        out_r = cat_frames_update_reference(buf_r, frame, mask, dim, padding, 2.5)
        assert out_k.dtype == dtype and out_k.shape == buf_k.shape
        assert torch.equal(out_k, out_r), (kind, dtype, padding)
        assert torch.equal(buf_k, buf_r), (kind, dtype, padding)
        assert out_k.data_ptr() != buf_k.data_ptr()  # the observation never aliases the buffer
        assert torch.equal(out_k.narrow(dim, (n - 1) * frame.shape[dim], frame.shape[dim]), frame)


KINDS = ["random", "none", "all_false", "all_true", "random"]


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("rows", [1, 7, 1023, 4097])
def test_vector_frames_kernel(rows, padding, spy_kernel):
    spy = spy_kernel(KMOD, "_cat_frames_kernel")
    _run_both((rows,), (3,), -1, 4, torch.float32, padding, KINDS)
    assert len(spy.grids) == len(KINDS)  # one launch per update


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 5])
def test_dtypes_and_widths_kernel(dtype, width, spy_kernel):
    spy = spy_kernel(KMOD, "_cat_frames_kernel")
    for padding in ("same", "constant"):
        _run_both((7,), (width,), -1, 3, dtype, padding, ["random", "none", "all_true"], seed=1)
    assert len(spy.grids) == 6


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_image_frames_dim_minus_3_kernel(n, padding, spy_kernel):
    spy = spy_kernel(KMOD, "_cat_frames_kernel")
    _run_both((5,), (3, 4, 5), -3, n, torch.float32, padding, KINDS, seed=2)
    _run_both((2, 3), (1, 3, 3), -3, n, torch.uint8, padding, KINDS, seed=3)  # 2 batch dims
    assert len(spy.grids) == 2 * len(KINDS)


def test_middle_dim_and_nested_batch_kernel(spy_kernel):
    spy_kernel(KMOD, "_cat_frames_kernel")
    # (N, agents, 2, 3) frames concatenated along -2 with an (N, agents) mask
    _run_both((7, 2), (2, 3), -2, 3, torch.float64, "constant", KINDS, seed=4)
    _run_both((7, 2), (2, 3), -2, 3, torch.float64, "same", KINDS, seed=5)


def test_kernel_noncontiguous_buffer(spy_kernel):
    from gpusim.kernels.cat_frames_triton import cat_frames_update_triton

    spy_kernel(KMOD, "_cat_frames_kernel")
    buf = torch.arange(24.0).reshape(8, 3).t()  # (3, 8) non-contiguous, 4 frames of width 2
    ref = buf.clone()
    frame = torch.full((3, 2), 100.0)
    mask = torch.tensor([False, True, False])
    out = cat_frames_update_triton(buf, frame, mask, -1, "same", 0.0)
    exp = cat_frames_update_reference(ref, frame, mask, -1, "same", 0.0)
    assert torch.equal(out, exp) and torch.equal(buf, ref)


def _run_cpu_path(batch, feature, dim, n, dtype, padding, kinds, seed=0):
    """The eager-CPU path against the reference over consecutive updates."""
    from gpusim.kernels.cat_frames import cat_frames_update_cpu

    gen = torch.Generator().manual_seed(seed)
    buf_shape = list(batch + feature)
    buf_shape[dim] *= n
    buf_c = _rand(tuple(buf_shape), dtype, gen)
    buf_r = buf_c.clone()
    for kind in kinds:
        frame = _rand(batch + feature, dtype, gen)
        mask = _mask(batch, kind, gen)
        out_c = cat_frames_update_cpu(buf_c, frame, mask, dim, padding, 2.0)
        out_r = cat_frames_update_reference(buf_r, frame, mask, dim, padding, 2.0)
        assert out_c.dtype == dtype and out_c.shape == out_r.shape
        assert torch.equal(out_c, out_r), (kind, dtype, padding)
        assert torch.equal(buf_c, buf_r), (kind, dtype, padding)
        assert out_c.data_ptr() != buf_c.data_ptr()


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_path_matches_reference(dtype, padding):
    for rows in (1, 7, 1023):
        for width in (1, 3, 4, 5):
            _run_cpu_path((rows,), (width,), -1, 4, dtype, padding, KINDS, seed=rows + width)
    _run_cpu_path((5,), (3, 4, 5), -3, 2, dtype, padding, KINDS, seed=2)  # image frames
    _run_cpu_path((2, 3), (1, 3, 3), -3, 3, dtype, padding, KINDS, seed=3)  # 2 batch dims
    _run_cpu_path((7, 2), (2, 3), -2, 3, dtype, padding, KINDS, seed=4)  # middle dim, (N, agents) mask
    _run_cpu_path((7,), (2, 3), -1, 1, dtype, padding, KINDS, seed=5)  # N = 1, mask over fewer dims


def test_cpu_path_noncontiguous_and_unaligned():
    from gpusim.kernels.cat_frames import cat_frames_update_cpu

    buf = torch.arange(24.0).reshape(8, 3).t()  # (3, 8) non-contiguous: falls back to the reference
    ref = buf.clone()
    frame = torch.full((3, 2), 100.0)
    mask = torch.tensor([False, True, False])
    assert torch.equal(
        cat_frames_update_cpu(buf, frame, mask, -1, "same"), cat_frames_update_reference(ref, frame, mask, -1, "same")
    )
    assert torch.equal(buf, ref)
    base = torch.arange(1 + 3 * 8, dtype=torch.float32)
    buf, ref = base[1:].view(3, 8), base[1:].clone().view(3, 8)  # odd storage offset: no wide view
    frame = base[1:7].view(3, 2).clone()
    assert torch.equal(
        cat_frames_update_cpu(buf, frame, mask, -1, "constant", -1.0),
        cat_frames_update_reference(ref, frame, mask, -1, "constant", -1.0),
    )
    assert torch.equal(buf, ref)


@pytest.mark.parametrize("rows, expect_cpu_path", [(4, False), (2048, True)])
def test_dispatch_cpu_path_by_size(rows, expect_cpu_path):
    from gpusim.kernels import record_backends, threshold

    buf = torch.zeros(rows, 6)
    mask = torch.zeros(rows, dtype=torch.bool)
    mask[0] = True
    with record_backends() as calls:
        out = cat_frames_update(buf, torch.ones(rows, 2), mask, -1)
    assert expect_cpu_path == (buf.numel() >= threshold("cat_frames_update"))
    assert calls == [("cat_frames_update", "cpu" if expect_cpu_path else "reference")]
    assert torch.equal(out[0], torch.ones(6)) and torch.equal(out[1], torch.tensor([0.0, 0, 0, 0, 1, 1]))


def test_semantics_by_hand():
    buf = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = cat_frames_update(buf, torch.tensor([[7.0], [8.0]]), torch.tensor([False, True]), -1,
                            "constant", 0.5)  # fmt: skip
    assert torch.equal(out, torch.tensor([[2.0, 3.0, 7.0], [0.5, 0.5, 8.0]]))
    assert torch.equal(buf, out)
    out = cat_frames_update(buf, torch.tensor([[9.0], [1.0]]), torch.tensor([True, False]), -1)
    assert torch.equal(out, torch.tensor([[9.0, 9.0, 9.0], [0.5, 8.0, 1.0]]))
    out.add_(1)  # the returned observation is a copy
    assert torch.equal(buf, torch.tensor([[9.0, 9.0, 9.0], [0.5, 8.0, 1.0]]))


def test_op_registered_on_cpu():
    buf = torch.zeros(3, 4)
    ref = buf.clone()
    frame, mask = torch.ones(3, 2), torch.tensor([True, False, True])
    out = torch.ops.gpusim.cat_frames_update(buf, frame, mask, -1, "constant", 3.0)
    exp = cat_frames_update_reference(ref, frame, mask, -1, "constant", 3.0)
    assert torch.equal(out, exp) and torch.equal(buf, ref)


@pytest.mark.parametrize(
    "buf, frame, mask, dim, padding, exc, match",
    [
        (torch.zeros(2, 6), torch.zeros(2, 3), None, -1, "reflect", ValueError,
         "padding must be 'same' or 'constant', got 'reflect'"),
        (torch.zeros(2, 6), torch.zeros(2, 3), None, 1, "same", ValueError,
         "dim must be a negative int"),
        (torch.zeros(2, 7), torch.zeros(2, 3), None, -1, "same", ValueError,
         r"buffer shape \(2, 7\) must equal the frame shape \(2, 3\)"),
        (torch.zeros(2, 6), torch.zeros(2, 3, dtype=torch.int64), None, -1, "same", TypeError,
         "buffer.dtype torch.float32 != frame.dtype torch.int64"),
        (torch.zeros(2, 6), torch.zeros(2, 3), torch.zeros(2), -1, "same", TypeError,
         "reset_mask dtype must be torch.bool"),
        (torch.zeros(2, 6), torch.zeros(2, 3), torch.zeros(3, dtype=torch.bool), -1, "same",
         ValueError, r"reset_mask shape \(3,\) is not a prefix"),
        (torch.zeros(2, 6), torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.bool), -1, "same",
         ValueError, "falls inside the batch dims"),
        (torch.zeros(2, 6, dtype=torch.uint8), torch.zeros(2, 3, dtype=torch.uint8), None, -1,
         "constant", ValueError, "padding_value -1.0 does not fit the buffer dtype torch.uint8"),
    ],
)  # fmt: skip
def test_bad_input_raises(buf, frame, mask, dim, padding, exc, match):
    with pytest.raises(exc, match=match):
        cat_frames_update(buf, frame, mask, dim, padding, -1.0)


@needs_compiled_cuda
@pytest.mark.parametrize("padding", ["same", "constant"])
def test_cuda_dispatch_matches_reference(padding):
    gen = torch.Generator().manual_seed(8)
    for batch, feature, dim in (((4097,), (3,), -1), ((33,), (2, 7, 9), -3)):
        buf_shape = list(batch + feature)
        buf_shape[dim] *= 4
        buf = torch.randn(buf_shape, generator=gen).cuda()
        ref = buf.clone()
        for _ in range(3):
            frame = torch.randn(batch + feature, generator=gen).cuda()
            mask = (torch.rand(batch, generator=gen) > 0.5).cuda()
            out = cat_frames_update(buf, frame, mask, dim, padding, 1.5)
            exp = cat_frames_update_reference(ref, frame, mask, dim, padding, 1.5)
            assert torch.equal(out, exp) and torch.equal(buf, ref)
