"""CatTensors, RenameTransform, ExcludeTransform, SelectTransform: data, specs, inverse on what
the base env receives, errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.specs import Bounded, Unbounded
from gpusim.transforms import (
    CatTensors,
    Compose,
    ExcludeTransform,
    RenameTransform,
    SelectTransform,
    TransformedEnv,
    UnsqueezeTransform,
)
from tests.transforms._stateless_envs import VectorEnv

BATCHES = [(), (1,), (7,), (3, 4)]


def _leaf_keys(spec):
    return {k for k, _ in spec.items(True, True)}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("sort", [True, False])
def test_cat_tensors_values_order_and_spec(batch, sort):
    keys = ["observation", ("nested", "obs"), "bounded"]
    copy = RenameTransform(["observation", "bounded"], ["o", "b"], create_copy=True)
    env = TransformedEnv(VectorEnv(batch), Compose(copy, CatTensors(keys, out_key="vec", sort=sort)))
    td = env.rollout(3)
    nxt = td["next"]
    state = nxt["state"]
    parts = {"observation": nxt["o"], "bounded": nxt["b"], ("nested", "obs"): torch.cat([state, state + 1], -1)}
    order = sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k) if sort else keys
    torch.testing.assert_close(nxt["vec"], torch.cat([parts[k] for k in order], -1))
    spec = env.observation_spec["vec"]
    assert isinstance(spec, Unbounded) and spec.shape == (*batch, 7)
    # the parts are gone from data and specs (and so is the emptied "nested" group)
    assert not {"observation", "bounded", ("nested", "obs"), "nested"} & set(nxt.keys(True))
    assert not {"observation", "bounded", ("nested", "obs")} & _leaf_keys(env.observation_spec)


@pytest.mark.parametrize("batch", BATCHES)
def test_cat_tensors_bounded_parts_keep_bounds_and_del_keys_false(batch):
    env = TransformedEnv(VectorEnv(batch), CatTensors(["bounded"], out_key="v", del_keys=False))
    spec = env.observation_spec["v"]
    assert isinstance(spec, Bounded) and spec.low.eq(-1).all() and spec.high.eq(1).all()
    td = env.rollout(2)
    assert torch.equal(td["next", "v"], td["next", "bounded"])


def test_cat_tensors_auto_keys_and_unsqueeze_if_oor():
    env = TransformedEnv(VectorEnv((4,)), CatTensors())
    assert env.transform.in_keys == ["bounded", ("nested", "obs"), "observation"]
    assert env.observation_spec["observation_vector"].shape == (4, 7)
    t = CatTensors(["a", "b"], out_key="ab", unsqueeze_if_oor=True)
    out = t(TensorDict({"a": torch.zeros(5), "b": torch.ones(5, 2)}, [5]))
    assert out["ab"].shape == (5, 3) and set(out.keys()) == {"ab"}


def test_cat_tensors_errors():
    with pytest.raises(ValueError, match="got 0"):
        CatTensors(["a"], dim=0)
    with pytest.raises(
        ValueError, match=r"cannot concatenate 'bounded' \(shape \[2, 2\]\) with 'observation' \(shape \[2, 3, 1\]\)"
    ):
        TransformedEnv(
            VectorEnv((2,)),
            Compose(
                UnsqueezeTransform(-1, in_keys=["observation"]), CatTensors(["observation", "bounded"], sort=False)
            ),
        )
    with pytest.raises(ValueError, match="out of the feature dims"):
        TransformedEnv(VectorEnv((2,)), CatTensors(["observation", "bounded"], dim=-2))
    with pytest.raises(KeyError, match="'state'"):
        TransformedEnv(VectorEnv((2,)), CatTensors(["observation", "state"]))


@pytest.mark.parametrize("batch", BATCHES)
def test_rename_forward_and_inverse(batch):
    t = RenameTransform(
        ["observation", "reward"], ["obs", "rew"], in_keys_inv=["action", "state"], out_keys_inv=["act", "st"]
    )
    env = TransformedEnv(VectorEnv(batch), t)
    assert env.reward_key == "rew" and env.action_key == "act"
    assert "st" in env.state_spec.keys() and "state" not in env.state_spec.keys()
    assert "obs" in env.observation_spec.keys() and "observation" not in env.observation_spec.keys()
    td = env.reset()
    assert "st" in td.keys() and "state" not in td.keys() and "obs" in td.keys()
    td.set("act", torch.full(env.action_spec.shape, 0.5))
    env.step(td)
    received = env.base_env.last_input
    assert received["action"].eq(0.5).all() and "act" not in received.keys()
    assert "state" in received.keys()
    nxt = td["next"]
    assert {"obs", "rew", "st"} <= set(nxt.keys()) and not {"observation", "reward", "state"} & set(nxt.keys())
    assert nxt["st"].eq(0.5).all()


def test_rename_create_copy_keeps_the_original():
    env = TransformedEnv(
        VectorEnv((3,)), RenameTransform(["done", "observation"], ["done_copy", "obs"], create_copy=True)
    )
    td = env.rollout(3)
    assert torch.equal(td["next", "done"], td["next", "done_copy"])
    assert torch.equal(td["next", "observation"], td["next", "obs"])


def test_rename_errors():
    with pytest.raises(ValueError, match="without an end-of-episode entry"):
        TransformedEnv(VectorEnv((2,)), RenameTransform(["done", "terminated", "truncated"], ["a", "b", "c"]))
    with pytest.raises(ValueError, match="'bounded': that entry exists"):
        TransformedEnv(VectorEnv((2,)), RenameTransform(["observation"], ["bounded"]))
    with pytest.raises(KeyError, match="'obs_typo'"):
        TransformedEnv(VectorEnv((2,)), RenameTransform(["obs_typo"], ["x"]))
    with pytest.raises(ValueError, match="same length"):
        RenameTransform(["a", "b"], ["c"])


@pytest.mark.parametrize("batch", BATCHES)
def test_exclude_forward(batch):
    env = TransformedEnv(VectorEnv(batch), ExcludeTransform("truncated", ("nested", "obs"), "absent"))
    td = env.rollout(3)
    assert "truncated" not in env.done_keys and ("nested", "obs") not in _leaf_keys(env.observation_spec)
    for data in (td, td["next"]):
        assert "truncated" not in data.keys() and ("nested", "obs") not in data.keys(True)
    assert "observation" in td["next"].keys()


@pytest.mark.parametrize("batch", BATCHES)
def test_exclude_inverse_hides_entries_from_the_base_env(batch):
    env = TransformedEnv(VectorEnv(batch), ExcludeTransform("bounded", inverse=True))
    td = env.reset()
    env.step(env.rand_action(td))
    assert "bounded" not in env.base_env.last_input.keys()
    assert "bounded" in td.keys() and "bounded" in td["next"].keys()


def test_exclude_errors():
    with pytest.raises(ValueError, match="removing 'truncated' leaves the root done level without"):
        TransformedEnv(VectorEnv((2,)), ExcludeTransform("done", "terminated", "truncated"))
    with pytest.raises(ValueError, match="'state' is a state entry"):
        TransformedEnv(VectorEnv((2,)), ExcludeTransform("state"))


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("keep_rewards,keep_dones", [(True, True), (False, False)])
def test_select(batch, keep_rewards, keep_dones):
    env = TransformedEnv(
        VectorEnv(batch), SelectTransform("observation", keep_rewards=keep_rewards, keep_dones=keep_dones)
    )
    td = env.rollout(3)
    nxt_keys = set(td["next"].keys())
    expected = {"observation", "state", "done", "terminated"}
    if keep_rewards:
        expected.add("reward")
    if keep_dones:
        expected.add("truncated")
    assert nxt_keys == expected
    assert _leaf_keys(env.observation_spec) == {"observation"}
    assert ("reward" in env.reward_keys) == keep_rewards


def test_select_standalone():
    td = TensorDict({"a": torch.zeros(1), "b": torch.zeros(1)}, [])
    assert list(SelectTransform(["a"])(td).keys()) == ["a"]
