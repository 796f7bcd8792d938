"""A/B of compiled rollouts in ONE process: one runner per set of module flags, run alternately.

Each runner is built and traced with its flags set (flags read at construction or trace time),
and every timed ``run(T, root)`` sets them again (Dynamo guards module globals read while
tracing). Prints the best env-steps/s of ``REPS`` (default 7) runs per runner and its first-call
(compile) seconds.

Usage::

    PYTHONPATH=$PWD python benchmarks/ab_compiled_flags.py CartPole-v1 65536 200 [tf] -- base \\
        gpusim.envs.compiled:PINGPONG=False,gpusim.envs.episode:GRAPH_MASK_UINT8=False

``tf`` appends RewardSum, InitTracker, CatFrames(4) and VecNorm to ``gs.make``'s env; a flag
set is ``module:attr=python_value`` pairs joined by commas, or ``base`` (the defaults).
"""

import importlib
import os
import sys
import time

import torch

os.environ["GPUSIM_COMPILE_VERBOSE"] = "0"
torch.set_num_threads(2)

import gpusim as gs  # noqa: E402
from gpusim.envs.compiled import CompiledRollout  # noqa: E402


def make(env_id: str, batch: int, transforms: bool):
    env = gs.make(env_id, num_envs=batch, seed=0)
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


def apply(spec: str) -> list:
    """Sets the flags of ``spec``; returns ``(module, attr, previous)`` to restore."""
    old = []
    if spec == "base":
        return old
    for pair in spec.split(","):
        key, value = pair.split("=", 1)
        name, attr = key.split(":")
        module = importlib.import_module(name)
        old.append((module, attr, getattr(module, attr)))
        setattr(module, attr, eval(value))
    return old


def restore(old: list) -> None:
    for module, attr, value in old:
        setattr(module, attr, value)


def main() -> None:
    split = sys.argv.index("--")
    pos, specs = sys.argv[1:split], sys.argv[split + 1 :]
    env_id, batch, steps, transforms = pos[0], int(pos[1]), int(pos[2]), len(pos) > 3
    reps = int(os.environ.get("REPS", "7"))
    runs = {}
    for spec in specs:
        old = apply(spec)
        runner = CompiledRollout(make(env_id, batch, transforms), verbose=False)
        start = time.perf_counter()
        runner(4)
        runs[spec] = [runner, runner.last_root(), time.perf_counter() - start, 0.0]
        restore(old)
    for _ in range(reps):
        for spec, entry in runs.items():
            old = apply(spec)
            start = time.perf_counter()
            _, entry[1] = entry[0].run(steps, entry[1])
            entry[3] = max(entry[3], batch * steps / (time.perf_counter() - start))
            restore(old)
    line = "  ".join(f"{spec}: {e[3] / 1e6:.1f} M/s (first call {e[2]:.0f} s)" for spec, e in runs.items())
    print(env_id, batch, steps, "+T" if transforms else "", line, flush=True)


if __name__ == "__main__":
    main()
