"""UnaryTransform, Hash and Stack: values, specs read from the function's output, inverse paths,
batched envs and check_env_specs."""

from __future__ import annotations

import pytest
import torch
from tensordict import NonTensorData, TensorDict

from gpusim.envs.checks import check_env_specs
from gpusim.specs import Bounded, Unbounded
from gpusim.transforms import Compose, Hash, RenameTransform, Stack, TransformedEnv, UnaryTransform
from tests.transforms._stateless_envs import VectorEnv

BATCHES = [(), (3,), (2, 2)]


@pytest.mark.parametrize("batch", BATCHES)
def test_unary_transform_env_spec_from_the_function(batch):
    t = UnaryTransform(
        in_keys=["observation"], out_keys=["norm"], fn=lambda x: x.pow(2).sum(-1, keepdim=True).to(torch.float64)
    )
    env = TransformedEnv(VectorEnv(batch), t)
    spec = env.observation_spec["norm"]
    assert spec.shape == (*batch, 1) and spec.dtype == torch.float64
    check_env_specs(env)
    r = env.rollout(3)
    torch.testing.assert_close(r["next", "norm"], r["next", "observation"].pow(2).sum(-1, keepdim=True).double())


def test_unary_transform_inverse_and_non_tensor_data():
    t = UnaryTransform(
        in_keys=["s"], out_keys=["n"], in_keys_inv=["a"], out_keys_inv=["b"], fn=len, inv_fn=lambda x: x * 2
    )
    td = t(TensorDict({"s": "abcd"}, []))
    assert td["n"] == 4
    assert torch.equal(t.inv(TensorDict({"b": torch.ones(2)}, []))["a"], torch.full((2,), 2.0))
    raw = UnaryTransform(in_keys=["s"], out_keys=["k"], fn=lambda v: type(v).__name__, use_raw_nontensor=True)
    assert raw(TensorDict({"s": NonTensorData("x")}, []))["k"] != "str"
    with pytest.raises(KeyError, match="'s'"):
        t(TensorDict({"other": 1}, []))


def test_hash_reproducible_repertoire_and_env():
    h = Hash.reproducible_hash("abc")
    assert h.dtype == torch.uint8 and h.shape == (32,) and torch.equal(h, Hash.reproducible_hash("abc"))
    assert not torch.equal(Hash.reproducible_hash("abc", seed="s"), h)
    t = Hash(in_keys=["s"], out_keys=["h"], in_keys_inv=["s"], out_keys_inv=["h"])
    for text in ("one", "two"):
        t(TensorDict({"s": text}, []))
    assert len(t._repertoire) == 2 and t.get_input_from_hash(Hash.reproducible_hash("two")) == "two"
    assert t.inv(TensorDict({"h": Hash.reproducible_hash("one")}, []))["s"] == "one"
    with pytest.raises(ValueError, match="tensor"):
        Hash(in_keys=["s"], out_keys=["h"], hash_fn=lambda x: 1)(TensorDict({"s": "a"}, []))
    with pytest.raises(RuntimeError, match="repertoire"):
        Hash(in_keys=["s"], out_keys=["h"]).get_input_from_hash(h)
    env = TransformedEnv(
        VectorEnv((2,)),
        Hash(
            in_keys=["observation"],
            out_keys=["h"],
            hash_fn=lambda x: torch.stack([Hash.reproducible_hash(str(r.tolist())) for r in x]),
        ),
    )
    assert env.observation_spec["h"].shape == (2, 32)
    check_env_specs(env)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("del_keys", [True, False])
def test_stack_leaves_env_and_inverse(batch, del_keys):
    copy = RenameTransform(in_keys=[("nested", "obs")], out_keys=["obs2"], create_copy=True)
    env = TransformedEnv(
        VectorEnv(batch),
        Compose(copy, Stack(in_keys=["obs2", ("nested", "obs")], out_key="both", dim=-2, del_keys=del_keys)),
    )
    spec = env.observation_spec["both"]
    assert spec.shape == (*batch, 2, 2)
    assert (("nested", "obs") in env.observation_spec.keys(True)) is (not del_keys)
    check_env_specs(env)
    r = env.rollout(3)
    state = r["next", "state"]
    assert torch.equal(r["next", "both"][..., 1, :], torch.cat([state, state + 1], -1))
    assert torch.equal(r["next", "both"][..., 0, :], r["next", "both"][..., 1, :])
    t = Stack(in_keys=["a", "b"], out_key="ab", in_key_inv="ab", out_keys_inv=["a", "b"], dim=-2)
    td = TensorDict({"a": torch.zeros(4, 3), "b": torch.ones(4, 3)}, [4])
    out = t(td.clone())
    assert set(out.keys()) == {"ab"} and out["ab"].shape == (4, 2, 3)
    assert (t.inv(out) == td).all()


def test_stack_groups_of_agents_and_errors():
    td = TensorDict({"g0": {"a0": {"obs": torch.zeros(3)}, "a1": {"obs": torch.ones(3)}}}, [])
    out = Stack(in_keys=[("g0", "a0"), ("g0", "a1")], out_key="agents", dim=0, allow_positive_dim=True)(td)
    assert out["agents", "obs"].shape == (2, 3) and "g0" not in out.keys()
    with pytest.raises(ValueError, match="negative"):
        Stack(in_keys=["a", "b"], out_key="c", dim=0)
    with pytest.raises(ValueError, match="together"):
        Stack(in_keys=["a", "b"], out_key="c", in_key_inv="c")
    with pytest.raises(ValueError, match="cannot be in in_keys"):
        Stack(in_keys=["a", "b"], out_key="a")
    from gpusim.transforms.tensor_ops import _stack_specs

    same = _stack_specs([Bounded(-1.0, 1.0, shape=(4, 3)), Bounded(-1.0, 1.0, shape=(4, 3))], -1)
    assert same.shape == (4, 3, 2) and isinstance(same, Bounded)
    assert _stack_specs([Unbounded((2,)), Unbounded((2,))], -2).shape == (2, 2)
