"""EnvBase.auto_specs_: specs inferred from two raw steps (shapes, dtypes, dynamic dims,
non-tensor entries, state entries), and a clear error for unnamed outputs."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, NonTensor, Unbounded


class Plain(EnvBase):
    """A counter whose specs are declared wrong on purpose (auto_specs_ must replace them)."""

    def __init__(self, grow: bool = False):
        super().__init__()
        self.grow = grow
        self.observation_spec = Composite(wrong=Unbounded((9,)))
        self.action_spec = Categorical(2, (1,))
        self.state_spec = Composite(count=Unbounded((1,), dtype=torch.int64))

    def _reset(self, td):
        z = torch.zeros(1, dtype=torch.bool)
        out = TensorDict({"obs": torch.zeros(1, 2), "count": torch.zeros(1, dtype=torch.int64), "done": z}, [])
        out.set_non_tensor("text", "start")
        return out

    def _step(self, td):
        count = td["count"] + 1
        rows = int(count) + 1 if self.grow else 1
        out = TensorDict(
            {
                "obs": torch.ones(rows, 2) * count,
                "count": count,
                "reward": torch.ones(1),
                "done": torch.zeros(1, dtype=torch.bool),
            },
            [],
        )
        out.set_non_tensor("text", f"step {int(count)}")
        return out

    def _set_seed(self, seed):
        pass


def _policy(td):
    return td.set("action", torch.ones(1, dtype=torch.float32))


def test_specs_from_data():
    env = Plain().auto_specs_(_policy, observation_key=["obs", "count", "text"])
    assert set(env.observation_spec.keys()) == {"obs", "count", "text"}
    assert env.observation_spec["obs"].shape == (1, 2) and env.observation_spec["count"].dtype == torch.int64
    assert isinstance(env.observation_spec["text"], NonTensor)
    assert env.action_spec.dtype == torch.float32 and env.action_spec.shape == (1,)
    assert env.reward_keys == ["reward"] and "done" in env.done_keys
    assert list(env.state_spec.keys()) == []  # root inputs that are outputs are no state
    check_env_specs(env)


def test_dims_that_change_become_dynamic():
    env = Plain(grow=True).auto_specs_(_policy, observation_key=["obs", "count", "text"])
    assert env.observation_spec["obs"].shape == (-1, 2)
    assert env._has_dynamic_specs


def test_unnamed_outputs_raise():
    with pytest.raises(RuntimeError, match=r"output keys \['count', 'text'\] are in none of"):
        Plain().auto_specs_(_policy, observation_key="obs")
