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
    td["agents"] = LazyStackedTensorDict.lazy_stack([TensorDict({"action": w}, [2]) for w in wrong], 1)
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


class PerAgentDone(EnvBase):
    """Two agents observing vectors of different sizes (3 and 2), each with its own done flag
    inside the heterogeneous "agents" group; both finish after ``limit`` steps."""

    def __init__(self, limit=3):
        super().__init__(batch_size=[2])
        B = self.batch_size
        self.limit = limit
        obs = [Composite(obs=Unbounded((*B, n)), shape=B) for n in (3, 2)]
        self.full_observation_spec = Composite(agents=torch.stack(obs, 1), shape=B)
        acts = [Composite(action=Bounded(-1.0, 1.0, shape=(*B, 1)), shape=B) for _ in range(2)]
        self.full_action_spec = Composite(agents=torch.stack(acts, 1), shape=B)
        self.full_reward_spec = Composite(agents=Composite(reward=Unbounded((*B, 2, 1)), shape=(*B, 2)), shape=B)
        self.full_done_spec = Composite(
            agents=Composite(done=Categorical(2, (*B, 2, 1), dtype=torch.bool), shape=(*B, 2)), shape=B
        )
        self.register_buffer("t", torch.zeros((), dtype=torch.long))

    def _agents(self, value):
        B = self.batch_size
        tds = [TensorDict({"obs": torch.full((*B, n), float(value))}, B) for n in (3, 2)]
        return LazyStackedTensorDict.lazy_stack(tds, 1)

    def _reset(self, td):
        self.t.zero_()
        out = TensorDict({"agents": self._agents(0)}, self.batch_size)
        out["agents", "done"] = torch.zeros(2, 2, 1, dtype=torch.bool)
        return out

    def _step(self, td):
        self.t += 1
        out = TensorDict({"agents": self._agents(int(self.t))}, self.batch_size)
        out["agents", "done"] = (self.t >= self.limit).expand(2, 2, 1).clone()
        out["agents", "reward"] = torch.ones(2, 2, 1)
        return out

    def _set_seed(self, seed):
        return seed


def test_step_counter_on_heterogeneous_agents_counts_per_agent_and_passes_check_env_specs():
    from gpusim.envs import check_env_specs
    from gpusim.transforms import StepCounter, TransformedEnv

    env = TransformedEnv(PerAgentDone(), StepCounter())
    # the counter is a state entry of the agents' group, shaped like that group's done flags
    assert env.full_state_spec["agents"].shape == (2, 2)
    assert env.full_state_spec["agents", "step_count"].shape == (2, 2, 1)
    check_env_specs(env)
    out = env.rollout(3)
    assert out["next", "agents", "step_count"][:, -1].flatten().tolist() == [3, 3, 3, 3]


def test_check_env_specs_reads_heterogeneous_members_one_by_one():
    from gpusim.envs import check_env_specs
    from gpusim.transforms import Transform, TransformedEnv

    class Breaks(Transform):  # agent 1 observes float64 where its spec says float32
        def _step(self, td, next_td):
            agents = next_td.get("agents")
            agents.tensordicts[1].set("obs", agents.tensordicts[1].get("obs").double())
            return next_td

    with pytest.raises(AssertionError, match=r"Dtype mismatch for key \('next', 'agents', '\[1\]', 'obs'\)"):
        check_env_specs(TransformedEnv(PerAgentDone(), Breaks()))
