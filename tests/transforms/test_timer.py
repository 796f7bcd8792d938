"""Timer: step, policy and reset durations written at the documented places of a rollout."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native import PendulumEnv
from gpusim.transforms import Compose, StepCounter, Timer, TransformedEnv


def test_rollout_with_resets_places_the_times():
    env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), Compose(Timer(), StepCounter(max_steps=3)))
    td = env.rollout(6, break_when_any_done=False)
    resets = td["step_count"][..., 0] == 0  # the first step of each episode
    assert resets.sum().item() == 4
    assert (td["time_reset"][resets] > 0).all() and (td["time_reset"][~resets] == 0).all()
    assert (td["time_step"][resets] == 0).all() and (td["time_policy"][resets] == 0).all()
    assert (td["next", "time_step"] > 0).all() and (td["next", "time_policy"] >= 0).all()
    assert (td["next", "time_reset"] == 0).all()
    assert td["next", "time_step"].dtype == torch.float32 and td["next", "time_step"].shape == (2, 6)


def test_out_keys_and_forward():
    t = Timer(out_keys=["s", "p", "r"])
    assert (t.time_step_key, t.time_policy_key, t.time_reset_key) == ("s", "p", "r")
    with pytest.raises(TypeError, match="three out_keys"):
        Timer(out_keys=["a"])
    with pytest.raises(NotImplementedError, match="TransformedEnv"):
        Timer()(TensorDict())
