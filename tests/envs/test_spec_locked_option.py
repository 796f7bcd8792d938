"""``spec_locked=False`` at construction leaves the specs unlocked, also for envs whose
``__init__`` locks them on its own (TransformedEnv), and after chain edits."""

from __future__ import annotations

from gpusim.envs.native import CartPoleEnv
from gpusim.specs import Unbounded
from gpusim.transforms import StepCounter, TransformedEnv


def test_transformed_env_spec_locked_false():
    env = TransformedEnv(CartPoleEnv(), StepCounter(), spec_locked=False)
    assert not env.is_spec_locked and not env.observation_spec.is_locked
    env.observation_spec["extra"] = Unbounded((1,))  # in-place edits are allowed
    env.append_transform(StepCounter(step_count_key="other"))
    assert not env.is_spec_locked
    assert TransformedEnv(CartPoleEnv(), StepCounter()).is_spec_locked  # the default


def test_plain_env_spec_locked_false():
    env = CartPoleEnv(spec_locked=False)
    assert not env.is_spec_locked
    env.set_spec_lock_(True)
    assert env.is_spec_locked and env.observation_spec.is_locked
