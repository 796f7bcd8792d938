"""Masked merge: Triton kernel (interpreted on CPU) and dispatch against the torch reference."""

from __future__ import annotations

import pytest
import torch

from gpusim.kernels import (
    masked_fill_rows_,
    masked_fill_rows_reference_,
    masked_merge,
    masked_merge_reference,
)
from tests.kernels._marks import needs_compiled_cuda

KMOD = "gpusim.kernels.masked_merge_triton"
DTYPES = [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64]
ROWS = [1, 7, 1023, 4097]
WIDTHS = [1, 3, 5]


def _rand(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    return torch.randint(0, 200, shape, generator=gen, dtype=dtype)


def _mask(shape: tuple[int, ...], kind: str, gen: torch.Generator) -> torch.Tensor:
    if kind == "all_true":
        return torch.ones(shape, dtype=torch.bool)
    if kind == "all_false":
        return torch.zeros(shape, dtype=torch.bool)
    return torch.rand(shape, generator=gen) > 0.5


def _leaves(rows: int, kind: str, seed: int = 0):
    """Every dtype x width as (N, width) leaves, plus (N,) and nested (N, agents, F) leaves."""
    gen = torch.Generator().manual_seed(seed)
    mask = _mask((rows,), kind, gen)
    agent_mask = _mask((rows, 2), kind, gen)
    new, old, masks = [], [], []
    for dtype in DTYPES:
        for width in WIDTHS:
            new.append(_rand((rows, width), dtype, gen))
            old.append(_rand((rows, width), dtype, gen))
            masks.append(mask)
    for dtype in (torch.float32, torch.bool):
        new.append(_rand((rows,), dtype, gen))
        old.append(_rand((rows,), dtype, gen))
        masks.append(mask)
    for m in (agent_mask, mask):  # nested-style leaf with per-agent and per-env masks
        new.append(_rand((rows, 2, 3), torch.float32, gen))
        old.append(_rand((rows, 2, 3), torch.float32, gen))
        masks.append(m)
    return new, old, masks


@pytest.mark.parametrize("kind", ["all_true", "all_false", "random"])
@pytest.mark.parametrize("rows", ROWS)
def test_kernel_matches_reference(rows, kind, spy_kernel):
    from gpusim.kernels.masked_merge_triton import MAX_LEAVES_PER_LAUNCH, masked_merge_triton

    spy = spy_kernel(KMOD, "_masked_merge_kernel")
    new, old, masks = _leaves(rows, kind)
    new_copy, old_copy = [t.clone() for t in new], [t.clone() for t in old]
    out = masked_merge_triton(new, old, masks)
    ref = masked_merge_reference(new, old, masks)
    n_launch = -(-len(new) // MAX_LEAVES_PER_LAUNCH)
    assert len(spy.grids) == n_launch
    for i, (o, r) in enumerate(zip(out, ref)):
        assert o.dtype == r.dtype and o.shape == r.shape, i
        assert torch.equal(o, r), f"leaf {i} ({r.dtype}, {tuple(r.shape)})"
    for a, b in zip(new + old, new_copy + old_copy):  # inputs untouched
        assert torch.equal(a, b)
    if kind == "all_true":
        assert all(torch.equal(o, n) for o, n in zip(out, new))


def test_kernel_one_launch_for_small_leaves(spy_kernel):
    from gpusim.kernels.masked_merge_triton import masked_merge_triton

    spy = spy_kernel(KMOD, "_masked_merge_kernel")
    gen = torch.Generator().manual_seed(1)
    n = 33
    mask = torch.rand(n, generator=gen) > 0.3
    shapes = [(n,), (n, 1), (n, 4), (n, 1), (n, 1), (n, 4)]
    dtypes = [torch.int64, torch.float32, torch.float32, torch.bool, torch.bool, torch.float32]
    new = [_rand(s, d, gen) for s, d in zip(shapes, dtypes)]
    old = [_rand(s, d, gen) for s, d in zip(shapes, dtypes)]
    out = masked_merge_triton(new, old, [mask] * len(new))
    assert len(spy.grids) == 1
    for o, r in zip(out, masked_merge_reference(new, old, [mask] * len(new))):
        assert torch.equal(o, r)


def test_kernel_noncontiguous_and_empty(spy_kernel):
    from gpusim.kernels.masked_merge_triton import masked_merge_triton

    spy_kernel(KMOD, "_masked_merge_kernel")
    gen = torch.Generator().manual_seed(2)
    base_new = torch.randn(5, 7, generator=gen)
    base_old = torch.randn(7, 5, generator=gen).t()  # non-contiguous (5, 7)
    mask = torch.tensor([True, False, True, True, False])
    empty = torch.zeros(0, 3)
    out = masked_merge_triton(
        [base_new[:, ::2], base_old, empty], [base_old[:, ::2], base_new, empty],
        [mask, mask, torch.zeros(0, dtype=torch.bool)],
    )  # fmt: skip
    assert torch.equal(out[0], torch.where(mask[:, None], base_new[:, ::2], base_old[:, ::2]))
    assert torch.equal(out[1], torch.where(mask[:, None], base_old, base_new))
    assert out[2].shape == (0, 3)


@pytest.mark.parametrize("rows", [1, 7, 1023])
def test_fill_rows_kernel_matches_reference(rows, spy_kernel):
    from gpusim.kernels.masked_merge_triton import masked_fill_rows_triton_

    spy = spy_kernel(KMOD, "_masked_merge_kernel")
    new, old, masks = _leaves(rows, "random", seed=3)
    dst_k = [t.clone() for t in old]
    dst_r = [t.clone() for t in old]
    masked_fill_rows_triton_(dst_k, new, masks)
    masked_fill_rows_reference_(dst_r, new, masks)
    assert len(spy.grids) >= 1
    for i, (a, b) in enumerate(zip(dst_k, dst_r)):
        assert torch.equal(a, b), i
    expected = masked_merge_reference(new, old, masks)
    assert all(torch.equal(a, b) for a, b in zip(dst_r, expected))


def test_fill_rows_kernel_noncontiguous_dst(spy_kernel):
    from gpusim.kernels.masked_merge_triton import masked_fill_rows_triton_

    spy_kernel(KMOD, "_masked_merge_kernel")
    dst = torch.zeros(4, 3).t()  # (3, 4) non-contiguous
    src = torch.arange(12.0).reshape(3, 4)
    mask = torch.tensor([False, True, True])
    masked_fill_rows_triton_([dst], [src], [mask])
    assert torch.equal(dst, torch.where(mask[:, None], src, torch.zeros(3, 4)))


@pytest.mark.parametrize("rows, expect_cpu_path", [(7, False), (9000, True)])
def test_dispatch_cpu_by_size(rows, expect_cpu_path):
    from gpusim.kernels import record_backends, threshold

    new, old, masks = _leaves(rows, "random", seed=4)
    assert (max(t.numel() for t in new) >= threshold("masked_merge")) == expect_cpu_path
    with record_backends() as calls:
        merged = masked_merge(new, old, masks)
        dst = [t.clone() for t in old]
        masked_fill_rows_(dst, new, masks)
    for o, d, r in zip(merged, dst, masked_merge_reference(new, old, masks)):
        assert torch.equal(o, r) and torch.equal(d, r)
    backend = "cpu" if expect_cpu_path else "reference"
    assert calls == [("masked_merge", backend), ("masked_fill_rows", backend)]


@pytest.mark.parametrize("kind", ["all_true", "all_false", "random"])
@pytest.mark.parametrize("rows", ROWS)
def test_cpu_rows_path_matches_reference(rows, kind):
    from gpusim.kernels.masked_merge import masked_fill_rows_cpu_rows_, masked_merge_cpu_rows

    new, old, masks = _leaves(rows, kind, seed=7)
    new_copy, old_copy = [t.clone() for t in new], [t.clone() for t in old]
    ref = masked_merge_reference(new, old, masks)
    out = masked_merge_cpu_rows(new, old, masks)
    for i, (o, r) in enumerate(zip(out, ref)):
        assert o.dtype == r.dtype and o.shape == r.shape, i
        assert torch.equal(o, r), f"leaf {i} ({r.dtype}, {tuple(r.shape)})"
        assert o.data_ptr() not in (new[i].data_ptr(), old[i].data_ptr())  # fresh tensors
    for a, b in zip(new + old, new_copy + old_copy):  # inputs untouched
        assert torch.equal(a, b)
    dst = [t.clone() for t in old]
    masked_fill_rows_cpu_rows_(dst, new, masks)
    assert all(torch.equal(d, r) for d, r in zip(dst, ref))


def test_cpu_rows_path_noncontiguous_and_empty():
    from gpusim.kernels.masked_merge import masked_fill_rows_cpu_rows_, masked_merge_cpu_rows

    gen = torch.Generator().manual_seed(8)
    base_new = torch.randn(5, 7, generator=gen)
    base_old = torch.randn(7, 5, generator=gen).t()  # non-contiguous (5, 7)
    mask = torch.tensor([True, False, True, True, False])
    none = torch.zeros(0, dtype=torch.bool)
    new = [base_new[:, ::2], base_old, torch.zeros(0, 3), torch.zeros(5, 0), base_new[:, :1].expand(5, 4)]
    old = [base_old[:, ::2], base_new, torch.zeros(0, 3), torch.zeros(5, 0), base_old[:, :1].expand(5, 4)]
    masks = [mask, mask, none, mask, mask]
    ref = masked_merge_reference(new, old, masks)
    out = masked_merge_cpu_rows(new, old, masks)
    assert all(o.shape == r.shape and torch.equal(o, r) for o, r in zip(out, ref))
    dst = torch.zeros(4, 3).t()  # (3, 4) non-contiguous destination
    src = torch.arange(12.0).reshape(3, 4)
    rows = torch.tensor([False, True, True])
    masked_fill_rows_cpu_rows_([dst], [src], [rows])
    assert torch.equal(dst, torch.where(rows[:, None], src, torch.zeros(3, 4)))


def test_op_registered_on_cpu():
    new, old, masks = _leaves(7, "random", seed=5)
    out = torch.ops.gpusim.masked_merge(new, old, masks)
    assert all(torch.equal(o, r) for o, r in zip(out, masked_merge_reference(new, old, masks)))
    dst = [t.clone() for t in old]
    torch.ops.gpusim.masked_fill_rows_(dst, new, masks)
    assert all(torch.equal(o, r) for o, r in zip(dst, out))


@pytest.mark.parametrize(
    "args, exc, match",
    [
        (([torch.zeros(3)], [torch.zeros(4)], [torch.ones(3, dtype=torch.bool)]), ValueError,
         r"new.shape \(3,\) != old.shape \(4,\)"),
        (([torch.zeros(3)], [torch.zeros(3, dtype=torch.int64)], [torch.ones(3, dtype=torch.bool)]),
         TypeError, "new.dtype torch.float32 != old.dtype torch.int64"),
        (([torch.zeros(3)], [torch.zeros(3)], [torch.ones(3)]), TypeError,
         "mask dtype must be torch.bool, got torch.float32"),
        (([torch.zeros(3, 2)], [torch.zeros(3, 2)], [torch.ones(2, dtype=torch.bool)]), ValueError,
         r"mask shape \(2,\) is not a prefix of the leaf shape \(3, 2\)"),
        (([torch.zeros(3)], [], []), ValueError, "same length, got 1, 0, 0"),
    ],
)  # fmt: skip
def test_bad_input_raises(args, exc, match):
    with pytest.raises(exc, match=match):
        masked_merge(*args)
    with pytest.raises(exc, match=match):
        masked_merge_reference(*args)


@needs_compiled_cuda
@pytest.mark.parametrize("rows", ROWS)
def test_cuda_dispatch_matches_reference(rows):
    new, old, masks = _leaves(rows, "random", seed=6)
    new, old, masks = ([t.cuda() for t in ts] for ts in (new, old, masks))
    for o, r in zip(masked_merge(new, old, masks), masked_merge_reference(new, old, masks)):
        assert torch.equal(o, r)
    dst = [t.clone() for t in old]
    masked_fill_rows_(dst, new, masks)
    for d, r in zip(dst, masked_merge_reference(new, old, masks)):
        assert torch.equal(d, r)


@needs_compiled_cuda
def test_cuda_graph_capture():
    from gpusim.kernels.masked_merge_triton import masked_merge_triton

    new, old, masks = _leaves(1023, "random", seed=7)
    new, old, masks = ([t.cuda() for t in ts] for ts in (new, old, masks))
    masked_merge_triton(new, old, masks)  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = masked_merge_triton(new, old, masks)
    for m in {id(m): m for m in masks}.values():  # flip each distinct mask once
        m.copy_(~m)
    graph.replay()
    torch.cuda.synchronize()
    for o, r in zip(out, masked_merge_reference(new, old, masks)):
        assert torch.equal(o, r)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_byte_leaves_merge_by_bitwise_select(dtype):
    """Byte leaves (frames) are merged by a bitwise select in CPU graphs: the values of a plain
    ``where``, eager and compiled, for any leaf shape and layout."""
    gen = torch.Generator().manual_seed(3)
    mask = torch.rand(6, generator=gen) > 0.5
    info = torch.iinfo(dtype)

    def _bytes(shape):
        return torch.randint(info.min, info.max + 1, shape, generator=gen, dtype=dtype)

    frames = [_bytes((6, 4, 5, 3)) for _ in range(2)]
    odd = [_bytes((6, 3)) for _ in range(2)]
    offset = [_bytes((6, 9))[:, 1:] for _ in range(2)]  # a view from byte 1
    extremes = [torch.full((6, 2), v, dtype=dtype) for v in (info.min, info.max)]
    new, old = [frames[0], odd[0], offset[0], extremes[0]], [frames[1], odd[1], offset[1], extremes[1]]
    expected = [torch.where(mask.reshape(6, *[1] * (n.ndim - 1)), n, o) for n, o in zip(new, old)]
    for got, want in zip(masked_merge_reference(new, old, [mask] * 4), expected):
        assert got.shape == want.shape and got.dtype == dtype and torch.equal(got, want)
    merge = torch.compile(lambda m, a, b: masked_merge_reference([a], [b], [m])[0], fullgraph=True)
    assert torch.equal(merge(mask, frames[0], frames[1]), expected[0])
