"""GymEnv/GymWrapper: construction, kwargs, pixels, frame skip, info readers, seeds, backends,
missing dependencies."""

from __future__ import annotations

import sys

import gymnasium as gym
import pytest
import torch

from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs import GymEnv, GymWrapper, default_info_dict_reader, gym_backend, set_gym_backend
from gpusim.specs import Unbounded
from tests.envs.libs.gym_envs import SpaceEnv, sync_vector


def test_gym_env_basics_and_kwargs():
    env = GymEnv("Pendulum-v1", g=9.81)
    assert env.g == 9.81 and env.batch_size == torch.Size([])
    assert env.action_spec.shape == (1,) and env.observation_spec["observation"].shape == (3,)
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    assert env.reward_spec.shape == (1,) and env.reward_spec.dtype == torch.float32
    check_env_specs(env, seed=0)
    env2 = GymEnv("Pendulum-v1", g=2.0, max_episode_steps=3)
    assert env2.g == 2.0
    td = env2.rollout(10)
    assert td.shape == (3,) and bool(td["next", "truncated"][-1]) and bool(td["next", "done"][-1])
    assert not bool(td["next", "terminated"][-1])


def test_gym_env_rejects_unknown_kwargs():
    with pytest.raises(TypeError, match="not_a_kwarg"):
        GymEnv("Pendulum-v1", not_a_kwarg=1)
    with pytest.raises(ValueError, match="num_envs"):
        GymEnv("Pendulum-v1", num_envs=-1)
    with pytest.raises(ValueError, match="vectorization_mode"):
        GymEnv("CartPole-v1", num_envs=2, vectorization_mode="threads")
    with pytest.raises(ValueError, match="batch_size"):
        GymWrapper(SpaceEnv(), batch_size=[2])
    with pytest.raises(TypeError, match="gymnasium.Env"):
        GymWrapper(object())


def test_categorical_action_encoding_cartpole():
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    assert env.action_spec.n == 2 and env.action_spec.shape == ()
    check_env_specs(env, seed=0)
    env = GymEnv("CartPole-v1")
    assert env.action_spec.shape == (2,) and env.action_spec.dtype == torch.int64


def test_pixels_only_and_with_state():
    env = GymWrapper(SpaceEnv(render_mode="rgb_array", ep_len=6), from_pixels=True)
    assert env.observation_keys == ["pixels"]
    assert env.observation_spec["pixels"].shape == (6, 5, 3) and env.observation_spec["pixels"].dtype == torch.uint8
    check_env_specs(env, seed=0)
    td = env.rollout(3)
    assert td["next", "pixels"][:, 0, 0, 0].tolist() == [1, 2, 3]  # the frame follows the env's t
    env = GymWrapper(SpaceEnv(render_mode="rgb_array", ep_len=6), from_pixels=True, pixels_only=False)
    assert set(env.observation_keys) == {"pixels", "observation"}
    check_env_specs(env, seed=0)
    venv = GymWrapper(sync_vector(2, render_mode="rgb_array", ep_lens=[6, 6]), from_pixels=True)
    assert venv.observation_spec["pixels"].shape == (2, 6, 5, 3)
    check_env_specs(venv, seed=0)


def test_pixels_need_rgb_array():
    with pytest.raises(ValueError, match="rgb_array"):
        GymWrapper(SpaceEnv(), from_pixels=True)
    with pytest.raises(ValueError, match="rgb_array"):
        GymEnv("CartPole-v1", from_pixels=True, render_mode="human")


def test_frame_skip():
    env = GymWrapper(SpaceEnv(ep_len=7), frame_skip=3)
    td = env.rollout(5)
    # t goes 3, 6, 7 (the episode ends inside the third repeat); rewards sum t over the repeats
    assert td["next", "observation"][:, 1].tolist() == [3.0, 6.0, 7.0]
    assert td["next", "reward"].squeeze(-1).tolist() == [6.0, 15.0, 7.0]
    assert td["next", "done"].squeeze(-1).tolist() == [False, False, True]
    with pytest.raises(ValueError, match="frame_skip"):
        GymWrapper(sync_vector(2), frame_skip=2)
    with pytest.raises(ValueError, match="frame_skip"):
        GymWrapper(SpaceEnv(), frame_skip=0)


@pytest.mark.parametrize("vector", [False, True])
def test_info_dict_reader(vector):
    base = sync_vector(2, ep_lens=[4, 5]) if vector else SpaceEnv(ep_len=4)
    env = GymWrapper(base)
    env.set_info_dict_reader(default_info_dict_reader(["x"], spec=[Unbounded(())]))
    assert "x" in env.observation_keys
    check_env_specs(env, seed=0)
    td = env.rollout(3)
    start = td["observation"][..., 0, 0]
    expected = start.unsqueeze(-1) + 0.5 * torch.arange(1, 4)
    assert torch.allclose(td["next", "x"], expected)
    assert torch.equal(td["x"][..., 0], start)  # reset infos are read too
    with pytest.raises(ValueError, match="already an observation key"):
        env.set_info_dict_reader(default_info_dict_reader(["x"]))


def test_info_reader_missing_keys_are_zero_and_auto_register():
    env = GymWrapper(SpaceEnv(ep_len=4))
    env.set_info_dict_reader(default_info_dict_reader(["x", "absent"], spec={"absent": Unbounded((2,))}))
    td = env.reset()
    assert torch.equal(td["absent"], torch.zeros(2))
    check_env_specs(env, seed=0)
    env = GymWrapper(sync_vector(2, ep_lens=[4, 5]))
    env.set_info_dict_reader()  # discovers "x" (float) and "count" (int)
    assert env.observation_spec["count"].dtype == torch.int64
    assert env.observation_spec["x"].shape == (2,)
    check_env_specs(env, seed=0)
    td = env.rollout(2)
    assert td["next", "count"].tolist() == [[1, 2], [1, 2]]


def test_info_reader_validation():
    with pytest.raises(ValueError, match="same length"):
        default_info_dict_reader(["a", "b"], spec=[Unbounded(())])
    with pytest.raises(TypeError, match="info_spec"):
        GymWrapper(SpaceEnv()).set_info_dict_reader(lambda info, td: td)


@pytest.mark.parametrize("num_envs", [0, 3])
def test_seed_reproducible(num_envs):
    def run(seed):
        env = GymEnv("CartPole-v1", num_envs=num_envs)
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(30, break_when_any_done=False)

    a, b, c = run(3), run(3), run(4)
    assert torch.equal(a["observation"], b["observation"])
    assert torch.equal(a["next", "done"], b["next", "done"])
    assert not torch.equal(a["observation"], c["observation"])


def test_set_seed_returns_next_seed_and_seeds_action_space():
    env = GymEnv("CartPole-v1")
    assert env.set_seed(5) == env.set_seed(5) != 5
    s1 = env.action_space.sample()
    env.set_seed(5)
    assert env.action_space.sample() == s1


def test_set_gym_backend_and_gym_backend():
    assert gym_backend() is gym
    assert gym_backend("spaces") is gym.spaces
    with set_gym_backend("gymnasium"):
        assert gym_backend().__name__ == "gymnasium"
    with set_gym_backend(gym) as ctx:
        assert ctx.backend == "gymnasium"

    @set_gym_backend("gymnasium")
    def make():
        return GymEnv("CartPole-v1").batch_size

    assert make() == torch.Size([])
    with pytest.raises(ImportError, match="pip install gymnasium"):
        set_gym_backend("gym3")
    with pytest.raises(TypeError):
        set_gym_backend(3)


def test_missing_gymnasium_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(ImportError, match="pip install gymnasium"):
        GymEnv("CartPole-v1")
    with pytest.raises(ImportError, match="pip install gymnasium"):
        gym_backend()


def test_attribute_forwarding_and_close():
    env = GymEnv("CartPole-v1", num_envs=2, vectorization_mode="sync")
    assert env.num_envs == 2
    assert env.get_attr("x_threshold") == (2.4, 2.4)
    with pytest.raises(AttributeError, match="no_such_attribute"):
        env.no_such_attribute
    env.close()
    assert env.is_closed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_device_edge():
    env = GymEnv("CartPole-v1", num_envs=8, device="cuda")
    check_env_specs(env, seed=0)
    td = env.rollout(20, break_when_any_done=False)
    assert td.device.type == "cuda" and td["next", "observation"].is_cuda
    ref = GymEnv("CartPole-v1", num_envs=8)
    ref.set_seed(0)
    env.set_seed(0)
    torch.manual_seed(1)
    actions = torch.nn.functional.one_hot(torch.randint(0, 2, (20, 8)), 2)
    for name, e in (("cpu", ref), ("cuda", env)):
        td = e.reset()
        out = []
        for t in range(20):
            td["action"] = actions[t].to(e.device)
            td, td_next = e.step_and_maybe_reset(td)
            out.append(td["next", "observation"].cpu())
            td = td_next
        if name == "cpu":
            expected = torch.stack(out)
    assert torch.equal(torch.stack(out), expected)


def test_edge_transfer_packing_roundtrip():
    from tensordict import TensorDict

    from gpusim.envs.libs._edge import EdgeTransfer

    edge = EdgeTransfer("cpu", pin=False)
    td = TensorDict(
        {
            "obs": torch.randn(5, 3).t().contiguous().t(),  # non-contiguous source
            "done": torch.tensor([[True], [False], [True], [False], [False]]),
            "pix": torch.randint(0, 255, (5, 2, 2, 3), dtype=torch.uint8),
            "nested": TensorDict({"k": torch.arange(5, dtype=torch.int64)}, [5]),
            "d": torch.randn(5, 1, dtype=torch.float64),
        },
        [5],
    )
    for _ in range(3):  # both staging buffers, reused
        out = edge(td)
        assert out.batch_size == td.batch_size and out["nested"].batch_size == td["nested"].batch_size
        for key, value in td.items(True, True):
            assert out[key].dtype == value.dtype and torch.equal(out[key], value), key
    # outputs do not alias the staging buffers: a later transfer leaves an earlier one intact
    first = edge(td)
    snapshot = first["obs"].clone()
    td["obs"] = td["obs"] + 1
    edge(td)
    edge(td)
    assert torch.equal(first["obs"], snapshot)
