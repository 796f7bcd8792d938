"""``rand_step()`` without a tensordict: an env whose state lives in the env (no state spec)
steps on from where it is, as in TorchRL; an env that reads its state from the input is reset
first."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from gpusim.envs import EnvBase
from gpusim.envs.native import CartPoleEnv
from gpusim.specs import Categorical, Composite, Unbounded


class Tally(EnvBase):
    """Counts its steps in a buffer (the state lives in the env)."""

    def __init__(self):
        super().__init__(batch_size=[2])
        self.observation_spec = Composite(n=Unbounded((2, 1)), shape=(2,))
        self.action_spec = Categorical(2, shape=(2,))
        self.reward_spec = Unbounded((2, 1))
        self.register_buffer("n", torch.zeros(2, 1))
        self.resets = 0

    def _reset(self, td):
        self.resets += 1
        self.n.zero_()
        return TensorDict({"n": self.n.clone()}, [2])

    def _step(self, td):
        self.n += 1
        return TensorDict(
            {"n": self.n.clone(), "reward": torch.zeros(2, 1), "done": torch.zeros(2, 1, dtype=torch.bool)}, [2]
        )

    def _set_seed(self, seed):
        pass


def test_stateful_env_steps_on_without_a_reset():
    env = Tally()
    env.reset()
    assert env.rand_step()["next", "n"].flatten().tolist() == [1.0, 1.0]
    assert env.rand_step()["next", "n"].flatten().tolist() == [2.0, 2.0]
    assert env.resets == 1


def test_env_reading_its_state_from_the_input_is_reset_first():
    env = CartPoleEnv(batch_size=[2], seed=0)
    td = env.rand_step()  # the physics state comes from a fresh reset
    assert td["next", "observation"].shape == (2, 4) and "state" in td.keys()


def test_a_fresh_env_is_reset_first():
    env = Tally()
    assert env.rand_step()["next", "n"].flatten().tolist() == [1.0, 1.0]
    assert env.resets == 1
