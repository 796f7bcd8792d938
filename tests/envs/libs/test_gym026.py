"""The gym 0.26 backend (set_gym_backend("gym")): GymEnv builds gym envs, GymWrapper takes them, the
data equals gym's; the backend is scoped; missing or wrong gym versions say what to install."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs import GymEnv, GymWrapper, gym_backend, set_gym_backend
from gpusim.specs import Bounded, Categorical


def test_missing_gym_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gym", None)
    with pytest.raises(ImportError, match=r"pip install gym==0\.26\.2"):
        set_gym_backend("gym")


gym = pytest.importorskip("gym", reason="gym 0.26 is not installed (pip install 'gpusim[gym026]')")


def test_backend_scope_and_envs():
    with set_gym_backend("gym"):
        assert gym_backend() is gym and gym_backend("spaces") is gym.spaces
        env = GymEnv("Pendulum-v1", g=9.81)
        assert isinstance(env.env, gym.Env) and env.g == 9.81
        assert isinstance(env.action_spec, Bounded) and env.action_spec.shape == (1,)
        check_env_specs(env, seed=0)
        with pytest.raises(ValueError, match="vector envs"):
            GymEnv("CartPole-v1", num_envs=2)
    assert gym_backend().__name__ == "gymnasium"
    assert not isinstance(GymEnv("CartPole-v1").env, gym.Env)


def test_wrapper_data_equals_gym():
    env = GymWrapper(gym.make("CartPole-v1", disable_env_checker=True), categorical_action_encoding=True)
    raw = gym.make("CartPole-v1", disable_env_checker=True)
    assert isinstance(env.action_spec, Categorical)
    env.set_seed(3)
    raw.reset(seed=3)  # set_seed seeds with a reset; the next reset draws the next start state
    obs, _ = raw.reset()
    td = env.reset()
    assert np.array_equal(td["observation"].numpy(), obs)
    for t in range(20):
        action = t % 2
        obs, reward, term, trunc, _ = raw.step(action)
        td = env.step(td.set("action", torch.tensor(action)))
        assert np.array_equal(td["next", "observation"].numpy(), obs)
        assert td["next", "reward"].item() == reward and td["next", "terminated"].item() == term
        td = env._step_mdp(td)
