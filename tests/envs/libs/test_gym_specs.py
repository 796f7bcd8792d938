"""Gymnasium spaces -> gpusim specs, for single and vector envs, and values through the wrapper."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs import GymWrapper
from gpusim.envs.libs.gym_specs import space_to_spec, spec_to_space
from gpusim.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Unbounded,
)
from tests.envs.libs.gym_envs import ACTION_SPACES, OBS_SPACES, SpaceEnv, sync_vector

EXPECTED_OBS = {
    # obs kind: (key, spec type, spec type with categorical encoding, per-env shape)
    "counter": ("observation", Unbounded, Unbounded, (2,)),
    "box": ("observation", Bounded, Bounded, (3,)),
    "box_mixed": ("observation", Bounded, Bounded, (2,)),
    "box_f64": ("observation", Bounded, Bounded, (2, 2)),
    "box_int": ("observation", Bounded, Bounded, (4,)),
    "image": ("pixels", Bounded, Bounded, (8, 6, 3)),
    "discrete": ("observation", OneHot, Categorical, None),
    "multidiscrete": ("observation", MultiOneHot, MultiCategorical, None),
    "multibinary": ("observation", Binary, Binary, (4,)),
    "multibinary2d": ("observation", Binary, Binary, (2, 3)),
    "text": ("observation", NonTensor, NonTensor, ()),
}


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("obs", sorted(EXPECTED_OBS))
@pytest.mark.parametrize("batch", [(), (3,)])
def test_leaf_observation_spaces(obs, categorical, batch):
    key, t_onehot, t_cat, shape = EXPECTED_OBS[obs]
    if batch:
        env = GymWrapper(sync_vector(3, obs=obs, ep_lens=[6, 7, 8]), categorical_action_encoding=categorical)
    else:
        env = GymWrapper(SpaceEnv(obs=obs, ep_len=6), categorical_action_encoding=categorical)
    spec = env.observation_spec[key]
    assert type(spec) is (t_cat if categorical else t_onehot)
    assert env.observation_keys == [key]
    if shape is not None:
        assert tuple(spec.shape) == (*batch, *shape)
    space = OBS_SPACES[obs]()
    if isinstance(space, gym.spaces.Box):
        assert spec.dtype == torch.from_numpy(np.zeros((), space.dtype)).dtype
    check_env_specs(env, seed=0)


def test_box_bounds_and_infinite():
    spec, _ = space_to_spec(OBS_SPACES["box"](), batch_size=(2,))
    assert torch.equal(spec.low, torch.full((2, 3), -1.0)) and torch.equal(spec.high, torch.full((2, 3), 2.0))
    spec, _ = space_to_spec(OBS_SPACES["box_mixed"]())
    assert spec.low[0] == -1 and torch.isinf(spec.low[1]) and spec.is_in(torch.tensor([0.5, 1e30]))
    assert not spec.is_in(torch.tensor([1.5, 0.0]))
    assert type(space_to_spec(OBS_SPACES["counter"]())[0]) is Unbounded


@pytest.mark.parametrize("categorical", [False, True])
def test_discrete_start_offset_values(categorical):
    env = GymWrapper(SpaceEnv(obs="discrete", action="discrete"), categorical_action_encoding=categorical)
    td = env.reset()
    gym_obs = env.env.unwrapped.last_obs  # in [1, 6)
    value = td["observation"]
    got = value if categorical else value.argmax(-1)
    assert int(got) == int(gym_obs) - 1
    # actions: Discrete(3, start=2): index 1 must reach the env as 3
    action = torch.tensor(1) if categorical else torch.tensor([0, 1, 0])
    td["action"] = action
    env.step(td)
    assert int(env.env.unwrapped.last_action) == 3


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("start", [0, 2])
def test_discrete_action_is_a_numpy_integer_for_one_env(categorical, start):
    # what Discrete.sample() hands out (a numpy integer), not a 0-d array; batched: an array
    space = gym.spaces.Discrete(3, start=start)
    _, (leaf,) = space_to_spec(space, categorical_action_encoding=categorical, key=("action",))
    action = leaf.to_numpy(torch.tensor(1) if categorical else torch.tensor([0, 1, 0]))
    assert isinstance(action, np.integer) and action == 1 + start and space.contains(action)
    _, (leaf,) = space_to_spec(space, batch_size=(2,), categorical_action_encoding=categorical, key=("action",))
    batched = leaf.to_numpy(torch.tensor([1, 2]) if categorical else torch.tensor([[0, 1, 0], [0, 0, 1]]))
    assert isinstance(batched, np.ndarray) and batched.tolist() == [1 + start, 2 + start]


def test_multidiscrete_start_and_multibinary_values():
    env = GymWrapper(SpaceEnv(obs="multidiscrete"), categorical_action_encoding=True)
    td = env.reset()
    gym_obs = env.env.unwrapped.last_obs
    assert td["observation"].tolist() == (np.asarray(gym_obs) - np.array([0, 2])).tolist()
    env = GymWrapper(SpaceEnv(obs="multibinary2d"))
    td = env.reset()
    assert td["observation"].dtype == torch.int8
    assert td["observation"].tolist() == env.env.unwrapped.last_obs.tolist()


def test_dict_and_tuple_observations():
    env = GymWrapper(SpaceEnv(obs="dict"))
    obs_spec = env.observation_spec
    assert set(env.observation_keys) == {"pos", "flags", ("nested", "k"), ("nested", "v")}
    assert isinstance(obs_spec["nested"], Composite)
    assert type(obs_spec["nested", "k"]) is OneHot and type(obs_spec["nested", "v"]) is Unbounded
    td = env.reset()
    gym_obs = env.env.unwrapped.last_obs
    assert torch.equal(td["pos"], torch.from_numpy(gym_obs["pos"]))
    assert int(td["nested", "k"].argmax()) == int(gym_obs["nested"]["k"])
    check_env_specs(env, seed=1)
    env = GymWrapper(SpaceEnv(obs="tuple"), categorical_action_encoding=True)
    assert set(env.observation_keys) == {("observation", "0"), ("observation", "1")}
    td = env.reset()
    assert int(td["observation", "1"]) == int(env.env.unwrapped.last_obs[1])
    check_env_specs(env, seed=1)
    check_env_specs(GymWrapper(sync_vector(2, obs="dict", ep_lens=[6, 6])), seed=0)
    check_env_specs(GymWrapper(sync_vector(2, obs="tuple", ep_lens=[6, 6])), seed=0)


def test_text_observation_values():
    env = GymWrapper(SpaceEnv(obs="text"))
    td = env.reset()
    assert td.get("observation").data == env.env.unwrapped.last_obs
    venv = GymWrapper(sync_vector(2, obs="text", ep_lens=[6, 6]))
    td = venv.reset()
    strings = td.get("observation").tolist()
    assert strings == [e.last_obs for e in venv.env.unwrapped.envs]


EXPECTED_ACTIONS = {
    "box": (Bounded, Bounded),
    "discrete": (OneHot, Categorical),
    "multidiscrete": (MultiOneHot, MultiCategorical),
    "multibinary": (Binary, Binary),
}


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("action", sorted(ACTION_SPACES))
@pytest.mark.parametrize("vector", [False, True])
def test_action_spaces(action, categorical, vector):
    if vector:
        env = GymWrapper(sync_vector(2, action=action, ep_lens=[6, 6]), categorical_action_encoding=categorical)
    else:
        env = GymWrapper(SpaceEnv(action=action, ep_len=6), categorical_action_encoding=categorical)
    if action in EXPECTED_ACTIONS:
        assert type(env.action_spec) is EXPECTED_ACTIONS[action][int(categorical)]
        assert env.action_keys == ["action"]
    elif action == "dict":
        assert set(env.action_keys) == {("action", "move"), ("action", "fire")}
    else:
        assert set(env.action_keys) == {("action", "0"), ("action", "1")}
    # SpaceEnv.step asserts that every converted action is inside its gym space
    check_env_specs(env, seed=0)
    env.rollout(4)


def test_unsupported_space_raises():
    class SeqEnv(SpaceEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Sequence(gym.spaces.Discrete(2))

    with pytest.raises(TypeError, match="Sequence"):
        GymWrapper(SeqEnv())


def test_spec_to_space_roundtrip():
    for name in ("box", "discrete", "multibinary", "multidiscrete"):
        space = ACTION_SPACES[name]()
        spec, _ = space_to_spec(space, categorical_action_encoding=True)
        back = spec_to_space(spec)
        assert type(back) is type(space)
        assert back.shape == space.shape


@pytest.mark.parametrize(
    "spec, expected",
    [
        (Categorical(9, shape=(4,)), gym.spaces.Discrete(9)),
        (Categorical(9, shape=(4, 2)), gym.spaces.MultiDiscrete([9, 9])),
        (OneHot(3, shape=(4, 3)), gym.spaces.Discrete(3)),
        (OneHot(3, shape=(4, 2, 3)), gym.spaces.MultiDiscrete([3, 3])),
        (MultiCategorical([2, 5], shape=(4, 2)), gym.spaces.MultiDiscrete([2, 5])),
        (MultiOneHot([2, 5], shape=(4, 7)), gym.spaces.MultiDiscrete([2, 5])),
        (Binary(3, shape=(4, 3)), gym.spaces.MultiBinary(3)),
        (
            Unbounded((4, 2), dtype=torch.int64),
            gym.spaces.Box(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (2,), np.int64),
        ),
        (Unbounded((4, 2), dtype=torch.bool), gym.spaces.MultiBinary(2)),
        (Unbounded((4, 2)), gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)),
        (Bounded(-1.0, 2.0, shape=(4, 2)), gym.spaces.Box(-1.0, 2.0, (2,), np.float32)),
    ],
)
def test_spec_to_space_drops_batch_dims(spec, expected):
    space = spec_to_space(spec, batch_dims=1)
    assert space == expected
    batched = gym.vector.utils.batch_space(space, 4)
    value = spec.rand()
    value = spec.to_numpy(value)
    assert batched.contains(value.astype(batched.dtype) if isinstance(batched, gym.spaces.Box) else value)


def test_spec_to_space_needs_one_bound_for_every_env():
    spec = Bounded(torch.tensor([[0.0], [1.0]]), torch.tensor([[2.0], [2.0]]), shape=(2, 1))
    with pytest.raises(ValueError, match="'obs' has a low that differs between envs"):
        spec_to_space(Composite(obs=spec, shape=(2,)), batch_dims=1)
