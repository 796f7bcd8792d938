"""Composite behaviour that follows TorchRL: in-place project, growing child Composites, names,
lock graphs, encode errors, enumeration, key order."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    OneHot,
    Unbounded,
)


def make(batch: tuple = (2, 3)) -> Composite:
    return Composite(
        obs=Bounded(0.0, 1.0, shape=(*batch, 4)),
        act=Unbounded(shape=(*batch, 2)),
        nested=Composite(x=Categorical(3, shape=batch), shape=batch),
        shape=batch,
    )


@pytest.mark.parametrize("prefix", [(), (5,)], ids=str)
def test_project_is_in_place(prefix: tuple) -> None:
    spec = make()
    td = TensorDict(
        {
            "obs": torch.full((*prefix, 2, 3, 4), 7.0),
            "act": torch.zeros(*prefix, 2, 3, 2),
            "nested": {"x": torch.full((*prefix, 2, 3), 9)},
        },
        batch_size=(*prefix, 2, 3),
    )
    assert not spec.is_in(td)
    out = spec.project(td)
    assert out is td and spec.is_in(td)
    assert (td["obs"] == 1.0).all() and (td["nested", "x"] == 2).all()


def test_child_composite_grows_to_parent_shape() -> None:
    leaf = Unbounded(shape=(2, 3))
    inner = Composite(e=Composite(f=leaf))
    outer = Composite(a=Composite(b=inner), shape=(2, 3))
    assert outer["a"].shape == outer["a", "b", "e"].shape == (2, 3)
    assert inner.shape == ()  # the stored child is a copy
    built = Composite(shape=(2, 3))
    built["a", "b", "e", "f"] = Unbounded(shape=(2, 3))
    assert built == outer
    with pytest.raises(ValueError, match=r"'c'.*\(4,\)"):
        Composite(c=Composite(shape=(4,)), shape=(2, 3))
    with pytest.raises(ValueError, match=r"entry 'd' of shape \(\) cannot take .*'e' has shape \(1,\)"):
        Composite(d=Composite(e=Unbounded()), shape=(2,))


def test_shape_setter_resets_nested_composites() -> None:
    spec = Composite(nested=Composite(leaf=Unbounded(shape=(3, 2)), shape=(3,)), shape=(3,))
    spec.shape = ()
    assert spec.shape == () and spec["nested"].shape == (3,)
    spec["nested"].shape = ()
    spec.shape = (3,)
    assert spec["nested"].shape == (3,)
    with pytest.raises(ValueError, match="'leaf'"):
        spec.shape = (4,)


def test_reserved_keys_and_type_check() -> None:
    spec = make()
    for key in ("shape", "device", "dtype", "space"):
        with pytest.raises(AttributeError, match="cannot be set"):
            spec[key] = Unbounded()
        with pytest.raises(AttributeError, match="no key"):
            spec[key]
    td = spec.rand()
    spec.type_check(td)
    spec.type_check(td["obs"], "obs")
    with pytest.raises(TypeError, match="'obs'"):
        spec.type_check(td["obs"].double(), "obs")
    with pytest.raises(ValueError, match="needs a key"):
        spec.type_check(td["obs"])
    td["ob"] = td["obs"].double()
    spec["ob"] = Bounded(0.0, 1.0, shape=(2, 3, 4))
    spec.type_check(td, "obs")  # only the selected key is checked ("ob" is not part of it)
    with pytest.raises(TypeError, match="'ob'"):
        spec.type_check(td, ["ob"])


def test_is_in_missing_key_raises_and_skips_placeholders() -> None:
    spec = make()
    spec["maybe"] = None
    spec["empty"] = Composite(shape=(2, 3))
    td = spec.rand()
    assert "maybe" not in td.keys() and spec.is_in(td)
    del td["obs"]
    with pytest.raises(KeyError, match="obs"):
        spec.is_in(td)
    assert "'obs' is missing" in spec.invalid_reason(td)


def test_device_clearing() -> None:
    spec = Composite(a=Composite(b=Unbounded(shape=(2,)), shape=(2,)), shape=(2,), device="cpu")
    assert spec["a"].device == torch.device("cpu")
    spec.clear_device_()
    assert spec.device is None and spec["a"].device is None
    assert spec["a", "b"].device == torch.device("cpu")  # leaves keep a device
    spec.device = "cpu"
    with pytest.raises(RuntimeError, match="clear_device_"):
        spec.device = None
    copy = make().clone()
    copy.shape = ()
    copy.clear_device_()
    holder = Composite(shape=(2, 3), device="cpu")
    holder["sub"] = copy
    assert holder["sub"].shape == (2, 3) and holder["sub"].device == torch.device("cpu")


def test_names() -> None:
    spec = Composite(
        obs=Bounded(-1, 1, shape=(10, 5, 3)),
        inner=Composite(x=Unbounded(shape=(10, 5, 2)), shape=(10, 5, 2)),
        shape=(10, 5),
        names=["batch", "time"],
    )
    assert spec.names == ["batch", "time"] and spec._has_names()
    assert spec["inner"].names == ["batch", "time", None]
    assert spec[0].names == ["time"] and spec[0:5].names == ["batch", "time"]
    assert spec.expand(2, 10, 5).names == [None, "batch", "time"]
    assert spec.unsqueeze(1).names == ["batch", None, "time"]
    assert spec.unbind(0)[0].names == ["time"]
    assert spec.clone().names == spec.to("cpu").names == ["batch", "time"]
    assert spec.rand().names == ["batch", "time"]
    assert spec == Composite(obs=spec["obs"], inner=spec["inner"], shape=(10, 5))  # names ignored
    with pytest.raises(ValueError, match="Expected 2 names, but got 3 names"):
        spec.names = ["a", "b", "c"]
    with pytest.raises(RuntimeError, match="cannot coerce Composite names"):
        spec.refine_names("batch", "second_root")
    spec._erase_names()
    assert spec.names == [None, None] and not spec._has_names()
    assert spec.refine_names(..., "time").names == [None, "time"]
    ones = Composite(obs=Unbounded(shape=(1, 1, 3)), shape=(1, 1), names=["a", "b"])
    assert ones.squeeze().names == [] and ones.squeeze(1).names == ["a"]


def test_lock_graph() -> None:
    leaf = Composite()
    mid = Composite(leaf=leaf)
    root = Composite(upper=Composite(mid=mid))
    root.lock_()  # recurse=None locks the whole tree
    assert leaf.is_locked
    with pytest.raises(RuntimeError, match="part of a locked graph"):
        leaf.unlock_()
    assert leaf.is_locked
    second_root = Composite(mid=mid).lock_(recurse=True)
    with pytest.raises(RuntimeError, match="part of a locked graph"):
        root.unlock_()
    assert root.is_locked and leaf.is_locked  # the failed unlock re-locked everything
    with pytest.raises(RuntimeError, match="part of a locked graph"):
        second_root.unlock_()  # mid is also held by the locked root
    second_root.unlock_(recurse=False)  # a root alone can always be unlocked
    root.unlock_()
    assert not leaf.is_locked and not mid.is_locked
    shallow = Composite(a=Composite(b=Unbounded())).lock_(recurse=False)
    shallow["a", "b"] = Unbounded(shape=(2,))  # only the receiving Composite must be unlocked
    with pytest.raises(RuntimeError, match="Cannot modify a locked Composite"):
        shallow["c"] = Unbounded()
    shallow.is_locked = False
    shallow["c"] = Unbounded()


def test_encode_errors_and_memoize() -> None:
    spec = Composite(a=Unbounded(1), b=Unbounded(2))
    with pytest.raises(KeyError, match="The Composite instance with keys"):
        spec.encode({"c": 0})
    with pytest.raises(RuntimeError, match="raised a RuntimeError. Scroll up to know more"):
        spec.encode({"a": 0, "b": 0})
    with pytest.raises(RuntimeError, match="missing values"):
        spec.encode({"a": None})
    spec.memoize_encode()
    assert spec["a"]._memo is not None
    for _ in range(2):
        td = spec.encode({"a": [1.0], "b": [1.0, 2.0]})
        assert td["b"].tolist() == [1.0, 2.0]
    spec.erase_memoize_cache()
    assert spec["b"]._memo == {}


def test_cardinality_and_enumerate() -> None:
    spec = Composite({"a": OneHot(5, shape=(3, 5)), ("b", "c"): Categorical(4, shape=(3,))}, shape=(3,))
    assert spec.cardinality() == 20
    values = spec.enumerate()
    assert values.shape == (20, 3) and values["b"].shape == (20, 3) and spec.is_in(values)
    combos = {(int(values["a"][i, 0].long().argmax()), int(values["b", "c"][i, 0])) for i in range(20)}
    assert len(combos) == 20  # every joint outcome once
    mixed = Composite(m=MultiCategorical([2, 3], shape=(2, 2)), bits=Binary(2, shape=(2, 2)), shape=(2,))
    assert mixed.cardinality() == len(mixed.enumerate()) == 12
    assert Composite().cardinality() == 0


def test_key_order_nested_first_and_batch_size_alias() -> None:
    spec = Composite(a=Composite(b=Unbounded()), c=Unbounded())
    assert list(spec.keys(True)) == [("a", "b"), "a", "c"]
    assert list(spec.keys(True)) == list(spec.zero().keys(True))  # as TensorDict
    assert Composite(batch_size=(3,)).shape == (3,)
    with pytest.raises(TypeError, match="both batch_size and shape"):
        Composite(batch_size=(3,), shape=(3,))
    with pytest.raises(TypeError, match="at most one positional"):
        Composite({}, {})


def test_locked_graph_survives_pickling():
    import pickle

    from gpusim.specs import Composite, Unbounded

    spec = Composite(a=Composite(b=Unbounded(shape=(2,)))).lock_()
    loaded = pickle.loads(pickle.dumps(spec))
    assert loaded.is_locked and loaded["a"].is_locked
    with pytest.raises(RuntimeError, match="part of a locked graph"):
        loaded["a"].unlock_()
    loaded.unlock_()
    assert not loaded.is_locked and not loaded["a"].is_locked
    assert loaded == spec
