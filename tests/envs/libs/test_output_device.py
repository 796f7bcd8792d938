"""Library wrappers label their outputs with the env's device (issue 29, defect 4): ``GymEnv``
said ``cpu`` but returned tensordicts with device ``None``, so ``AsyncEnvPool`` (which stacks
the members' outputs) failed with "devices differ, got cpu and None"."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.async_pool import AsyncEnvPool
from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs import GymEnv, GymWrapper
from tests.envs.libs.gym_envs import SpaceEnv, sync_vector


def make_gym_pendulum():
    return GymEnv("Pendulum-v1")


def _wrappers():
    yield "gym", lambda: GymEnv("Pendulum-v1")
    yield "gym-vector", lambda: GymEnv("CartPole-v1", num_envs=3)
    yield "gym-dict-obs", lambda: GymEnv("CartPole-v1", from_pixels=True, pixels_only=False, render_mode="rgb_array")
    yield "gym-text-obs", lambda: GymWrapper(SpaceEnv(obs="text"))
    yield "gym-vector-text-obs", lambda: GymWrapper(sync_vector(3, obs="text"))
    yield "dm_control", lambda: pytest.importorskip("gpusim.envs.libs.dm_control").DMControlEnv("cartpole", "balance")
    yield (
        "pettingzoo",
        lambda: pytest.importorskip("gpusim.envs.libs.pettingzoo").PettingZooEnv("mpe/simple_spread_v3", parallel=True),
    )
    yield "openspiel", lambda: pytest.importorskip("gpusim.envs.libs.openspiel").OpenSpielEnv("tic_tac_toe")


WRAPPERS = dict(_wrappers())


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_outputs_report_the_env_device(name):
    try:
        env = WRAPPERS[name]()
    except ImportError as err:  # the library itself is not installed
        pytest.skip(str(err))
    reset = env.reset()
    step = env.step(env.rand_action(reset))
    assert env.device == torch.device("cpu")
    for td in (reset, step, step["next"], env.rollout(3, break_when_any_done=False)):
        assert td.device == env.device
        for sub in td.values(True):  # nested levels too (groups, Dict observations)
            if isinstance(sub, TensorDict):
                assert sub.device == env.device
    check_env_specs(env, seed=0)


@pytest.mark.parametrize("backend", ["threading", "multiprocessing"])
def test_async_pool_of_gym_envs_rolls_out(backend):
    pool = AsyncEnvPool([make_gym_pendulum] * 2, backend=backend)
    try:
        td = pool.rollout(3)
        assert td.shape == (2, 3)
        assert td.device == torch.device("cpu")
        assert td["next", "observation"].shape == (2, 3, 3)
    finally:
        pool.close()
