"""State save/restore/fork on every native env id: ``get_state()`` without data, ``set_state`` and
``reset(td, set_state=True)`` reproduce a replay bit for bit; gathered rows (a planner's fork)
step like the row they copy."""

from __future__ import annotations

import warnings

import pytest
import torch

import gpusim as gs
from gpusim.determinism import _TablePolicy, _tables

IDS = gs.registered_ids()
# envs whose step draws random numbers (keyed by the row index: a fork's copies draw their own)
STEP_NOISE = {"TicTacToe-v0", "MPE/simple_tag-v0", "MinAtar/Asterix-v0", "MinAtar/Asterix-v1"}
STEP_NOISE |= {f"MinAtar/{g}-v{v}" for g in ("Freeway", "Seaquest") for v in (0, 1)}


def _make(env_id, n, **kwargs):
    if env_id.startswith("MinAtar/"):
        kwargs.setdefault("sticky_action_prob", 0.0 if env_id not in STEP_NOISE else 0.1)
    return gs.make(env_id, num_envs=n, seed=0, max_episode_steps=None, **kwargs)


def _replay(env, root, steps=25, seed=1):
    policy = _TablePolicy(_tables(env, steps, seed))
    return env.rollout(steps, policy, auto_reset=False, tensordict=root, break_when_any_done=False)


@pytest.mark.parametrize("env_id", IDS)
def test_replay_from_a_restored_state_is_bit_identical_by_both_routes(env_id):
    env = _make(env_id, 4)
    env.rollout(15, break_when_any_done=False)  # mid-episode, with some resets behind
    state = env.get_state()  # the root the rollout ended on, without passing it
    root = env.set_state(state)
    first = _replay(env, root.clone())
    by_set_state = _replay(env, env.set_state(state))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_reset = _replay(env, env.reset(state, set_state=True))
    assert (first == by_set_state).all()
    assert (first == by_reset).all()


@pytest.mark.parametrize("env_id", IDS)
def test_get_state_without_data_saves_the_last_root(env_id):
    env = _make(env_id, 3)
    td = env.reset()
    assert (env.get_state()["data"] == env.get_state(td)["data"]).all()
    data, root = env.step_and_maybe_reset(env.rand_action(td))
    assert (env.get_state()["data"] == root.exclude("next")).all()
    stepped = env.step(env.rand_action(root))
    assert (env.get_state()["data"] == stepped["next"]).all()


@pytest.mark.parametrize("env_id", IDS)
def test_reset_to_a_root_restores_its_rows(env_id):
    env = _make(env_id, 4)
    env.rollout(12, break_when_any_done=False)
    root = env.get_state()["data"]
    out = env.reset(root.clone(), set_state=True)
    for key in [*env.observation_spec.keys(True, True), *env.state_spec.keys(True, True)]:
        assert torch.equal(out.get(key), root.get(key)), key
    assert not out["done"].any()


@pytest.mark.parametrize("env_id", IDS)
def test_a_fork_of_one_row_steps_like_that_row(env_id):
    env = _make(env_id, 5)
    env.rollout(10, break_when_any_done=False)
    state = env.get_state()
    K, row = 3, 2
    fork = _make(env_id, K)
    td = fork.set_state(state[torch.full((K,), row)])
    for key in fork.state_spec.keys(True, True):
        assert torch.equal(td.get(key), state["data"].get(key)[row].expand_as(td.get(key))), key
    original = env.set_state(state)
    env.rand_action(original)
    for key in env.action_keys:  # every copy takes the action of the row it copies
        action = original.get(key)[row]
        td.set(key, action.expand(K, *action.shape).clone())
    out = fork.step(td)["next"]
    ref = env.step(original)["next"]
    key = next(iter(env.state_spec.keys(True, True)))
    if env_id in STEP_NOISE:  # the copies draw their step numbers by their own row index
        assert out.get(key).shape[0] == K
    else:
        for k in range(K):
            assert torch.equal(out.get(key)[k], ref.get(key)[row])


def test_unspecified_set_state_resets_anew_without_a_warning():
    env = gs.CartPoleEnv(batch_size=[3], seed=0)
    td = env.reset()
    before = td["state"].clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = env.reset(td.clone())
    assert not torch.equal(out["state"], before)  # a fresh start, as set_state=False


def test_through_transforms_a_saved_state_restores_the_counters_and_a_root_starts_an_episode():
    env = gs.make("CartPole-v1", num_envs=2, seed=0)
    env.rollout(7, break_when_any_done=False)
    state = env.get_state()
    assert (env.reset(state, set_state=True)["step_count"] == state["data", "step_count"]).all()
    restarted = env.reset(state["data"].clone(), set_state=True)
    assert torch.equal(restarted["state"], state["data", "state"]) and not restarted["step_count"].any()


def test_bad_restore_input_is_named():
    env = gs.PendulumEnv(batch_size=[2], seed=0)
    td = env.reset().exclude("state")
    with pytest.raises(KeyError, match="the input has no 'state' entry"):
        env.reset(td, set_state=True)
    with pytest.raises(RuntimeError, match="no data yet: reset the env first"):
        gs.PendulumEnv(batch_size=[2], seed=0).get_state()


def test_get_state_after_a_compiled_rollout_saves_where_it_ended():
    env = gs.CartPoleEnv(batch_size=[4], seed=0)
    env.rollout(30, compile=True, break_when_any_done=False)
    state = env.get_state()
    assert (state["data"] == env.compile().last_root()).all()
    after = _replay(env, env.set_state(state), steps=10)
    again = _replay(env, env.reset(state, set_state=True), steps=10)
    assert (after == again).all()
