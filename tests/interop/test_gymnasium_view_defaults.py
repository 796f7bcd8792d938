"""``to_gymnasium`` defaults and pairings (issue 29, defect 7): the default observation leaves out
make's ``step_count`` counter; gymnasium's ``RecordEpisodeStatistics`` paired with the mode the
docs recommend (``next_step``) reports every episode's true length and return; the view reaches
the gpusim env's transform state (``VecNorm`` statistics) through gymnasium wrappers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import gpusim as gs
from gpusim.interop import to_gymnasium
from gpusim.transforms import TransformedEnv, VecNorm

N = 3


def _cartpole(**kwargs):
    return gs.make("CartPole-v1", num_envs=N, seed=5, **kwargs)


def _act(obs):
    obs = np.asarray(obs)
    return (obs[:, 2] + 0.02 * np.arange(len(obs)) * obs[:, 1] > 0).astype(np.int64)


def test_the_default_observation_is_the_task_observation():
    envs = to_gymnasium(_cartpole())
    assert "step_count" in envs.gpusim_env.observation_keys
    assert isinstance(envs.single_observation_space, gym.spaces.Box)
    assert envs.single_observation_space.shape == (4,)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (N, 4)
    # still there when asked for
    both = to_gymnasium(_cartpole(), observation_keys=["observation", "step_count"])
    assert sorted(both.single_observation_space.spaces) == ["observation", "step_count"]


def _gpusim_episodes(steps):
    """Per row, the (length, return) of each episode that ends within ``steps`` steps of the
    same policy on the gpusim env itself."""
    env = _cartpole()
    td = env.reset()
    length, ret = np.zeros(N, int), np.zeros(N)
    out = [[] for _ in range(N)]
    for _ in range(steps):
        td["action"] = torch.as_tensor(_act(td["observation"].numpy()))
        td, root = env.step_and_maybe_reset(td)
        length += 1
        ret += td["next", "reward"].squeeze(-1).numpy()
        for i in np.flatnonzero(td["next", "done"].squeeze(-1).numpy()):
            out[i].append((int(length[i]), float(ret[i])))
            length[i], ret[i] = 0, 0.0
        td = root
    return out


def test_record_episode_statistics_with_next_step_counts_every_episode():
    expected = _gpusim_episodes(300)
    assert all(len(rows) >= 3 for rows in expected)  # several episodes per row: the later ones count
    envs = RecordEpisodeStatistics(to_gymnasium(_cartpole(), autoreset_mode="next_step"))
    obs, _ = envs.reset(seed=5)
    got = [[] for _ in range(N)]
    steps = 0
    while any(len(g) < len(e) for g, e in zip(got, expected)):
        obs, rewards, terminations, truncations, infos = envs.step(_act(obs))
        steps += 1
        assert steps < 300 + 3 * max(map(len, expected)) + 10
        if "episode" in infos:
            for i in np.flatnonzero(infos["_episode"]):
                got[i].append((int(infos["episode"]["l"][i]), float(infos["episode"]["r"][i])))
    assert [g[: len(e)] for g, e in zip(got, expected)] == expected


def test_vecnorm_statistics_reach_through_the_wrappers():
    def view():
        env = TransformedEnv(_cartpole(), VecNorm(in_keys=["observation"], decay=1.0))
        return RecordEpisodeStatistics(to_gymnasium(env, autoreset_mode="next_step"))

    train, evaluation = view(), view()
    obs, _ = train.reset(seed=0)
    for _ in range(20):
        obs, *_ = train.step(_act(obs))
    state = train.unwrapped.state_dict()
    (key,) = state
    assert state[key]["stats"]["observation_count"].item() == pytest.approx(N * 21)  # reset + 20 steps
    evaluation.unwrapped.load_state_dict(state)
    assert torch.equal(
        evaluation.unwrapped.state_dict()[key]["stats"]["observation_sum"], state[key]["stats"]["observation_sum"]
    )
    # the evaluation view normalizes with the training statistics
    norm = evaluation.unwrapped.gpusim_env.transform[-1]
    assert torch.equal(norm.stats["observation_ssq"], train.unwrapped.gpusim_env.transform[-1].stats["observation_ssq"])
