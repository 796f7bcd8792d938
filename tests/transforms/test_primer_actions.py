"""TensorDictPrimer on an action key: the primer replaces the action's spec (no state entry) and
the reset writes the initial action, in a single env and through a batched env."""

from __future__ import annotations

from gpusim.envs import SerialEnv
from gpusim.envs.native import PendulumEnv
from gpusim.specs import Bounded, Unbounded
from gpusim.transforms import TensorDictPrimer, TransformedEnv


def _primed():
    env = PendulumEnv()
    primer = TensorDictPrimer(action=Bounded(-0.5, 0.5, shape=(1,)), extra=Unbounded((2,)), default_value=0.25)
    return TransformedEnv(env, primer)


def test_primed_action_stays_an_action():
    env = _primed()
    assert "action" not in env.full_state_spec.keys()
    assert "extra" in env.full_state_spec.keys()
    assert env.full_action_spec["action"].high.eq(0.5).all()  # the primer's spec
    td = env.reset()
    assert td["action"].tolist() == [0.25] and td["extra"].tolist() == [0.25, 0.25]
    env.rollout(2)  # the primed action is a valid step input


def test_batched_env_returns_the_primed_action_at_reset():
    env = SerialEnv(2, _primed)
    try:
        td = env.reset()
        assert td["action"].shape == (2, 1) and td["action"].eq(0.25).all()
        assert td["extra"].shape == (2, 2)
        assert env.rollout(2, break_when_any_done=False).shape == (2, 2)
    finally:
        env.close()
