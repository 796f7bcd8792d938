"""VMAS ``simple_spread``: raw VMAS step loop vs gpusim ``VmasEnv`` rollout vs TorchRL 0.14.1's
``VmasEnv`` rollout, measured alternately in one run (median of ``--repeats``), env-steps/s.

* raw: ``env.step(env.get_random_actions())`` on ``vmas.make_env("simple_spread", num_envs=N)``
  (VMAS's own random actions, no auto-reset: simple_spread never ends without ``max_steps``);
* gpusim / torchrl: ``env.rollout(T, break_when_any_done=False)`` with random actions from the
  action spec (the data of every step is kept and stacked into ``[N, T]``).

With ``--edge``, two more contenders split the rollout's cost from the wrapper's:

* raw + storage: the raw loop that also builds the rollout's layout by hand: each step's
  per-agent observations, rewards and actions stacked into ``[N, agents, ...]``, and the steps
  stacked into ``[N, T, ...]`` at the end (the observations twice, as the root and the
  ``"next"`` entry of a rollout hold them);
* gpusim loop: ``rand_action`` + ``step_and_maybe_reset`` on the gpusim env, nothing stored
  (like the raw loop).

BENCHMARKS.md holds the peer table measured on this machine. Under heavy load, two torch threads
on a 2-core machine make small torch ops spin in OpenMP (a 64-env VMAS step took 100 ms instead
of 4 ms), so the default here is one thread for every contender.

Usage::

    python benchmarks/bench_vmas.py [--num-envs 1 64 1024 8192] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch
import vmas

from gpusim.bench.report import fmt_rate as _fmt
from gpusim.envs.libs import VmasEnv

DEFAULT_STEPS = {1: 100, 64: 60, 1024: 40, 8192: 20}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, steps: int, n: int, device: str) -> tuple[float, float]:
    _sync(device)
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    _sync(device)
    w1, c1 = time.perf_counter(), time.process_time()
    return n * steps / (w1 - w0), n * steps / max(c1 - c0, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024, 8192])
    parser.add_argument("--steps", type=int, default=None, help="steps per measurement (default: by num_envs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-torchrl", action="store_true")
    parser.add_argument("--edge", action="store_true", help="add the 'raw + storage' and 'gpusim loop' contenders")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    if not args.no_torchrl:
        from torchrl.envs.libs.vmas import VmasEnv as TorchRLVmasEnv

    rows = []
    for n in args.num_envs:
        steps = args.steps or DEFAULT_STEPS.get(n, 20)
        raw = vmas.make_env("simple_spread", num_envs=n, device=args.device, seed=0)
        raw.reset()
        ours = VmasEnv("simple_spread", num_envs=n, device=args.device, seed=0)
        contenders = {
            "raw": lambda raw=raw, steps=steps: [raw.step(raw.get_random_actions()) for _ in range(steps)],
            "gpusim": lambda env=ours, steps=steps: env.rollout(steps, break_when_any_done=False),
        }
        if args.edge:
            contenders["raw + storage"] = lambda raw=raw, steps=steps: _raw_with_storage(raw, steps)
            contenders["gpusim loop"] = lambda env=ours, steps=steps: _gpusim_loop(env, steps)
        if not args.no_torchrl:
            theirs = TorchRLVmasEnv("simple_spread", num_envs=n, device=args.device, seed=0)
            contenders["torchrl"] = lambda env=theirs, steps=steps: env.rollout(steps, break_when_any_done=False)
        for fn in contenders.values():
            fn()  # warm-up
        res = {k: [] for k in contenders}
        for _ in range(args.repeats):
            for name, fn in contenders.items():
                res[name].append(timed(fn, steps, n, args.device))
        rows.append((n, steps, res))
        _print_row(n, steps, res)

    print(
        f"\nsimple_spread (3 agents), device={args.device}, torch threads={args.threads}, median of "
        f"{args.repeats}, wall-clock env-steps/s (process-CPU in brackets)"
    )
    names = list(rows[0][2])
    print("| num_envs | " + " | ".join(names) + " | gpusim/raw | torchrl/raw | gpusim/torchrl |")
    print("| ---: " * (len(names) + 4) + "|")
    for n, _steps, res in rows:
        med = {k: statistics.median(w for w, _ in v) for k, v in res.items()}
        medc = {k: statistics.median(c for _, c in v) for k, v in res.items()}
        cells = [f"{_fmt(med[k])} ({_fmt(medc[k])})" for k in names]

        def r(a, b):
            return (
                statistics.median(x[0] / y[0] for x, y in zip(res[a], res[b]))
                if a in res and b in res
                else float("nan")
            )  # noqa: E731

        print(
            f"| {n} | "
            + " | ".join(cells)
            + f" | {r('gpusim', 'raw'):.2f} | {r('torchrl', 'raw'):.2f} | {r('gpusim', 'torchrl'):.2f} |"
        )
    if args.edge:
        print(
            "\nwith --edge: gpusim loop / raw (both store nothing), gpusim rollout / raw + storage (both build [N, T])"
        )
        for n, _steps, res in rows:
            r = lambda a, b: statistics.median(x[0] / y[0] for x, y in zip(res[a], res[b]))  # noqa: E731
            print(f"  num_envs={n}: {r('gpusim loop', 'raw'):.2f}, {r('gpusim', 'raw + storage'):.2f}")


def _raw_with_storage(raw, steps: int) -> None:
    """The raw loop building a rollout's ``[N, T, agents, ...]`` layout by hand."""
    obs = torch.stack(raw.reset(), 1)
    kept = []
    for _ in range(steps):
        actions = raw.get_random_actions()
        nxt, rew, done, _ = raw.step(actions)
        nxt = torch.stack(nxt, 1)
        kept.append((obs, torch.stack(actions, 1), nxt, torch.stack(rew, 1), done))
        obs = nxt
    for i in range(5):
        torch.stack([k[i] for k in kept], 1)


def _gpusim_loop(env, steps: int) -> None:
    td = env.reset()
    for _ in range(steps):
        _, td = env.step_and_maybe_reset(env.rand_action(td))


def _print_row(n, steps, res) -> None:
    parts = ", ".join(f"{k} {_fmt(statistics.median(w for w, _ in v))}" for k, v in res.items())
    print(f"num_envs={n} ({steps} steps): {parts}", flush=True)


if __name__ == "__main__":
    main()
