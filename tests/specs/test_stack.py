"""torch.stack / unbind / index_select of specs, lazy stacks (Stacked, StackedComposite)."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from gpusim.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Stacked,
    StackedComposite,
    Unbounded,
    UnboundedDiscrete,
    check_no_exclusive_keys,
    consolidate_spec,
    contains_lazy_spec,
)

# name -> builder(batch_shape) -> leaf spec
LEAVES = {
    "unbounded": lambda b: Unbounded(shape=b),
    "unbounded_int": lambda b: UnboundedDiscrete(shape=b),
    "bounded": lambda b: Bounded(-1.0, 2.0, shape=b),
    "bounded_tensor": lambda b: Bounded(torch.zeros(b), torch.arange(b.numel()).reshape(b) + 1.0),
    "categorical": lambda b: Categorical(3, shape=b),
    "categorical_mask": lambda b: Categorical(3, shape=b, mask=torch.tensor([True, False, True])),
    "onehot": lambda b: OneHot(4, shape=(*b, 4)),
    "multicategorical": lambda b: MultiCategorical([2, 3], shape=(*b, 2)),
    "multionehot": lambda b: MultiOneHot([2, 3], shape=(*b, 5)),
    "binary": lambda b: Binary(3, shape=(*b, 3)),
    "nontensor": lambda b: NonTensor(shape=b, example_data="x"),
}
BATCHES = [(), (2,), (2, 3)]


@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("name", list(LEAVES))
def test_stack_equal_leaves_is_dense(name: str, batch: tuple) -> None:
    spec = LEAVES[name](torch.Size(batch))
    for dim in range(len(batch) + 1):
        out = torch.stack([spec, spec.clone()], dim)
        assert type(out) is type(spec)
        expected = list(spec.shape)
        expected.insert(dim, 2)
        assert out.shape == torch.Size(expected)
        assert out.is_in(out.rand())
        assert out.unbind(dim)[1] == spec
    neg = torch.stack([spec, spec], -1 - len(spec.shape) + len(batch))
    assert neg.shape[len(batch)] == 2


@pytest.mark.parametrize("name", [n for n in LEAVES if n != "nontensor"])
def test_unbind_then_stack_round_trips(name: str) -> None:
    spec = LEAVES[name](torch.Size((4, 2)))
    for dim in (0, 1):
        parts = spec.unbind(dim)
        assert len(parts) == spec.shape[dim]
        restacked = torch.stack(parts, dim)
        if name == "bounded_tensor":  # the parts differ (bounds): a lazy stack of them
            assert isinstance(restacked, Stacked) and restacked.unbind(dim) == parts
        else:
            assert restacked == spec
    event = len(spec.shape) - len(spec.batch_shape)
    if event:
        with pytest.raises(ValueError, match="final dimension"):
            spec.unbind(-1)


def test_unbind_errors_and_bounded_last_dim() -> None:
    with pytest.raises(ValueError, match="dim=-1"):
        Bounded(0.0, 1.0, shape=(3,)).unbind(-1)
    assert len(Bounded(0.0, 1.0, shape=(3,)).unbind(0)) == 3
    assert [s.shape for s in Unbounded(shape=(2, 5)).unbind(-1)] == [torch.Size([2])] * 5
    with pytest.raises(ValueError, match="out of range"):
        Unbounded(shape=(2,)).unbind(3)
    with pytest.raises(ValueError, match="dynamic"):
        Unbounded(shape=(-1, 2)).unbind(0)
    nt = NonTensor(shape=(3, 4), example_data="e")
    part = nt.unbind(1)[0]
    assert part == nt[:, 0] and part is not nt[:, 0] and part.example_data == "e"


def test_stack_errors() -> None:
    a = Bounded(-1, 1, shape=(2,), dtype=torch.float64)
    with pytest.raises(RuntimeError, match="Dtypes differ"):
        torch.stack([a, Bounded(-1, 1, shape=(2,))], 0)
    with pytest.raises(RuntimeError, match="more than one type of specs"):
        torch.stack([Bounded(-1, 1, shape=(2,)), Unbounded(shape=(2,))], 0)
    with pytest.raises(RuntimeError, match="Ndims differ"):
        torch.stack([Bounded(-1, 1, shape=(2,)), Bounded(-1, 1, shape=(2, 3))], 0)
    with pytest.raises(RuntimeError, match="Shapes differ"):
        torch.stack([Composite(shape=(2,)), Composite(shape=(3,))], 0)
    with pytest.raises(ValueError, match="empty"):
        torch.stack([], 0) if False else __import__("gpusim").stack_specs([], 0)


def test_stacked_leaf() -> None:
    a, b = Unbounded(shape=(2, 3)), Unbounded(shape=(2, 5))
    s = torch.stack([a, b], 1)
    assert isinstance(s, Stacked) and s.shape == (2, 2, -1) and s.stack_dim == 1
    assert s[:, 0] is a and s[:, 1] is b
    with pytest.raises(IndexError, match="dimension 0 when the stack dimension is 1"):
        s[0]
    assert s.unbind(1) == (a, b)
    assert [p.shape for p in s.unbind(0)] == [torch.Size([2, -1])] * 2
    u = s.unsqueeze(-1)
    assert u.shape == (2, 2, -1, 1) and u.squeeze(-1) == s
    assert s.expand(4, 2, 2, -1).shape == (4, 2, 2, -1)
    with pytest.raises(RuntimeError, match="nested tensor"):
        s.rand()  # shapes differ and the stack dim is not 0
    s0 = torch.stack([a, b], 0)
    nested = s0.rand()
    assert nested.is_nested and s0.is_in(nested)
    same_shape = torch.stack([Bounded(0, 1, shape=(3,)), Bounded(0, 2, shape=(3,))], 0)
    assert isinstance(same_shape, Stacked)
    x = same_shape.rand((5,))
    assert x.shape == (5, 2, 3) and same_shape.is_in(x)
    assert not same_shape.is_in(torch.full((5, 2, 3), 1.5))  # row 0 only goes up to 1
    assert same_shape.clone() == same_shape
    assert contains_lazy_spec(Composite(s=same_shape, shape=(2,)))
    with pytest.raises(NotImplementedError, match="index_select is not supported"):
        torch.index_select(same_shape, 0, torch.tensor([0]))


def test_index_select() -> None:
    mask = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 1, 0]], dtype=torch.bool)
    spec = Categorical(3, shape=(3,), mask=mask)
    out = torch.index_select(spec, 0, torch.tensor([2, 0]))
    assert out.shape == (2,) and torch.equal(out.mask, mask[[2, 0]])
    comp = Composite(obs=Bounded(0, 1, shape=(5, 3)), act=OneHot(4, shape=(5, 4)), shape=(5,))
    sel = torch.index_select(comp, dim=0, index=torch.tensor([0, 2, 4]))
    assert sel.shape == (3,) and sel["act"].shape == (3, 4)
    assert torch.index_select(Unbounded(shape=(5, 4)), 0, torch.tensor([], dtype=torch.long)).shape == (0, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        torch.index_select(Unbounded(shape=(5, 4)), 0, torch.tensor([10]))
    with pytest.raises(ValueError, match="last dimension of OneHot"):
        torch.index_select(OneHot(3, shape=(5, 3)), -1, torch.tensor([0]))
    assert torch.squeeze(Unbounded(shape=(1, 3)), 0).shape == (3,)
    assert torch.unsqueeze(Composite(shape=(3,)), 0).shape == (1, 3)


def _hetero(batch: tuple = ()) -> Composite:
    shared = Bounded(0, 1, shape=(*batch, 4))
    return torch.stack(
        [
            Composite(
                shared=shared,
                hetero=Unbounded(shape=(*batch, 3)),
                only0=Composite(x=Unbounded(shape=(*batch, 2, 1)), shape=(*batch, 2)),
                shape=batch,
            ),
            Composite(
                shared=shared, hetero=Unbounded(shape=(*batch, 2)), only1=Bounded(0, 3, shape=(*batch, 5)), shape=batch
            ),
        ],
        0,
    )


@pytest.mark.parametrize("batch", [(), (3,)], ids=str)
def test_stacked_composite(batch: tuple) -> None:
    c = _hetero(batch)
    assert isinstance(c, StackedComposite) and c.shape == (2, *batch)
    assert list(c.keys()) == ["hetero", "shared"]
    assert c["hetero"].shape == (2, *batch, -1) and isinstance(c["hetero"], Stacked)
    assert type(c["shared"]) is Bounded and c["shared"].shape == (2, *batch, 4)
    assert "only0" in c[0].keys() and c[0] is c._specs[0]
    assert len(c) == 2 and isinstance(c[:], StackedComposite)
    td = c.rand()
    assert isinstance(td, LazyStackedTensorDict) and td.batch_size == (2, *batch)
    assert c.is_in(td) and c.zero((4,)).batch_size == (4, 2, *batch)
    td[1]["only1"] += 10
    assert not c.is_in(td)
    c.project(td)
    assert c.is_in(td)
    del td["shared"]
    with pytest.raises(KeyError, match="shared"):
        c.is_in(td)
    assert c == _hetero(batch) and c.clone() == c and c != c[0]
    c2 = _hetero(batch)
    c2[1]["only1"].space.low += 1  # in-place bound changes are seen
    assert c2 != c
    with pytest.raises(RuntimeError, match="Sequence<NestedKey>"):
        c[0] = Unbounded()
    new = torch.stack([Unbounded(shape=(*batch, i)) for i in (1, 2)], 0)
    c["new"] = new
    assert c["new"] == new and c[1]["new"].shape == (*batch, 2)
    c["nested", "key"] = new
    assert isinstance(c["nested"], StackedComposite) and c["nested", "key"] == new
    del c["only0"]
    assert "only0" not in c[0].keys()
    with pytest.raises(KeyError, match="at least one"):
        del c["only0"]


def test_stacked_composite_index_and_shape_ops() -> None:
    a = Composite(a=Unbounded(shape=(1, 3)), shape=(1, 3))
    b = Composite(a=Unbounded(shape=(1, 3)), b=UnboundedDiscrete(shape=(1, 3)), shape=(1, 3))
    c = torch.stack([a, b], 0)
    assert c[0] is a and c[1, ...] is b
    with pytest.raises(IndexError, match="only permitted if the stack dimension is the last"):
        c[..., 0]
    last = torch.stack([a, b], -1)
    assert last.stack_dim == 2 and last[..., 1] is b
    assert c.expand(4, 2, 1, 3).stack_dim == 1
    mid = torch.stack([a, b], 1)
    for dim in range(-2, 3):
        u = mid.unsqueeze(dim)
        assert u.squeeze(dim) == mid
    assert mid.squeeze().shape == (2, 3)
    assert mid.unbind(1) == (a, b)
    r = mid.rand((5,))
    assert r.batch_size == (5, 1, 2, 3) and (r["a"] != 0).all()
    with pytest.raises(RuntimeError, match="cannot be set"):
        c.shape = (2, 1, 3)


def test_stacked_composite_update_and_consolidate() -> None:
    spec, other = _hetero((2,)), _hetero((2,))
    del other["shared"]
    other["hetero"] = other["hetero"].unsqueeze(-1)
    spec.update(other)
    assert spec["hetero"].shape == (2, 2, -1, 1)
    assert not check_no_exclusive_keys(spec)
    full = consolidate_spec(spec)
    assert check_no_exclusive_keys(full, recurse=True)
    assert set(full[0].keys()) == set(full[1].keys()) == {"shared", "hetero", "only0", "only1"}
    assert full[0]["only1"].shape == (2, 0) and full[1]["only0"].shape == (2, 2)
    assert not check_no_exclusive_keys(spec)  # consolidate_spec works on a copy


def test_stack_composites_dense_and_devices() -> None:
    a = Composite(x=Unbounded(shape=(3,)), shape=(3,))
    b = Composite(x=Unbounded(shape=(3,)), shape=(3,), device="cpu")
    out = torch.stack([a, b], 1)
    assert type(out) is Composite and out.shape == (3, 2) and out["x"].shape == (3, 2)
    td = TensorDict({"x": torch.zeros(3, 2)}, [3, 2])
    assert out.is_in(td)


def test_stacked_composite_takes_the_device_of_the_composite_it_is_set_into():
    a = Composite(x=Unbounded(shape=(3,)))
    b = Composite(x=Unbounded(shape=(3,)), y=Categorical(2))
    hetero = torch.stack([a, b], 0)
    assert hetero.device is None
    parent = Composite(agents=hetero, shape=(2,), device="cpu")
    assert parent["agents"].device == torch.device("cpu")
    assert a.device == b.device == b["y"].device == torch.device("cpu")
    with pytest.raises(RuntimeError, match="clear_device_"):
        hetero.device = None


def test_nested_set_through_a_stacked_composite_sets_every_member():
    a = Composite(x=Unbounded(shape=(3,)))
    b = Composite(x=Unbounded(shape=(2,)))
    parent = Composite(agents=torch.stack([a, b], 0))
    parent[("agents", "count")] = Unbounded(shape=(2, 1))
    members = parent["agents"].unbind(0)
    assert [m["count"].shape for m in members] == [torch.Size([1]), torch.Size([1])]
    parent.set(("agents", "deeper", "y"), Unbounded(shape=(2, 4)))
    assert parent["agents"].unbind(0)[1]["deeper", "y"].shape == torch.Size([4])
