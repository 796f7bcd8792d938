"""``rand_action``'s planned path (leaf draws written into the existing containers) equals the
reference ``tensordict.update(full_action_spec.rand())``: same values (same draws in the same
order), keys, shapes and containers; anything the plan does not cover takes the reference."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from gpusim.envs.libs import GymWrapper
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from tests.envs.libs.gym_envs import SpaceEnv
from tests.envs.toy_envs import NestedCountingEnv


def _reference(env, td):
    return td.update(env.full_action_spec.rand(()))


def _same(a, b):
    assert type(a) is type(b) and a.batch_size == b.batch_size
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        x, y = a.get(key), b.get(key)
        assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y), key
    for key in a.keys(True):
        if isinstance(a.get(key), TensorDict):
            assert a.get(key).batch_size == b.get(key).batch_size, key


@pytest.mark.parametrize(
    "make",
    [
        lambda: CartPoleEnv(batch_size=[3], seed=0),
        lambda: PendulumEnv(batch_size=[], seed=0),
        lambda: NestedCountingEnv(batch_size=(2,), n_agents=3),
        lambda: GymWrapper(SpaceEnv(action="dict")),
        lambda: GymWrapper(SpaceEnv(action="tuple")),
    ],
)
def test_planned_rand_action_equals_reference(make):
    env = make()
    root = env.reset()
    assert env._rand_action_plan is not None
    for seed in range(3):
        torch.manual_seed(seed)
        ours = env.rand_action(root.clone())
        torch.manual_seed(seed)
        ref = _reference(env, root.clone())
        _same(ours, ref)


def test_missing_container_or_lazy_data_takes_the_reference():
    env = NestedCountingEnv(batch_size=(2,), n_agents=3)
    root = env.reset()
    bare = root.exclude("agents")  # the "agents" container is created by the reference update
    torch.manual_seed(0)
    ours = env.rand_action(bare.clone())
    torch.manual_seed(0)
    _same(ours, _reference(env, bare.clone()))
    assert ours["agents"].batch_size == (2, 3)
    lazy = LazyStackedTensorDict.lazy_stack(list(root.clone().unbind(0)), 0)
    torch.manual_seed(0)
    out = env.rand_action(lazy)
    torch.manual_seed(0)
    assert torch.equal(out["agents", "action"], _reference(env, root.clone())["agents", "action"])
    assert env.rand_action()["agents", "action"].shape == (2, 3)  # no input: a new tensordict


def test_wrong_batch_or_locked_input_is_left_to_the_reference():
    env = CartPoleEnv(batch_size=[3], seed=0)
    with pytest.raises(RuntimeError):
        env.rand_action(TensorDict({}, [4]))  # the reference's shape error, not a silent write
    locked = env.reset().lock_()
    with pytest.raises(RuntimeError):
        env.rand_action(locked)
