"""One generic test body over every leaf spec class and batch shape, plus per-class checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import NonTensorData

from gpusim.specs import (
    Binary,
    BinaryDiscreteTensorSpec,
    Bounded,
    BoundedTensorSpec,
    Categorical,
    DiscreteTensorSpec,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
    UnboundedContinuousTensorSpec,
    UnboundedDiscreteTensorSpec,
)

SHAPES = [(), (1,), (7,), (3, 4)]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

# name -> builder(batch_shape) -> spec
BUILDERS = {
    "unbounded": lambda b: Unbounded(shape=b),
    "unbounded_int": lambda b: Unbounded(shape=b, dtype=torch.int64),
    "unbounded_bool": lambda b: Unbounded(shape=b, dtype=torch.bool),
    "bounded": lambda b: Bounded(-1.0, 2.0, shape=b),
    "bounded_tensor": lambda b: Bounded(torch.zeros(b), torch.arange(b.numel()).reshape(b) + 1.0),
    "bounded_int": lambda b: Bounded(0, 5, shape=b, dtype=torch.int64),
    "bounded_inf": lambda b: Bounded(-float("inf"), 1.0, shape=b),
    "categorical": lambda b: Categorical(3, shape=b),
    "categorical_bool": lambda b: Categorical(2, shape=b, dtype=torch.bool),
    "categorical_mask": lambda b: Categorical(4, shape=b, mask=torch.tensor([False, True, False, True])),
    "onehot": lambda b: OneHot(4, shape=(*b, 4)),
    "onehot_mask": lambda b: OneHot(4, shape=(*b, 4), mask=torch.tensor([1, 0, 1, 1]).bool()),
    "multicategorical": lambda b: MultiCategorical([2, 3], shape=(*b, 2)),
    "multionehot": lambda b: MultiOneHot([2, 3], shape=(*b, 5)),
    "binary": lambda b: Binary(3, shape=(*b, 3)),
    "nontensor": lambda b: NonTensor(shape=b, example_data="x"),
}


@pytest.fixture(params=SHAPES, ids=str)
def batch(request) -> torch.Size:
    return torch.Size(request.param)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_generic(name: str, batch: torch.Size, device: str) -> None:
    spec: TensorSpec = BUILDERS[name](batch).to(device)
    nontensor = isinstance(spec, NonTensor)
    assert spec.shape[: len(batch)] == batch
    assert spec.ndim == len(spec.shape)
    assert spec.device.type == device

    # rand / zero, with and without a prepended shape
    x = spec.rand()
    assert spec.is_in(x), spec.invalid_reason(x)
    spec.assert_is_in(x)
    x2 = spec.rand((2,))
    shape2 = x2.batch_size if nontensor else x2.shape
    assert shape2 == (2, *spec.shape)
    assert spec.is_in(x2)
    z = spec.zero()
    assert (z.batch_size if nontensor else z.shape) == spec.shape
    if not nontensor:
        assert x.dtype == spec.dtype and x.device == spec.device
        assert z.dtype == spec.dtype
        assert spec.one().shape == spec.shape
        # project is the identity on valid values; encode round-trips numpy
        assert torch.equal(spec.project(x), x)
        assert torch.equal(spec.encode(x.cpu().numpy()), x)
        wrong = x.to(torch.float64 if spec.dtype != torch.float64 else torch.float32)
        assert not spec.is_in(wrong)
        with pytest.raises(ValueError, match="dtype"):
            spec.assert_is_in(wrong)
        if spec.ndim:
            with pytest.raises(ValueError, match="shape"):
                spec.assert_is_in(x.reshape(-1)[:0])
    else:
        assert not spec.is_in(torch.zeros(batch))

    # value semantics
    assert spec.clone() == spec
    assert spec.to(device) == spec
    assert spec.cpu().to(device) == spec
    assert spec.cpu().device == torch.device("cpu")
    assert type(spec).__name__ in repr(spec)
    assert spec != BUILDERS["unbounded"](torch.Size((5, 5, 5)))

    # shape ops
    ex = spec.expand(2, *spec.shape)
    assert ex.shape == (2, *spec.shape)
    assert ex.is_in(ex.rand())
    u = spec.unsqueeze(0)
    assert u.shape == (1, *spec.shape)
    assert u.squeeze(0) == spec
    assert u.is_in(u.rand())
    if len(batch) >= 1:
        sub = spec[0]
        assert sub.shape == spec.shape[1:]
        assert sub.is_in(sub.rand())
        sl = spec[1:]
        assert sl.shape == (batch[0] - 1, *spec.shape[1:])
        assert spec[..., 0].shape == (*batch[:-1], *spec.shape[len(batch) :])
    else:
        with pytest.raises(IndexError):
            spec[0]
    if len(batch) == 2:
        r = spec.reshape(12, *spec.shape[2:])
        assert r.shape == (12, *spec.shape[2:])
        assert r.is_in(r.rand())
        assert spec.reshape(-1, *spec.shape[2:]).shape == r.shape


def test_old_aliases() -> None:
    assert BoundedTensorSpec is Bounded
    assert UnboundedContinuousTensorSpec is Unbounded
    assert DiscreteTensorSpec is Categorical
    assert BinaryDiscreteTensorSpec is Binary
    spec = UnboundedDiscreteTensorSpec(shape=(2,))
    assert spec.dtype == torch.int64
    assert isinstance(spec, Unbounded)
    assert spec == Unbounded(shape=(2,), dtype=torch.int64)


def test_unknown_kwargs_rejected() -> None:
    with pytest.raises(TypeError, match="bogus"):
        Unbounded(shape=(2,), bogus=1)
    with pytest.raises(TypeError, match="bogus"):
        Categorical(3, bogus=1)


# ---------------------------------------------------------------- Bounded
def test_bounded_low_gt_high_names_values() -> None:
    with pytest.raises(ValueError, match=r"low.*3\.0.*high.*1\.0"):
        Bounded(3.0, 1.0, shape=(2,))
    with pytest.raises(ValueError, match=r"low=\[5\.0\] > high=\[4\.0\]"):
        Bounded(torch.tensor([0.0, 5.0]), torch.tensor([1.0, 4.0]))


def test_bounded_shape_inference_and_space() -> None:
    spec = Bounded(torch.zeros(3), 1.0)
    assert spec.shape == (3,)
    assert spec.space.low is spec.low and spec.space.high is spec.high
    assert spec.high.shape == (3,)
    assert torch.equal(spec.high, torch.ones(3))
    with pytest.raises(ValueError, match="does not broadcast"):
        Bounded(torch.zeros(3), 1.0, shape=(4,))
    with pytest.raises(ValueError, match="NaN"):
        Bounded(float("nan"), 1.0)


def test_bounded_project_clamps_and_rounds() -> None:
    spec = Bounded(torch.tensor([0.0, -1.0]), torch.tensor([1.0, 1.0]))
    out = spec.project(torch.tensor([5.0, -5.0]))
    assert torch.equal(out, torch.tensor([1.0, -1.0]))
    ispec = Bounded(0, 3, shape=(3,), dtype=torch.int64)
    assert torch.equal(ispec.project(torch.tensor([-2.0, 1.6, 9.0])), torch.tensor([0, 2, 3]))


def test_bounded_int_rand_covers_range() -> None:
    spec = Bounded(0, 3, shape=(4000,), dtype=torch.int64)
    x = spec.rand()
    assert set(x.unique().tolist()) == {0, 1, 2, 3}
    tensor_bounds = Bounded(torch.tensor([0, 10]), torch.tensor([1, 12]), dtype=torch.int32)
    y = tensor_bounds.rand((2000,))
    assert set(y[:, 0].unique().tolist()) == {0, 1}
    assert set(y[:, 1].unique().tolist()) == {10, 11, 12}


def test_bounded_to_dtype() -> None:
    spec = Bounded(0, 4, shape=(3,), dtype=torch.int64).to(torch.float32)
    assert spec.dtype == torch.float32 and spec.low.dtype == torch.float32
    x = spec.rand()
    assert x.dtype == torch.float32 and spec.is_in(x)


def test_bounded_huge_range_does_not_overflow() -> None:
    big = torch.finfo(torch.float32).max
    spec = Bounded(-big, big, shape=(1000,))
    x = spec.rand()
    assert torch.isfinite(x).all() and spec.is_in(x)


# ---------------------------------------------------------------- discrete
@pytest.mark.parametrize("n", [-2, 1.5, "3"])
def test_categorical_bad_n(n) -> None:
    with pytest.raises(ValueError, match=f"n={n!r}"):
        Categorical(n)


def test_categorical_dtype_checks() -> None:
    with pytest.raises(ValueError, match="bool"):
        Categorical(3, dtype=torch.bool)
    with pytest.raises(ValueError, match="int8"):
        Categorical(1000, dtype=torch.int8)
    # float dtypes hold integral categories (as in TorchRL)
    spec = Categorical(3, shape=(50,), dtype=torch.float32)
    x = spec.rand()
    assert x.dtype == torch.float32 and spec.is_in(x) and bool((x == x.round()).all())
    assert not spec.is_in(torch.full((50,), 0.5))
    assert spec.project(torch.full((50,), 1.4)).tolist() == [1.0] * 50


def test_categorical_empty_and_undefined_n() -> None:
    assert Categorical(0, shape=(5, 3))[1].shape == (3,)
    with pytest.raises(RuntimeError, match="n=0"):
        Categorical(0).rand()
    spec = Categorical(-1, shape=(2,))
    with pytest.raises(RuntimeError, match="set_provisional_n"):
        spec.rand()
    spec.set_provisional_n(3)
    assert spec.rand().shape == (2,) and spec.cardinality() == 3


def test_categorical_mask() -> None:
    spec = Categorical(4, shape=(500,))
    spec.update_mask(torch.tensor([False, True, False, True]))
    x = spec.rand()
    assert set(x.unique().tolist()) == {1, 3}
    assert not spec.is_in(torch.zeros(500, dtype=torch.int64))
    with pytest.raises(ValueError, match="mask"):
        spec.assert_is_in(torch.zeros(500, dtype=torch.int64))
    assert spec.is_in(spec.project(torch.zeros(500, dtype=torch.int64)))
    with pytest.raises(ValueError, match="broadcast"):
        spec.update_mask(torch.ones(3, dtype=torch.bool))
    spec.update_mask(None)
    assert spec.is_in(torch.zeros(500, dtype=torch.int64))


def test_categorical_to_one_hot() -> None:
    spec = Categorical(3, shape=(2,))
    oh = spec.to_one_hot(torch.tensor([2, 0]))
    assert oh.tolist() == [[False, False, True], [True, False, False]]
    assert spec.to_one_hot_spec() == OneHot(3, shape=(2, 3))


def test_onehot_shape_and_conversions() -> None:
    with pytest.raises(ValueError, match="n=4"):
        OneHot(4, shape=(2, 3))
    spec = OneHot(4, shape=(2, 4))
    x = spec.rand()
    cat = spec.to_categorical(x)
    assert torch.equal(spec.to_one_hot(cat), x)
    assert spec.to_categorical_spec() == Categorical(4, shape=(2,))
    assert spec.to_numpy(x).tolist() == cat.tolist()
    assert torch.equal(OneHot(3).encode(1), torch.tensor([False, True, False]))
    proj = spec.project(torch.tensor([[0.1, 0.7, 0.2, 0.0], [3.0, 0.0, 0.0, 4.0]]))
    assert spec.to_categorical(proj).tolist() == [1, 3]
    assert not spec.is_in(torch.zeros(2, 4, dtype=torch.bool))


def test_onehot_mask_respected() -> None:
    mask = torch.tensor([False, False, True, True])
    spec = OneHot(4, shape=(300, 4), mask=mask)
    assert set(spec.to_categorical(spec.rand()).unique().tolist()) == {2, 3}
    bad = spec.to_one_hot(torch.zeros(300, dtype=torch.int64))
    assert not spec.is_in(bad)
    assert spec.is_in(spec.project(bad.float()))


def test_multicategorical() -> None:
    with pytest.raises(ValueError, match="len\\(nvec\\)=2"):
        MultiCategorical([2, 3], shape=(3,))
    with pytest.raises(ValueError, match="nvec entry=-1"):
        MultiCategorical([2, -1])
    spec = MultiCategorical([2, 3], shape=(1000, 2))
    x = spec.rand()
    assert set(x[:, 0].unique().tolist()) == {0, 1}
    assert set(x[:, 1].unique().tolist()) == {0, 1, 2}
    assert not spec.is_in(torch.full((1000, 2), 2))
    assert spec.is_in(spec.project(torch.full((1000, 2), 7)))
    mask = torch.tensor([True, False, False, False, True])
    masked = MultiCategorical([2, 3], shape=(200, 2), mask=mask)
    y = masked.rand()
    assert (y[:, 0] == 0).all() and (y[:, 1] == 2).all()
    assert not masked.is_in(torch.zeros(200, 2, dtype=torch.int64))
    assert masked.to_one_hot_spec().is_in(masked.to_one_hot(y))


def test_multionehot() -> None:
    with pytest.raises(ValueError, match="sum\\(nvec\\)=5"):
        MultiOneHot([2, 3], shape=(4,))
    spec = MultiOneHot([2, 3])
    assert spec.is_in(torch.tensor([0, 1, 0, 0, 1], dtype=torch.bool))
    assert not spec.is_in(torch.tensor([1, 1, 0, 0, 1], dtype=torch.bool))
    assert not spec.is_in(torch.tensor([0, 1, 0, 0, 0], dtype=torch.bool))
    assert spec.to_categorical(torch.tensor([0, 1, 0, 0, 1])).tolist() == [1, 2]
    assert spec.encode([1, 0]).tolist() == [False, True, True, False, False]
    assert spec.to_categorical_spec() == MultiCategorical([2, 3])


def test_binary() -> None:
    with pytest.raises(TypeError, match="n or shape"):
        Binary()
    with pytest.raises(ValueError, match="n=3"):
        Binary(3, shape=(2,))
    assert Binary(shape=(4, 2)).n == 2
    spec = Binary(4)
    assert not spec.is_in(torch.tensor([0, 2, 0, 1], dtype=torch.int8))
    assert spec.project(torch.tensor([0.2, 0.9, -3.0, 7.0])).tolist() == [0, 1, 0, 1]


def test_nontensor() -> None:
    spec = NonTensor(shape=(3,), example_data={"a": 1})
    data = spec.rand()
    assert isinstance(data, NonTensorData) and data.data == {"a": 1}
    assert spec.is_in(spec.encode("hello"))
    assert not spec.is_in(NonTensorData("x", batch_size=(2,)))
    with pytest.raises(ValueError, match="batch size"):
        spec.assert_is_in(NonTensorData("x", batch_size=(2,)))


# ---------------------------------------------------------------- misc
def test_expand_errors() -> None:
    spec = Bounded(0.0, 1.0, shape=(3,))
    with pytest.raises(ValueError, match="must end with"):
        spec.expand(4, 2)
    with pytest.raises(ValueError, match="must end with"):
        OneHot(3).expand(2, 1)
    with pytest.raises(ValueError, match="must stay"):
        OneHot(3, shape=(2, 3)).reshape(3, 2)


def test_index_with_tensor_and_mask() -> None:
    spec = Bounded(torch.arange(5.0), torch.arange(5.0) + 1)
    sub = spec[torch.tensor([4, 0])]
    assert sub.low.tolist() == [4.0, 0.0]
    sub2 = spec[torch.tensor([True, False, True, False, False])]
    assert sub2.shape == (2,) and sub2.low.tolist() == [0.0, 2.0]
    oh = OneHot(3, shape=(5, 3), mask=torch.ones(5, 3, dtype=torch.bool))
    assert oh[1:3].mask.shape == (2, 3)


def test_type_check_and_to_numpy() -> None:
    spec = Unbounded(shape=(2,))
    spec.type_check(torch.zeros(2))
    with pytest.raises(TypeError, match="float32"):
        spec.type_check(torch.zeros(2, dtype=torch.int64))
    assert isinstance(spec.to_numpy(torch.zeros(2)), np.ndarray)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        spec.encode([1.0, 2.0, 3.0])


def test_squeeze_all_and_unsqueeze_negative() -> None:
    spec = Categorical(3, shape=(1, 4, 1))
    assert spec.squeeze().shape == (4,)
    assert spec.unsqueeze(-1).shape == (1, 4, 1, 1)
    with pytest.raises(ValueError, match="not a batch dim"):
        OneHot(3, shape=(1, 3)).squeeze(-1)


@pytest.mark.parametrize(
    "low,high",
    [(-3.6684138774871826, -9.97127644950524e-05), (-7013.4833984375, -2.0601293069357658e-38)],
)
def test_bounded_rand_never_overshoots(monkeypatch, low: float, high: float) -> None:
    """For these bounds ``low + (high - low)`` rounds above ``high`` in float32. ``rand`` has no
    clamp on its fast path, so it must stay inside even at the supremum of the uniform draw (1.0,
    which bounds every draw in [0, 1) by monotonic rounding)."""
    spec = Bounded(low, high, shape=(3,))
    lo, hi = torch.tensor(low), torch.tensor(high)
    assert lo + (hi - lo) > hi  # the hazard is real for these bounds
    real_rand = torch.rand
    top = 1.0

    def max_rand(*shape, **kwargs):
        return real_rand(*shape, **kwargs).fill_(top)

    monkeypatch.setattr(torch, "rand", max_rand)
    x = spec.rand((2,))
    monkeypatch.undo()
    assert spec.is_in(x), spec.invalid_reason(x)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_categorical_packed_rand_is_uniform_and_independent(n: int) -> None:
    """Large power-of-two draws on CPU cut several values from each generator draw: the values,
    and pairs of neighbours (cut from the same draw), must still be uniform (chi-square)."""

    def uniform_enough(counts: torch.Tensor) -> bool:  # chi-square within 6 sigma of its mean
        expected = counts.sum() / counts.numel()
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        dof = counts.numel() - 1
        return chi2 < dof + 6 * (2 * dof) ** 0.5

    torch.manual_seed(123)
    spec = Categorical(n, shape=(50_000,))  # above the packed-draw threshold
    x = torch.cat([spec.rand() for _ in range(4)])
    assert x.dtype == torch.int64 and int(x.min()) >= 0 and int(x.max()) < n
    counts = torch.bincount(x, minlength=n).double()
    assert uniform_enough(counts)
    pairs = torch.bincount(x[0::2] * n + x[1::2], minlength=n * n).double()
    assert uniform_enough(pairs)
    torch.manual_seed(123)
    assert torch.equal(torch.cat([spec.rand() for _ in range(4)]), x)  # seeded by torch's generator


def test_categorical_small_and_odd_draws_use_randint() -> None:
    torch.manual_seed(0)
    a = Categorical(3, shape=(10_000,)).rand()
    torch.manual_seed(0)
    assert torch.equal(a, torch.randint(0, 3, (10_000,)))
    torch.manual_seed(0)
    b = Categorical(2, shape=(100,)).rand()
    torch.manual_seed(0)
    assert torch.equal(b, torch.randint(0, 2, (100,)))
