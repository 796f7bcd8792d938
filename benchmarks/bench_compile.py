"""Compile time of a compiled runner: cold, another batch size, and a second process reusing
Inductor's persistent cache (docs/compile.md).

Runs itself twice as a child process with the same fresh cache directory (``TORCHINDUCTOR_CACHE_DIR``
in a temporary folder, or ``--cache-dir``). Each child compiles a runner for each ``--batches``
size in turn (CartPole-v1 by default, random actions or, with ``--policy mlp``, the PPO example's
2x64 MLP actor; the default steps per call) and reports,
per runner, the compile time (``runner.compile_seconds``, wall clock), the CPU seconds of the
process and of the compiler processes it waited for (on a shared machine the wall clock includes
waiting for a core; the CPU seconds do not), and the Inductor cache hits and misses.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_compile.py --batches 64 10 [--policy mlp]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def child(env_id: str, batches: list[int], policy_name: str) -> None:
    """One process: a runner per batch size, compiled by its first call; one JSON line each."""
    import torch

    import gpusim as gs
    from gpusim._torch_internals import compile_counters

    policy = None
    if policy_name == "mlp":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
        from ppo_cartpole import make_agent

        policy, _ = make_agent(0)

    def cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    for batch in batches:
        env = gs.make(env_id, num_envs=batch, seed=0)
        runner = env.compile(policy, verbose=False)
        before, start = compile_counters(), cpu()
        with torch.no_grad():
            runner(8)
        after = compile_counters()
        print(
            json.dumps(
                {
                    "batch": batch,
                    "compile_s": runner.compile_seconds,
                    "cpu_s": cpu() - start,
                    "compiles": runner.compiles,
                    "steps_per_call": runner.steps_per_call,
                    "hits": after["fxgraph_cache_hit"] - before["fxgraph_cache_hit"],
                    "misses": after["fxgraph_cache_miss"] - before["fxgraph_cache_miss"],
                }
            ),
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 10])
    parser.add_argument("--cache-dir", default=None, help="Inductor cache directory (default: a fresh temporary one)")
    parser.add_argument("--policy", choices=["random", "mlp"], default="random")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.env, args.batches, args.policy)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache_dir or str(Path(tmp) / "inductor")
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        cmd = [sys.executable, __file__, "--child", "--env", args.env, "--policy", args.policy]
        cmd += ["--batches", *map(str, args.batches)]
        print(
            f"{args.env}, {args.policy} policy, cache {'given' if args.cache_dir else 'fresh'}; wall s / CPU s per runner"
        )
        print("| process | batch | steps per call | compile (wall) | CPU | Inductor cache |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name in ("first (cold cache)", "second (warm cache)"):
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            for line in out.stdout.splitlines():
                r = json.loads(line)
                print(
                    f"| {name} | {r['batch']} | {r['steps_per_call']} | {r['compile_s']:.1f} s | {r['cpu_s']:.1f} s | "
                    f"{r['hits']} hit, {r['misses']} miss ({r['compiles']} compile) |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
