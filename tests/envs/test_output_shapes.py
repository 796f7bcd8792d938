"""Reward and done leaves that a step returns with another shape of the same size (a Python
bool for a ``[1]`` done) take the spec's shape, as in TorchRL."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded


class LooseShapes(EnvBase):
    """Returns Python bools for ``done`` and a flat reward: TorchRL reshapes them to the specs."""

    def __init__(self, n_rewards: int = 2):
        super().__init__()
        self.n = n_rewards
        self.observation_spec = Composite(observation=Unbounded((3,)))
        self.action_spec = Categorical(2, (1,))
        self.reward_spec = Unbounded((1, n_rewards))
        self.done_spec = Composite(
            done=Categorical(2, (1,), dtype=torch.bool), terminated=Categorical(2, (1,), dtype=torch.bool)
        )

    def _reset(self, td):
        return TensorDict({"observation": torch.zeros(3), "done": False}, [])

    def _step(self, td):
        return TensorDict({"observation": torch.zeros(3), "reward": torch.ones(self.n), "done": True}, [])

    def _set_seed(self, seed):
        pass


def test_reward_and_done_of_another_shape_of_the_same_size_take_the_spec_shape():
    env = LooseShapes()
    td = env.reset()
    assert td["done"].shape == (1,) and td["terminated"].shape == (1,)
    td = env.rollout(2)
    assert td["next", "done"].shape == (1, 1) and td["next", "reward"].shape == (1, 1, 2)
    check_env_specs(env)


def test_reward_of_another_size_is_not_reshaped():
    class WrongSize(LooseShapes):
        def _step(self, td):
            return TensorDict({"observation": torch.zeros(3), "reward": torch.ones(3), "done": True}, [])

    with pytest.raises(AssertionError, match=r"Shape mismatch for key \('next', 'reward'\).*\[3\].*\[1, 2\]"):
        check_env_specs(WrongSize())
