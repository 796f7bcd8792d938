"""``gpusim.to_gymnasium``: a ``gymnasium.vector.VectorEnv`` over a gpusim env: spaces from specs,
the three auto-reset modes against gpusim's own rollouts, gymnasium's vector wrappers, torch
mode without copies, partial resets, rendering and misuse errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import ClipAction, NormalizeObservation, RecordEpisodeStatistics, RescaleAction
from tensordict import TensorDict

import gpusim as gs
from gpusim.interop import to_gymnasium
from gpusim.specs import Bounded, Categorical, Composite, Unbounded
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv

N = 4


def cartpole(seed=3, **kwargs):
    return gs.make("CartPole-v1", num_envs=N, seed=seed, **kwargs)


def action_of(obs):
    """A deterministic CartPole policy on numpy or torch observations (varied by row)."""
    obs = torch.as_tensor(np.asarray(obs))
    rows = torch.arange(obs.shape[0], dtype=obs.dtype)
    return ((obs[..., 2] + 0.01 * rows * obs[..., 0]) > 0).long()


def policy(td):
    return td.set("action", action_of(td["observation"]))


def view(env, **kwargs):
    kwargs.setdefault("observation_keys", "observation")
    return to_gymnasium(env, **kwargs)


# ---------------------------------------------------------------------------------- spaces
def test_multi_agent_envs_are_refused_naming_the_rewards():
    with pytest.raises(ValueError, match=r"the reward \('agents', 'reward'\) has shape \[3, 3, 1\], expected \[3, 1\]"):
        to_gymnasium(gs.make("MPE/simple_spread-v0", num_envs=3, seed=0))
    with pytest.raises(ValueError, match=r"one reward per env; the env has reward entries \[\('adversary', 'reward'\)"):
        to_gymnasium(gs.make("MPE/simple_tag-v0", num_envs=3, seed=0))


# single-agent ids: a gymnasium vector env has one reward per env (TicTacToe's two players and the
# MPE scenarios' agents are refused, see test_multi_agent_envs_are_refused_naming_the_rewards)
@pytest.mark.parametrize("env_id", [i for i in gs.registered_ids() if i != "TicTacToe-v0" and not i.startswith("MPE/")])
def test_spaces_hold_the_data(env_id):
    envs = to_gymnasium(gs.make(env_id, num_envs=3, seed=0))
    assert envs.num_envs == 3 and envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    # the observations of the task only: make's time-limit counter (step_count) is not one
    spec = envs.gpusim_env.full_observation_spec
    task = [k for k in envs.gpusim_env.observation_keys if k != "step_count"]
    if len(task) == 1:
        assert envs.single_observation_space.shape == spec[task[0]].shape[1:]
    else:
        assert sorted(envs.single_observation_space.spaces) == sorted(task)
    assert envs.observation_space == gym.vector.utils.batch_space(envs.single_observation_space, 3)
    obs, infos = envs.reset(seed=0)
    assert envs.observation_space.contains(obs) and infos == {}
    envs.action_space.seed(0)
    for _ in range(5):
        obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
        assert envs.observation_space.contains(obs)
        assert rewards.shape == (3,) and rewards.dtype == np.float64
        assert terminations.dtype == truncations.dtype == np.bool_


def test_space_kinds():
    envs = view(cartpole())
    assert envs.single_observation_space == gym.spaces.Box(
        np.array([-4.8, -np.inf, -0.41887903, -np.inf], np.float32),
        np.array([4.8, np.inf, 0.41887903, np.inf], np.float32),
    )
    assert envs.single_action_space == gym.spaces.Discrete(2) and envs.action_space == gym.spaces.MultiDiscrete([2] * N)
    pendulum = view(gs.make("Pendulum-v1", num_envs=2))
    assert pendulum.single_action_space == gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


class SpecZoo(gs.EnvBase):
    """One observation of each spec kind and a one-hot action; the step echoes the action."""

    functional_step = True

    def __init__(self):
        super().__init__(batch_size=[2])
        B = (2,)
        self.observation_spec = Composite(
            box=Bounded(-1.0, 1.0, shape=(2, 3)),
            free=Unbounded((2, 2)),
            count=Unbounded((2, 1), dtype=torch.int64),
            onehot=gs.OneHot(3, shape=(2, 3)),
            multi=gs.MultiCategorical([2, 3], shape=(2, 2)),
            bits=gs.Binary(2, shape=(2, 2)),
            group=Composite(cat=Categorical(4, shape=(2,)), shape=B),
            shape=B,
        )
        self.action_spec = gs.OneHot(3, shape=(2, 3))

    def _reset(self, td):
        return self.full_observation_spec.zero().update({"done": torch.zeros(2, 1, dtype=torch.bool)})

    def _step(self, td):
        out = self.full_observation_spec.zero()
        out["onehot"] = td["action"]
        return out.update({"reward": torch.ones(2, 1), "done": torch.zeros(2, 1, dtype=torch.bool)})

    def _set_seed(self, seed):
        pass


def test_every_spec_kind_and_one_hot_conversions():
    envs = to_gymnasium(SpecZoo())
    space = envs.single_observation_space
    kinds = {k: type(v).__name__ for k, v in space.spaces.items()}
    assert kinds == {
        "bits": "MultiBinary",
        "box": "Box",
        "count": "Box",
        "free": "Box",
        "group": "Dict",
        "multi": "MultiDiscrete",
        "onehot": "Discrete",
    }
    assert space["count"].dtype == np.int64 and space["group"]["cat"] == gym.spaces.Discrete(4)
    obs, _ = envs.reset()
    assert envs.observation_space.contains(obs)
    obs, *_ = envs.step(np.array([2, 1]))  # Discrete actions become one-hot for the env
    assert obs["onehot"].tolist() == [2, 1]  # and one-hot observations indices for gymnasium


# ---------------------------------------------------------------------------------- same data as gpusim
def test_same_step_matches_gpusim_rollout():
    T = 120
    ours = cartpole().rollout(T, policy, break_when_any_done=False)
    envs = view(cartpole())
    obs, _ = envs.reset(seed=3)  # the same seed as the env's: the same episodes
    ended_rows = 0
    for t in range(T):
        assert np.array_equal(obs, ours["observation"][:, t].numpy())
        obs, rewards, terminations, truncations, infos = envs.step(action_of(obs).numpy())
        nxt = ours["next"][:, t]
        assert np.array_equal(rewards, nxt["reward"].squeeze(-1).double().numpy())
        assert np.array_equal(terminations, nxt["terminated"].squeeze(-1).numpy())
        assert np.array_equal(truncations, nxt["truncated"].squeeze(-1).numpy())
        ended = terminations | truncations
        if ended.any():
            assert np.array_equal(infos["_final_obs"], ended) and np.array_equal(infos["_final_info"], ended)
            for i in np.flatnonzero(ended):
                assert np.array_equal(infos["final_obs"][i], nxt["observation"][i].numpy())
            assert all(infos["final_obs"][i] is None for i in np.flatnonzero(~ended))
            ended_rows += int(ended.sum())
        else:
            assert "final_obs" not in infos
    assert ended_rows > N


def _episodes(envs, steps, skip_reset_steps):
    """Per row, the observation sequence of each episode (the reset step of NEXT_STEP excluded)."""
    obs, _ = envs.reset(seed=3)
    episodes = [[[obs[i]]] for i in range(N)]
    fresh = np.zeros(N, dtype=bool)
    for _ in range(steps):
        obs, rewards, terminations, truncations, infos = envs.step(action_of(obs).numpy())
        ended = terminations | truncations
        for i in range(N):
            if skip_reset_steps and fresh[i]:  # NEXT_STEP: the step after an end is a reset
                assert rewards[i] == 0.0 and not ended[i]
                episodes[i].append([obs[i]])
                continue
            final = infos["final_obs"][i] if (not skip_reset_steps and ended[i]) else obs[i]
            episodes[i][-1].append(final)
            if ended[i] and not skip_reset_steps:
                episodes[i].append([obs[i]])
        fresh = ended
    return episodes


@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_next_step_gives_the_same_episodes_as_same_step(mode):
    same = _episodes(view(cartpole()), 150, skip_reset_steps=False)
    nxt_envs = view(cartpole(auto_reset_mode=mode), autoreset_mode="next_step")
    assert nxt_envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    nxt = _episodes(nxt_envs, 150, skip_reset_steps=True)
    for i in range(N):
        complete = min(len(same[i]), len(nxt[i])) - 1  # both saw these episodes end
        assert complete >= 2
        for a, b in zip(same[i][:complete], nxt[i][:complete]):
            assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_disabled_mode_and_reset_mask():
    envs = view(cartpole(), autoreset_mode="disabled")
    ours = cartpole()
    obs, _ = envs.reset(seed=3)
    td = ours.reset()
    for _ in range(3):
        obs, *_ = envs.step(action_of(obs).numpy())
        td = ours._step_mdp(ours.step(policy(td)))
    assert np.array_equal(obs, td["observation"].numpy())
    mask = np.array([True, False, False, True])
    before = obs
    obs, infos = envs.reset(options={"reset_mask": mask})
    td["_reset"] = torch.as_tensor(mask).unsqueeze(-1)
    td = ours.reset(td)
    assert np.array_equal(obs, td["observation"].numpy()) and infos == {}
    assert not np.array_equal(obs[mask], before[mask]) and np.array_equal(obs[~mask], before[~mask])


# ---------------------------------------------------------------------------------- wrappers
def test_record_episode_statistics_counts_gpusim_episodes():
    ours = cartpole().rollout(100, policy, break_when_any_done=False)
    done = ours["next", "done"].squeeze(-1)
    envs = RecordEpisodeStatistics(view(cartpole()))
    obs, _ = envs.reset(seed=3)
    lengths = []
    for _ in range(100):
        obs, rewards, terminations, truncations, infos = envs.step(action_of(obs).numpy())
        if "episode" in infos:
            lengths += infos["episode"]["l"][infos["_episode"]].tolist()
    expected = []
    for t in range(100):  # gpusim's episode lengths, in the order they end
        for i in range(N):
            if done[i, t]:
                expected.append(int(ours["next", "step_count"][i, t]))
    assert lengths == expected and len(lengths) > N


def test_normalize_observation_needs_next_step():
    with pytest.raises(ValueError, match="NEXT_STEP"):
        NormalizeObservation(view(cartpole()))
    envs = NormalizeObservation(view(cartpole(), autoreset_mode="next_step"))
    obs, _ = envs.reset(seed=0)
    for _ in range(50):
        obs, *_ = envs.step(action_of(obs).numpy())
    assert obs.shape == (N, 4) and envs.obs_rms.count > 50 * N
    assert np.abs(obs).max() < 10


def test_clip_and_rescale_action_reach_the_env():
    def pendulum():
        return gs.make("Pendulum-v1", num_envs=2, seed=0)

    low, high = np.full(1, -1.0, np.float32), np.full(1, 1.0, np.float32)
    envs = ClipAction(RescaleAction(view(pendulum()), min_action=low, max_action=high))
    obs, _ = envs.reset(seed=0)
    obs, *_ = envs.step(np.array([[0.5], [-3.0]], dtype=np.float32))
    ours = pendulum()
    ours.set_seed(0)
    # clipped to [-1, 1] (-3 -> -1), then rescaled to the env's [-2, 2] (0.5 -> 1, -1 -> -2)
    td = ours.reset().set("action", torch.tensor([[1.0], [-2.0]]))
    assert np.allclose(obs, ours.step(td)["next", "observation"].numpy())


# ---------------------------------------------------------------------------------- torch mode, copies
def test_torch_mode_hands_the_env_tensors_through():
    envs = view(cartpole(), as_torch=True)
    obs, _ = envs.reset(seed=3)
    root = envs.unwrapped._td
    assert isinstance(obs, torch.Tensor) and obs.data_ptr() == root["observation"].data_ptr()
    obs, rewards, terminations, truncations, infos = envs.step(action_of(obs))
    assert obs.data_ptr() == envs.unwrapped._td["observation"].data_ptr()
    assert rewards.shape == (N,) and terminations.dtype == torch.bool and obs.device == torch.device("cpu")
    assert infos["_final_obs"].shape == (N,) and infos["final_obs"].shape == (N, 4)


def test_numpy_copies_protect_the_env_state():
    envs = view(cartpole())
    obs, _ = envs.reset(seed=3)
    obs[:] = 100.0
    assert (envs.unwrapped._td["state"].abs() < 1).all()
    shared = view(cartpole(), copy=False)
    obs, _ = shared.reset(seed=3)
    assert np.shares_memory(obs, shared.unwrapped._td["state"].numpy())


# ---------------------------------------------------------------------------------- render, close
class Pixels(gs.EnvBase):
    def __init__(self):
        super().__init__(batch_size=[2])
        self.observation_spec = Composite(pixels=Bounded(0, 255, shape=(2, 4, 5, 3), dtype=torch.uint8), shape=(2,))
        self.action_spec = Categorical(2, shape=(2,))

    def _reset(self, td):
        pixels = torch.arange(2 * 4 * 5 * 3, dtype=torch.uint8).reshape(2, 4, 5, 3)
        return TensorDict({"pixels": pixels, "done": torch.zeros(2, 1, dtype=torch.bool)}, [2])

    def _step(self, td):
        out = self._reset(td)
        return out.set("reward", torch.zeros(2, 1))

    def _set_seed(self, seed):
        pass


def test_render_and_close():
    envs = to_gymnasium(Pixels(), render_mode="rgb_array")
    assert envs.metadata["render_modes"] == ["rgb_array"] and envs.render() is None
    obs, _ = envs.reset()
    frames = envs.render()
    assert len(frames) == 2 and all(np.array_equal(f, o) for f, o in zip(frames, obs))
    assert to_gymnasium(Pixels()).render() is None
    envs.close()
    assert envs.gpusim_env.is_closed and envs.closed


# ---------------------------------------------------------------------------------- errors
def test_misuse_errors_name_the_value():
    with pytest.raises(TypeError, match="gpusim env"):
        to_gymnasium(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match=r"batch_size \[2, 3\]"):
        to_gymnasium(gs.CartPoleEnv(batch_size=[2, 3]))
    with pytest.raises(ValueError, match="reward entries"):
        to_gymnasium(gs.make("TicTacToe-v0", num_envs=2))
    with pytest.raises(ValueError, match="reward"):
        to_gymnasium(NestedCountingEnv(batch_size=[2]))
    with pytest.raises(KeyError, match="'velocity' is not an observation"):
        view(cartpole(), observation_keys="velocity")
    with pytest.raises(ValueError, match="autoreset_mode must be"):
        view(cartpole(), autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="functional_step"):
        to_gymnasium(CountingEnv(batch_size=[2]), autoreset_mode="next_step")
    with pytest.raises(ValueError, match="render_mode"):
        view(cartpole(), render_mode="human")
    with pytest.raises(KeyError, match="'pixels'"):  # no frames, and no drawing to make them
        to_gymnasium(CountingEnv(batch_size=[2]), render_mode="rgb_array")
    assert view(cartpole(), render_mode="rgb_array").metadata["render_modes"] == ["rgb_array"]  # drawn
    envs = view(cartpole())
    with pytest.raises(RuntimeError, match="call reset\\(\\) first"):
        envs.reset(options={"reset_mask": np.ones(N, dtype=bool)})
    with pytest.raises(RuntimeError, match="before reset"):
        envs.step(np.zeros(N, dtype=np.int64))
    with pytest.raises(TypeError, match="one int"):
        envs.reset(seed=[1, 2, 3, 4])
    envs.reset()
    with pytest.raises(ValueError, match=r"'action' has shape \(2,\), expected \(4,\)"):
        envs.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="unknown options"):
        envs.reset(options={"mask": 1})
    with pytest.raises(ValueError, match="bool array of shape"):
        envs.reset(options={"reset_mask": np.ones(N)})
    with pytest.raises(ValueError, match="at least one"):
        envs.reset(options={"reset_mask": np.zeros(N, dtype=bool)})


def test_compiled_view_with_tensor_actions():
    """``as_torch=True, compile=...``: tensor actions (given as is, not converted) run past
    Dynamo's guards only when laid out as traced. Another dtype is refused by name, as the eager
    view refuses it, rather than reaching the graph; a non-contiguous tensor is copied. The data
    equals the eager view's throughout."""
    make = lambda: gs.make("CartPole-v1", num_envs=4, seed=0)  # noqa: E731
    eager = to_gymnasium(make(), observation_keys="observation", as_torch=True)
    compiled = to_gymnasium(make(), observation_keys="observation", as_torch=True, compile={"verbose": False})
    torch.testing.assert_close(eager.reset(seed=0)[0], compiled.reset(seed=0)[0])
    gen = torch.Generator().manual_seed(0)
    for t in range(40):
        actions = torch.randint(0, 2, (4,), generator=gen)
        given = torch.stack([actions, actions], 1)[:, 0] if t % 5 == 4 else actions  # strided every fifth
        a, b = eager.step(actions), compiled.step(given)
        for x, y in zip(a[:4], b[:4]):
            torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-5)
    assert compiled._runner.direct_calls > 20
    wrong = torch.zeros(4, dtype=torch.int32)
    for envs in (eager, compiled):
        with pytest.raises(TypeError, match=r"the action 'action' has dtype torch.int32, expected torch.int64"):
            envs.step(wrong)
