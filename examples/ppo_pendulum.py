"""PPO on Pendulum-v1 (continuous actions) with gpusim's Collector (eager, or ``--compile``).

Run in full (``python examples/ppo_pendulum.py``) it reaches Pendulum's usual bar: a mean return
of at least -200 over 20 evaluation episodes (deterministic policy). ``--smoke`` runs two tiny
iterations (what CI does).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo import Actor, PPOConfig, common_args, evaluate, mlp, run, sized  # noqa: E402

import gpusim as gs  # noqa: E402

BAR = -200.0

CONFIG = PPOConfig(
    num_envs=64,
    steps=50,
    total_frames=960_000,
    epochs=10,
    minibatches=8,
    lr=1e-3,
    gamma=0.9,
    lam=0.95,
    clip=0.2,
    ent_coef=0.0,
    reward_scale=0.1,
)


def main(argv=None) -> float:
    args = common_args(__doc__.splitlines()[0], CONFIG.total_frames).parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = sized(CONFIG, args, smoke_envs=8, smoke_steps=8)
    torch.manual_seed(args.seed)
    actor = Actor(mlp(3, 1, out_std=0.01), discrete=False, n_act=1, init_log_std=0.0)
    critic = mlp(3, 1, out_std=1.0)
    env = gs.make("Pendulum-v1", num_envs=cfg.num_envs, seed=args.seed)
    score = lambda: evaluate(gs.make("Pendulum-v1", num_envs=20, seed=args.seed + 1000), actor, 200)  # noqa: E731
    return run("Pendulum-v1 PPO", args, cfg, env, actor, critic, score, BAR, "return")


if __name__ == "__main__":
    main()
