"""Throughput under contention: a compiled (or eager) CartPole rollout, quiet and with one other
busy process on the machine, for several thread settings, each in a fresh process.

Users' machines are rarely idle. On a 2-core machine a torch thread pool of 2 whose second thread
is descheduled by another process makes every parallel region wait for it; this script measures
how much each setting keeps:

* ``threads``: ``torch.set_num_threads`` of the run (``gpusim bench --threads``);
* ``OMP_WAIT_POLICY``: OpenMP's idle-thread policy (``ACTIVE`` spins, ``PASSIVE`` sleeps at once;
  unset = the runtime's default, which spins a while then sleeps), or other runtime settings
  such as ``GOMP_SPINCOUNT=N`` (how long GNU OpenMP spins). Read by the OpenMP runtime when
  torch loads it, so they are set in the environment of the child process.

Each cell is the median env-steps/s of ``gpusim bench`` (``--repeats`` timed runs after a
warm-up and the compile). "busy" runs ``--busy`` other processes spinning in pure Python beside
it. The last columns compare the busy figure with the same setting's quiet figure and with the
best quiet figure of the run.

Usage::

    python benchmarks/bench_contention.py [--num-envs 65536] [--steps 100] [--eager]
        [--threads 1 2] [--policies default PASSIVE] [--busy 1]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_RATE = re.compile(r"median ([\d.]+) ?([kMG]?)")
_SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def _spin() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run_bench(args: argparse.Namespace, threads: int, policy: str, busy: int) -> float:
    """Median env-steps/s of one ``gpusim bench`` child process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OMP_WAIT_POLICY", None)
    for setting in policy.split(","):
        if "=" in setting:  # e.g. GOMP_SPINCOUNT=10000
            name, value = setting.split("=", 1)
            env[name] = value
        elif setting != "default":
            env["OMP_WAIT_POLICY"] = setting
    env["GPUSIM_COMPILE_VERBOSE"] = "0"
    cmd = [
        sys.executable,
        "-m",
        "gpusim",
        "bench",
        args.env_id,
        "--num-envs",
        str(args.num_envs),
        "--steps",
        str(args.steps),
        "--repeats",
        str(args.repeats),
        "--threads",
        str(threads),
        "--device",
        "cpu",
    ]
    if not args.eager:
        cmd.append("--compile")
    spinners = [_spin() for _ in range(busy)]
    try:
        time.sleep(0.2 if busy else 0.0)
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    m = _RATE.search(out.splitlines()[-1])
    if m is None:
        raise RuntimeError(f"no rate in the output of {' '.join(cmd)}:\n{out}")
    return float(m.group(1)) * _SCALE[m.group(2)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--num-envs", type=int, default=65536)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--eager", action="store_true", help="eager rollouts instead of compiled")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--policies",
        nargs="+",
        default=["default", "PASSIVE"],
        help="OMP_WAIT_POLICY values, or NAME=VALUE settings (comma-separated) such as GOMP_SPINCOUNT=10000",
    )
    parser.add_argument("--busy", type=int, default=1, help="competing busy processes")
    args = parser.parse_args(argv)
    mode = "eager" if args.eager else "compiled"
    print(
        f"# bench_contention: {args.env_id} x {args.num_envs}, {mode}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}, {args.busy} busy process(es) in the busy runs"
    )
    rows = []
    for threads in args.threads:
        for policy in args.policies:
            quiet = run_bench(args, threads, policy, 0)
            busy = run_bench(args, threads, policy, args.busy)
            rows.append((threads, policy, quiet, busy))
            print(
                f"  threads {threads}, OMP_WAIT_POLICY {policy}: quiet {quiet / 1e6:.1f} M, busy {busy / 1e6:.1f} M",
                flush=True,
            )
    best = max(r[2] for r in rows)
    print("\n| threads | OMP_WAIT_POLICY | quiet | busy | busy / quiet | busy / best quiet |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for threads, policy, quiet, busy in rows:
        print(
            f"| {threads} | {policy} | {quiet / 1e6:.1f} M | {busy / 1e6:.1f} M | {busy / quiet:.2f}x | {busy / best:.2f}x |"
        )


if __name__ == "__main__":
    main()
