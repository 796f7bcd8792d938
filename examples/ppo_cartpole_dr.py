"""PPO on CartPole-v1 with the pole's length and mass randomized per env, under a curriculum.

Every env row draws its pole half-length and mass anew at each reset (``randomize=`` of
``gs.make``: counter-based draws, reproducible). The ranges start narrow around gymnasium's
values (length 0.5, mass 0.1) and widen between collector batches (``env.set_ranges``: no
recompilation, no host read) until they reach ``length`` in [0.25, 1.0] and ``masspole`` in
[0.05, 0.5]. The policy sees the usual observation only: it must be robust across the range.

At the end the deterministic policy is evaluated on a grid of fixed parameters (one ``[*B]``
tensor per parameter: 20 episodes per cell) and the mean return per cell is printed.

``--smoke`` runs two tiny iterations (what CI does).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo import Actor, PPOConfig, common_args, evaluate, mlp, run, sized  # noqa: E402

import gpusim as gs  # noqa: E402

BAR = 400.0
LENGTH = (0.25, 1.0)  # the final ranges
MASSPOLE = (0.05, 0.5)
START = {"length": 0.5, "masspole": 0.1}  # gymnasium's values: the curriculum widens from them
GRID = {"length": (0.3, 0.5, 0.9), "masspole": (0.05, 0.1, 0.4)}
EPISODES = 20

CONFIG = PPOConfig(
    num_envs=64,
    steps=32,
    total_frames=409_600,
    epochs=4,
    minibatches=4,
    lr=2.5e-3,
    gamma=0.99,
    lam=0.95,
    clip=0.2,
    ent_coef=0.0,
)


def ranges(progress: float) -> dict[str, tuple[float, float]]:
    """The ranges at ``progress`` in [0, 1] of the curriculum (full width from 60 % on)."""
    width = min(1.0, progress / 0.6)
    out = {}
    for name, (low, high) in (("length", LENGTH), ("masspole", MASSPOLE)):
        mid = START[name]
        out[name] = (mid - width * (mid - low), mid + width * (high - mid))
    return out


def grid_env(seed: int) -> gs.EnvBase:
    """One row per (cell, episode): the grid's parameters as per-env tensors."""
    cells = [(length, mass) for length in GRID["length"] for mass in GRID["masspole"]]
    length = torch.tensor([c[0] for c in cells]).repeat_interleave(EPISODES)
    masspole = torch.tensor([c[1] for c in cells]).repeat_interleave(EPISODES)
    return gs.make("CartPole-v1", num_envs=len(length), seed=seed, length=length, masspole=masspole)


def print_grid(returns: torch.Tensor) -> None:
    per_cell = returns.reshape(len(GRID["length"]), len(GRID["masspole"]), EPISODES).mean(-1)
    print("mean return per cell (deterministic policy, 20 episodes each):")
    print("  length \\ masspole " + "".join(f"{m:>9.2f}" for m in GRID["masspole"]))
    for i, length in enumerate(GRID["length"]):
        print(f"  {length:>17.2f} " + "".join(f"{float(v):>9.1f}" for v in per_cell[i]))


def main(argv=None) -> float:
    args = common_args(__doc__.splitlines()[0], CONFIG.total_frames).parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = sized(CONFIG, args, smoke_envs=8, smoke_steps=8)
    torch.manual_seed(args.seed)
    actor = Actor(mlp(4, 2, out_std=0.01), discrete=True)
    critic = mlp(4, 1, out_std=1.0)
    start = ranges(0.0)
    randomize = {name: gs.uniform(*start[name]) for name in start}
    env = gs.make("CartPole-v1", num_envs=cfg.num_envs, seed=args.seed, randomize=randomize)
    n_batches = cfg.total_frames // (cfg.num_envs * cfg.steps)

    def widen(i: int, data) -> None:  # after each batch: the next batch's resets draw from wider ranges
        env.base_env.set_ranges(**ranges((i + 1) / n_batches))

    scores = {}

    def score() -> torch.Tensor:
        scores["grid"] = evaluate(grid_env(args.seed + 1000), actor, 500)
        return scores["grid"]

    mean = run("CartPole-v1 PPO, randomized pole", args, cfg, env, actor, critic, score, BAR, "return", on_batch=widen)
    print(f"final ranges: length {LENGTH}, masspole {MASSPOLE}")
    print_grid(scores["grid"])
    return mean


if __name__ == "__main__":
    main()
