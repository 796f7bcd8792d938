"""VmasEnv/VmasWrapper: group layout, specs, partial resets, seeds, group maps, errors."""

from __future__ import annotations

import sys

import pytest
import torch
import vmas

from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs import MarlGroupMapType, VmasEnv, VmasWrapper
from gpusim.specs import Bounded, Categorical, MultiCategorical, OneHot


def test_layout_homogeneous_agents():
    env = VmasEnv("balance", num_envs=4, n_agents=3, seed=0)
    assert env.batch_size == (4,)
    assert env.group_map == {"agents": ["agent_0", "agent_1", "agent_2"]}
    assert env.action_key == ("agents", "action") and env.reward_key == ("agents", "reward")
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    assert env.full_done_spec["done"].shape == (4, 1)
    assert isinstance(env.action_spec, Bounded) and env.action_spec.shape == (4, 3, 2)
    assert env.observation_spec["agents"].shape == (4, 3)
    assert env.observation_spec["agents", "observation"].shape == (4, 3, 16)
    assert env.observation_spec["agents", "info", "pos_rew"].shape == (4, 3, 1)
    td = env.rand_step(env.reset())
    assert td["agents"].batch_size == (4, 3) and td["next", "agents"].batch_size == (4, 3)
    assert td["next", "agents", "reward"].shape == (4, 3, 1)
    check_env_specs(env, seed=0)


def test_data_matches_vmas():
    env = VmasEnv("simple_spread", num_envs=3, seed=0)
    td = env.reset()
    obs = env.env.get_from_scenario(get_observations=True, get_rewards=False, get_infos=False, get_dones=False)[0]
    assert torch.equal(td["agents", "observation"], torch.stack(obs, 1))
    action = env.full_action_spec.rand()
    td.update(action)
    out = env.step(td)["next"]
    rewards = [env.scenario.reward(a) for a in env.env.agents]
    assert torch.allclose(out["agents", "reward"].squeeze(-1), torch.stack(rewards, 1))
    agent_pos = torch.stack([a.state.pos for a in env.env.agents], 1)
    assert torch.allclose(out["agents", "observation"][..., :2], agent_pos)  # simple_spread obs: [pos, vel, ...]


@pytest.mark.parametrize(
    "kwargs, spec_type, shape",
    [
        ({"continuous_actions": False}, Categorical, (2, 2)),
        ({"continuous_actions": False, "categorical_actions": False}, OneHot, (2, 2, 9)),
        ({"continuous_actions": False, "multidiscrete_actions": True}, MultiCategorical, (2, 2, 2)),
    ],
)
def test_discrete_actions(kwargs, spec_type, shape):
    env = VmasEnv("balance", num_envs=2, n_agents=2, seed=0, **kwargs)
    assert type(env.action_spec) is spec_type and tuple(env.action_spec.shape) == shape
    check_env_specs(env, seed=0)


def test_heterogeneous_default_groups_by_prefix():
    env = VmasEnv("simple_adversary", num_envs=2, seed=0)
    assert env.group_map == {"adversary": ["adversary_0"], "agent": ["agent_0", "agent_1"]}
    assert env.observation_spec["adversary", "observation"].shape == (2, 1, 8)
    assert env.observation_spec["agent", "observation"].shape == (2, 2, 10)
    check_env_specs(env, seed=0)


def test_group_maps():
    env = VmasEnv("simple_adversary", num_envs=2, seed=0, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT)
    assert set(env.group_map) == {"adversary_0", "agent_0", "agent_1"}
    assert env.full_reward_spec["agent_1", "reward"].shape == (2, 1, 1)
    check_env_specs(env, seed=0)
    env = VmasEnv("balance", num_envs=2, n_agents=3, group_map={"red": ["agent_0"], "blue": ["agent_1", "agent_2"]})
    assert env.observation_spec["blue", "observation"].shape == (2, 2, 16)
    check_env_specs(env, seed=0)
    with pytest.raises(ValueError, match="mixes agents"):
        VmasEnv("simple_adversary", num_envs=2, group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)
    with pytest.raises(ValueError, match="agent_2"):
        VmasEnv("balance", num_envs=2, n_agents=3, group_map={"agents": ["agent_0", "agent_1"]})
    with pytest.raises(ValueError, match="reserved"):
        VmasEnv("balance", num_envs=2, n_agents=2, group_map={"done": ["agent_0", "agent_1"]})
    with pytest.raises(TypeError, match="group_map"):
        VmasEnv("balance", num_envs=2, n_agents=2, group_map=["agent_0"])


def test_partial_reset_selected_envs_only():
    env = VmasEnv("balance", num_envs=4, n_agents=2, seed=0)
    td = env.reset()
    for _ in range(3):
        td = env._step_mdp(env.rand_step(td))
    assert env.env.steps.tolist() == [3, 3, 3, 3]
    before = td["agents", "observation"].clone()
    td["_reset"] = torch.tensor([[True], [False], [True], [False]])
    out = env.reset(td)
    assert "_reset" not in out.keys()
    assert env.env.steps.tolist() == [0, 3, 0, 3]
    after = out["agents", "observation"]
    assert torch.equal(after[[1, 3]], before[[1, 3]])
    assert not torch.equal(after[[0, 2]], before[[0, 2]])
    # the reset rows hold VMAS's own observation of the reset state
    obs = env.env.get_from_scenario(get_observations=True, get_rewards=False, get_infos=False, get_dones=False)[0]
    assert torch.equal(after, torch.stack(obs, 1))


def test_max_steps_truncation_and_auto_reset():
    env = VmasEnv("balance", num_envs=3, n_agents=2, seed=0, max_steps=4)
    td = env.rollout(10, break_when_any_done=False)
    done = td["next", "done"].squeeze(-1)
    assert done[:, 3].all() and done[:, 7].all() and done.sum() == 6
    assert torch.equal(td["next", "truncated"], td["next", "done"])
    assert not td["next", "terminated"].any()
    assert env.env.steps.tolist() == [2, 2, 2]


def test_seed_reproducible():
    def run(seed):
        env = VmasEnv("balance", num_envs=3, n_agents=2, seed=seed, max_steps=3)
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(7, break_when_any_done=False)

    a, b, c = run(1), run(1), run(2)
    assert torch.equal(a["next", "agents", "observation"], b["next", "agents", "observation"])
    assert not torch.equal(a["agents", "observation"], c["agents", "observation"])


def test_wrapper_and_dict_spaces():
    env = VmasWrapper(vmas.make_env("balance", num_envs=2, seed=0, dict_spaces=True, terminated_truncated=True))
    check_env_specs(env, seed=0)
    env = VmasWrapper(vmas.make_env("balance", num_envs=2, seed=0))  # done only (no terminated/truncated split)
    check_env_specs(env, seed=0)
    with pytest.raises(TypeError, match="vmas Environment"):
        VmasWrapper(object())
    with pytest.raises(ValueError, match="num_envs"):
        VmasWrapper(vmas.make_env("balance", num_envs=2), batch_size=[3])


def test_errors_name_the_bad_value():
    with pytest.raises(ValueError, match="not_a_kwarg"):
        VmasEnv("balance", num_envs=2, not_a_kwarg=3)
    with pytest.raises(ValueError, match="no_such_scenario"):
        VmasEnv("no_such_scenario", num_envs=2)
    with pytest.raises(ValueError, match="num_envs"):
        VmasEnv("balance", num_envs=0)


def test_missing_vmas_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vmas", None)
    with pytest.raises(ImportError, match="pip install vmas"):
        VmasEnv("balance", num_envs=2)


def test_attribute_forwarding():
    env = VmasEnv("balance", num_envs=2, n_agents=2)
    assert env.n_agents == 2 and env.num_envs == 2
    assert env.scenario is env.env.scenario
    with pytest.raises(AttributeError, match="nope"):
        env.nope


@pytest.mark.parametrize("max_steps", [None, 2])
def test_rollout_cpu_stack_matches_reference(max_steps):
    """The eager-CPU rollout stack (carried root leaves copied from the ``"next"`` output) gives the
    data of ``torch.stack`` for a seeded VMAS rollout, with and without a reset on the way."""
    from gpusim.kernels import force_backend

    outs = []
    for backend in ("cpu", "reference"):
        env = VmasEnv("simple_spread", num_envs=5, seed=1, max_steps=max_steps)
        torch.manual_seed(0)
        with force_backend(backend, "rollout_stack"):
            outs.append(env.rollout(4, break_when_any_done=False))
    a, b = outs
    assert a.batch_size == b.batch_size == (5, 4)
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in b.keys(True, True):
        assert a.get(key).is_contiguous() and torch.equal(a.get(key), b.get(key)), key
    assert torch.equal(a["agents", "observation"][:, 1:], a["next", "agents", "observation"][:, :-1]) == (
        max_steps is None
    )
