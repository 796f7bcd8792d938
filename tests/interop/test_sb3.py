"""``gpusim.to_sb3``: a Stable-Baselines3 ``VecEnv`` with SB3's episode-end conventions, its
vector wrappers, seeding, attribute access, and a short PPO run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gpusim as gs

pytest.importorskip("stable_baselines3")
from gymnasium import spaces as gym_spaces  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize  # noqa: E402


def _cartpole(n: int = 4, seed: int = 0):
    return gs.make("CartPole-v1", num_envs=n, seed=seed)


def test_is_an_sb3_vec_env_with_the_envs_spaces():
    venv = gs.to_sb3(_cartpole())
    assert isinstance(venv, VecEnv)
    assert venv.num_envs == 4
    assert venv.observation_space.shape == (4,)
    assert venv.action_space.n == 2
    obs = venv.reset()
    assert obs.shape == (4, 4) and obs.dtype == np.float32


def test_episode_ends_follow_sb3s_conventions_against_the_envs_own_rollout():
    """The same seed and actions through gpusim's own loop and through the SB3 view: SB3 sees
    dones = terminated | truncated, the next episode's first observation, and the ended one's
    last observation in infos[i]["terminal_observation"]."""
    n, steps = 6, 120
    actions = torch.randint(0, 2, (steps, n), generator=torch.Generator().manual_seed(1))
    env = _cartpole(n, seed=3)
    td = env.reset()
    venv = gs.to_sb3(_cartpole(n, seed=3))
    obs = venv.reset()
    np.testing.assert_array_equal(obs, td["observation"].numpy())
    ended_rows = 0
    for t in range(steps):
        td["action"] = actions[t]
        stepped, td = env.step_and_maybe_reset(td)
        nxt = stepped["next"]
        obs, rewards, dones, infos = venv.step(actions[t].numpy())
        done = (nxt["terminated"] | nxt["truncated"]).reshape(n).numpy()
        np.testing.assert_array_equal(dones, done)
        np.testing.assert_array_equal(rewards, nxt["reward"].reshape(n).numpy())
        np.testing.assert_array_equal(obs, td["observation"].numpy())  # already the next episode's
        for i in range(n):
            if done[i]:
                ended_rows += 1
                np.testing.assert_array_equal(infos[i]["terminal_observation"], nxt["observation"][i].numpy())
                truncated = bool(nxt["truncated"][i] and not nxt["terminated"][i])
                assert infos[i]["TimeLimit.truncated"] is truncated
            else:
                assert "terminal_observation" not in infos[i]
    assert ended_rows > 10  # random actions end many CartPole episodes in 120 steps


def test_a_time_limit_is_reported_as_truncation():
    venv = gs.to_sb3(gs.make("Pendulum-v1", num_envs=3, seed=0))
    venv.reset()
    for t in range(200):
        obs, rewards, dones, infos = venv.step(np.zeros((3, 1), dtype=np.float32))
        assert dones.all() == (t == 199)
    assert all(info["TimeLimit.truncated"] is True for info in infos)


def test_vec_monitor_counts_the_episodes_gpusim_counts():
    n = 8
    venv = VecMonitor(gs.to_sb3(_cartpole(n, seed=5)))
    venv.reset()
    lengths, counts = [], np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(0)
    for _ in range(300):
        obs, rewards, dones, infos = venv.step(rng.integers(0, 2, n))
        counts += 1
        for i in np.flatnonzero(dones):
            assert infos[i]["episode"]["l"] == counts[i]
            assert infos[i]["episode"]["r"] == pytest.approx(float(counts[i]))  # +1 per CartPole step
            lengths.append(counts[i])
            counts[i] = 0
    assert len(lengths) > 20


def test_vec_normalize_normalizes_and_round_trips_its_statistics(tmp_path):
    venv = VecNormalize(gs.to_sb3(gs.make("Pendulum-v1", num_envs=16, seed=0)))
    venv.reset()
    for _ in range(100):
        obs, rewards, dones, infos = venv.step(np.random.default_rng(0).uniform(-2, 2, (16, 1)).astype(np.float32))
    assert np.abs(obs).max() <= venv.clip_obs
    assert np.abs(venv.obs_rms.mean).max() > 0  # statistics were gathered
    path = tmp_path / "vecnormalize.pkl"
    venv.save(str(path))
    loaded = VecNormalize.load(str(path), gs.to_sb3(gs.make("Pendulum-v1", num_envs=16, seed=0)))
    np.testing.assert_allclose(loaded.obs_rms.mean, venv.obs_rms.mean)


def test_seed_applies_once_at_the_next_reset():
    venv = gs.to_sb3(_cartpole(3))
    assert venv.seed(11) == [11, 12, 13]
    first = venv.reset()
    unseeded = venv.reset()  # the seed was used once: a new episode draw
    venv.seed(11)
    again = venv.reset()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, unseeded)


def test_attributes_and_methods_reach_the_gpusim_env():
    venv = gs.to_sb3(gs.make("Pendulum-v1", num_envs=3, seed=0, g=9.81))
    assert venv.has_attr("g") and not venv.has_attr("no_such_attribute")
    assert venv.get_attr("g") == [9.81] * 3
    assert venv.get_attr("g", indices=[1]) == [9.81]
    venv.set_attr("g", 4.0)
    assert venv.gpusim_env.base_env.g == 4.0
    assert venv.env_method("numel", indices=[0, 2]) == [3, 3]
    assert venv.env_is_wrapped(object) == [False] * 3
    with pytest.raises(ValueError, match=r"set_attr\('g', indices=\[0\]\).*share one gpusim env"):
        venv.set_attr("g", 1.0, indices=[0])
    with pytest.raises(AttributeError, match="no_such_attribute"):
        venv.get_attr("no_such_attribute")


def test_per_env_tensor_attributes_answer_each_envs_value():
    env = _cartpole(3)
    env.base_env.per_env_scale = torch.tensor([1.0, 2.0, 3.0])
    venv = gs.to_sb3(env)
    assert [float(v) for v in venv.get_attr("per_env_scale", indices=[0, 2])] == [1.0, 3.0]


def test_step_wait_without_actions_says_so():
    venv = gs.to_sb3(_cartpole())
    venv.reset()
    with pytest.raises(RuntimeError, match="no actions"):
        venv.step_wait()


def test_bad_actions_are_named():
    venv = gs.to_sb3(_cartpole(4))
    venv.reset()
    with pytest.raises(ValueError, match=r"shape \(3,\), expected \(4,\)"):
        venv.step(np.zeros(3, dtype=np.int64))


def test_to_sb3_rejects_what_is_not_a_gpusim_env():
    with pytest.raises(TypeError, match="to_sb3 takes a gpusim env"):
        gs.to_sb3(object())


def test_ppo_learns_cartpole_on_the_view():
    """A short PPO run: the mean return of the last episodes rises well above a random
    policy's (~22 on CartPole-v1)."""
    torch.manual_seed(0)
    venv = VecMonitor(gs.to_sb3(_cartpole(8, seed=0)))
    model = PPO("MlpPolicy", venv, n_steps=128, batch_size=256, n_epochs=4, learning_rate=3e-3, seed=0, device="cpu")
    model.learn(total_timesteps=16384)
    returns = [info["r"] for info in model.ep_info_buffer]
    assert len(returns) > 20
    assert np.mean(returns[-20:]) > 60


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_compiled_step_gives_the_eager_steps(backend):
    """``to_sb3(env, compile=...)`` steps through one compiled ``step_and_maybe_reset``: the same
    observations, rewards, dones and terminal observations as the eager view, across episode ends
    and a time limit (Pendulum ends every 200 steps). Traced and run eagerly, the data is the same
    bit for bit; Inductor's float code differs from eager torch in the last bits (docs/determinism.md),
    and over 200 steps Pendulum drifts by ~1e-5: floats are compared to 1e-4 there.

    With Inductor the view's steps run the compiled graph past Dynamo's guards
    (``CompiledRollout.step(trusted=True)``); the compiled view is given strided actions (a
    column of a wider array) every third step and, halfway, its physical constant is set on the base env directly
    (the eager view's through ``set_attr``): both must reach the graph as they do with the guards.
    """
    atol = 0.0 if backend == "eager" else 1e-4
    cases = (
        (lambda: _cartpole(5, seed=2), 150, "force_mag", 4.0),
        (lambda: gs.make("Pendulum-v1", num_envs=3, seed=1), 210, "g", 3.0),
    )
    for make, steps, constant, value in cases:
        eager = gs.to_sb3(make())
        options = {"verbose": False} if backend == "inductor" else {"verbose": False, "backend": "eager"}
        compiled = gs.to_sb3(make(), compile=options)
        assert compiled.compile_seconds == 0.0
        rng = np.random.default_rng(0)
        np.testing.assert_array_equal(eager.reset(), compiled.reset())
        ends = 0
        for t in range(steps):
            if t == steps // 2:
                eager.set_attr(constant, value)
                setattr(compiled.gpusim_env.base_env, constant, value)
            actions = np.stack([eager.action_space.sample() for _ in range(eager.num_envs)])
            if isinstance(eager.action_space, gym_spaces.Box):
                actions = rng.uniform(-2, 2, actions.shape).astype(np.float32)
            strided = np.stack([actions, actions], axis=1)[:, 0]
            assert not strided.flags.c_contiguous
            a, b = eager.step(actions), compiled.step(strided if t % 3 == 2 else actions)
            np.testing.assert_allclose(b[0], a[0], rtol=atol, atol=atol)
            np.testing.assert_allclose(b[1], a[1], rtol=atol, atol=atol)
            np.testing.assert_array_equal(b[2], a[2])
            for ia, ib in zip(a[3], b[3]):
                assert ia.keys() == ib.keys()
                if "terminal_observation" in ia:
                    ends += 1
                    np.testing.assert_allclose(
                        ib["terminal_observation"], ia["terminal_observation"], rtol=atol, atol=atol
                    )
                    assert ia["TimeLimit.truncated"] == ib["TimeLimit.truncated"]
        assert ends > 0
        assert compiled.compile_seconds > 0.0
        if backend == "inductor":  # most steps ran past the guards
            assert compiled.gymnasium_env._runner.direct_calls > steps // 2


def test_compile_is_checked():
    with pytest.raises(TypeError, match="compile must be a bool or a dict"):
        gs.to_sb3(_cartpole(), compile="yes")
    with pytest.raises(ValueError, match="compile needs autoreset_mode='same_step'"):
        gs.to_gymnasium(_cartpole(), autoreset_mode="next_step", compile=True)
