"""Rank programs of tests/collectors/test_distributed.py (run in spawned processes: 2 ranks, gloo
on CPU, a file store). Each writes ``<out>/ready<r>`` once both ranks have imported everything and
joined the group (the test's limits count from there: a slow import on a loaded machine never eats
into them), then what it observed to ``<out>/rank<r>.pt``."""

from __future__ import annotations

import datetime
import os
import time

import torch
import torch.distributed as dist
from tensordict.nn import TensorDictModule

import gpusim as gs
from gpusim.collectors import CommError, DistributedSyncDataCollector, init_stats_distributed

N_LOCAL = 4
T = 12
DECAY = 0.99
#: The rendezvous' timeout: long, as it waits for the other rank's imports (25 s for ``import
#: torch`` alone on a loaded 2-core machine).
JOIN_TIMEOUT = 300.0
#: The collective timeout of the runs that succeed (a hang guard, never reached).
TIMEOUT = 120.0
#: The collective timeout of the failure tests' group, made once both ranks have joined: the
#: surviving rank's error comes after at most this long (the watchdog test fires at a quarter).
FAIL_TIMEOUT = 8.0


def make_env(num_envs: int) -> gs.EnvBase:
    """CartPole with a VecNorm that keeps the raw observation (writes ``"obs_norm"``)."""
    return gs.TransformedEnv(
        gs.make("CartPole-v1", num_envs=num_envs),
        gs.VecNorm(in_keys=["observation"], out_keys=["obs_norm"], decay=DECAY),
    )


def _join(rank: int, world_size: int, store: str, out: str) -> None:
    """Joins the group (long timeout: the other rank may still be importing), warms up what the
    ranks build first, waits for the other rank, then writes ``<out>/ready<rank>``."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{store}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=JOIN_TIMEOUT),
    )
    gs.make("CartPole-v1", num_envs=2).rollout(2)  # lazy imports and first calls, before the barrier
    dist.barrier()
    with open(os.path.join(out, f"ready{rank}"), "w"):
        pass


def _policy(rank: int) -> TensorDictModule:
    torch.manual_seed(rank)  # different initial weights per rank: the collector broadcasts rank 0's
    net = torch.nn.Linear(4, 2)
    return TensorDictModule(_ArgmaxNet(net), ["observation"], ["action"]), net


def _stats(env) -> dict:
    return {k: v.clone() for k, v in env.transform[-1].stats.items()}


def main(rank: int, world_size: int, store: str, out: str) -> None:
    _join(rank, world_size, store, out)
    result = {}
    policy, net = _policy(rank)
    collector = DistributedSyncDataCollector(
        make_env,
        policy,
        num_envs=N_LOCAL * world_size,
        frames_per_batch=N_LOCAL * T * world_size,
        total_frames=2 * N_LOCAL * T * world_size,
        seed=0,
        timeout=TIMEOUT,
    )
    result["weights_start"] = {k: v.clone() for k, v in net.state_dict().items()}
    batches, stats = [], []
    for data in collector:
        batches.append(
            data.select("observation", ("next", "observation"), ("next", "done"), ("collector", "traj_ids")).clone()
        )
        stats.append(_stats(collector.env))
        if "episodes" not in result:  # (a collective: every rank calls it)
            result["episodes"], result["local_episodes"] = (
                collector.episode_stats(),
                collector.collector.episode_stats(),
            )
    result["batches"], result["stats"] = batches, stats
    if rank == 0:
        with torch.no_grad():
            net.weight.add_(1.0)
    collector.update_policy_weights_()
    result["weights_after"] = {k: v.clone() for k, v in net.state_dict().items()}
    collector.shutdown()

    gathered = DistributedSyncDataCollector(
        gs.make,
        num_envs=N_LOCAL * world_size,
        create_env_kwargs={"env_id": "CartPole-v1"},
        frames_per_batch=N_LOCAL * 3 * world_size,
        total_frames=N_LOCAL * 3 * world_size,
        seed=10,
        gather=True,
        timeout=TIMEOUT,
        group=dist.new_group(list(range(world_size))),  # a group given (not the default one)
    )
    result["gathered"] = [
        None if d is None else d.select("observation", ("collector", "traj_ids")).clone() for d in gathered
    ]
    gathered.shutdown()

    norm = gs.ObservationNorm(in_keys=["observation"], standard_normal=True)
    env = gs.TransformedEnv(gs.make("Pendulum-v1", num_envs=3, seed=100 + rank), norm)
    torch.manual_seed(200 + rank)
    result["obsnorm_data"] = env.base_env.rollout(6, break_when_any_done=False)["observation"]
    env.base_env.set_seed(100 + rank)
    torch.manual_seed(200 + rank)
    init_stats_distributed(norm, num_iter=6, reduce_dim=(0, 1), cat_dim=1, timeout=TIMEOUT)
    result["obsnorm"] = (norm.loc.clone(), norm.scale.clone())
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()  # then a normal exit (the test checks the exit code)


class _ArgmaxNet(torch.nn.Module):
    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        # always push left (episodes end within ~10 steps, so resets happen in the first batch);
        # the linear layer only carries the weights the collector broadcasts
        return torch.zeros_like(self.net(observation)[..., 0], dtype=torch.long)


def failing_peer(rank: int, world_size: int, store: str, out: str, mode: str) -> None:
    """Rank 1 dies (``mode="die"``) or stalls (``"stall"``, ``"watchdog"``) after the first batch;
    rank 0 records the error its next batch raises and how long it took (``"watchdog"``: the
    watchdog ends it first). The collector runs on a group of its own with ``FAIL_TIMEOUT``, made
    once both ranks have joined."""
    _join(rank, world_size, store, out)
    group = dist.new_group(list(range(world_size)), timeout=datetime.timedelta(seconds=FAIL_TIMEOUT))
    collector = DistributedSyncDataCollector(
        gs.make,
        _policy(rank)[0],
        num_envs=2 * world_size,
        create_env_kwargs={"env_id": "CartPole-v1"},
        frames_per_batch=4 * world_size,
        seed=0,
        timeout=FAIL_TIMEOUT,
        group=group,
    )
    collector.next()
    if mode == "watchdog":  # fire before gloo's own timeout: the watchdog ends rank 0 (status 124)
        collector.comm.watchdog_factor = 0.25
    if rank == 1:
        if mode == "die":
            os._exit(3)
        time.sleep(120)  # stalled: the test kills it
        os._exit(4)
    start = time.perf_counter()
    try:
        collector.next()
        collector.update_policy_weights_()
        error = None
    except CommError as err:
        error = str(err)
    torch.save({"error": error, "seconds": time.perf_counter() - start}, os.path.join(out, f"rank{rank}.pt"))
    os._exit(0)  # the group is broken: do not wait on its teardown
