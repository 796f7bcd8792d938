"""RewardSum used without an env: the default reward key, and the reset hook that needs one."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.transforms import RewardSum, TransformedEnv
from tests.envs.toy_envs import NestedCountingEnv


def test_step_hook_without_env_sums_the_default_reward():
    t = RewardSum()
    assert t.in_keys == ["reward"] and t.out_keys == ["episode_reward"]
    reward = torch.tensor([[0.5], [2.0]])
    root = TensorDict({"episode_reward": torch.tensor([[1.0], [0.0]])}, [2])
    nxt = t._step(root, TensorDict({"reward": reward}, [2]))
    assert nxt["episode_reward"].flatten().tolist() == [1.5, 2.0]


def test_reset_hook_needs_an_env_or_reset_keys():
    t = RewardSum()
    td = TensorDict({"episode_reward": torch.ones(2, 1)}, [2])
    with pytest.raises(TypeError, match="reset_keys not provided but parent env not found"):
        t._reset(td, td.empty())
    t.reset_keys = "_reset"
    assert t.reset_keys == ["_reset"]
    assert t._reset(td, td.empty())["episode_reward"].flatten().tolist() == [0.0, 0.0]


def test_an_env_resolves_its_own_reward_keys():
    env = TransformedEnv(NestedCountingEnv(batch_size=(2,)), RewardSum())  # reward: ("agents", "reward")
    assert env.transform.in_keys == [("agents", "reward")]
    assert env.transform.out_keys == [("agents", "episode_reward")]
    td = env.rollout(2)
    reward = td["next", "agents", "reward"]
    assert torch.equal(td["next", "agents", "episode_reward"], reward.cumsum(1))
