"""MPE speed split, one process, CPU time of the calling thread (robust to other work on a shared
machine): raw VMAS ``env.step(env.get_random_actions())`` loop, the native env's eager ``_step``
loop (fixed actions, nothing stored), eager ``rollout``, and the compiled runner (``[B, T]``
output stored). Million env-steps/s, best of 3; ``T`` as ``gpusim compare --seconds 0.3`` picks it.

Usage: ``OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/bench_mpe_split.py [scenario] [batches]``
(default ``simple_spread 1,64,1024,8192``).
"""

import sys
import time

import torch
import vmas

import gpusim as gs
from gpusim.bench.timing import steps_for
from gpusim.envs.compiled import CompiledRollout

torch.set_num_threads(1)
scenario = sys.argv[1] if len(sys.argv) > 1 else "simple_spread"
batches = [int(b) for b in (sys.argv[2] if len(sys.argv) > 2 else "1,64,1024,8192").split(",")]


def rate(run, steps: int, batch: int) -> float:
    run(2)  # warm-up
    best = 0.0
    for _ in range(3):
        start = time.thread_time()
        run(steps)
        best = max(best, batch * steps / (time.thread_time() - start))
    return best / 1e6


for batch in batches:
    steps = steps_for(batch, 0.3)
    raw = vmas.make_env(scenario, num_envs=batch, device="cpu", seed=0)
    raw.reset()
    env = gs.make(f"MPE/{scenario}-v0", num_envs=batch, seed=0)
    td = env.rand_action(env.reset())
    runner = CompiledRollout(env, verbose=False)
    runner(4)  # compiles

    def vmas_loop(n):
        for _ in range(n):
            raw.step(raw.get_random_actions())

    def step_loop(n):
        for _ in range(n):
            env._step(td)

    res = {
        "raw VMAS": rate(vmas_loop, steps, batch),
        "eager _step": rate(step_loop, steps, batch),
        "eager rollout": rate(lambda n: env.rollout(n, break_when_any_done=False), steps, batch),
        "compiled runner": rate(runner, steps, batch),
    }
    ratios = ", ".join(f"{k} / VMAS {v / res['raw VMAS']:.2f}x" for k, v in res.items() if k != "raw VMAS")
    print(f"{scenario} B={batch} T={steps}: " + ", ".join(f"{k} {v:.4g}" for k, v in res.items()) + f" M/s; {ratios}")
