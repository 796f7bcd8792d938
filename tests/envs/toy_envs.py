"""Small envs used by the core tests: a counter, a MARL-style nested counter and a zero env."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded


def _flag(shape):
    return Categorical(2, shape=shape, dtype=torch.bool)


class CountingEnv(EnvBase):
    """Stateless counter: ``count += action + 1``; done when ``count >= max_count``.

    The reset value of each row is a random integer in [0, 3) from a seeded generator, so
    seeding can be tested.
    """

    def __init__(self, batch_size=(), max_count: int = 5, device=None):
        super().__init__(batch_size=batch_size, device=device)
        B = self.batch_size
        self.max_count = max_count
        self.observation_spec = Composite(count=Unbounded((*B, 1), dtype=torch.float32), shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=_flag((*B, 1)), shape=B)
        self._gen = torch.Generator().manual_seed(0)

    def _reset(self, td):
        start = torch.randint(0, 3, (*self.batch_size, 1), generator=self._gen).float()
        return TensorDict(
            {
                "count": start.to(self.device),
                "done": torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device),
            },
            self.batch_size,
            device=self.device,
        )

    def _step(self, td):
        count = td["count"] + td["action"].unsqueeze(-1).float() + 1
        return TensorDict(
            {"count": count, "reward": torch.ones_like(count), "done": count >= self.max_count},
            self.batch_size,
            device=self.device,
        )

    def _set_seed(self, seed):
        self._gen.manual_seed(0 if seed is None else seed)


class StatelessCounter(EnvBase):
    """Counter whose only input besides the action is the ``"state"`` entry (tensor program)."""

    functional_step = True

    def __init__(self, batch_size=(), max_count: int = 4, device=None, auto_reset_mode=None):
        super().__init__(batch_size=batch_size, device=device, auto_reset_mode=auto_reset_mode)
        B = self.batch_size
        self.max_count = max_count
        self.observation_spec = Composite(observation=Unbounded((*B, 1)), shape=B)
        self.state_spec = Composite(state=Unbounded((*B, 1)), shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=_flag((*B, 1)), terminated=_flag((*B, 1)), shape=B)

    def _reset(self, td):
        zeros = torch.zeros(*self.batch_size, 1, device=self.device)
        false = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
        return TensorDict(
            {"observation": zeros, "state": zeros.clone(), "done": false, "terminated": false.clone()},
            self.batch_size,
            device=self.device,
        )

    def _step(self, td):
        state = td["state"] + td["action"].unsqueeze(-1).to(torch.float32)
        done = state >= self.max_count
        return TensorDict(
            {"observation": state * 2, "state": state, "reward": state.clone(), "done": done, "terminated": done},
            self.batch_size,
            device=self.device,
        )

    def _set_seed(self, seed):
        pass


class NestedCountingEnv(EnvBase):
    """MARL-style counter: group ``"agents"`` with batch ``(*B, n_agents)`` and per-agent done;
    shared ``done`` at the root (all agents done)."""

    def __init__(self, batch_size=(), n_agents: int = 3, max_count: int = 3):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        A = (*B, n_agents)
        self.n_agents = n_agents
        self.max_count = max_count
        self.observation_spec = Composite(agents=Composite(obs=Unbounded((*A, 2)), shape=A), shape=B)
        self.action_spec = Composite(agents=Composite(action=Categorical(2, shape=A), shape=A), shape=B)
        self.reward_spec = Composite(agents=Composite(reward=Unbounded((*A, 1)), shape=A), shape=B)
        self.done_spec = Composite(
            done=_flag((*B, 1)),
            agents=Composite(done=_flag((*A, 1)), shape=A),
            shape=B,
        )

    def _reset(self, td):
        A = (*self.batch_size, self.n_agents)
        return TensorDict(
            {
                "agents": TensorDict({"obs": torch.zeros(*A, 2), "done": torch.zeros(*A, 1, dtype=torch.bool)}, A),
                "done": torch.zeros(*self.batch_size, 1, dtype=torch.bool),
            },
            self.batch_size,
        )

    def _step(self, td):
        A = (*self.batch_size, self.n_agents)
        obs = td["agents", "obs"] + td["agents", "action"].unsqueeze(-1).float() + 1
        agent_done = obs[..., :1] >= self.max_count
        return TensorDict(
            {
                "agents": TensorDict({"obs": obs, "reward": obs[..., :1].clone(), "done": agent_done}, A),
                "done": agent_done.all(-2),
            },
            self.batch_size,
        )

    def _set_seed(self, seed):
        pass


class ZeroEnv(EnvBase):
    """Returns zeros after reset (the documentation's worked ``"_reset"`` examples).

    ``nested=False``: a ``"val"`` entry of shape ``(2,)`` with a root done of shape ``(2,)``.
    ``nested=True``: groups ``agent0``/``agent1`` each with ``val`` and ``done`` of shape ``(2,)``.
    """

    def __init__(self, nested: bool = False):
        super().__init__(batch_size=())
        self.nested = nested
        if nested:
            groups = {
                g: Composite(val=Unbounded((2,), dtype=torch.int64), done=_flag((2,))) for g in ("agent0", "agent1")
            }
            self.observation_spec = Composite({g: Composite(val=Unbounded((2,), dtype=torch.int64)) for g in groups})
            self.done_spec = Composite({g: Composite(done=_flag((2,))) for g in groups})
        else:
            self.observation_spec = Composite(val=Unbounded((2,), dtype=torch.int64))
            self.done_spec = Composite(done=_flag((2,)))
        self.action_spec = Unbounded((1,))

    def _reset(self, td):
        zero = {"val": torch.zeros(2, dtype=torch.int64), "done": torch.zeros(2, dtype=torch.bool)}
        if self.nested:
            return TensorDict({"agent0": dict(zero), "agent1": dict(zero)}, [])
        return TensorDict(zero, [])

    def _step(self, td):
        raise NotImplementedError

    def _set_seed(self, seed):
        pass
