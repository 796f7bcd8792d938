"""Collection throughput of ``gs.DistributedSyncDataCollector`` over N CPU ranks (gloo) against 1
rank, with the same envs per rank (weak scaling): frames/s over all the ranks, and the scaling
factor against 1 rank (the target on a quiet machine with >= 2 free cores: >= 1.6x at 2 ranks).

    python benchmarks/bench_distributed.py [--ranks 1,2] [--envs-per-rank 256] [--steps 32] [--batches 30]

Each rank runs in its own spawned process with ``torch.set_num_threads(1)``; the ranks meet in a
gloo group through a file store. Every batch does what training does between updates: collect
(an MLP policy unless ``--random``), the per-batch statistics/step-check all-reduce and the
weight broadcast (``--gather``: the batch is also gathered on rank 0). The time is the slowest
rank's, between two barriers, after ``--warmup`` batches. The load average is printed with the
table: a rank needs a free core, so a busy machine scales less.
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class _Greedy(torch.nn.Module):
    """An MLP's argmax: the policy's cost without sampling."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.net(observation).argmax(-1)


def _rank(rank: int, world: int, store: str, out: str, args: argparse.Namespace) -> None:
    import torch.distributed as dist
    from tensordict.nn import TensorDictModule

    import gpusim as gs

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120)
    )
    policy = None if args.random else TensorDictModule(_Greedy(), ["observation"], ["action"])
    n = args.envs_per_rank * world
    collector = gs.DistributedSyncDataCollector(
        gs.make,
        policy,
        create_env_kwargs={"env_id": args.env},
        num_envs=n,
        seed=0,
        frames_per_batch=n * args.steps,
        gather=args.gather,
        timeout=120,
    )
    for _ in range(args.warmup):
        collector.next()
        collector.update_policy_weights_()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.batches):
        collector.next()
        collector.update_policy_weights_()
    dist.barrier()
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if rank == 0:
        frames = n * args.steps * args.batches
        Path(out).write_text(f"{frames} {float(elapsed):.6f}\n")
    collector.shutdown()
    dist.destroy_process_group()


def measure(world: int, args: argparse.Namespace) -> tuple[int, float]:
    """Runs ``world`` ranks; returns (frames, seconds) of the timed batches."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        store, out = os.path.join(tmp, "store"), os.path.join(tmp, "result")
        procs = [ctx.Process(target=_rank, args=(r, world, store, out, args)) for r in range(world)]
        for p in procs:
            p.start()
        try:
            for p in procs:
                p.join(args.timeout)
        finally:
            for p in procs:
                if p.is_alive():
                    p.kill()
                    p.join(5)
        codes = [p.exitcode for p in procs]
        if codes != [0] * world or not os.path.exists(out):
            raise RuntimeError(f"{world} ranks: exit codes {codes}")
        frames, seconds = Path(out).read_text().split()
    return int(frames), float(seconds)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2", help="comma-separated world sizes (the first is the reference)")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--envs-per-rank", type=int, default=256)
    parser.add_argument("--steps", type=int, default=32, help="steps per env per batch")
    parser.add_argument("--batches", type=int, default=30, help="timed batches")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1, help="runs per world size (the best is kept)")
    parser.add_argument("--random", action="store_true", help="random actions instead of an MLP policy")
    parser.add_argument("--gather", action="store_true", help="gather every batch on rank 0")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the ranks are killed")
    args = parser.parse_args(argv)
    worlds = [int(w) for w in args.ranks.split(",")]
    print(
        f"# {args.env}, {args.envs_per_rank} envs per rank, {args.steps} steps per batch, {args.batches} batches, "
        f"{'random actions' if args.random else 'MLP policy'}{', gathered on rank 0' if args.gather else ''}; "
        f"{os.cpu_count()} CPUs, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("| ranks | envs | frames/s | scaling vs 1st row |")
    print("| ---: | ---: | ---: | ---: |")
    base = None
    for world in worlds:
        fps = max(f / s for f, s in (measure(world, args) for _ in range(args.repeats)))
        base = base or fps
        print(f"| {world} | {world * args.envs_per_rank} | {fps:,.0f} | {fps / base:.2f}x |", flush=True)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
