"""``gpusim.Collector``: batches, frames accounting, episodes carried across batches, episode
statistics, trajectory ids, resets, random frames, exploration type, weights, shutdown and bad
arguments (eager engine; the compiled engine is in test_compiled_collector.py)."""

from __future__ import annotations

import warnings

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import (
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
)

import gpusim as gs
from gpusim.collectors import Collector, SyncDataCollector
from tests.envs.toy_envs import NestedCountingEnv, StatelessCounter


def _balance(td):
    return td.set("action", (td["observation"][..., 2] > 0).long())


def _reference_episodes(data):
    """Returns and lengths of the episodes that end in ``data`` ([B, T]), by a Python loop over
    each row, with running sums carried in from ``carry`` (the reference of the tracker)."""
    B, T = data.batch_size
    reward = data["next", "reward"].squeeze(-1)
    done = data["next", "done"].squeeze(-1)
    returns, lengths, ends = [], [], []
    for b in range(B):
        ret, n = 0.0, 0
        for t in range(T):
            ret += float(reward[b, t])
            n += 1
            if done[b, t]:
                returns.append(ret)
                lengths.append(n)
                ends.append((b, t))
                ret, n = 0.0, 0
    return returns, lengths, ends


def test_exports_and_alias():
    assert gs.Collector is Collector and gs.SyncDataCollector is SyncDataCollector is Collector
    assert "Collector" in gs.__all__ and "SyncDataCollector" in gs.__all__


def test_batches_layout_and_frames_accounting():
    env = gs.make("CartPole-v1", num_envs=4, seed=0)
    with pytest.warns(UserWarning, match=r"total_frames \(100\) is not a multiple of frames_per_batch \(40\)"):
        collector = Collector(env, _balance, frames_per_batch=40, total_frames=100)
    assert len(collector) == 3
    batches = list(collector)
    assert [b.shape for b in batches] == [torch.Size([4, 10])] * 3
    assert collector.frames == 120
    data = batches[0]
    assert data.names == [None, "time"]
    reference = env.fake_tensordict()
    for key in reference.keys(True, True):
        assert key in data.keys(True, True), key
    assert data["collector", "traj_ids"].dtype == torch.int64
    with pytest.raises(StopIteration, match="total_frames"):
        collector.next()
    with pytest.warns(UserWarning, match=r"frames_per_batch \(42\) is not a multiple of the env's batch numel \(4\)"):
        rounded = Collector(env, _balance, frames_per_batch=42)
    assert rounded.frames_per_batch == 44 and rounded.next().shape == torch.Size([4, 11])
    with pytest.raises(TypeError, match="endless"):
        len(rounded)


def test_batches_continue_one_long_rollout_with_consistent_episodes():
    """Three batches are one long rollout cut in three: step counts run on across the cuts,
    and the episode statistics and trajectory ids of the batches are those of the long rollout."""
    T, B = 30, 6
    env = gs.make("CartPole-v1", num_envs=B, seed=3)
    # a policy that holds the pole for a while, so episodes span batch boundaries
    collector = Collector(env, _balance, frames_per_batch=B * T, total_frames=3 * B * T)
    batches = []
    stats = []
    for data in collector:
        batches.append(data)
        stats.append(collector.episode_stats())
    whole = torch.cat(batches, dim=1)
    env2 = gs.make("CartPole-v1", num_envs=B, seed=3)
    long = env2.rollout(3 * T, _balance, break_when_any_done=False)
    for key in long.keys(True, True):
        torch.testing.assert_close(whole[key], long[key], msg=lambda m: f"{key}: {m}")
    # step counts run on over the boundary unless an episode ended right at it
    for cut in (T, 2 * T):
        before, after = whole["next", "step_count"][:, cut - 1], whole["step_count"][:, cut]
        ended = whole["next", "done"][:, cut - 1]
        torch.testing.assert_close(after, torch.where(ended, torch.zeros_like(after), before))
    assert bool((whole["next", "step_count"][:, -1] > T).any())  # some episode spans a cut
    returns, lengths, ends = _reference_episodes(whole)
    got_returns = torch.cat([s["returns"] for s in stats])
    got_lengths = torch.cat([s["lengths"] for s in stats])
    # the tracker lists each batch's episodes row by row: order the reference the same way
    order = sorted(range(len(ends)), key=lambda i: (ends[i][1] // T, ends[i][0], ends[i][1]))
    torch.testing.assert_close(got_returns, torch.tensor([returns[i] for i in order]))
    assert got_lengths.tolist() == [lengths[i] for i in order]
    torch.testing.assert_close(got_returns, got_lengths.float())  # CartPole pays 1 per step
    # trajectory ids: constant within an episode (across cuts), new after each end, unique
    ids = whole["collector", "traj_ids"]
    done = whole["next", "done"].squeeze(-1)
    same = ids[:, 1:] == ids[:, :-1]
    assert torch.equal(same, ~done[:, :-1])
    per_row = [set(ids[b].tolist()) for b in range(B)]
    assert sum(len(s) for s in per_row) == len(set().union(*per_row))


def test_episode_stats_average_agents_rewards():
    env = NestedCountingEnv(batch_size=(3,), n_agents=2, max_count=3)
    policy = lambda td: td.set(("agents", "action"), torch.zeros(3, 2, dtype=torch.long))  # noqa: E731
    collector = Collector(env, policy, frames_per_batch=3 * 4)
    data = collector.next()
    # obs counts 1, 2, 3 (done) then again: one episode of 3 steps per row, reward 1 + 2 + 3
    stats = collector.episode_stats()
    assert stats["lengths"].tolist() == [3, 3, 3]
    assert stats["returns"].tolist() == [6.0, 6.0, 6.0]
    assert data["agents"].batch_size == torch.Size([3, 4, 2])


def test_reset_at_each_iter_starts_every_batch_afresh():
    env = gs.make("CartPole-v1", num_envs=3, seed=0)
    collector = Collector(env, _balance, frames_per_batch=3 * 5, total_frames=3 * 15, reset_at_each_iter=True)
    ids = []
    for data in collector:
        assert torch.equal(data["step_count"][:, 0], torch.zeros(3, 1, dtype=data["step_count"].dtype))
        ids.append(set(data["collector", "traj_ids"].flatten().tolist()))
    assert not (ids[0] & ids[1]) and not (ids[1] & ids[2])
    carried = Collector(gs.make("CartPole-v1", num_envs=3, seed=0), _balance, frames_per_batch=15)
    carried.next()
    assert bool((carried.next()["step_count"][:, 0] > 0).all())


def test_init_random_frames_use_random_actions_then_the_policy():
    env = gs.make("CartPole-v1", num_envs=2, seed=0)
    calls = []

    def policy(td):
        calls.append(1)
        return td.set("action", torch.zeros(2, dtype=torch.long)).set("marker", torch.ones(2, 1))

    collector = Collector(env, policy, frames_per_batch=8, total_frames=32, init_random_frames=10)
    batches = list(collector)
    assert len(calls) == 2 * 4  # 10 random frames round up to two batches of 8
    assert all("marker" not in b.keys() for b in batches[:2])
    assert all(torch.equal(b["marker"], torch.ones(2, 4, 1)) for b in batches[2:])
    random_actions = torch.cat([b["action"] for b in batches[:2]], 1)
    assert 0 < random_actions.float().mean() < 1
    assert bool((torch.cat([b["action"] for b in batches[2:]], 1) == 0).all())


def _probabilistic_actor(n_obs=4, n_act=2):
    torch.manual_seed(0)
    net = torch.nn.Linear(n_obs, n_act)
    return ProbabilisticTensorDictSequential(
        TensorDictModule(net, ["observation"], ["logits"]),
        ProbabilisticTensorDictModule(
            ["logits"], ["action"], distribution_class=torch.distributions.Categorical, return_log_prob=True
        ),
    )


@pytest.mark.parametrize("exploration", ["deterministic", InteractionType.MODE, gs.ExplorationType.MODE])
def test_exploration_type_switches_a_probabilistic_module(exploration):
    actor = _probabilistic_actor()
    env = gs.make("CartPole-v1", num_envs=16, seed=0)
    greedy = Collector(env, actor, frames_per_batch=16 * 6, exploration_type=exploration).next()
    assert torch.equal(greedy["action"], greedy["logits"].argmax(-1))
    sampled = Collector(gs.make("CartPole-v1", num_envs=16, seed=0), actor, frames_per_batch=16 * 6).next()
    assert not torch.equal(sampled["action"], sampled["logits"].argmax(-1))  # RANDOM by default
    assert sampled["action_log_prob"].shape == torch.Size([16, 6])


def test_weights_updated_in_place_are_read_by_the_next_batch():
    env = StatelessCounter(batch_size=(4,), max_count=100)
    lin = torch.nn.Linear(1, 1)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.fill_(1.0)
    policy = TensorDictModule(lambda obs: (lin(obs) > 0).squeeze(-1).long(), ["observation"], ["action"])
    collector = Collector(env, policy, frames_per_batch=4 * 3)
    assert bool((collector.next()["action"] == 1).all())
    with torch.no_grad():
        lin.bias.fill_(-1.0)  # what an optimizer step does: in place
    assert bool((collector.next()["action"] == 0).all())


def test_update_policy_weights_copies_in_place():
    env = gs.make("CartPole-v1", num_envs=2, seed=0)
    policy = TensorDictModule(torch.nn.Linear(4, 2), ["observation"], ["logits"])
    collector = Collector(env, lambda td: _balance(policy(td)), frames_per_batch=4)
    with pytest.raises(TypeError, match="not an nn.Module"):
        collector.update_policy_weights_({"x": torch.zeros(1)})
    collector = Collector(env, policy, frames_per_batch=4)
    weight = policy.module.weight
    other = torch.nn.Linear(4, 2)
    collector.update_policy_weights_(TensorDictModule(other, ["observation"], ["logits"]))
    assert collector.policy.module.weight is weight and torch.equal(weight, other.weight)
    collector.update_policy_weights_({"module.weight": torch.ones(2, 4), "module.bias": torch.zeros(2)})
    assert bool((weight == 1).all())
    collector.update_policy_weights_(TensorDict.from_module(TensorDictModule(other, ["observation"], ["logits"])))
    assert torch.equal(weight, other.weight)
    with pytest.raises(KeyError, match="module.bias"):
        collector.update_policy_weights_({"module.weight": torch.ones(2, 4)})
    collector.update_policy_weights_()  # the same objects: nothing to do


def test_plain_module_policy_reads_observations_and_writes_actions():
    env = gs.make("Pendulum-v1", num_envs=3, seed=0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh())
    data = Collector(env, net, frames_per_batch=6).next()
    with torch.no_grad():
        torch.testing.assert_close(data["action"], net(data["observation"]))

    class TwoInputs(torch.nn.Module):
        def forward(self, observation, step_count):
            return observation[..., :1] * 0 + step_count

    data = Collector(gs.make("Pendulum-v1", num_envs=3, seed=0), TwoInputs(), frames_per_batch=6).next()
    assert torch.equal(data["action"], data["step_count"].float())

    class Unknown(torch.nn.Module):
        def forward(self, x, y):
            return x

    with pytest.raises(TypeError, match=r"takes tensors \['x', 'y'\], which are not observation keys"):
        Collector(env, Unknown(), frames_per_batch=6)


def test_split_trajs_pads_trajectories():
    env = gs.make("CartPole-v1", num_envs=3, seed=0)
    collector = Collector(
        env, lambda td: td.set("action", torch.zeros(3, dtype=torch.long)), frames_per_batch=3 * 25, split_trajs=True
    )
    data = collector.next()
    mask = data["collector", "mask"]
    assert data.batch_size[0] > 3 and mask.sum() == 75
    ids = data["collector", "traj_ids"]
    for row in range(data.batch_size[0]):
        valid = ids[row][mask[row]]
        assert bool((valid == valid[0]).all())
        assert bool((data["observation"][row][~mask[row]] == 0).all())
    lengths = mask.sum(1)
    assert bool((lengths[:-1] > 0).all())


def test_factory_kwargs_postproc_seed_and_shutdown():
    made = []

    def factory(num_envs):
        made.append(num_envs)
        return gs.make("CartPole-v1", num_envs=num_envs, seed=0)

    collector = Collector(
        factory,
        _balance,
        frames_per_batch=10,
        create_env_kwargs={"num_envs": 2},
        postproc=lambda td: td.set("extra", torch.ones(td.shape)),
    )
    assert made == [2] and collector.next()["extra"].shape == torch.Size([2, 5])
    collector.set_seed(5)
    a = collector.next()
    collector.set_seed(5)
    b = collector.next()
    assert torch.equal(a["observation"], b["observation"])
    assert "engine='eager'" in repr(collector)
    collector.shutdown()
    assert collector.env.is_closed
    with pytest.raises(RuntimeError, match="shut down"):
        collector.next()


def test_bad_arguments_raise_clear_errors():
    env = gs.make("CartPole-v1", num_envs=2, seed=0)
    for bad in (0, -4, 1.5, True):
        with pytest.raises(ValueError, match=rf"frames_per_batch must be a positive int, got {bad!r}"):
            Collector(env, frames_per_batch=bad)
    for bad in (0, -2, 2.0):
        with pytest.raises(ValueError, match="total_frames must be a positive int or one of \\[-1\\]"):
            Collector(env, frames_per_batch=4, total_frames=bad)
    with pytest.raises(ValueError, match="init_random_frames must be a non-negative int"):
        Collector(env, frames_per_batch=4, init_random_frames=-1)
    with pytest.raises(ValueError, match="exploration_type must be one of .*'bogus'"):
        Collector(env, frames_per_batch=4, exploration_type="bogus")
    with pytest.raises(ValueError, match="either compile= or compile_policy="):
        Collector(env, frames_per_batch=4, compile=True, compile_policy=True)
    with pytest.raises(TypeError, match="compile must be a bool or a dict"):
        Collector(env, frames_per_batch=4, compile="yes")
    with pytest.raises(TypeError, match="create_env_fn must return a gpusim EnvBase, got int"):
        Collector(lambda: 3, frames_per_batch=4)
    with pytest.raises(TypeError, match="create_env_fn must be a gpusim EnvBase or a callable"):
        Collector("CartPole-v1", frames_per_batch=4)
    with pytest.raises(TypeError, match="create_env_kwargs is only used with an env factory"):
        Collector(env, frames_per_batch=4, create_env_kwargs={"a": 1})
    with pytest.raises(TypeError, match="policy must be a callable"):
        Collector(env, 3, frames_per_batch=4)
    with pytest.raises(ValueError, match="split_trajs=True needs track_traj_ids=True"):
        Collector(env, frames_per_batch=4, split_trajs=True, track_traj_ids=False)
    with pytest.raises(TypeError, match="max_frames_per_traj"):
        Collector(env, frames_per_batch=4, max_frames_per_traj=3)
    with pytest.raises(TypeError, match="frames_per_batch"):
        Collector(env)
    median = Collector(env, _balance, frames_per_batch=4, exploration_type="median")  # tensordict's, not gpusim's
    assert median.exploration_type is InteractionType.MEDIAN and median.next().shape == torch.Size([2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Collector(env, frames_per_batch=4, total_frames=8)  # exact multiples: no warning
