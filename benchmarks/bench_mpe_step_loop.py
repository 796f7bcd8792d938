"""Side by side, one process: native eager env.step loop (fixed actions, nothing stored) vs raw VMAS env.step loop (fixed actions)."""

import time

import torch
import vmas

import gpusim as gs

torch.set_num_threads(1)
for B in (1024, 8192):
    env = gs.make("MPE/simple_spread-v0", num_envs=B, seed=0)
    td = env.rand_action(env.reset())
    v = vmas.make_env("simple_spread", num_envs=B, device="cpu", seed=0)
    v.reset()
    acts = v.get_random_actions()
    res = {}
    for _rep in range(2):
        for name in ("native eager step", "raw vmas step"):
            T = 30
            t = time.perf_counter()
            for _ in range(T):
                if name == "raw vmas step":
                    v.step(acts)
                else:
                    env.step(td)
            dt = time.perf_counter() - t
            res[name] = max(res.get(name, 0), B * T / dt)
    print(
        f"batch {B}: "
        + ", ".join(f"{k} {x / 1e6:.3f} M/s" for k, x in res.items())
        + f"; ratio {res['native eager step'] / res['raw vmas step']:.2f}x"
    )
