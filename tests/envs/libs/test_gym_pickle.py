"""Gymnasium-backed envs pickle (issue 29, defect 3): the per-leaf converters of the spec plan
are module-level functions, so ``pickle.dumps(GymEnv("Pendulum-v1"))`` works and the copy steps
exactly as the original, for every space type."""

from __future__ import annotations

import pickle

import pytest
import torch

from gpusim.envs.libs import GymEnv, GymWrapper
from gpusim.envs.libs.gym_specs import flat_multi_discrete, space_to_spec
from tests.envs.libs.gym_envs import ACTION_SPACES, OBS_SPACES, SpaceEnv


def _replay_equal(env, twin, steps=6):
    """Rolls ``env`` with random actions, replays those actions on ``twin``; same data."""
    env.set_seed(3)
    twin.set_seed(3)
    torch.manual_seed(0)
    ref = env.rollout(steps, break_when_any_done=False)
    actions = iter(ref.select(*env.action_keys).unbind(ref.ndim - 1))
    out = twin.rollout(steps, lambda td: td.update(next(actions)), break_when_any_done=False)
    assert set(out.keys(True, True)) == set(ref.keys(True, True))
    for key in ref.keys(True, True):
        a, b = ref.get(key), out.get(key)
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b), key
        else:
            assert a.tolist() == b.tolist(), key


def test_gym_env_pendulum_pickles_and_steps_the_same():
    env = GymEnv("Pendulum-v1")
    _replay_equal(env, pickle.loads(pickle.dumps(env)))


@pytest.mark.parametrize("categorical", [False, True])
def test_gym_env_cartpole_pickles_and_steps_the_same(categorical):
    env = GymEnv("CartPole-v1", categorical_action_encoding=categorical)
    _replay_equal(env, pickle.loads(pickle.dumps(env)))


@pytest.mark.parametrize("obs", sorted(OBS_SPACES))
def test_every_observation_space_pickles(obs):
    env = GymWrapper(SpaceEnv(obs=obs, action="discrete"))
    _replay_equal(env, pickle.loads(pickle.dumps(env)))


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("action", sorted(ACTION_SPACES))
def test_every_action_space_pickles(action, categorical):
    env = GymWrapper(SpaceEnv(action=action), categorical_action_encoding=categorical)
    _replay_equal(env, pickle.loads(pickle.dumps(env)))


@pytest.mark.parametrize("categorical", [False, True])
def test_leaf_plans_pickle(categorical):
    import gymnasium as gym

    leaf = flat_multi_discrete(gym.spaces.MultiDiscrete([2, 3], start=[1, 0]), (4,), None, categorical, ("action",))
    twin = pickle.loads(pickle.dumps(leaf))
    value = leaf.spec.rand()
    assert (twin.to_numpy(value) == leaf.to_numpy(value)).all()
    for space in [*OBS_SPACES.values(), *ACTION_SPACES.values()]:
        _, leaves = space_to_spec(space(), batch_size=(2,), categorical_action_encoding=categorical)
        assert len(pickle.loads(pickle.dumps(leaves))) == len(leaves)
