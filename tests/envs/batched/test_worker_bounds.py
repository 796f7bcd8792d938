"""Workers whose specs differ only in the bounds of Bounded leaves (step counters of different
horizons, action ranges) join one batched env; its spec holds every worker's bounds."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs import SerialEnv
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.transforms import StepCounter, TransformedEnv


def _counted(horizon):
    return lambda: TransformedEnv(CartPoleEnv(), StepCounter(horizon))


def test_step_counters_of_different_horizons():
    env = SerialEnv(3, [_counted(2), _counted(3), _counted(5)])
    try:
        spec = env.full_observation_spec["step_count"]
        assert spec.shape == (3, 1)
        assert spec.high.flatten().tolist() == [2, 3, 5]
        env.set_seed(0)
        td = env.rollout(6, lambda td: td.set("action", torch.zeros(3, dtype=torch.long)), break_when_any_done=False)
        counts = td["next", "step_count"].squeeze(-1)
        assert counts.max(-1).values.tolist() == [2, 3, 5]
        # a row truncates when its own horizon is reached (pushing left, CartPole lasts > 5 steps)
        assert td["next", "truncated"].squeeze(-1)[:, :5].sum(-1).tolist() == [2, 1, 1]
    finally:
        env.close()


def test_action_ranges_of_workers():
    class Scaled(PendulumEnv):
        def __init__(self, max_torque):
            super().__init__()
            self.action_spec = self.action_spec.__class__(-max_torque, max_torque, shape=(1,))

    env = SerialEnv(2, [lambda: Scaled(1.0), lambda: Scaled(3.0)])
    try:
        assert env.action_spec.high.flatten().tolist() == [1.0, 3.0]
        actions = torch.stack([env.rand_action(env.reset())["action"] for _ in range(50)])
        assert actions[:, 0].abs().max() <= 1.0 and actions[:, 1].abs().max() > 1.0
    finally:
        env.close()


def test_workers_differing_in_more_than_bounds_are_refused():
    with pytest.raises(ValueError, match="must have the same specs"):
        SerialEnv(2, [lambda: CartPoleEnv(), lambda: TransformedEnv(CartPoleEnv(), StepCounter(3))])
