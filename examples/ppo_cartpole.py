"""PPO on CartPole-v1 with gpusim's Collector (eager, or ``--compile`` for the compiled engine).

Run in full (``python examples/ppo_cartpole.py [--compile]``) it reaches CartPole's bar: a mean
return of at least 475 over 20 evaluation episodes (deterministic policy). ``--smoke`` runs two
tiny iterations (what CI does).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo import Actor, PPOConfig, common_args, evaluate, mlp, run, sized  # noqa: E402

import gpusim as gs  # noqa: E402

BAR = 475.0

#: the hyperparameters (also used by benchmarks/bench_training.py)
CONFIG = PPOConfig(
    num_envs=64,
    steps=32,
    total_frames=307_200,
    epochs=4,
    minibatches=4,
    lr=2.5e-3,
    gamma=0.99,
    lam=0.95,
    clip=0.2,
    ent_coef=0.0,
)


def make_agent(seed: int) -> tuple[Actor, torch.nn.Module]:
    torch.manual_seed(seed)
    actor = Actor(mlp(4, 2, out_std=0.01), discrete=True)
    critic = mlp(4, 1, out_std=1.0)
    return actor, critic


def main(argv=None) -> float:
    args = common_args(__doc__.splitlines()[0], CONFIG.total_frames).parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = sized(CONFIG, args, smoke_envs=8, smoke_steps=8)
    actor, critic = make_agent(args.seed)
    env = gs.make("CartPole-v1", num_envs=cfg.num_envs, seed=args.seed)
    score = lambda: evaluate(gs.make("CartPole-v1", num_envs=20, seed=args.seed + 1000), actor, 500)  # noqa: E731
    return run("CartPole-v1 PPO", args, cfg, env, actor, critic, score, BAR, "return")


if __name__ == "__main__":
    main()
