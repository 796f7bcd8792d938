"""The TorchRL paper's collection benchmark (its Table 5): frames/s collecting Breakout-v5 (ale-py),
HalfCheetah-v5 (mujoco) and Pendulum-v1 with random actions, gpusim against gymnasium's
``AsyncVectorEnv`` (and TorchRL's collectors where torchrl is installed), the same number of
workers, contenders alternating within each round.

Contenders (``--only``, comma separated):

* ``gs-parallel``: ``gs.Collector(ParallelEnv(n, GymEnv(id)))``: one env per worker process,
  shared-memory buffers.
* ``gs-pool``: ``gs.Collector(AsyncEnvPool([GymEnv(id)] * n, backend="multiprocessing",
  exchange="shm"))``.
* ``gs-vec``: ``gs.Collector(GymEnv(id, num_envs=n))``: the env's own vector env (for Breakout
  ale-py's ``AtariVectorEnv`` with its own thread pool, set to Breakout-v5's own observation and
  dynamics, ``ALE_V5_FRAMES``: 210x160 RGB frames, 4 frames per step, sticky actions 0.25, none
  of its Atari preprocessing; its frames carry a stack dim of 1; gymnasium's in-process
  ``SyncVectorEnv`` for the two others).
* ``gs-vec-async``: ``gs.Collector(GymEnv(id, num_envs=n, vectorization_mode="async"))``:
  gymnasium's ``AsyncVectorEnv`` (n processes) under gpusim's wrapper.
* ``gymnasium``: ``gymnasium.vector.AsyncVectorEnv([gym.make(id)] * n)`` stepped with batched
  random actions (its defaults: shared memory, observations copied out); the loop keeps each
  step's observation array (a reference, no further copy), where a collector writes it into its
  ``[n, T]`` batch.
* ``torchrl`` / ``torchrl-async``: TorchRL's ``Collector(ParallelEnv(n, GymEnv(id)))`` and
  ``MultiAsyncCollector`` over ``n`` ``GymEnv(id)`` (one line says so when torchrl is not
  installed).

Frames are env steps (Breakout-v5 steps 4 emulator frames each). Every contender collects
``--frames`` frames per measure in batches of ``--steps`` steps per worker, after one warm-up
batch (worker start and ROM loading are not timed); the table shows the best of ``--rounds``.

Usage::

    PYTHONPATH=. python benchmarks/bench_collection.py [--envs breakout halfcheetah pendulum]
        [--workers 2 4] [--frames 2000] [--steps 50] [--rounds 3] [--only gs-parallel,gymnasium]
    PYTHONPATH=. python benchmarks/bench_collection.py --quick   # Pendulum and Breakout, 2 workers, one round
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import time
from collections.abc import Callable
from typing import Any

import torch

ENVS = {"breakout": "ALE/Breakout-v5", "halfcheetah": "HalfCheetah-v5", "pendulum": "Pendulum-v1"}
#: ale-py's AtariVectorEnv with gymnasium's Breakout-v5 observation and dynamics (its defaults are
#: 84x84 grayscale stacks of 4 max-pooled frames, 30 no-op starts, fire reset, clipped rewards)
ALE_V5_FRAMES = {
    "img_height": 210,
    "img_width": 160,
    "grayscale": False,
    "stack_num": 1,
    "maxpool": False,
    "noop_max": 0,
    "use_fire_reset": False,
    "reward_clipping": False,
    "repeat_action_probability": 0.25,
}
CONTENDERS = ("gs-parallel", "gs-pool", "gs-vec", "gs-vec-async", "gymnasium", "torchrl", "torchrl-async")


def _register(env_id: str) -> None:
    """Registers ale-py's ids in this process (worker processes call it too)."""
    if env_id.startswith("ALE/"):
        import ale_py
        import gymnasium as gym

        gym.register_envs(ale_py)


def missing(env_id: str) -> str | None:
    """Why ``env_id`` cannot run here (``None`` when it can)."""
    try:
        _register(env_id)
        import gymnasium as gym

        gym.make(env_id).close()
    except Exception as err:  # noqa: BLE001 - any failure to build the env is reported, not raised
        return f"{type(err).__name__}: {err}"
    return None


def gym_make(env_id: str) -> Any:
    _register(env_id)
    import gymnasium as gym

    return gym.make(env_id)


def gpusim_env(env_id: str, **kwargs: Any) -> Any:
    _register(env_id)
    from gpusim.envs.libs import GymEnv

    return GymEnv(env_id, **kwargs)


def torchrl_env(env_id: str) -> Any:
    _register(env_id)
    from torchrl.envs import GymEnv as TorchRLGymEnv

    return TorchRLGymEnv(env_id)


# ---------------------------------------------------------------------------- sources
class Source:
    """A contender built for ``(env_id, n, steps)``: ``batch()`` collects ``n * steps`` frames."""

    frames: int

    def batch(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class GpusimSource(Source):
    def __init__(self, env: Any, n: int, steps: int) -> None:
        import gpusim as gs

        self.collector = gs.Collector(env, None, frames_per_batch=n * steps)
        self.frames = self.collector.frames_per_batch
        self.it = iter(self.collector)

    def batch(self) -> None:
        next(self.it)

    def close(self) -> None:
        self.collector.shutdown()


class GymnasiumSource(Source):
    def __init__(self, env_id: str, n: int, steps: int) -> None:
        import gymnasium as gym

        self.env = gym.vector.AsyncVectorEnv([functools.partial(gym_make, env_id)] * n)
        self.env.reset(seed=0)
        self.env.action_space.seed(0)
        self.steps, self.frames = steps, n * steps

    def batch(self) -> None:
        kept = []
        for _ in range(self.steps):
            obs, *_ = self.env.step(self.env.action_space.sample())
            kept.append(obs)

    def close(self) -> None:
        self.env.close()


class TorchRLSource(Source):
    def __init__(self, env_id: str, n: int, steps: int, asynchronous: bool) -> None:
        try:  # torchrl 0.14's names
            from torchrl.collectors import Collector as SyncCollector
            from torchrl.collectors import MultiAsyncCollector
        except ImportError:  # older releases
            from torchrl.collectors import MultiaSyncDataCollector as MultiAsyncCollector
            from torchrl.collectors import SyncDataCollector as SyncCollector
        from torchrl.envs import ParallelEnv as TorchRLParallelEnv

        make = functools.partial(torchrl_env, env_id)
        if asynchronous:  # n collector processes of one env each; a batch is one worker's steps
            self.collector = MultiAsyncCollector([make] * n, None, frames_per_batch=steps, total_frames=-1)
            self.per_batch, self.frames = n, n * steps
        else:
            self.collector = SyncCollector(
                TorchRLParallelEnv(n, make), None, frames_per_batch=n * steps, total_frames=-1
            )
            self.per_batch, self.frames = 1, n * steps
        self.it = iter(self.collector)

    def batch(self) -> None:
        for _ in range(self.per_batch):
            next(self.it)

    def close(self) -> None:
        self.collector.shutdown()


def build(name: str, env_id: str, n: int, steps: int) -> Source:
    """The contender ``name`` for ``n`` workers."""
    from gpusim.envs import AsyncEnvPool, ParallelEnv

    make = functools.partial(gpusim_env, env_id)
    if name == "gs-parallel":
        return GpusimSource(ParallelEnv(n, make), n, steps)
    if name == "gs-pool":
        return GpusimSource(AsyncEnvPool([make] * n, backend="multiprocessing", exchange="shm"), n, steps)
    if name == "gs-vec":
        frames = ALE_V5_FRAMES if env_id.startswith("ALE/") else {}
        return GpusimSource(gpusim_env(env_id, num_envs=n, **frames), n, steps)
    if name == "gs-vec-async":
        return GpusimSource(gpusim_env(env_id, num_envs=n, vectorization_mode="async"), n, steps)
    if name == "gymnasium":
        return GymnasiumSource(env_id, n, steps)
    if name in ("torchrl", "torchrl-async"):
        return TorchRLSource(env_id, n, steps, asynchronous=name == "torchrl-async")
    raise ValueError(f"unknown contender {name!r}; expected one of {', '.join(CONTENDERS)}")


def measure(name: str, env_id: str, n: int, steps: int, frames: int) -> float:
    """Frames/s of ``name`` collecting at least ``frames`` frames after a warm-up batch."""
    source = build(name, env_id, n, steps)
    try:
        source.batch()  # warm-up: workers started, ROMs loaded, buffers allocated
        batches = max(1, -(-frames // source.frames))
        start = time.perf_counter()
        for _ in range(batches):
            source.batch()
        return batches * source.frames / (time.perf_counter() - start)
    finally:
        source.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", choices=sorted(ENVS), default=["breakout", "halfcheetah", "pendulum"])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--frames", type=int, default=2000, help="frames per measure (after the warm-up batch)")
    parser.add_argument("--steps", type=int, default=50, help="steps per worker in a batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(CONTENDERS), help="comma-separated contenders")
    parser.add_argument("--quick", action="store_true", help="Pendulum and Breakout, 2 workers, 500 frames, one round")
    args = parser.parse_args(argv)
    unknown = [c for c in args.only.split(",") if c not in CONTENDERS]
    if unknown:
        parser.error(f"--only: unknown contender(s) {unknown}; expected some of {', '.join(CONTENDERS)}")
    if min(args.workers) < 1 or args.frames < 1 or args.steps < 1 or args.rounds < 1:
        parser.error("--workers, --frames, --steps and --rounds must be positive")
    if args.quick:
        args.envs, args.workers, args.frames, args.rounds = ["pendulum", "breakout"], [2], 500, 1
    return args


def contenders(only: str, out: Callable[[str], None] = print) -> list[str]:
    """The contenders of ``only`` that can run here (one line for each one that cannot)."""
    names = only.split(",")
    if importlib.util.find_spec("torchrl") is None:
        dropped = [x for x in names if x.startswith("torchrl")]
        if dropped:
            out(
                f"torchrl is not installed: skipping {', '.join(dropped)} (pip install torchrl==0.14.1 in a venv of its own)"
            )
        names = [x for x in names if not x.startswith("torchrl")]
    return names


def main(argv: list[str] | None = None) -> dict:
    """Runs the benchmark; returns ``{(env, workers): {contender: frames/s}}``."""
    args = parse_args(argv)
    torch.set_num_threads(1)
    names = contenders(args.only)
    print(
        f"# bench_collection: torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"best of {args.rounds} round(s) of {args.frames} frames, contenders alternating"
    )
    results: dict = {}
    for env in args.envs:
        env_id = ENVS[env]
        why = missing(env_id)
        if why is not None:
            print(f"\n{env_id}: skipped ({why})")
            continue
        print(f"\n## {env_id} (frames/s)\n")
        print("| workers | " + " | ".join(names) + " | gs-parallel / gymnasium | best gpusim / gymnasium |")
        print("| ---: |" + " ---: |" * (len(names) + 2))
        for n in args.workers:
            best = dict.fromkeys(names, 0.0)
            for _ in range(args.rounds):
                for name in names:
                    best[name] = max(best[name], measure(name, env_id, n, args.steps, args.frames))
            results[(env, n)] = best
            comparable = [k for k in best if k.startswith("gs-")]
            ours = max((best[k] for k in comparable), default=float("nan"))
            gym_rate = best.get("gymnasium") or float("nan")
            ratios = (best.get("gs-parallel", float("nan")) / gym_rate, ours / gym_rate)
            print(
                f"| {n} | "
                + " | ".join(f"{best[x]:,.0f}" for x in names)
                + " | "
                + " | ".join(f"{r:.2f}x" for r in ratios)
                + " |",
                flush=True,
            )
    return results


if __name__ == "__main__":
    main()
