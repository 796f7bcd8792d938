"""ConditionalPolicySwitch: a second policy acts inside the env where a condition holds."""

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.batched import SerialEnv
from gpusim.envs.native import PendulumEnv
from gpusim.transforms import Compose, ConditionalPolicySwitch, StepCounter, TransformedEnv


def _env(condition, seen=None):
    def opponent(td):
        if seen is not None:
            seen.append(td["total"].clone())
        return td.set("action", torch.zeros(td.shape + (1,)))

    return Compose(
        StepCounter(step_count_key="total"),
        ConditionalPolicySwitch(policy=opponent, condition=condition),
        StepCounter(step_count_key="mine"),
    )


def test_every_other_step_is_the_opponents():
    seen = []
    env = TransformedEnv(PendulumEnv(seed=0), _env(lambda td: td["total"] % 2 == 1, seen))
    td = env.rollout(4)
    assert td["next", "total"].flatten().tolist() == [2, 4, 6, 8]
    assert td["next", "mine"].flatten().tolist() == [1, 2, 3, 4]
    assert [int(s) for s in seen] == [1, 3, 5, 7]  # the opponent sees the state after our move


def test_partial_rows_on_a_batched_env():
    env = TransformedEnv(
        SerialEnv(2, lambda: PendulumEnv(seed=0)),
        _env(lambda td: (td["total"] % 2 == 1).squeeze(-1) & torch.tensor([True, False])),
    )
    td = env.rollout(3)
    assert td["next", "total"][0].flatten().tolist() == [2, 4, 6]
    assert td["next", "total"][1].flatten().tolist() == [1, 2, 3]


def test_condition_errors():
    env = TransformedEnv(PendulumEnv(seed=0), _env(lambda td: "yes"))
    with pytest.raises(RuntimeError, match="boolean or a tensor"):
        env.reset()
    with pytest.raises(RuntimeError, match="cannot be called independently"):
        ConditionalPolicySwitch(policy=lambda td: td, condition=lambda td: True)(TensorDict())
