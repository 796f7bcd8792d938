"""A worker env whose observation is a tensorclass (with a string field): the batched env
exchanges whole outputs (no buffers), so the class and its non-tensor fields survive."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorClass, TensorDict

from gpusim.envs import ParallelEnv, SerialEnv, check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, NonTensor, Unbounded


class Tagged(TensorClass):
    tag: str
    value: torch.Tensor


class TaggedEnv(EnvBase):
    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(
            obs=Composite(tag=NonTensor(example_data="t0", shape=()), value=Unbounded(()), data_cls=Tagged)
        )
        self.action_spec = Categorical(2, (1,))
        self.reward_spec = Unbounded((1,))
        self.done_spec = Composite(done=Categorical(2, (1,), dtype=torch.bool))
        self.t = 0

    def _reset(self, td):
        self.t = 0
        return TensorDict(
            {"obs": Tagged(tag="t0", value=torch.zeros(())), "done": torch.zeros(1, dtype=torch.bool)}, []
        )

    def _step(self, td):
        self.t += 1
        return TensorDict(
            {
                "obs": Tagged(tag=f"t{self.t}", value=torch.tensor(float(self.t))),
                "reward": torch.zeros(1),
                "done": torch.zeros(1, dtype=torch.bool),
            },
            [],
        )

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("cls", [SerialEnv, ParallelEnv])
def test_tensorclass_observation_through_a_batched_env(cls):
    env = cls(2, TaggedEnv)
    try:
        assert not env._use_buffers
        td = env.reset()
        assert isinstance(td["obs"], Tagged) and td["obs"].tag == ["t0", "t0"]
        td = env.step(env.rand_action(td))
        assert isinstance(td["next", "obs"], Tagged) and td["next", "obs"].tag == ["t1", "t1"]
        assert td["next", "obs"].value.tolist() == [1.0, 1.0]
        check_env_specs(env)
    finally:
        env.close()
