"""Composite: nesting, shape checks, locking, generation, indexing, mapping API."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.specs import (
    Bounded,
    Categorical,
    Composite,
    CompositeSpec,
    NonTensor,
    OneHot,
    Unbounded,
)

BATCHES = [(), (1,), (7,), (3, 4)]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(batch: tuple[int, ...]) -> Composite:
    return Composite(
        obs=Bounded(-1.0, 1.0, shape=(*batch, 3)),
        reward=Unbounded(shape=(*batch, 1)),
        done=Categorical(2, shape=(*batch, 1), dtype=torch.bool),
        agents=Composite(
            action=OneHot(4, shape=(*batch, 2, 4)),
            info={"text": NonTensor(shape=(*batch, 2), example_data="hi")},
            shape=(*batch, 2),
        ),
        shape=batch,
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_generic(batch: tuple[int, ...], device: str) -> None:
    spec = make(batch).to(device)
    assert spec.shape == batch and spec.ndim == len(batch)
    assert spec.device.type == device and spec["agents", "action"].device.type == device
    for method in ("rand", "zero", "one"):
        td = getattr(spec, method)()
        assert isinstance(td, TensorDict)
        assert td.batch_size == batch
        assert td["agents"].batch_size == (*batch, 2)
        assert td["agents", "action"].shape == (*batch, 2, 4)
        assert td.device == spec.device and td["obs"].device == spec.device
    td = spec.rand((2,))
    assert td.batch_size == (2, *batch)
    assert spec.is_in(td)
    assert spec.is_in(spec.rand())
    assert spec.clone() == spec
    assert spec.cpu().to(device) == spec
    ex = spec.expand(5, *batch)
    assert ex.shape == (5, *batch)
    assert ex["agents", "action"].shape == (5, *batch, 2, 4)
    assert ex.is_in(ex.rand())
    u = spec.unsqueeze(0)
    assert u.shape == (1, *batch) and u["obs"].shape == (1, *batch, 3)
    assert u.squeeze(0) == spec
    if batch:
        sub = spec[0]
        assert sub.shape == batch[1:]
        assert sub["agents", "action"].shape == (*batch[1:], 2, 4)
        assert sub.is_in(sub.rand())
        assert spec[..., :1].shape == (*batch[:-1], 1)
    if len(batch) == 2:
        r = spec.reshape(12)
        assert r.shape == (12,) and r["obs"].shape == (12, 3)
    proj = spec.project(spec.rand().apply(lambda x: x * 5 if x.is_floating_point() else x))
    assert spec.is_in(proj)
    assert "Composite" in repr(spec) and "obs" in repr(spec)


def test_child_shape_mismatch_names_key() -> None:
    with pytest.raises(ValueError, match=r"'obs'.*\(3,\).*\(4,\)"):
        Composite(obs=Unbounded(shape=(3,)), shape=(4,))
    c = Composite(shape=(4,))
    with pytest.raises(ValueError, match=r"\('a', 'b'\)"):
        c["a", "b"] = Unbounded(shape=(2,))
    with pytest.raises(ValueError, match="'x'"):
        Composite(x=Unbounded(shape=(4, 2)), shape=(4,)).shape = (5,)


def test_nested_keys_and_mapping_api() -> None:
    c = Composite(shape=(2,))
    c["a", "b", "c"] = Unbounded(shape=(2, 3))
    assert isinstance(c["a"], Composite) and c["a"].shape == (2,)
    assert c["a", "b"].shape == (2,)
    assert c[("a", "b", "c")].shape == (2, 3)
    assert ("a", "b", "c") in c and "a" in c and ("a", "z") not in c
    c.set("x", Bounded(0, 1, shape=(2,)))
    assert list(c.keys()) == ["a", "x"]
    # nested entries come before the key of their Composite (TorchRL and TensorDict order)
    assert list(c.keys(include_nested=True)) == [("a", "b", "c"), ("a", "b"), "a", "x"]
    assert list(c.keys(True, True)) == [("a", "b", "c"), "x"]
    assert ("a", "b", "c") in c.keys(True, True)
    assert "a" not in c.keys(True, True)
    assert [k for k, _ in c.items(True, True)] == [("a", "b", "c"), "x"]
    assert len(c.values(True, True)) == 2
    is_leaf = lambda cls: cls is Composite or issubclass(cls, Bounded)  # noqa: E731
    assert "x" in c.keys(True, True, is_leaf=is_leaf)
    assert len(c) == 2 and list(c) == ["a", "x"]
    assert c.get("nope", None) is None
    with pytest.raises(KeyError, match="nope"):
        c["nope"]
    with pytest.raises(KeyError):
        c["x", "y"]
    popped = c.pop(("a", "b", "c"))
    assert popped.shape == (2, 3) and ("a", "b", "c") not in c
    assert c.pop("missing", 7) == 7
    del c["x"]
    assert list(c.keys()) == ["a"]
    with pytest.raises(KeyError):
        del c["x"]


def test_none_placeholders() -> None:
    c = Composite(a=None, b=Unbounded(shape=(3,)), shape=(3,))
    assert c["a"] is None
    td = c.zero()
    assert "a" not in td.keys() and "b" in td.keys()
    assert c.is_in(td)


def test_select_exclude_update_empty() -> None:
    c = make((2,))
    sel = c.select("obs", ("agents", "action"))
    assert list(sel.keys(True, True)) == ["obs", ("agents", "action")]
    with pytest.raises(KeyError):
        c.select("nope")
    assert list(c.select("nope", "obs", strict=False).keys()) == ["obs"]
    ex = c.exclude("obs", ("agents", "info"))
    assert "obs" not in ex and ("agents", "info") not in ex and "obs" in c
    e = c.empty()
    assert len(e) == 0 and e.shape == c.shape
    e.update(c)
    assert e == c
    e.update({"agents": Composite(extra=Unbounded(shape=(2, 2)), shape=(2, 2))})
    assert ("agents", "action") in e and ("agents", "extra") in e


def test_locking() -> None:
    c = make((2,)).lock_()
    assert c.is_locked and c["agents"].is_locked
    ops = [
        lambda: c.__setitem__("x", Unbounded(shape=(2,))),
        lambda: c.set("x", Unbounded(shape=(2,))),
        lambda: c.__delitem__("obs"),
        lambda: c.pop("obs"),
        lambda: c.update({"x": Unbounded(shape=(2,))}),
        lambda: c.__setitem__(("agents", "x"), Unbounded(shape=(2, 2))),
        lambda: c["agents"].__setitem__("x", Unbounded(shape=(2, 2))),
        lambda: c["agents"].__delitem__("action"),
        lambda: setattr(c, "shape", ()),
        lambda: setattr(c, "device", "cpu"),
    ]
    for op in ops:
        with pytest.raises(RuntimeError, match="Cannot modify a locked Composite"):
            op()
    assert "x" not in c and "obs" in c
    clone = c.clone()
    assert not clone.is_locked and not clone["agents"].is_locked
    clone["x"] = Unbounded(shape=(2,))
    c.unlock_()
    assert not c["agents"].is_locked
    c["x"] = Unbounded(shape=(2,))
    shallow = Composite(a={"b": Unbounded()}).lock_(recurse=False)
    shallow["a"]["b"] = None  # the nested Composite is not locked
    assert shallow["a", "b"] is None
    with pytest.raises(RuntimeError, match="locked"):
        shallow["c"] = Unbounded()


def test_device_handling() -> None:
    c = Composite(a=Unbounded(shape=(2,)), shape=(2,))
    assert c.device is None
    assert c.rand().device is None
    d = c.to("cpu")
    assert d.device == torch.device("cpu") and d["a"].device == torch.device("cpu")
    assert d.rand().device == torch.device("cpu")
    c.device = "cpu"
    assert c.device == torch.device("cpu")


def test_is_in_reports_key() -> None:
    c = make(())
    td = c.rand()
    td["obs"] = td["obs"] + 10
    assert not c.is_in(td)
    with pytest.raises(ValueError, match="'obs'"):
        c.assert_is_in(td)
    del td["obs"]
    with pytest.raises(ValueError, match="'obs' is missing"):
        c.assert_is_in(td)


def test_encode_and_alias() -> None:
    assert CompositeSpec is Composite
    c = Composite(a=Unbounded(shape=(2,)), b={"c": Categorical(3)})
    td = c.encode({"a": [1.0, 2.0], "b": {"c": 2}})
    assert td["a"].tolist() == [1.0, 2.0] and td["b", "c"].item() == 2
    assert c.is_in(td)
    with pytest.raises(KeyError, match="zz"):
        c.encode({"zz": 1})


def test_index_with_tensor() -> None:
    c = make((4,))
    sub = c[torch.tensor([True, False, True, True])]
    assert sub.shape == (3,) and sub["agents", "action"].shape == (3, 2, 4)
    sub2 = c[torch.tensor([0, 0])]
    assert sub2["obs"].shape == (2, 3)


def test_equality() -> None:
    assert make((2,)) == make((2,))
    assert make((2,)) != make((3,))
    other = make((2,))
    other["obs"] = Bounded(-2.0, 1.0, shape=(2, 3))
    assert make((2,)) != other
    with pytest.raises(AttributeError, match="obs"):
        other.obs = Unbounded()


def test_nested_composite_is_stored_by_reference() -> None:
    parent = Composite(shape=(2,), device="cpu")
    child = Composite(shape=(2,))
    parent["child"] = child
    assert parent["child"] is child and child.device == torch.device("cpu")
    child["x"] = Unbounded(shape=(2,))
    assert ("child", "x") in parent


def test_composite_dtype_is_the_dtype_of_its_leaves():
    spec = Composite(a=Bounded(0, 1, (2,), dtype=torch.float64), b=Composite(c=Unbounded(2, dtype=torch.float64)))
    assert spec.dtype == torch.float64
    spec["d"] = Categorical(3)
    assert spec.dtype is None  # leaves of several dtypes
    assert Composite().dtype is None
    assert Composite(a=None, b=Unbounded(1)).dtype == torch.float32  # empty entries are skipped
