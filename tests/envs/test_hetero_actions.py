"""Heterogeneous agents: an action entry under a lazy stack of unequal Composites (one tensor per
agent, of different sizes) passes the strict step boundary part by part, and rollouts stack."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from gpusim.envs import EnvBase
from gpusim.specs import Bounded, Categorical, Composite, Unbounded


class TwoAgentSizes(EnvBase):
    """Agent 0 acts with 3 numbers, agent 1 with 2; each observes the sum of its action."""

    def __init__(self, batch_size=(2,)):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        sizes = (3, 2)
        agents = [Composite(action=Bounded(-1.0, 1.0, shape=(*B, n)), shape=B) for n in sizes]
        self.full_action_spec = Composite(agents=torch.stack(agents, len(B)), shape=B)
        obs = [Composite(obs=Unbounded((*B, 1)), shape=B) for _ in sizes]
        self.full_observation_spec = Composite(agents=torch.stack(obs, len(B)), shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Categorical(2, (*B, 1), dtype=torch.bool)

    def _agents(self, values):
        tds = [TensorDict({"obs": v}, self.batch_size) for v in values]
        return LazyStackedTensorDict.lazy_stack(tds, len(self.batch_size))

    def _reset(self, td):
        B = self.batch_size
        done = torch.zeros(*B, 1, dtype=torch.bool)
        zeros = [torch.zeros(*B, 1), torch.zeros(*B, 1)]
        return TensorDict({"agents": self._agents(zeros), "done": done, "terminated": done.clone()}, B)

    def _step(self, td):
        B = self.batch_size
        actions = td.get(("agents", "action"), as_list=True)
        sums = [a.sum(-1, keepdim=True) for a in actions]
        done = torch.zeros(*B, 1, dtype=torch.bool)
        return TensorDict(
            {"agents": self._agents(sums), "reward": sums[0] + sums[1], "done": done, "terminated": done.clone()}, B
        )

    def _set_seed(self, seed):
        return seed


def test_heterogeneous_actions_step_and_roll_out():
    env = TwoAgentSizes()
    td = env.rand_step()
    obs = td.get(("next", "agents", "obs"), as_list=True)
    assert [o.shape for o in obs] == [(2, 1), (2, 1)]
    out = env.rollout(3)
    assert out.batch_size == (2, 3)
    parts = out.get(("agents", "action"), as_list=True)
    assert [p.shape for p in parts] == [(2, 3, 3), (2, 3, 2)]


def test_heterogeneous_action_of_the_wrong_size_or_dtype_is_named():
    env = TwoAgentSizes()
    td = env.reset()
    td["agents"] = env._agents([torch.zeros(2, 1), torch.zeros(2, 1)])
    td["agents", "action"] = torch.zeros(2, 2, 2)  # agent 0 expects 3 numbers
    with pytest.raises(ValueError, match=r"part 0 of the action \('agents', 'action'\) has shape \[2, 2\]"):
        env.step(td)
    td = env.rand_action(env.reset())
    wrong = [a.double() for a in td.get(("agents", "action"), as_list=True)]
    td["agents"] = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"action": w}, [2]) for w in wrong], 1
    )
    with pytest.raises(TypeError, match="part 0 .* dtype torch.float64, expected torch.float32"):
        env.step(td)


@pytest.mark.parametrize("kind", ["serial", "parallel"])
def test_batched_env_of_heterogeneous_agents_carries_the_lazy_stacks_whole(kind):
    from gpusim.envs import ParallelEnv, SerialEnv

    cls = SerialEnv if kind == "serial" else ParallelEnv
    env = cls(2, TwoAgentSizes)
    try:
        td = env.reset()
        assert td.batch_size == (2, 2)
        parts = env.rand_action(td).get(("agents", "action"), as_list=True)
        assert [p.shape for p in parts] == [(2, 2, 3), (2, 2, 2)]
        td = env.rand_step(td)
        sums = [a.sum(-1, keepdim=True) for a in td.get(("agents", "action"), as_list=True)]
        obs = td.get(("next", "agents", "obs"), as_list=True)
        assert all(torch.allclose(o, s) for o, s in zip(obs, sums))  # each agent got its own action
        out = env.rollout(3, break_when_any_done=False)
        assert out.batch_size == (2, 2, 3)
    finally:
        env.close()
