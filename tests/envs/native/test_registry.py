"""``make`` argument checking and the registry's agreement with gymnasium's registrations."""

from __future__ import annotations

import gymnasium as gym
import pytest

from gpusim.envs.native import make, registered_ids
from gpusim.envs.native.registry import _REGISTRY


def test_registered_ids_and_limits_match_gymnasium() -> None:
    assert registered_ids() == [
        "CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1"
    ]
    for env_id, entry in _REGISTRY.items():
        assert entry.max_episode_steps == gym.spec(env_id).max_episode_steps, env_id


def test_unknown_id_lists_known_ids() -> None:
    with pytest.raises(ValueError, match=r"Unknown env id 'CartPole-v0'; known ids: \['CartPole-v1', 'Pendulum-v1'"):
        make("CartPole-v0")


def test_unknown_kwargs_are_named() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['foo', 'render_mode'\]"):
        make("Pendulum-v1", num_envs=2, foo=1, render_mode="human")
    with pytest.raises(TypeError, match=r"\['gravity'\]"):  # a CartPole constant is not a Pendulum one
        make("Pendulum-v1", gravity=9.81)


@pytest.mark.parametrize("num_envs", [0, -1, 2.0, True, "4"])
def test_bad_num_envs(num_envs) -> None:
    with pytest.raises(ValueError, match="num_envs must be a positive int or None"):
        make("CartPole-v1", num_envs=num_envs)
