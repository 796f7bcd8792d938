"""DMControlEnv/DMControlWrapper against the real dm_control suite: TorchRL's documented layout, data
equal to the suite's, truncation vs termination, frame_skip, from_pixels, seeding, errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

if importlib.util.find_spec("dm_control") is None:  # not importorskip: the wrapper's import picks the GL backend
    pytest.skip("dm_control is not installed (pip install 'gpusim[dm_control]')", allow_module_level=True)

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import DMControlEnv, DMControlWrapper  # noqa: E402
from gpusim.envs.libs.dm_control import _import_dm_control  # noqa: E402
from gpusim.specs import Bounded  # noqa: E402

_import_dm_control("tests")
from dm_control import suite  # noqa: E402


def test_layout_matches_torchrl_docs():
    # TorchRL's documented cheetah layout: the observation dict's keys, float64, reward (1,) and
    # done/terminated/truncated (1,)
    env = DMControlEnv("cheetah", "run", seed=0)
    td = env.rand_step(env.reset())
    assert env.batch_size == ()
    assert td["action"].shape == (6,) and td["action"].dtype == torch.float64
    assert isinstance(env.action_spec, Bounded)
    nxt = td["next"]
    assert nxt["position"].shape == (8,) and nxt["velocity"].shape == (9,)
    assert nxt["position"].dtype == torch.float64
    assert nxt["reward"].shape == (1,) and nxt["reward"].dtype == torch.float64
    for flag in ("done", "terminated", "truncated"):
        assert nxt[flag].shape == (1,) and nxt[flag].dtype == torch.bool
    check_env_specs(env, seed=0)


def test_data_equals_the_suite():
    env = DMControlEnv("cartpole", "balance", seed=3)
    raw = suite.load("cartpole", "balance", task_kwargs={"random": np.random.RandomState(3)})
    ts = raw.reset()
    td = env.reset()
    assert np.array_equal(td["position"].numpy(), ts.observation["position"])
    torch.manual_seed(0)
    for _ in range(5):
        td = env.rand_action(td)
        ts = raw.step(td["action"].numpy())
        td = env.step(td)
        assert np.array_equal(td["next", "velocity"].numpy(), ts.observation["velocity"])
        assert td["next", "reward"].item() == ts.reward
        td = env._step_mdp(td)


def test_time_limit_is_a_truncation_and_frame_skip_sums_rewards():
    env = DMControlEnv("cartpole", "swingup", time_limit=0.05, seed=1)
    data = env.rollout(100)
    assert data.shape == (5,)
    assert data["next", "truncated"].squeeze(-1).tolist() == [False] * 4 + [True]
    assert not data["next", "terminated"].any()
    skip = DMControlEnv("cartpole", "swingup", time_limit=0.05, seed=1, frame_skip=2)
    plain = DMControlEnv("cartpole", "swingup", time_limit=0.05, seed=1)
    a, b = skip.reset(), plain.reset()
    action = torch.full((1,), 0.3, dtype=torch.float64)
    out = skip.step(a.set("action", action))["next"]
    r1 = plain.step(b.set("action", action))["next"]
    r2 = plain.step(plain._step_mdp(b).set("action", action))["next"]
    assert torch.allclose(out["reward"], r1["reward"] + r2["reward"])
    assert torch.equal(out["position"], r2["position"])
    assert skip.rollout(10).shape == (3,)  # 5 suite steps, 2 per env step


def test_from_pixels():
    env = DMControlEnv("cartpole", "balance", from_pixels=True, render_kwargs={"height": 24, "width": 32}, seed=0)
    assert set(env.observation_spec.keys()) == {"pixels"}
    td = env.rand_step(env.reset())
    assert td["next", "pixels"].shape == (24, 32, 3) and td["next", "pixels"].dtype == torch.uint8
    assert td["next", "pixels"].float().std() > 0  # an actual picture
    both = DMControlEnv(
        "cartpole", "balance", from_pixels=True, pixels_only=False, render_kwargs={"height": 8, "width": 8}
    )
    assert set(both.observation_spec.keys()) == {"pixels", "position", "velocity"}
    check_env_specs(both, seed=0)


def test_seeded_rollouts_repeat():
    def run(seed):
        env = DMControlEnv("pendulum", "swingup", seed=seed)
        torch.manual_seed(0)
        return env.rollout(5)

    assert (run(4) == run(4)).all()
    assert not torch.equal(run(4)["next", "orientation"], run(5)["next", "orientation"])


def test_wrapper_and_errors():
    env = DMControlWrapper(suite.load("pendulum", "swingup"))
    assert env.action_spec.shape == (1,)
    with pytest.raises(ValueError, match="unknown dm_control task"):
        DMControlEnv("cartpole", "fly")
    with pytest.raises(TypeError, match="dm_control Environment"):
        DMControlWrapper(object())
    with pytest.raises(ValueError, match="frame_skip"):
        DMControlWrapper(suite.load("pendulum", "swingup"), frame_skip=0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        DMControlWrapper(suite.load("pendulum", "swingup"), num_envs=2)


def test_close_closes_the_library_env_and_takes_raise_if_closed():
    env = DMControlEnv("cartpole", "balance", seed=0)
    env.close()
    assert env.is_closed
    env.close()  # closing again does nothing
    with pytest.raises(RuntimeError, match="already closed"):
        env.close(raise_if_closed=True)
