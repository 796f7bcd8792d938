"""MOGymEnv/MOGymWrapper against the real MO-Gymnasium: vector rewards (TorchRL's layout), single and
vector envs, seeded rollouts, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

mo_gym = pytest.importorskip(
    "mo_gymnasium", reason="mo-gymnasium is not installed (pip install 'gpusim[mo_gymnasium]')"
)

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import GymWrapper, MOGymEnv, MOGymWrapper  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_vector_reward_layout_and_values():
    env = MOGymEnv("deep-sea-treasure-v0", categorical_action_encoding=True)
    raw = mo_gym.make("deep-sea-treasure-v0")
    assert env.reward_spec.shape == (2,) and env.observation_spec["observation"].shape == (2,)
    env.set_seed(0)
    raw.reset(seed=0)
    td = env.reset()
    torch.manual_seed(0)
    for _ in range(6):
        td = env.rand_action(td)
        obs, reward, term, trunc, _ = raw.step(int(td["action"]))
        td = env.step(td)
        assert np.array_equal(td["next", "reward"].numpy(), reward)
        assert np.array_equal(td["next", "observation"].numpy(), obs)
        td = env._step_mdp(td)
        if term or trunc:
            break
    check_env_specs(env, seed=0)


def test_vector_env_and_seeding():
    env = MOGymEnv("deep-sea-treasure-v0", num_envs=3)
    assert env.batch_size == (3,) and env.reward_spec.shape == (3, 2)
    check_env_specs(env, seed=0)

    def run():
        env.set_seed(4)
        torch.manual_seed(0)
        return env.rollout(30, break_when_any_done=False)

    a, b = run(), run()
    assert (a == b).all() and a["next", "reward"].shape == (3, 30, 2)
    assert a["next", "done"].any()  # treasures found or time out: auto-resets happened


def test_errors():
    import gymnasium as gym

    with pytest.raises(TypeError, match="reward_space"):
        MOGymWrapper(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="num_envs"):
        MOGymEnv("deep-sea-treasure-v0", num_envs=-1)
    assert GymWrapper(gym.make("CartPole-v1")).reward_spec.shape == (1,)  # the plain wrapper is unchanged
