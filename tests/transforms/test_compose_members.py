"""What a Compose accepts as members: callables (wrapped), transforms put in eval mode, a plain
Compose appended to a plain Compose (flattened), ``transforms=`` and ``()`` as no keys."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import Compose, RenameTransform, RewardScaling, StepCounter, TransformedEnv


def _add_y(td):
    if "y" in td.keys():
        td["y"] = td["y"] + 1
        return td
    return td.set("y", torch.zeros(td.shape))


def test_callables_join_a_chain_everywhere():
    env = TransformedEnv(CartPoleEnv(), _add_y)
    env.append_transform(_add_y)
    env.insert_transform(0, _add_y)
    env.transform.append(_add_y)
    env.transform.insert(0, _add_y)
    assert env.reset()["y"].item() == 4
    c = Compose(transforms=[_add_y, _add_y])
    assert c(TensorDict({}, []))["y"].item() == 1


def test_bad_members_and_keywords_raise():
    with pytest.raises(TypeError, match="Compose takes a Transform or a callable on tensordicts, got int"):
        Compose(3)
    with pytest.raises(TypeError, match="Compose.append takes a Transform or a callable on tensordicts, got str"):
        Compose().append("x")
    with pytest.raises(TypeError, match="either positionally or as transforms="):
        Compose(_add_y, transforms=[_add_y])
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['bogus'\]"):
        Compose(bogus=1)


def test_added_transforms_are_in_eval_mode_until_env_train():
    env = TransformedEnv(CartPoleEnv(), RewardScaling(0.0, 1.0))
    assert not env.transform.training
    env.append_transform(RewardScaling(0.0, 2.0))
    env.transform.insert(0, StepCounter())
    assert not any(t.training for t in env.transform)
    env.train()
    assert env.transform.training and all(t.training for t in env.transform)


def test_plain_compose_appended_to_plain_compose_is_flattened():
    env = TransformedEnv(CartPoleEnv(), StepCounter())
    env.append_transform(Compose(RewardScaling(0.0, 1.0), StepCounter(step_count_key="other")))
    assert [type(t).__name__ for t in env.transform] == ["StepCounter", "RewardScaling", "StepCounter"]
    assert all(t.parent is not None for t in env.transform)
    assert "other" in env.observation_spec.keys()


def test_empty_tuple_is_no_keys():
    t = RenameTransform(in_keys=(), out_keys=(), in_keys_inv=("action",), out_keys_inv=("action_1",))
    assert t.in_keys == [] and t.out_keys == []
    env = TransformedEnv(CartPoleEnv(), t)
    assert "action_1" in env.full_action_spec.keys() and "action" not in env.full_action_spec.keys()
