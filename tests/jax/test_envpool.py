"""MultiThreadedEnv/MultiThreadedEnvWrapper against the real EnvPool: layout, data equal to the pool's,
partial resets through "_reset", auto-reset in step_and_maybe_reset, seeding, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

envpool = pytest.importorskip("envpool", reason="envpool is not installed (pip install 'gpusim[envpool]')")

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import MultiThreadedEnv, MultiThreadedEnvWrapper  # noqa: E402
from gpusim.specs import Bounded, Categorical, OneHot  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _pool(name, n, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return envpool.make(name, env_type="gymnasium", num_envs=n, seed=seed)


def test_layout():
    env = MultiThreadedEnv(3, "CartPole-v1", create_env_kwargs={"seed": 0})
    assert env.batch_size == (3,) and env.num_workers == 3
    assert isinstance(env.action_spec, OneHot) and env.action_spec.shape == (3, 2)
    td = env.rand_step(env.reset())
    assert td["next", "observation"].shape == (3, 4) and td["next", "observation"].dtype == torch.float32
    assert td["next", "reward"].shape == (3, 1) and td["next", "reward"].dtype == torch.float32
    for flag in ("done", "terminated", "truncated"):
        assert td["next", flag].shape == (3, 1)
    check_env_specs(env, seed=0)
    cat = MultiThreadedEnv(2, "CartPole-v1", categorical_action_encoding=True)
    assert isinstance(cat.action_spec, Categorical) and cat.action_spec.shape == (2,)
    cont = MultiThreadedEnvWrapper(_pool("Pendulum-v1", 2, 0))
    assert isinstance(cont.action_spec, Bounded) and cont.action_spec.shape == (2, 1)
    check_env_specs(cont)


def test_data_equals_the_pool_with_explicit_resets():
    n = 4
    env = MultiThreadedEnv(n, "CartPole-v1", categorical_action_encoding=True, create_env_kwargs={"seed": 5})
    raw = _pool("CartPole-v1", n, 5)
    obs, _ = raw.reset()
    td = env.reset()
    assert np.array_equal(td["observation"].numpy(), obs)
    torch.manual_seed(0)
    resets = 0
    for _ in range(40):
        td = env.rand_action(td)
        obs, rew, term, trunc, _ = raw.step(td["action"].numpy())
        stepped, td = env.step_and_maybe_reset(td)
        assert np.array_equal(stepped["next", "observation"].numpy(), obs)
        assert np.array_equal(stepped["next", "reward"].squeeze(-1).numpy(), rew)
        assert np.array_equal(stepped["next", "terminated"].squeeze(-1).numpy(), term)
        done = term | trunc
        if done.any():  # the wrapper resets the finished rows: the next root starts new episodes
            resets += 1
            first, _ = raw.reset(np.flatnonzero(done).astype(np.int32))
            assert np.array_equal(td["observation"].numpy()[done], first)
            assert np.array_equal(td["observation"].numpy()[~done], obs[~done])
            assert not td["done"].any()
    assert resets > 0


def test_partial_reset_through_reset_key():
    env = MultiThreadedEnv(3, "CartPole-v1", create_env_kwargs={"seed": 0})
    root = env._step_mdp(env.rand_step(env.reset()))
    mask = torch.tensor([[False], [True], [False]])
    out = env.reset(root.clone().set("_reset", mask))
    assert torch.equal(out["observation"][[0, 2]], root["observation"][[0, 2]])
    assert not torch.equal(out["observation"][1], root["observation"][1])
    assert "_reset" not in out.keys()
    nothing = env.reset(root.clone().set("_reset", torch.zeros(3, 1, dtype=torch.bool)))
    assert torch.equal(nothing["observation"], root["observation"])


def test_seeding():
    env = MultiThreadedEnv(2, "CartPole-v1")

    def run():
        env.set_seed(11)
        torch.manual_seed(0)
        return env.rollout(20, break_when_any_done=False)

    assert (run() == run()).all()
    with pytest.raises(RuntimeError, match="seeded when it is built"):
        MultiThreadedEnvWrapper(_pool("CartPole-v1", 2, 0)).set_seed(1)


def test_errors():
    with pytest.raises(ValueError, match="unknown EnvPool task"):
        MultiThreadedEnv(2, "NoSuchTask-v0")
    with pytest.raises(TypeError, match="EnvPool pool"):
        MultiThreadedEnvWrapper(object())
    with pytest.raises(ValueError, match="frame_skip"):
        MultiThreadedEnv(2, "CartPole-v1", frame_skip=2)
    with pytest.raises(ValueError, match="num_workers"):
        MultiThreadedEnv(0, "CartPole-v1")
