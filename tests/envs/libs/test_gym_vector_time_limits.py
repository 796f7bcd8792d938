"""Episodes of a gymnasium vector env that end in EVERY row on the same step (a time limit after a
common reset, ``num_envs=1``, fixed-length games) report ``done`` (issue 29, defect 8).

The cause: the adapter's pending-reset array was the very array of the step's done flags, which
the step's ``"done"`` tensor views; a reset of every row cleared it in place, so
``step_and_maybe_reset``/``rollout`` recorded ``done=False`` (with ``terminated``/``truncated``
True) although the episode ended and was reset. Partial resets allocated a new array, so only
steps on which all rows ended were hit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from gpusim.envs.libs import GymEnv, GymWrapper


def _episode_ends(env, steps):
    """``step_and_maybe_reset`` loop; per step the ``(done, terminated, truncated)`` flags as
    handed out (kept without copies: later steps must not change them)."""
    torch.manual_seed(0)
    env.set_seed(0)
    td = env.reset()
    flags = []
    for _ in range(steps):
        td, root = env.step_and_maybe_reset(env.rand_action(td))
        flags.append(tuple(td["next", k] for k in ("done", "terminated", "truncated")))
        td = root
    done, terminated, truncated = (torch.stack([f[i] for f in flags]).squeeze(-1) for i in range(3))
    return done, terminated, truncated


@pytest.mark.parametrize("num_envs", [1, 3])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_time_limit_reached_by_every_row_is_done(num_envs, mode):
    # CartPole cannot fall within 5 steps: every row is truncated at steps 5, 10, 15
    env = GymEnv("CartPole-v1", num_envs=num_envs, vectorization_mode=mode, max_episode_steps=5)
    try:
        done, terminated, truncated = _episode_ends(env, 15)
    finally:
        env.close()
    expected = torch.tensor([(t + 1) % 5 == 0 for t in range(15)]).unsqueeze(-1).expand(15, num_envs)
    assert torch.equal(truncated, expected)
    assert not terminated.any()
    assert torch.equal(done, expected)


@pytest.mark.parametrize("autoreset", ["DISABLED", "SAME_STEP", "NEXT_STEP"])
def test_every_autoreset_mode_reports_a_common_time_limit(autoreset):
    vec = gym.make_vec(
        "Pendulum-v1",
        num_envs=2,
        vectorization_mode="sync",
        max_episode_steps=4,
        vector_kwargs={"autoreset_mode": getattr(gym.vector.AutoresetMode, autoreset)},
    )
    env = GymWrapper(vec)
    td = env.rollout(12, break_when_any_done=False)
    expected = torch.tensor([(t + 1) % 4 == 0 for t in range(12)]).expand(2, 12)
    assert torch.equal(td["next", "done"].squeeze(-1), expected)
    assert torch.equal(td["next", "truncated"].squeeze(-1), expected)
    # the root after each end is a reset observation: Pendulum starts at |theta_dot| <= 1
    ends = torch.nonzero(expected[0]).squeeze(-1) + 1
    ends = ends[ends < 12]
    assert (td["observation"][:, ends, 2].abs() <= 1).all()


def test_minatar_freeway_ends_every_row_as_gymnasium_does():
    minatar_gym = pytest.importorskip("minatar.gym")
    minatar_gym.register_envs()
    n, steps = 4, 2_510
    # the reference: gymnasium's own vector env (Freeway's 2,500-frame limit is inside the game)
    ref = gym.make_vec("MinAtar/Freeway-v1", n)
    ref.reset(seed=0)
    ref_done = []
    for _ in range(steps):
        _, _, term, trunc, _ = ref.step(ref.action_space.sample())
        ref_done.append(term | trunc)
    ref.close()
    ref_done = torch.as_tensor(np.stack(ref_done))
    env = GymEnv("MinAtar/Freeway-v1", num_envs=n)
    done, terminated, _ = _episode_ends(env, steps)
    env.close()
    first = [int(torch.nonzero(done[:, i])[0]) + 1 for i in range(n)]
    assert first == [2_501] * n
    assert torch.equal(done, ref_done)
    assert torch.equal(done, terminated)
