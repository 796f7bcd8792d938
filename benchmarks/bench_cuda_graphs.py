"""CUDA: compiled rollouts with and without CUDA graphs, side by side in one process.

For each batch size, one env per contender (``make(env_id)``, with the 5-transform stack when
``--transforms``): eager ``rollout(T)``, ``env.compile(cuda_graphs=False)`` (one launch sequence
per compiled call), ``env.compile()`` (the default: one CUDA graph per run length, when the batch
is at most ``CUDA_GRAPHS_UP_TO``) and ``mode="reduce-overhead"`` (PyTorch's CUDA graphs per call,
``--ro-steps`` steps per call). Each contender is warmed up (compile, capture) and then timed
``--repeats`` times in turns, synchronizing before reading the clock; the best run is reported.

Usage::

    python benchmarks/bench_cuda_graphs.py --batches 4096 65536 1048576 [--transforms] [--steps 100]

Examples:
    Needs a CUDA device; ``--help`` runs anywhere:

    >>> import subprocess, sys
    >>> out = subprocess.run([sys.executable, "benchmarks/bench_cuda_graphs.py", "--help"],
    ...                      capture_output=True, text=True).stdout
    >>> "--batches" in out
    True
"""

from __future__ import annotations

import argparse
import os
import time

import torch


def _make(env_id: str, batch: int, transforms: bool):
    import gpusim as gs

    env = gs.make(env_id, num_envs=batch, seed=0, device="cuda")
    if transforms:
        from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, VecNorm

        env = env.append_transform(
            Compose(
                RewardSum(),
                InitTracker(),
                CatFrames(4, dim=-1, in_keys=["observation"]),
                VecNorm(in_keys=["observation"]),
            )
        )
    return env


def _contenders(env_id: str, batch: int, transforms: bool, ro_steps: int) -> dict:
    from gpusim.envs.compiled import CompiledRollout

    out = {}
    env = _make(env_id, batch, transforms)
    out["eager"] = (lambda e: lambda T, root: (e.rollout(T, break_when_any_done=False), None))(env)
    for label, kwargs in (
        ("compiled, no graphs", {"cuda_graphs": False}),
        ("compiled (default)", {}),
        (f"reduce-overhead, {ro_steps}/call", {"mode": "reduce-overhead", "steps_per_call": ro_steps}),
    ):
        e = _make(env_id, batch, transforms)
        runner = CompiledRollout(e, verbose=False, **kwargs)
        label = label + (" [graphs]" if runner._backend is not None else "")
        out[label] = (lambda r, e: lambda T, root: r.run(T, root if root is not None else e.reset()))(runner, e)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--batches", nargs="+", type=int, default=[4096, 65536, 1048576])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--transforms", action="store_true")
    p.add_argument("--ro-steps", type=int, default=8)
    args = p.parse_args()
    os.environ.setdefault("GPUSIM_COMPILE_VERBOSE", "0")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    rows = []
    for batch in args.batches:
        steps = args.steps if batch < (1 << 20) else max(10, args.steps // 4)
        runs = _contenders(args.env, batch, args.transforms, args.ro_steps)
        roots, best, warm = {}, {}, {}
        for label, run in runs.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            _, roots[label] = run(steps, None)
            _, roots[label] = run(steps, roots[label])  # the second run replays (graphs)
            torch.cuda.synchronize()
            warm[label] = time.perf_counter() - t0
        for _ in range(args.repeats):
            for label, run in runs.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                data, roots[label] = run(steps, roots[label])
                torch.cuda.synchronize()
                dt = time.perf_counter() - t0
                best[label] = max(best.get(label, 0.0), batch * steps / dt)
                del data
        for label in runs:
            rows.append((batch, steps, label, best[label], warm[label]))
            print(
                f"{batch:>8} {steps:>4}  {label:<34} {best[label] / 1e6:10.1f} M env-steps/s  (warm-up {warm[label]:.1f} s)",
                flush=True,
            )
        del runs, roots
        torch.cuda.empty_cache()
    tag = "+T" if args.transforms else "bare"
    print(f"\n| batch | contender ({args.env}, {tag}) | M env-steps/s |\n| ---: | --- | ---: |")
    for batch, _steps, label, rate, _ in rows:
        print(f"| {batch} | {label} | {rate / 1e6:.1f} |")


if __name__ == "__main__":
    main()
