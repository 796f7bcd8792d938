"""Toy envs for the core / stateful transform tests."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded


def _flag(shape):
    return Categorical(2, shape=shape, dtype=torch.bool)


class TickEnv(EnvBase):
    """``state += 1`` every step whatever the action; done when ``state >= max_count``.

    The action is a float ``(*B, 1)`` that is recorded in ``last_action`` (to check what the
    base env receives) and echoed as the reward.
    """

    functional_step = True  # the state lives in the tensordict (last_action only records)

    def __init__(self, batch_size=(), max_count: int = 1000):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        self.max_count = max_count
        self.observation_spec = Composite(observation=Unbounded((*B, 1)), shape=B)
        self.state_spec = Composite(state=Unbounded((*B, 1)), shape=B)
        self.action_spec = Unbounded((*B, 1))
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=_flag((*B, 1)), shape=B)
        self.last_action = None

    def _reset(self, td):
        z = torch.zeros(*self.batch_size, 1)
        return TensorDict(
            {"observation": z, "state": z.clone(), "done": torch.zeros(*self.batch_size, 1, dtype=torch.bool)},
            self.batch_size,
        )

    def _step(self, td):
        self.last_action = td["action"].clone()
        state = td["state"] + 1
        return TensorDict(
            {
                "observation": state.clone(),
                "state": state,
                "reward": td["action"].clone(),
                "done": state >= self.max_count,
            },
            self.batch_size,
        )

    def _set_seed(self, seed):
        pass


class LivesEnv(EnvBase):
    """A game with lives: one life lost every ``period`` steps; ``lives`` is an observation
    (``as_attribute=True``: the lives are an attribute ``ale_lives`` instead, batch ``[]``)."""

    def __init__(self, batch_size=(), lives: int = 3, period: int = 2, as_attribute: bool = False):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        self.lives0, self.period, self.as_attribute = lives, period, as_attribute
        obs = {"state": Unbounded((*B, 1), dtype=torch.int64)}
        if not as_attribute:
            obs["lives"] = Unbounded((*B, 1), dtype=torch.int64)
        self.observation_spec = Composite(obs, shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.done_spec = Composite(done=_flag((*B, 1)), shape=B)
        self.ale_lives = lives

    def _lives(self, state):
        return self.lives0 - state // self.period

    def _reset(self, td):
        state = torch.zeros(*self.batch_size, 1, dtype=torch.int64)
        out = {"state": state, "done": torch.zeros(*self.batch_size, 1, dtype=torch.bool)}
        self.ale_lives = self.lives0
        if not self.as_attribute:
            out["lives"] = self._lives(state)
        return TensorDict(out, self.batch_size)

    def _step(self, td):
        state = td["state"] + 1
        lives = self._lives(state)
        self.ale_lives = int(lives.reshape(-1)[0])
        out = {"state": state, "reward": torch.ones(*self.batch_size, 1), "done": lives <= 0}
        if not self.as_attribute:
            out["lives"] = lives
        return TensorDict(out, self.batch_size)

    def _set_seed(self, seed):
        pass
