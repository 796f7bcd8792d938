"""Leaf spec behaviour that follows TorchRL: defaults, dims, dynamic shapes, encode, enumerate,
attribute setters, compact bounds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import NonTensorData, NonTensorStack

from gpusim.specs import (
    Binary,
    Bounded,
    BoundedContinuous,
    BoundedDiscrete,
    Categorical,
    Composite,
    ContinuousBox,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    SpecValueError,
    Unbounded,
    UnboundedContinuous,
    UnboundedDiscrete,
)

DISCRETE = {
    "categorical": lambda: Categorical(4, shape=(3,)),
    "onehot": lambda: OneHot(5, shape=(2, 5)),
    "multicategorical": lambda: MultiCategorical([3, 4], shape=(2, 2)),
    "multionehot": lambda: MultiOneHot([3, 4], shape=(2, 7)),
    "binary": lambda: Binary(4, shape=(5, 4)),
}


def test_defaults() -> None:
    assert Unbounded().shape == (1,) and UnboundedDiscrete().shape == (1,)
    assert NonTensor().shape == (1,)
    assert Unbounded(3).shape == (3,)
    assert Unbounded(dtype=None).dtype == torch.get_default_dtype()


def test_unsqueeze_squeeze_dims_count_from_the_full_shape() -> None:
    spec = Unbounded(shape=(2, 3))
    assert spec.unsqueeze(-1).shape == (2, 3, 1) and spec.unsqueeze(-3).shape == (1, 2, 3)
    assert OneHot(4, shape=(2, 4)).unsqueeze(-2).shape == (2, 1, 4)
    with pytest.raises(ValueError, match="final dimension"):
        OneHot(4, shape=(2, 4)).unsqueeze(-1)
    single = Unbounded(shape=(1,))
    assert single.squeeze() is single  # TorchRL keeps 1-D specs on squeeze()
    assert single.squeeze(0).shape == ()
    assert Categorical(3, shape=(1, 4, 1)).squeeze().shape == (4,)


def test_dynamic_dims() -> None:
    spec = Bounded(-1, 1, shape=(-1, 1, 2))
    assert spec.shape == (-1, 1, 2) and spec.rand().shape == (1, 1, 2)
    assert spec.is_in(torch.zeros(3, 1, 2)) and not spec.is_in(torch.zeros(3, 2, 2))
    leaf = Categorical(4, shape=(1, 1, 2)).expand(1, -1, 2)
    assert leaf.shape == (1, -1, 2)
    assert leaf[0].shape == (-1, 2) and leaf[:, :, 0].shape == (1, -1)
    with pytest.raises(IndexError, match="dynamic"):
        leaf[0, 1:2]
    with pytest.raises(ValueError, match="The last 3 of the expanded shape"):
        Composite(a=Unbounded(shape=(-1, 1, 2)), shape=(-1, 1, 2)).expand(3, 3, 1, 2)
    comp = Composite(action=Categorical(4, shape=(1, 2)), shape=(1,)).unsqueeze(1).expand(1, -1)
    assert comp[0].shape == (-1,) and comp[0]["action"].shape == (-1, 2)
    made = Unbounded(shape=(3, 2))
    made.make_neg_dim(0)
    assert made.shape == (-1, 2)
    with pytest.raises(ValueError, match="shape dims must be"):
        Unbounded(shape=(-2, 3))


def test_indexing_with_negative_steps_and_empty_categories() -> None:
    spec = Categorical(3, shape=(5, 3), mask=torch.eye(3, dtype=torch.bool)[[0, 1, 2, 0, 1]][:, None].expand(5, 3, 3))
    rev = spec[::-1]
    assert rev.shape == (5, 3) and torch.equal(rev.mask, spec.mask.flip(0))
    assert Unbounded(shape=(5, 3))[10:1:-1].shape == (3, 3)
    assert OneHot(0, shape=(5, 3, 0))[1].shape == (3, 0)
    assert MultiOneHot([0])[None].shape == (1, 0)


def test_encode_follows_torchrl() -> None:
    spec = Unbounded(shape=(3,))
    t = torch.zeros(2, dtype=torch.int64)
    assert spec.encode(t) is t  # tensors are returned as is
    assert spec.encode([[1.0, 2.0, 3.0]]).tolist() == [1.0, 2.0, 3.0]  # one-element list unwrapped
    assert spec.encode(np.ones((1, 3))).shape == (3,)  # reshaped to the spec shape
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        spec.encode(np.ones((2, 3)))
    assert spec.expand(2, 3).encode(np.ones((2, 3))).shape == (2, 3)
    onehot = OneHot(4)
    assert onehot.encode(torch.tensor(2)).tolist() == [False, False, True, False]
    assert onehot.encode(torch.tensor([2])).shape == (1, 4)
    with pytest.raises(AssertionError, match="less than action space"):
        onehot.encode(torch.tensor([4]))
    multi = MultiOneHot([2, 3])
    assert multi.encode(np.array([1, 2])).tolist() == [False, True, False, False, True]
    with pytest.raises(RuntimeError, match="is invalid for input of size"):
        multi.encode(np.array([[1, 2], [0, 0]]))


def test_memoize_encode() -> None:
    spec = Bounded(0.0, 1.0, shape=(2,))
    spec.memoize_encode()
    a = spec.encode(np.array([0.5, 0.25]))
    b = spec.encode(np.array([0.75, 0.5]))
    assert a.tolist() == [0.5, 0.25] and b.tolist() == [0.75, 0.5]
    assert len(spec._memo) == 1
    spec.encode([0.1, 0.2])  # another kind of input gets its own entry
    assert len(spec._memo) == 2
    spec.erase_memoize_cache()
    assert spec._memo == {}
    spec.memoize_encode(False)
    assert spec._memo is None and spec.encode([0.1, 0.2]).shape == (2,)


def test_project_vs__project() -> None:
    spec = Bounded(0.0, 1.0, shape=(2,))
    inside = torch.tensor([0.1, 0.2])
    assert spec.project(inside) is inside
    assert spec._project(torch.tensor([2.0, -1.0])).tolist() == [1.0, 0.0]
    assert Unbounded(shape=(2,), dtype=torch.int64)._project(torch.tensor([1.6, 2.2])).tolist() == [2, 2]


@pytest.mark.parametrize("name", list(DISCRETE))
def test_cardinality_matches_enumerate(name: str) -> None:
    spec = DISCRETE[name]()
    values = spec.enumerate()
    assert values.shape[1:] == spec.shape
    assert spec.cardinality() == len(values)
    assert spec.is_in(values)
    assert len({tuple(v.reshape(-1).tolist()) for v in values}) == len(values)


def test_enumerate_and_cardinality_details() -> None:
    assert Categorical(5, shape=(3,)).enumerate().tolist()[2] == [2, 2, 2]
    masked = Categorical(4, mask=torch.tensor([True, False, True, False]))
    assert masked.enumerate(use_mask=True).tolist() == [0, 2]
    assert MultiCategorical([3, 4, 5], shape=(2, 3)).cardinality() == 60
    assert Bounded(0, 1, shape=(2,)).cardinality() == float("inf")
    for spec in (Unbounded(), NonTensor()):
        with pytest.raises(NotImplementedError):
            spec.cardinality()
    with pytest.raises(RuntimeError, match="Cannot enumerate a NonTensor"):
        NonTensor().enumerate()


def test_multicategorical_nd_nvec_and_singletons() -> None:
    spec = MultiCategorical([[1, 2], [3, 4]], dtype=torch.float32)
    assert spec.shape == (2, 2) and spec.nvec.tolist() == [[1, 2], [3, 4]]
    x = spec.rand((100,))
    assert x.shape == (100, 2, 2) and spec.is_in(x)
    assert (x[:, 1, 1] == 3).any() and not (x[:, 0, 0] != 0).any()
    proj = spec._project(torch.rand(2, 2) * 10)
    assert spec.is_in(proj)
    proj[..., 0] = -1
    assert not spec.is_in(proj)
    scalar = MultiCategorical(5)  # shape (1,): samples drop the trailing 1 (remove_singleton)
    assert scalar.shape == (1,) and scalar.rand().shape == () and scalar.rand((4,)).shape == (4,)
    assert scalar.is_in(scalar.rand((4,))) and scalar.is_in(torch.tensor([3]))
    with pytest.raises(ValueError, match="same nvec for every element"):
        MultiCategorical([[1, 2], [3, 4]], mask=torch.ones(2, 10, dtype=torch.bool))


def test_aliases_and_repr_names() -> None:
    assert BoundedContinuous(0, 1, shape=(2,), dtype=torch.int64).domain == "continuous"
    assert BoundedDiscrete(0.0, 1.0, shape=(2,)).domain == "discrete"
    assert BoundedContinuous(0.0, 1.0, shape=(2,)) == Bounded(0.0, 1.0, shape=(2,))
    assert UnboundedContinuous(shape=(2,)) == Unbounded(shape=(2,))
    assert repr(Bounded(0, 1, shape=(1,))).startswith("BoundedContinuous(\n    shape=torch.Size([1])")
    assert repr(Unbounded(dtype=torch.int64)).startswith("UnboundedDiscrete(")
    assert "space=CategoricalBox(n=3)" in repr(Categorical(3))


def test_attribute_setters_and_cross_class_equality() -> None:
    unb = Unbounded(shape=(2,), dtype=torch.float16)
    box = Bounded(0, 1, shape=(1,), dtype=torch.float16)
    box.shape, box.space, box.dtype, box.domain = unb.shape, unb.space, unb.dtype, unb.domain
    assert unb == box  # a box spanning the dtype limits is unbounded
    box.space = ContinuousBox(box.space.low * 0, box.space.high * 0 + 1)
    assert unb != box and unb.space != box.space
    assert box.rand().max() <= 1  # the sampler follows the new space
    other = Unbounded(shape=(2,))
    other.space = Bounded(10, 100, shape=(1,)).space
    assert Bounded(10, 100, shape=(1,)) != other
    onehot = OneHot(5, use_register=True)
    assert onehot != OneHot(5)
    assert onehot.to_numpy(onehot.encode("b")).tolist() == "b"
    assert Binary(shape=()) == Binary(shape=()).clone() and Binary(shape=()).rand().shape == ()
    assert Binary(3) == Categorical(2, shape=(3,), dtype=torch.int8)


def test_spec_value_error_is_assertion_and_value_error() -> None:
    spec = Bounded(0.0, 1.0, shape=(2,))
    for exc in (ValueError, AssertionError, SpecValueError):
        with pytest.raises(exc, match="out of bounds"):
            spec.to_numpy(torch.tensor([2.0, 0.0]), safe=True)


def test_compact_bounds() -> None:
    spec = Bounded(0.0, 1.0, shape=(100_000, 8))
    assert spec.space._low.untyped_storage().nbytes() == 4  # one float for 800k bounds
    Composite(b=spec, shape=(100_000,))  # registers the batch size
    assert spec.space._low.shape == (8,) and spec.low.shape == (100_000, 8)
    spec.space.low += -1.0  # read-modify-write through the space
    assert spec.space._low.shape == (8,) and (spec.rand() < 0).any()
    diff = Bounded(-torch.arange(6.0).view(3, 2), torch.arange(6.0).view(3, 2))
    Composite(b=diff, shape=(3,))
    assert diff.space._low.shape == (3, 2)  # not uniform along the batch: kept whole
    diff.low[0, 0] = -50.0  # uncompressed bounds are the stored tensors
    assert diff.is_in(torch.tensor([[-40.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="not a prefix"):
        diff.space.batch_size = (4,)


def test_float_categorical_and_nontensor_features() -> None:
    cat = Categorical(5, shape=(1,), dtype=torch.float16)
    assert cat == Categorical(5, shape=(1,), dtype=torch.float16) and cat.rand().dtype == torch.float16
    nts = NonTensor(shape=(3, 4), example_data="ex", feature_dims=1)
    zero = nts.zeros()
    assert isinstance(zero, NonTensorStack) and isinstance(zero[0], NonTensorData)
    assert nts.rand((2,)).shape == (2, 3, 4) and NonTensor(shape=(3, 4)).feature_dims == 2
    assert NonTensor(shape=(3,), example_data="a") != NonTensor(shape=(3,), example_data="b")
    with pytest.raises(ValueError, match="both batched and feature_dims"):
        NonTensor(batched=True, feature_dims=1)


def test_check_spec_encode_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = Categorical(10)
    assert spec.encode(11).item() == 11  # no check by default (as in TorchRL)
    spec.to_numpy(torch.tensor(11))
    monkeypatch.setenv("CHECK_SPEC_ENCODE", "1")
    with pytest.raises(AssertionError, match="out of range"):
        spec.encode(11)
    with pytest.raises(AssertionError, match="out of range"):
        spec.to_numpy(torch.tensor(11))
    assert spec.to_numpy(torch.tensor(11), safe=False) == 11
    bounded = Bounded(0.0, 1.0, shape=(2,))
    bounded.memoize_encode()
    with pytest.raises(AssertionError, match="out of bounds"):
        bounded.encode([3.0, 0.0])


@pytest.mark.parametrize("switch", ["debug_mode", "module_flag"])
def test_encode_checks_values_in_debug_mode_or_with_the_module_flag(
    monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    import gpusim.data.tensor_specs as tensor_specs

    monkeypatch.delenv("CHECK_SPEC_ENCODE", raising=False)
    monkeypatch.delenv("GPUSIM_VALIDATE", raising=False)
    bounded = Bounded(torch.zeros(3), torch.ones(3))
    assert bounded.encode(torch.full((3,), 2.0)).tolist() == [2.0] * 3  # off by default
    if switch == "debug_mode":
        monkeypatch.setenv("GPUSIM_VALIDATE", "1")
    else:
        monkeypatch.setattr(tensor_specs, "_CHECK_SPEC_ENCODE", True)
    with pytest.raises(ValueError, match="out of bounds"):  # SpecValueError: also an AssertionError
        bounded.encode(torch.full((3,), 2.0))
    with pytest.raises(AssertionError, match="out of range"):
        Categorical(10).encode(torch.tensor([11]))
    assert Categorical(10).encode(9).item() == 9  # values in the spec pass


def test_binary_unsqueeze_and_squeeze_reach_the_bit_dim():
    bits = Binary(3, shape=(2, 3), dtype=torch.bool)
    last = bits.unsqueeze(-1)
    assert last.shape == (2, 3, 1) and last.n == 1 and last.dtype == torch.bool
    assert last.expand(4, 2, 3, 1).shape == (4, 2, 3, 1)
    assert last.is_in(last.rand()) and last.rand().shape == (2, 3, 1)
    assert bits.unsqueeze(0).shape == (1, 2, 3)
    back = last.squeeze(-1)
    assert back == bits
    assert Binary(1, shape=(2, 1)).squeeze().shape == (2,)
    assert Binary(1, shape=(2, 1)).squeeze(0).shape == (2, 1)  # size 2: unchanged
    with pytest.raises(ValueError, match="out of range"):
        bits.unsqueeze(3)
