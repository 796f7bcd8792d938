"""The step pipeline (``gpusim.envs.pipeline``): planned once, one eager loop for every front
door, the same data in every reset strategy."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.envs.checks import check_env_specs
from gpusim.envs.pipeline import StepPipeline
from gpusim.transforms import Compose, InitTracker, RewardSum, StepCounter, TransformedEnv


def _push(td):
    """A deterministic policy: push towards the pole's lean."""
    return td.set("action", (td["observation"][..., 2] > 0).long())


def _cartpole(mode, batch=6):
    return gs.CartPoleEnv(batch_size=[batch], seed=7, auto_reset_mode=mode)


def _transformed(mode, batch=6):
    return TransformedEnv(_cartpole(mode, batch), Compose(StepCounter(9), RewardSum(), InitTracker()))


@pytest.mark.parametrize("make", [_cartpole, _transformed])
def test_masked_and_sparse_give_the_same_data(make):
    out = {}
    for mode in ("masked", "sparse"):
        env = make(mode)
        assert env.step_pipeline.strategy == mode
        steps, root = env.step_pipeline.run(env.reset(), _push, 60)
        out[mode] = (torch.stack(steps), root)
    (masked, root_m), (sparse, root_s) = out["masked"], out["sparse"]
    assert masked["next", "done"].any()  # resets happened
    assert set(masked.keys(True, True)) == set(sparse.keys(True, True))
    for key in masked.keys(True, True):
        assert torch.equal(masked[key], sparse[key]), key
    for key in root_m.keys(True, True):
        assert torch.equal(root_m[key], root_s[key]), key


@pytest.mark.parametrize("make", [_cartpole, _transformed])
def test_rollout_step_loop_and_collector_give_the_same_data(make):
    T = 40
    env = make(None)
    by_rollout = env.rollout(T, _push, break_when_any_done=False)

    env = make(None)
    td, steps = env.reset(), []
    for _ in range(T):
        stepped, td = env.step_and_maybe_reset(_push(td))
        steps.append(stepped)
    by_steps = torch.stack(steps, -1)

    env = make(None)
    collector = gs.Collector(env, _push, frames_per_batch=T * 6, track_traj_ids=False)
    by_collector = collector.rollout()
    collector.shutdown()

    assert by_rollout["next", "done"].any()
    for other in (by_steps, by_collector):
        assert set(other.keys(True, True)) == set(by_rollout.keys(True, True))
        for key in by_rollout.keys(True, True):
            assert torch.equal(by_rollout[key], other[key]), key


def test_one_loop_serves_rollout_collector_and_check_env_specs(monkeypatch):
    calls = []
    run = StepPipeline.run

    def counted(self, *args, **kwargs):
        calls.append(type(self.env).__name__)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(StepPipeline, "run", counted)
    env = _transformed(None)
    env.rollout(5)
    assert len(calls) == 1
    collector = gs.Collector(env, frames_per_batch=12)
    collector.rollout()
    collector.shutdown()
    assert len(calls) == 2
    check_env_specs(env, seed=0)
    assert len(calls) == 4  # the step-by-step check, then its rollout


def test_planned_once_and_again_when_the_chain_or_mode_changes():
    env = TransformedEnv(gs.CartPoleEnv(batch_size=[3], seed=0), StepCounter(5))
    pipe = env.step_pipeline
    td = env.reset()
    for _ in range(10):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
        assert env.step_pipeline is pipe  # no plan per step
    env.append_transform(RewardSum())
    assert env.step_pipeline is not pipe  # the chain changed
    assert "episode_reward" in env.step_pipeline.step_and_maybe_reset(env.rand_action(env.reset()))[1].keys()
    pipe = env.step_pipeline
    env.native_autoreset = True
    assert env.step_pipeline is not pipe and env.step_pipeline.strategy == "native"
    pipe = env.step_pipeline
    env.compile_step_and_maybe_reset(backend="eager")
    assert env.step_pipeline is not pipe and env.step_pipeline.run_step is not env.step_pipeline.step_and_maybe_reset
    env.eager()
    assert env.step_pipeline.run_step == env.step_pipeline.step_and_maybe_reset


def test_post_step_mdp_hook_is_planned():
    plain = gs.CartPoleEnv(batch_size=[2])
    assert plain.step_pipeline.post_step_mdp is None
    env = TransformedEnv(gs.PendulumEnv(batch_size=[2]), gs.NextObservationDelta(["observation"]))
    assert env.step_pipeline.post_step_mdp is not None
    stepped, root = env.step_and_maybe_reset(env.rand_action(env.reset()))
    assert ("delta", "observation") in stepped["next"].keys(True, True)


def test_native_strategy_blanks_the_finished_rows():
    env = gs.CartPoleEnv(batch_size=[4], seed=0)
    env.native_autoreset = True
    assert env.step_pipeline.strategy == "native"
    td = env.reset()
    td["state"][0, 2] = 0.5  # row 0 past the angle limit: it ends on this step
    stepped, root = env.step_and_maybe_reset(td.set("action", torch.zeros(4, dtype=torch.long)))
    assert stepped["next", "done"][0].item() and not stepped["next", "done"][1:].any()
    assert stepped["next", "observation"][0].isnan().all()
    assert not stepped["next", "observation"][1:].isnan().any()
    assert not root["done"].any()


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))])
def test_copied_env_plans_its_own_pipeline(clone):
    env = gs.CartPoleEnv(batch_size=[3], seed=0)
    env.step_pipeline  # noqa: B018 (planned before the copy)
    twin = clone(env)
    assert twin.step_pipeline.env is twin and twin.step_pipeline.strategy == "sparse"
    assert not hasattr(twin.step_pipeline, "no_such_plan")
    stepped, _ = twin.step_and_maybe_reset(twin.rand_action(twin.reset()))
    assert stepped["next", "observation"].shape == (3, 4)


def test_partial_steps_follow_the_planned_mode():
    for mode in ("masked", "sparse"):
        env = gs.CartPoleEnv(batch_size=[3], seed=0, auto_reset_mode=mode)
        td = env.rand_action(env.reset())
        before = td["observation"].clone()
        td["_step"] = torch.tensor([True, False, True])
        out = env.step(td)
        assert torch.equal(out["next", "observation"][1], before[1])
        assert out["next", "reward"][1].item() == 0.0
        assert out["next", "reward"][0].item() == 1.0


def test_run_without_resets_keeps_finished_rows():
    env = gs.CartPoleEnv(batch_size=[2], seed=0)
    td = env.reset()
    td["state"][0, 2] = 0.5
    steps, root = env.step_pipeline.run(td, lambda t: t.set("action", torch.zeros(2, dtype=torch.long)), 2, reset=False)
    assert steps[0]["next", "done"][0].item() and root["done"][0].item()  # not reset


def test_batch_unlocked_env_plans_per_data_batch():
    from tests.envs.test_unlocked_rollouts import Tally, _ones

    env = Tally()  # batch-unlocked, no batch dims: runs on data of any batch
    td = env.reset(TensorDict({"goal": torch.tensor([[1], [2], [3]])}, [3]))
    pipe = env.step_pipeline
    stepped, root = env.step_and_maybe_reset(_ones(td))
    assert root.batch_size == (3,) and root["total"].flatten().tolist() == [0, 1, 1]  # row 0 reset
    assert pipe.episode_for(td) is pipe.episode_for(root)  # the data batch's plan, kept
    assert pipe.episode_for(td) is not pipe.episode
