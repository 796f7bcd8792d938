"""EnvBase.set_spec_lock_ / is_spec_locked: the env-level switch over the specs' locks."""

from __future__ import annotations

import pytest

from gpusim.envs.native import CartPoleEnv
from gpusim.specs import Unbounded


def test_set_spec_lock() -> None:
    env = CartPoleEnv(batch_size=(2,))
    assert env.is_spec_locked and env.output_spec["full_observation_spec"].is_locked
    with pytest.raises(RuntimeError, match="locked"):
        env.output_spec["full_observation_spec"]["extra"] = Unbounded(shape=(2, 1))
    assert env.set_spec_lock_(False) is env and not env.is_spec_locked
    env.output_spec["full_observation_spec"]["extra"] = Unbounded(shape=(2, 1))
    env.is_spec_locked = True
    assert env.input_spec.is_locked and env.output_spec["full_observation_spec"].is_locked
    env.observation_spec = env.observation_spec.clone()  # setters still work while locked
    assert env.is_spec_locked
