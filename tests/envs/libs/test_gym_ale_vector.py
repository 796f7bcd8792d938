"""ale-py's own vector env (``ale_py.vector_env.AtariVectorEnv``) under ``GymEnv(id, num_envs=N)``
and ``GymWrapper`` (issue 30): built with SAME_STEP by ``GymEnv`` (its final observations come
as one batched ``info["final_obs"]`` array), and accepted in its default NEXT_STEP mode through
its native ``reset(options={"reset_mask": ...})``, which also cancels the pending autoreset.

Compared with the real ``AtariVectorEnv`` driven directly (same seed, same actions). Episodes are
cut short by ``max_num_frames_per_episode`` so that they end within a few dozen steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

gym = pytest.importorskip("gymnasium")
ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)

from gpusim.envs.libs import GymEnv, GymWrapper  # noqa: E402

N, FRAMES, STEPS = 3, 80, 45  # 80 frames at frameskip 4: every episode is truncated after 20 steps
ACTIONS = np.random.default_rng(0).integers(0, 4, size=(STEPS, N))


def _gpusim_run(env):
    """``step_and_maybe_reset`` loop with the fixed actions; returns the stacked step outputs."""
    env.set_seed(0)
    td = env.reset()
    out = []
    for t in range(STEPS):
        td.set("action", torch.as_tensor(ACTIONS[t]))
        td, root = env.step_and_maybe_reset(td)
        out.append(td.clone())
        td = root
    return torch.stack(out, 1)


def _reference_run():
    """The same actions on a SAME_STEP AtariVectorEnv driven directly: per step the observation
    the step ends on (final ones for done rows) and the one the next step starts from."""
    env = gym.make_vec("ALE/Breakout-v5", num_envs=N, autoreset_mode="SameStep", max_num_frames_per_episode=FRAMES)
    env.reset(seed=0)  # GymWrapper.set_seed(0) then reset(): a seeded reset, then an unseeded one
    obs, _ = env.reset()
    first, finals, roots, dones = obs.copy(), [], [], []
    for t in range(STEPS):
        obs, _, terminated, truncated, info = env.step(ACTIONS[t].astype(np.int64))
        done = terminated | truncated
        final = obs.copy()
        if done.any():
            final[done] = info["final_obs"][done]
        finals.append(final), roots.append(obs.copy()), dones.append(done)
    env.close()
    return first, np.stack(finals, 1), np.stack(roots, 1), np.stack(dones, 1)


@pytest.fixture(scope="module")
def reference():
    return _reference_run()


def test_gym_env_builds_ale_vector_env_same_step():
    env = GymEnv("ALE/Breakout-v5", num_envs=N, max_num_frames_per_episode=FRAMES)
    try:
        assert type(env._env.unwrapped).__name__ == "AtariVectorEnv"
        assert env._adapter.mode == gym.vector.AutoresetMode.SAME_STEP
        assert env.observation_spec["observation"].dtype == torch.uint8
        assert env.batch_size == torch.Size([N])
    finally:
        env.close()


@pytest.mark.parametrize("autoreset", [None, "NextStep", "SameStep"])
def test_episodes_end_and_reset_like_the_library(autoreset, reference):
    first, finals, roots, dones = reference
    kwargs = {} if autoreset is None else {"autoreset_mode": autoreset}
    env = GymEnv(
        "ALE/Breakout-v5", num_envs=N, max_num_frames_per_episode=FRAMES, categorical_action_encoding=True, **kwargs
    )
    try:
        td = _gpusim_run(env)
    finally:
        env.close()
    done = td["next", "done"].squeeze(-1)
    # every row is truncated after 20 steps, then starts again (a NEXT_STEP autoreset left pending
    # after the masked reset would spend one more step and shift the later ends)
    expected = torch.tensor([(t + 1) % 20 == 0 for t in range(STEPS)]).expand(N, STEPS)
    assert torch.equal(done, expected)
    assert torch.equal(done, torch.from_numpy(dones))
    assert td["observation"].dtype == torch.uint8
    # the step that ends an episode carries the FINAL frame stack; the next step starts from the reset one
    assert torch.equal(td["next", "observation"], torch.from_numpy(finals))
    assert torch.equal(td["observation"][:, 0], torch.from_numpy(first))
    assert torch.equal(td["observation"][:, 1:], torch.from_numpy(roots[:, :-1]))
    ends = done.nonzero()
    assert ends.shape[0] == 2 * N
    for row, t in ends.tolist():  # final and reset observations differ (the reset restarts the game)
        assert not torch.equal(td["next", "observation"][row, t], td["observation"][row, t + 1])


def test_wrapped_next_step_vector_env_resets_through_its_reset_mask():
    vec = gym.make_vec("ALE/Breakout-v5", num_envs=2, max_num_frames_per_episode=40)
    assert vec.autoreset_mode == gym.vector.AutoresetMode.NEXT_STEP
    env = GymWrapper(vec, categorical_action_encoding=True)
    try:
        env.set_seed(1)
        td = env.reset()
        obs0 = td["observation"].clone()
        td = env.step(td.set("action", torch.zeros(2, dtype=torch.int64)))
        # a masked reset of row 1 only: row 0 keeps its current observation
        out = env.reset(td["next"].clone().set("_reset", torch.tensor([[False], [True]])))
        assert torch.equal(out["observation"][0], td["next", "observation"][0])
        assert not torch.equal(out["observation"][0], obs0[0])
        rollout = env.rollout(25, break_when_any_done=False)
        # 40 frames at frameskip 4: every episode ends after 10 steps
        assert torch.equal(rollout["next", "done"].squeeze(-1)[0], torch.tensor([(t + 1) % 10 == 0 for t in range(25)]))
    finally:
        env.close()
