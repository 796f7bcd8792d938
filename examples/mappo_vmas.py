"""Multi-agent PPO (MAPPO: a shared actor, a centralized critic) on VMAS ``navigation`` through
gpusim's ``VmasEnv`` (the MARL layout: per-agent entries under ``"agents"``, ``done`` at the root).

The task: 3 agents, each with its own goal; an episode ends when every agent is on its goal or
after 100 steps; shared reward (VMAS's default: every agent gets the decrease of the summed
agent-goal distances, a small bonus when all goals are reached, -1 per collision). The most an
episode can pay is the summed start distance (plus the bonus), so returns are reported
normalized by it: 1.0 = every agent on its goal, 0 = no progress (a random policy scores about
0). The evaluation also prints how often every agent reached its goal.

Bar: a mean normalized return of at least 0.8 over the 64 evaluation episodes (deterministic
policy): the agents close at least 80% of their summed start-to-goal distance within 100 steps,
collisions included. ``--smoke`` runs two tiny iterations (what CI does).

``--native`` trains the same actor and critic on gpusim's native ``MPE/simple_spread-v0`` (3 agents
cover 3 landmarks; the layout is ``VmasEnv``'s, so the policy code is unchanged; actions are
clipped to ``[-1, 1]`` by a ``ClipTransform``, as ``clamp_actions=True`` does for VMAS; rewards are
scaled by 0.1 for training). Its
score: the summed landmark-to-nearest-agent distance the agents close by the episode's last
step (100 steps), normalized by its start value (1.0 = every landmark covered, 0 = no progress;
a random policy scores about 0). Bar: at least 0.8 over the 64 evaluation episodes. Its recipe:
the learning rate 1e-3 annealed to 0, an entropy bonus of 0.01 and 4.8 M frames (the default
with ``--native``); ``--native --compile --threads 1`` reached 0.87, 0.91 and 0.87 (seeds 0, 1, 2)
in 317-497 s each on a 2-core CPU shared with other work (see docs/mpe.md).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo import Actor, Keys, PPOConfig, common_args, mlp, run, sized  # noqa: E402

import gpusim as gs  # noqa: E402

BAR = 0.8
# simple_spread's reward is N times the summed landmark distances per step (hundreds per episode):
# scaled for training (the evaluation reads the env's own rewards)
NATIVE_REWARD_SCALE = 0.1
N_AGENTS = 3
MAX_STEPS = 100

CONFIG = PPOConfig(
    num_envs=64,
    steps=100,
    total_frames=64 * 100 * 60,
    epochs=4,
    minibatches=8,
    lr=3e-4,
    gamma=0.99,
    lam=0.95,
    clip=0.2,
    ent_coef=0.0,
    anneal_lr=False,
)

# native simple_spread: the same batch sizes; a larger step size, annealed to 0 (its reward is a
# distance, not a difference of distances: the returns move slowly at 3e-4), and an entropy bonus
# (without it the action std falls below 0.1 by 4 M frames and the coverage stalls near 0.75)
NATIVE_CONFIG = dataclasses.replace(CONFIG, total_frames=64 * 100 * 750, lr=1e-3, ent_coef=0.01, anneal_lr=True)

KEYS = Keys(
    obs=("agents", "observation"),
    action=("agents", "action"),
    log_prob=("agents", "log_prob"),
    reward=("agents", "reward"),
    done="done",
    terminated="terminated",
)


class CentralCritic(nn.Module):
    """MAPPO's critic: every agent's observation in, one value per agent out."""

    def __init__(self, n_obs: int, n_agents: int):
        super().__init__()
        self.net = mlp(n_obs * n_agents, n_agents, hidden=128)

    def forward(self, joint_obs: torch.Tensor) -> torch.Tensor:
        return self.net(joint_obs).unsqueeze(-1)


def joint_obs(td):
    """``[..., n_agents, n_obs]`` -> ``[..., n_agents * n_obs]`` (what the critic reads)."""
    return td.get(KEYS.obs).flatten(-2)


def make_env(num_envs: int, seed: int, native: bool = False, reward_scale: float = 1.0) -> gs.EnvBase:
    if native:
        env = gs.make("MPE/simple_spread-v0", num_envs=num_envs, seed=seed, n_agents=N_AGENTS, max_steps=MAX_STEPS)
        clip = gs.ClipTransform(in_keys_inv=[KEYS.action], low=-1.0, high=1.0)
        if reward_scale == 1.0:
            return gs.TransformedEnv(env, clip)
        return gs.TransformedEnv(env, gs.Compose(clip, gs.RewardScaling(0.0, reward_scale, in_keys=[KEYS.reward])))
    return gs.VmasEnv(
        "navigation",
        num_envs=num_envs,
        continuous_actions=True,
        max_steps=MAX_STEPS,
        seed=seed,
        n_agents=N_AGENTS,
        clamp_actions=True,
    )


def evaluate(actor: Actor, num_envs: int, seed: int) -> torch.Tensor:
    """Normalized returns of the first episode of ``num_envs`` envs (deterministic policy). An
    episode ends when every agent is on its goal (VMAS's ``done``) or after 100 steps."""
    from tensordict.nn import set_interaction_type

    env = make_env(num_envs, seed)
    root = env.reset()
    start = root.get(KEYS.obs)[..., 4:6].norm(dim=-1).sum(-1)  # obs[4:6]: the agent-to-goal vector
    with torch.no_grad(), set_interaction_type("deterministic"):
        data = env.rollout(MAX_STEPS, actor, auto_reset=False, tensordict=root, break_when_any_done=False)
    done = data.get(("next", "done"))[..., 0].long()
    first = (torch.cumsum(done, dim=1) - done) == 0  # the steps of the first episode
    reward = data.get(("next", "agents", "reward"))[..., 0, 0]  # shared reward: agent 0's
    solved = (data.get(("next", "terminated"))[..., 0] & first).any(1)
    print(f"evaluation: every agent on its goal in {float(solved.float().mean()):.0%} of {num_envs} episodes")
    return (reward * first).sum(1) / start


def coverage_gap(obs: torch.Tensor) -> torch.Tensor:
    """simple_spread: ``sum_l min_a |l - a|`` from the observations ``[..., n_agents, n_obs]``
    (``obs[4 : 4 + 2 n]``: the landmarks relative to the agent)."""
    rel = obs[..., 4 : 4 + 2 * N_AGENTS].unflatten(-1, (N_AGENTS, 2))  # [..., agent, landmark, 2]
    return rel.norm(dim=-1).amin(-2).sum(-1)


def evaluate_native(actor: Actor, num_envs: int, seed: int) -> torch.Tensor:
    """Normalized coverage of ``num_envs`` native simple_spread episodes (deterministic policy):
    ``1 - gap(last step) / gap(start)``."""
    from tensordict.nn import set_interaction_type

    env = make_env(num_envs, seed, native=True)
    root = env.reset()
    with torch.no_grad(), set_interaction_type("deterministic"):
        data = env.rollout(MAX_STEPS, actor, auto_reset=False, tensordict=root, break_when_any_done=False)
    start, end = coverage_gap(root.get(KEYS.obs)), coverage_gap(data.get(("next", *KEYS.obs))[:, -1])
    ret = data.get(("next", "agents", "reward"))[..., 0, 0].sum(1)
    print(
        f"evaluation: mean episode return {float(ret.mean()):.1f}, landmark gap {float(start.mean()):.2f} -> {float(end.mean()):.2f}"
    )
    return 1.0 - end / start


def main(argv=None) -> float:
    parser = common_args(__doc__.splitlines()[0], CONFIG.total_frames)
    parser.set_defaults(total_frames=None)  # each task's own (CONFIG's or NATIVE_CONFIG's)
    parser.add_argument("--native", action="store_true", help="gpusim's native MPE/simple_spread-v0 instead of VmasEnv")
    args = parser.parse_args(argv)
    if args.total_frames is None:
        args.total_frames = (NATIVE_CONFIG if args.native else CONFIG).total_frames
    torch.set_num_threads(args.threads)
    cfg = sized(NATIVE_CONFIG if args.native else CONFIG, args, smoke_envs=4, smoke_steps=10)
    torch.manual_seed(args.seed)
    env = make_env(
        cfg.num_envs, args.seed, native=args.native, reward_scale=NATIVE_REWARD_SCALE if args.native else 1.0
    )
    n_obs = env.full_observation_spec[KEYS.obs].shape[-1]
    n_act = env.full_action_spec[KEYS.action].shape[-1]
    actor = Actor(
        mlp(n_obs, n_act, hidden=128, out_std=0.01),
        discrete=False,
        n_act=n_act,
        obs_key=KEYS.obs,
        action_key=KEYS.action,
        log_prob_key=KEYS.log_prob,
        init_log_std=-0.5,
    )
    critic = CentralCritic(n_obs, N_AGENTS)
    evaluator = evaluate_native if args.native else evaluate
    score = lambda: evaluator(actor, 4 if args.smoke else 64, args.seed + 1000)  # noqa: E731
    if args.native:
        title = f"native MPE simple_spread MAPPO ({N_AGENTS} agents)"
        return run(
            title, args, cfg, env, actor, critic, score, BAR, "normalized coverage", keys=KEYS, critic_obs=joint_obs
        )
    title = f"VMAS navigation MAPPO ({N_AGENTS} agents)"
    return run(title, args, cfg, env, actor, critic, score, BAR, "normalized return", keys=KEYS, critic_obs=joint_obs)


if __name__ == "__main__":
    main()
