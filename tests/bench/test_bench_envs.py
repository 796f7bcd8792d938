"""Env ids and transform presets of ``gpusim.bench``: parsing, building, the same presets for
gpusim and TorchRL."""

from __future__ import annotations

import importlib.util

import pytest

import gpusim.transforms as T
from gpusim.bench.envs import (
    TRANSFORM_PRESETS,
    EnvRef,
    build_env,
    build_transforms,
    check_transform_names,
    parse_env_id,
)
from gpusim.envs.libs import GymEnv, VmasEnv
from gpusim.registry import registered_ids


@pytest.mark.parametrize(
    "env_id,ref",
    [
        ("CartPole-v1", EnvRef("native", "CartPole-v1")),
        ("TicTacToe-v0", EnvRef("native", "TicTacToe-v0")),
        ("gym:Acrobot-v1", EnvRef("gym", "Acrobot-v1")),
        ("vmas:simple_spread", EnvRef("vmas", "simple_spread")),
    ],
)
def test_parse_env_id(env_id, ref) -> None:
    assert parse_env_id(env_id) == ref
    assert ref.label == env_id


@pytest.mark.parametrize(
    "env_id,message",
    [
        ("CartPole", "unknown env id 'CartPole'; known ids: ['CartPole-v1'"),
        ("gym:", "env id 'gym:' names no gym env after the colon"),
        ("mujoco:Ant-v5", "unknown env id 'mujoco:Ant-v5'"),
        (3, "an env id must be a str, got 3"),
    ],
)
def test_parse_env_id_errors(env_id, message) -> None:
    with pytest.raises(ValueError) as info:
        parse_env_id(env_id)
    assert message in str(info.value)


def test_build_env_appends_presets_in_order() -> None:
    names = ["RewardSum", "InitTracker", "CatFrames", "VecNorm"]
    env = build_env("CartPole-v1", 4, transforms=names, seed=0)
    kinds = [type(t).__name__ for t in env.transform]
    assert kinds == ["StepCounter", *names]  # make()'s time limit first
    data = env.rollout(3, break_when_any_done=False)
    assert data["next", "observation"].shape == (4, 3, 16)  # CatFrames(4) of the 4 CartPole numbers
    assert data["next", "is_init"].shape == (4, 3, 1)


def test_build_env_wrapped_ids() -> None:
    gym_env = build_env("gym:CartPole-v1", 3)
    assert isinstance(gym_env, GymEnv) and gym_env.batch_size == (3,)
    vmas_env = build_env("vmas:simple_spread", 2, transforms=["RewardSum"])
    assert isinstance(vmas_env.base_env, VmasEnv)
    assert vmas_env.rollout(2, break_when_any_done=False)["next", "agents", "episode_reward"].shape == (2, 2, 3, 1)


@pytest.mark.parametrize("num_envs", [0, -1, 2.0, True])
def test_build_env_rejects_bad_num_envs(num_envs) -> None:
    with pytest.raises(ValueError, match=f"num_envs must be a positive int, got {num_envs!r}"):
        build_env("CartPole-v1", num_envs)


def test_transform_presets_are_checked() -> None:
    check_transform_names(list(TRANSFORM_PRESETS))
    with pytest.raises(ValueError, match=r"unknown transform 'StepCounter' \(make\(\) already adds"):
        check_transform_names(["RewardSum", "StepCounter"])


def test_every_preset_builds_for_gpusim_and_runs() -> None:
    for name in TRANSFORM_PRESETS:
        env = build_env("CartPole-v1", 2, transforms=[name])
        assert type(env.transform[-1]).__name__ == name
        assert env.rollout(2, break_when_any_done=False).shape == (2, 2)


@pytest.mark.skipif(importlib.util.find_spec("torchrl") is None, reason="torchrl is a peer (gpusim[peers])")
def test_presets_build_the_same_classes_in_torchrl() -> None:
    import torchrl.envs as tenvs

    mine = build_transforms(list(TRANSFORM_PRESETS), T, "observation")
    theirs = build_transforms(list(TRANSFORM_PRESETS), tenvs, "observation")
    assert [type(t).__name__ for t in mine] == [type(t).__name__ for t in theirs] == list(TRANSFORM_PRESETS)
    assert all(type(t).__module__.startswith("torchrl") for t in theirs)


def test_native_ids_are_all_buildable() -> None:
    for env_id in registered_ids():
        assert build_env(env_id, 2).batch_size == (2,)
