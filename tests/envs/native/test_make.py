"""``make`` builds the native env with gymnasium's time limit (``StepCounter``)."""

from __future__ import annotations

import pytest
import torch

from gpusim import make
from gpusim.envs.native import (
    AcrobotEnv,
    CartPoleEnv,
    MountainCarContinuousEnv,
    MountainCarEnv,
    PendulumEnv,
)
from gpusim.transforms import StepCounter, TransformedEnv

CASES = [
    ("CartPole-v1", CartPoleEnv, 500),
    ("Pendulum-v1", PendulumEnv, 200),
    ("MountainCar-v0", MountainCarEnv, 200),
    ("MountainCarContinuous-v0", MountainCarContinuousEnv, 999),
    ("Acrobot-v1", AcrobotEnv, 500),
]


@pytest.mark.parametrize("env_id, env_cls, limit", CASES, ids=[c[0] for c in CASES])
def test_make_wraps_native_env_with_time_limit(env_id, env_cls, limit) -> None:
    env = make(env_id, num_envs=3, seed=0)
    assert isinstance(env, TransformedEnv)
    assert type(env.base_env) is env_cls
    assert env.batch_size == torch.Size([3])
    counter = env.transform  # the time limit (a single transform is not wrapped)
    assert isinstance(counter, StepCounter) and counter.max_steps == limit
    assert "truncated" in env.done_keys and "step_count" in env.observation_spec.keys()


def test_pendulum_truncates_at_200_and_restarts() -> None:
    env = make("Pendulum-v1", num_envs=4, seed=0)
    td = env.rollout(450, break_when_any_done=False)
    truncated = td["next", "truncated"][..., 0]
    done = td["next", "done"][..., 0]
    assert truncated[:, 199].all() and truncated[:, 399].all()
    assert int(truncated.sum()) == 8 and torch.equal(done, truncated)
    assert not td["next", "terminated"].any()
    assert (td["step_count"][:, 200] == 0).all() and (td["next", "step_count"][:, 199] == 200).all()


def test_make_forwards_constants_seed_and_unbatched() -> None:
    env = make("Pendulum-v1", g=9.81, seed=3)
    assert env.base_env.g == 9.81 and env.batch_size == torch.Size([])
    a = make("CartPole-v1", num_envs=5, seed=7).reset()["observation"]
    b = make("CartPole-v1", num_envs=5, seed=7).reset()["observation"]
    assert torch.equal(a, b)


def test_make_is_reexported() -> None:
    import gpusim

    assert gpusim.make is make


@pytest.mark.parametrize("env_id", [c[0] for c in CASES])
def test_made_envs_pass_check_env_specs(env_id) -> None:
    from gpusim.envs import check_env_specs

    check_env_specs(make(env_id, num_envs=1000, seed=0))
