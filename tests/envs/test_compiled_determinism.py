"""Reproducible engines: the same seed gives the same bits across repeated compiled runs (every
step of a run is compiled: the layout comes from a step of copies), eager and compiled engines
give the same data where the arithmetic allows (integer envs; docs/determinism.md says what
differs otherwise), and random actions without a policy follow the env's seed, not torch's."""

from __future__ import annotations

import threading

import pytest
import torch
from tensordict.nn import TensorDictModule

import gpusim as gs
from gpusim.envs.compiled import CompiledRollout
from tests.envs.toy_envs import StatelessCounter


def _assert_equal(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key, value in a.items(True, True):
        assert torch.equal(b.get(key), value), key


def _mlp_policy():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    return TensorDictModule(lambda obs: net(obs).argmax(-1), ["observation"], ["action"])


def test_repeated_compiled_runs_are_bit_identical():
    torch._dynamo.reset()
    env = gs.make("CartPole-v1", num_envs=16)
    policy = _mlp_policy()
    env.set_seed(0)
    first = env.rollout(120, policy, compile={"verbose": False}, break_when_any_done=False)
    env.set_seed(0)
    second = env.rollout(120, policy, compile={"verbose": False}, break_when_any_done=False)
    _assert_equal(first, second)
    assert bool(first["next", "done"].any())  # resets inside the compiled loop
    runner = env.compile(policy, verbose=False)
    # both runs wholly compiled: 120 calls of one step each (a policy: default_steps_per_call), 3
    # guarded per run
    assert runner.steps_per_call == 1
    assert runner.direct_calls == 2 * (120 - 3)


class _Locked:
    """A policy that cannot be deep-copied (a lock): the runner learns the layout from the run's
    first step instead, eagerly (the data stays right)."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, td):
        return td.set("action", torch.ones(td.batch_size, dtype=torch.long))


def test_layout_from_the_first_step_when_copies_fail():
    torch._dynamo.reset()
    env = StatelessCounter(batch_size=(3,), max_count=4)
    policy = _Locked()
    runner = CompiledRollout(env, policy, steps_per_call=2, verbose=False)
    data = runner(9)
    _assert_equal(env.rollout(9, policy, break_when_any_done=False), data)


def test_dry_step_leaves_the_env_stream_and_global_generator_alone():
    env = gs.make("CartPole-v1", num_envs=4, seed=1)
    runner = CompiledRollout(env, verbose=False)
    root = env.reset()
    state = torch.random.get_rng_state()
    counter = runner.policy.rng.counter.clone()
    assert runner._dry_learn(root) and runner._steady(root) is not None
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(runner.policy.rng.counter, counter)


@pytest.mark.parametrize("compile", [False, {"verbose": False}])
def test_seeded_rollout_without_policy_follows_the_env_seed(compile):
    torch._dynamo.reset()

    def run(torch_seed, env_seed=0, env=None):
        torch.manual_seed(torch_seed)
        env = env or gs.make("CartPole-v1", num_envs=4, seed=env_seed)
        return env.rollout(20, compile=compile, break_when_any_done=False)

    a = run(1)
    _assert_equal(a, run(2))  # a new env, other torch seed: the same data
    assert not torch.equal(a["action"], run(1, env_seed=5)["action"])
    env = gs.make("CartPole-v1", num_envs=4, seed=0)
    first = run(3, env=env)
    assert not torch.equal(first["action"], run(3, env=env)["action"])  # the stream goes on
    env.set_seed(0)
    _assert_equal(first, run(4, env=env))  # set_seed restarts it
    _assert_equal(a, first)


@pytest.mark.parametrize(("env_id", "batch"), [("CartPole-v1", 3), ("Pendulum-v1", 5), ("CartPole-v1", 5000)])
def test_eager_rollout_draws_the_per_step_stream_in_blocks(env_id, batch):
    """rollout() without a policy draws its random actions a block of steps at a time
    (HashRandomPolicy.ahead): the same actions as one draw per step, across blocks (150 steps:
    blocks of 64, or of 52 at 5000 rows), and an early stop leaves the stream where per-step
    draws would have (the next rollout goes on from there)."""
    from tensordict import TensorDict

    from gpusim.envs.random_actions import rollout_actions

    env = gs.make(env_id, num_envs=batch, seed=2)
    first = env.rollout(150, break_when_any_done=False)
    cut = env.rollout(250, break_when_any_done=True)  # stops on the first episode end
    after = env.rollout(4, break_when_any_done=False)
    steps = cut.shape[-1]
    assert steps < 250
    policy = rollout_actions(gs.make(env_id, num_envs=batch, seed=2))  # per-step draws
    expected = [policy(TensorDict({}, [batch]))["action"] for _ in range(150 + steps + 4)]
    assert torch.equal(first["action"], torch.stack(expected[:150], 1))
    assert torch.equal(cut["action"], torch.stack(expected[150 : 150 + steps], 1))
    assert torch.equal(after["action"], torch.stack(expected[150 + steps :], 1))


def test_eager_and_compiled_rollouts_without_policy_draw_the_same_actions():
    torch._dynamo.reset()
    env = gs.make("CartPole-v1", num_envs=4, seed=0)
    compiled = env.rollout(10, compile={"verbose": False}, break_when_any_done=False)
    env.set_seed(0)
    eager = env.rollout(10, break_when_any_done=False)
    assert torch.equal(eager["action"], compiled["action"])
    torch.testing.assert_close(eager["next", "observation"], compiled["next", "observation"], rtol=0, atol=1e-5)


def test_eager_and_compiled_collectors_give_the_same_bits_on_integer_arithmetic():
    torch._dynamo.reset()

    def policy(td):  # deterministic, reads the observation
        return td.set("action", (td["observation"].squeeze(-1) % 2 == 0).long())

    def batches(compile):
        env = StatelessCounter(batch_size=(4,), max_count=5)
        collector = gs.Collector(env, policy, frames_per_batch=4 * 6, total_frames=4 * 6 * 3, compile=compile)
        return list(collector)

    for a, b in zip(batches(False), batches({"verbose": False, "steps_per_call": 2})):
        _assert_equal(a, b)


def test_eager_and_compiled_collectors_on_cartpole_within_the_documented_tolerance():
    """CartPole's sin/cos and fused multiply-adds round differently eager and compiled
    (docs/determinism.md): the same actions over a short batch, observations within 1e-5."""
    torch._dynamo.reset()

    def policy(td):
        return td.set("action", (td["observation"][..., 2] > 0).long())

    def batches(compile):
        env = gs.make("CartPole-v1", num_envs=16, seed=0)
        collector = gs.Collector(env, policy, frames_per_batch=16 * 8, total_frames=16 * 8 * 2, compile=compile)
        return list(collector)

    for a, b in zip(batches(False), batches({"verbose": False})):
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        for key, value in a.items(True, True):
            if value.dtype.is_floating_point:
                torch.testing.assert_close(b.get(key), value, rtol=0, atol=1e-5, msg=lambda m: f"{key}: {m}")
            else:
                assert torch.equal(b.get(key), value), key


def test_transform_chains_copy_and_pickle_with_their_containers():
    """The dry layout step steps deep copies: a transform chain must come back registered in its
    env (RewardSum reads the env's reset entries through it), copied and pickled alike."""
    import copy
    import pickle

    from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNorm

    def make():
        return TransformedEnv(
            gs.CartPoleEnv(batch_size=[4], seed=2, auto_reset_mode="masked"),
            Compose(
                StepCounter(max_steps=3),
                RewardSum(),
                InitTracker(),
                CatFrames(2, dim=-1, in_keys=["observation"]),
                VecNorm(in_keys=["observation"], decay=0.99),
            ),
        )

    def policy(td):
        return td.set("action", (td["observation"][..., 2] > 0).long())

    expected = make().rollout(7, policy, break_when_any_done=False)
    for clone in (copy.deepcopy(make()), pickle.loads(pickle.dumps(make()))):
        assert all(t.container is clone for t in clone.transform)
        _assert_equal(expected, clone.rollout(7, policy, break_when_any_done=False))
    env = make()
    runner = CompiledRollout(env, verbose=False)
    root = env.reset()
    assert runner._dry_learn(root)  # the run's first step will be compiled too


@pytest.mark.parametrize("env_cls", [gs.CartPoleEnv, gs.PendulumEnv])
def test_unbatched_rollout_draws_scalar_actions_from_the_stream(env_cls):
    """An env without batch dims (a scalar action for CartPole): the blocked stream reshapes
    to the spec's own shape, and gives the per-step actions."""
    from tensordict import TensorDict

    from gpusim.envs.random_actions import rollout_actions

    env = env_cls(seed=4)
    data = env.rollout(70, break_when_any_done=False)
    assert data["action"].shape == (70, *env.action_spec.shape)
    policy = rollout_actions(env_cls(seed=4))
    expected = torch.stack([policy(TensorDict({}, []))["action"] for _ in range(70)])
    assert torch.equal(data["action"], expected)
