"""PPO with a small CNN on a MinAtar game (default MinAtar/Breakout-v1), compiled collection.

The collection runs through gpusim's compiled engine (``gs.Collector(..., compile=True)``: the
game and the CNN policy in one ``torch.compile`` graph); ``--eager`` runs it eagerly.
Observations are ``[*B, 10, 10, C]`` bools, cast to float and moved channels-first for the CNN.

On a 2-core CPU shared with other jobs (load average 12-14), the default run (Breakout, seed 0,
``--threads 2``, 147 456 frames) reaches an evaluation mean return of 5.25 over 16 episodes
(deterministic policy, at most 1000 steps each) in 18 minutes: 960 s of collection and updates,
the 2-minute compile included, then the evaluation. The mean training return of the last 100
episodes went 0.35 (first batch) -> 1.4 (22 k frames) -> 2.6 (53 k) -> 3.9 (84 k) -> 4.6 (147 k).
``BAR`` is 5: the run prints whether it was reached.

On a CPU with torch 2.13, Inductor fails to compile the Asterix, Freeway and SpaceInvaders
steps (C++ code generation; see benchmarks/results/minatar-cpu.md): use ``--eager`` for those
games there. ``--smoke`` runs two tiny iterations (what CI does); ``--game`` picks another MinAtar game
(``Asterix``, ``Breakout``, ``Freeway``, ``Seaquest``, ``SpaceInvaders``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo import Actor, PPOConfig, common_args, evaluate, run, sized  # noqa: E402

import gpusim as gs  # noqa: E402

GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
BAR = 5.0  # Breakout: mean evaluation return (see the docstring's run)
EVAL_STEPS = 1000  # MinAtar ids have no time limit: the evaluation counts the rewards of 1000 steps at most

CONFIG = PPOConfig(
    num_envs=32,
    steps=64,
    total_frames=147_456,
    epochs=4,
    minibatches=4,
    lr=1e-3,
    gamma=0.99,
    lam=0.95,
    clip=0.2,
    ent_coef=0.01,
)


class MinAtarCNN(nn.Module):
    """``[*B, 10, 10, C]`` bool observations -> ``[*B, n_out]``: one 3x3 conv (16 channels),
    a hidden layer of ``hidden`` units, ReLUs, orthogonal init (the MinAtar paper's network, narrower)."""

    def __init__(self, channels: int, n_out: int, hidden: int = 64, out_std: float = 1.0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 16, kernel_size=3)
        self.hidden = nn.Linear(16 * 8 * 8, hidden)
        self.out = nn.Linear(hidden, n_out)
        for layer, std in ((self.conv, math.sqrt(2)), (self.hidden, math.sqrt(2)), (self.out, out_std)):
            nn.init.orthogonal_(layer.weight, std)
            nn.init.zeros_(layer.bias)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[:-3]
        x = obs.reshape(-1, *obs.shape[-3:]).permute(0, 3, 1, 2).float()  # channels first
        x = torch.relu(self.conv(x)).flatten(1)
        x = torch.relu(self.hidden(x))
        return self.out(x).reshape(*lead, -1)


def main(argv=None) -> float:
    parser = common_args(__doc__.splitlines()[0], CONFIG.total_frames)
    parser.add_argument("--game", choices=GAMES, default="Breakout", help="the MinAtar game (default: Breakout)")
    parser.add_argument("--eager", dest="compile", action="store_false", help="eager collection (default: compiled)")
    parser.set_defaults(compile=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = sized(CONFIG, args, smoke_envs=8, smoke_steps=8)
    env_id = f"MinAtar/{args.game}-v1"
    env = gs.make(env_id, num_envs=cfg.num_envs, seed=args.seed)
    channels = env.observation_spec["observation"].shape[-1]
    n_act = env.action_spec.n
    torch.manual_seed(args.seed)
    actor = Actor(MinAtarCNN(channels, n_act, out_std=0.01), discrete=True)
    critic = MinAtarCNN(channels, 1, out_std=1.0)
    eval_steps = 20 if args.smoke else EVAL_STEPS
    score = lambda: evaluate(gs.make(env_id, num_envs=16, seed=args.seed + 1000), actor, eval_steps)  # noqa: E731
    return run(f"{env_id} PPO", args, cfg, env, actor, critic, score, BAR, "return")


if __name__ == "__main__":
    main()
