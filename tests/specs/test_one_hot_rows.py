"""``one_hot_rows`` (``OneHot.rand``'s encoding): the numpy row gather on eager CPU gives the
values of the reference compare with ``arange``, for every dtype, shape and draw."""

from __future__ import annotations

import pytest
import torch

import gpusim as gs
from gpusim.specs import discrete
from gpusim.specs.discrete import one_hot_rows


def _reference(idx: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    out = idx.unsqueeze(-1) == torch.arange(n)
    return out if dtype == torch.bool else out.to(dtype)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(), (1,), (4096,), (3, 5)])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_numpy_gather_equals_the_compare(dtype, shape, n):
    idx = torch.randint(0, n, shape, generator=torch.Generator().manual_seed(n))
    got = one_hot_rows(idx, n, dtype)
    ref = _reference(idx, n, dtype)
    assert got.dtype == ref.dtype and got.shape == ref.shape == (*shape, n)
    assert torch.equal(got, ref)
    got.fill_(0)  # a fresh tensor: writing it leaves the identity table alone
    assert torch.equal(one_hot_rows(idx, n, dtype), ref)


def test_other_index_dtypes_and_traced_calls_take_the_compare(monkeypatch):
    idx = torch.tensor([1, 0, 2], dtype=torch.int32)
    assert torch.equal(one_hot_rows(idx, 3, torch.int64), _reference(idx.long(), 3, torch.int64))
    calls = []
    monkeypatch.setattr(discrete, "_identity", lambda *a: calls.append(a))
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert torch.equal(one_hot_rows(idx.long(), 3, torch.bool), _reference(idx.long(), 3, torch.bool))
    assert calls == []  # the numpy table was not read


def test_one_hot_rand_draws_the_stream_of_before():
    # the same generator calls as randint + compare: a seeded draw is unchanged
    spec = gs.OneHot(4, shape=(64, 4), dtype=torch.int64)
    torch.manual_seed(7)
    drawn = spec.rand((2,))
    torch.manual_seed(7)
    assert torch.equal(drawn, _reference(torch.randint(0, 4, (2, 64)), 4, torch.int64))
    assert spec.is_in(drawn)
