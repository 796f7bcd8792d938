"""TorchRL's ``Collector`` over ``gpusim.to_torchrl(gpusim CartPole)`` vs over TorchRL's ``GymEnv``.

Both contenders are TorchRL 0.14 collectors (``torchrl.collectors.Collector``, the
``SyncDataCollector``) with the same random policy (``torchrl.envs.utils.RandomPolicy`` over the
env's action spec) on CartPole-v1 with auto-reset and 500-step truncation:

* gpusim: ``to_torchrl(gpusim.make("CartPole-v1", num_envs=B))`` (the native batched CartPole);
* torchrl, ``--peer sync`` (default): ``GymWrapper`` over gymnasium's ``SyncVectorEnv`` of B
  ``CartPole-v1`` (same-step auto-reset, which TorchRL's wrapper takes; categorical actions).
  TorchRL's ``GymEnv("CartPole-v1", num_envs=B)`` builds the same wrapper over an
  ``AsyncVectorEnv`` (one process per env), which is no contender on a 2-core machine, and
  TorchRL 0.14's wrapper fails on gymnasium's numpy ``CartPoleVectorEnv`` (it reads an
  ``autoreset_mode`` attribute that this env keeps in its metadata only);
* torchrl, ``--peer serial``: ``SerialEnv(B, lambda: GymEnv("CartPole-v1"))`` (keep B small).

Each collector yields ``[B, T]`` batches (``frames_per_batch = B * T``); after warm-up batches,
the script times ``--batches`` batches per round, alternating the contenders, and reports the
median env-steps/s of each and the gpusim/TorchRL ratio.

Run it where torchrl 0.14.1 is installed (e.g. the main command's ``.venv-compare``, with the
repository on ``PYTHONPATH``)::

    python benchmarks/bench_torchrl_collector.py [--sizes 16 256 4096] [--steps 64]
        [--batches 5] [--rounds 3] [--peer sync|serial]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch


def make_gpusim(num_envs: int):
    import gpusim

    return gpusim.to_torchrl(gpusim.make("CartPole-v1", num_envs=num_envs, seed=0))


def make_torchrl(num_envs: int, peer: str):
    import gymnasium as gym
    from torchrl.envs import GymEnv, GymWrapper, SerialEnv

    if peer == "serial":
        env = SerialEnv(num_envs, lambda: GymEnv("CartPole-v1", categorical_action_encoding=True))
    else:
        vector = gym.make_vec(
            "CartPole-v1",
            num_envs=num_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
        )
        env = GymWrapper(vector, categorical_action_encoding=True)
    env.set_seed(0)
    return env


def make_collector(env, steps: int):
    from torchrl.collectors import Collector
    from torchrl.envs.utils import RandomPolicy

    frames = env.batch_size.numel() * steps
    return Collector(env, RandomPolicy(env.action_spec), frames_per_batch=frames, total_frames=-1)


def rate(iterator, batches: int) -> float:
    start = time.perf_counter()
    frames = 0
    for _ in range(batches):
        frames += next(iterator).numel()
    return frames / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 256, 4096])
    parser.add_argument("--steps", type=int, default=64, help="steps per env in one batch (T)")
    parser.add_argument("--batches", type=int, default=5, help="batches timed per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer", choices=["sync", "serial"], default="sync")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads for both contenders")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    import torchrl

    print(
        f"torchrl {torchrl.__version__} Collector, CartPole-v1, random policy, T={args.steps} steps per batch, "
        f"{args.batches} batches per round, median of {args.rounds} rounds (env-steps/s); peer: {args.peer}; "
        f"{args.threads} torch threads"
    )
    print(f"{'envs':>6} {'gpusim.to_torchrl':>18} {'torchrl gym':>16} {'ratio':>7}")
    for size in args.sizes:
        collectors = {
            "gpusim": make_collector(make_gpusim(size), args.steps),
            "torchrl": make_collector(make_torchrl(size, args.peer), args.steps),
        }
        iterators = {name: iter(c) for name, c in collectors.items()}
        for it in iterators.values():
            rate(it, 2)  # warm up
        rates: dict = {name: [] for name in collectors}
        for _ in range(args.rounds):
            for name, it in iterators.items():
                rates[name].append(rate(it, args.batches))
        for c in collectors.values():
            c.shutdown()
        g, t = statistics.median(rates["gpusim"]), statistics.median(rates["torchrl"])
        print(f"{size:>6} {g:>18,.0f} {t:>16,.0f} {g / t:>6.2f}x", flush=True)


if __name__ == "__main__":
    main()
