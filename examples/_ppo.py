"""A small PPO (GAE + clipped objective) in plain torch + tensordict, shared by the examples.

Nothing here comes from TorchRL: the actor is an ``nn.Module`` that reads and writes a
tensordict (samples under tensordict's ``RANDOM`` interaction type, the collector's default, and
takes the mode/mean otherwise), the critic maps observations to values, and :func:`train` runs
``gpusim.Collector`` batches through a few epochs of minibatch updates.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, set_interaction_type
from tensordict.nn.probabilistic import interaction_type  # (not re-exported by tensordict.nn 0.14)
from torch import nn

import gpusim as gs

torch.distributions.Distribution.set_default_validate_args(False)  # no data-dependent checks in graphs


def mlp(n_in: int, n_out: int, hidden: int = 64, out_std: float = 1.0) -> nn.Sequential:
    """A 2-hidden-layer tanh MLP with orthogonal init (the usual PPO networks)."""
    layers = [nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_out)]
    for layer in layers:
        if isinstance(layer, nn.Linear):
            nn.init.orthogonal_(layer.weight, math.sqrt(2))
            nn.init.zeros_(layer.bias)
    nn.init.orthogonal_(layers[-1].weight, out_std)
    return nn.Sequential(*layers)


class Actor(nn.Module):
    """A policy reading ``obs_key`` and writing ``action_key`` and ``log_prob_key``.

    Args:
        net: observation -> logits (discrete) or mean (continuous).
        discrete: categorical actions (else a diagonal normal with a learned log std).
        n_act: action dims (continuous).
        obs_key, action_key, log_prob_key: the tensordict entries.
    """

    def __init__(
        self,
        net: nn.Module,
        discrete: bool,
        n_act: int = 1,
        obs_key="observation",
        action_key="action",
        log_prob_key="log_prob",
        init_log_std: float = 0.0,
    ):
        super().__init__()
        self.net = net
        self.discrete = discrete
        self.log_std = None if discrete else nn.Parameter(torch.full((n_act,), init_log_std))
        self.obs_key, self.action_key, self.log_prob_key = obs_key, action_key, log_prob_key

    def dist(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        out = self.net(obs)
        if self.discrete:
            return torch.distributions.Categorical(logits=out)
        return torch.distributions.Normal(out, self.log_std.exp().expand_as(out))

    def log_prob(self, dist: torch.distributions.Distribution, action: torch.Tensor) -> torch.Tensor:
        lp = dist.log_prob(action)
        return lp if self.discrete else lp.sum(-1)

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        dist = self.dist(td.get(self.obs_key))
        if interaction_type() in (InteractionType.RANDOM, None):
            action = dist.sample()
        elif self.discrete:
            action = dist.probs.argmax(-1)
        else:
            action = dist.mean
        td.set(self.action_key, action)
        td.set(self.log_prob_key, self.log_prob(dist, action))
        return td


@dataclasses.dataclass
class PPOConfig:
    """Hyperparameters (one set per example; the benchmark uses the CartPole one everywhere)."""

    num_envs: int = 64
    steps: int = 32  # per env per batch
    total_frames: int = 500_000
    epochs: int = 4
    minibatches: int = 4
    lr: float = 2.5e-3
    gamma: float = 0.99
    lam: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 1.0
    anneal_lr: bool = True


def gae(reward, value, next_value, terminated, done, gamma: float, lam: float):
    """Generalized advantage estimation over ``[B, T]`` (time last): bootstraps through
    truncations (``done`` without ``terminated``) with the value of the pre-reset observation."""
    T = reward.shape[-1]
    adv = torch.zeros_like(reward)
    last = torch.zeros_like(reward[..., 0])
    not_term = (~terminated).float()
    not_done = (~done).float()
    for t in reversed(range(T)):
        delta = reward[..., t] + gamma * next_value[..., t] * not_term[..., t] - value[..., t]
        last = delta + gamma * lam * not_done[..., t] * last
        adv[..., t] = last
    return adv, adv + value


class Progress:
    """A one-line progress bar on stderr with the current return (a new line per update when
    stderr is not a terminal)."""

    def __init__(self, total: int, width: int = 30):
        self.total, self.width, self.start = total, width, time.perf_counter()
        self.tty = sys.stderr.isatty()

    def update(self, frames: int, text: str) -> None:
        frac = min(1.0, frames / self.total) if self.total > 0 else 0.0
        fill = int(frac * self.width)
        bar = "#" * fill + "-" * (self.width - fill)
        line = f"[{bar}] {100 * frac:5.1f}% {frames:>9d} frames {time.perf_counter() - self.start:6.0f}s | {text}"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


@dataclasses.dataclass
class Keys:
    """Where the PPO entries live (nested under a group for multi-agent data)."""

    obs: object = "observation"
    action: object = "action"
    log_prob: object = "log_prob"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"


DEFAULT_KEYS = Keys()  # the keys of a single-agent env


def _like(x: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """``x`` ([B, T, 1] flags or rewards) shaped like the values: reshaped when it has as many
    elements, else left to broadcast (a root flag against per-agent values)."""
    return x.reshape(shape) if x.numel() == math.prod(shape) else x


def ppo_update(
    data: TensorDictBase,
    actor: Actor,
    critic: Callable,
    optimizer,
    cfg: PPOConfig,
    keys: Keys,
    critic_obs: Callable | None = None,
    sync_grads: Callable | None = None,
) -> dict:
    """One PPO update (``cfg.epochs`` epochs of ``cfg.minibatches`` minibatches) on a ``[B, T]``
    batch. ``critic_obs(td)`` gives the critic's input (default: the actor's observation). A
    ``"valid"`` bool ``[B, T]`` entry, when present, keeps only those steps in the loss.
    ``sync_grads(params)`` runs after each backward, before the clipping (data-parallel
    training averages the gradients of the ranks there)."""
    critic_obs = critic_obs or (lambda td: td.get(keys.obs))
    with torch.no_grad():
        value = critic(critic_obs(data)).squeeze(-1)
        next_value = critic(critic_obs(data.get("next"))).squeeze(-1)
        shape = value.shape
        reward = _like(data.get(("next", keys.reward)), shape) * cfg.reward_scale
        terminated = _like(data.get(("next", keys.terminated)), shape)
        done = _like(data.get(("next", keys.done)), shape)
        # the recursion runs over the last dim: move time (dim 1 of [B, T, ...]) there and back
        adv, ret = gae(*(x.movedim(1, -1) for x in (reward, value, next_value, terminated, done)), cfg.gamma, cfg.lam)
        adv, ret = adv.movedim(-1, 1), ret.movedim(-1, 1)
    valid = data.get("valid", None)  # steps to learn from (a host library's reset steps are not)
    valid = None if valid is None else valid.flatten(0, 1)

    def flat(x):
        x = x.flatten(0, 1)
        return x if valid is None else x[valid]

    obs, action, old_logp = flat(data.get(keys.obs)), flat(data.get(keys.action)), flat(data.get(keys.log_prob))
    obs_c, adv, ret = flat(critic_obs(data)), flat(adv), flat(ret)
    n = obs.shape[0]
    mb = max(1, n // cfg.minibatches)
    stats = {}
    for _ in range(cfg.epochs):
        perm = torch.randperm(n)
        for i in range(0, n - mb + 1, mb):
            idx = perm[i : i + mb]
            a = adv[idx]
            a = (a - a.mean()) / (a.std() + 1e-8)
            dist = actor.dist(obs[idx])
            ratio = (actor.log_prob(dist, action[idx]) - old_logp[idx]).exp()
            pg = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a).mean()
            vf = 0.5 * (critic(obs_c[idx]).squeeze(-1) - ret[idx]).pow(2).mean()
            ent = dist.entropy().mean()
            loss = pg + cfg.vf_coef * vf - cfg.ent_coef * ent
            optimizer.zero_grad()
            loss.backward()
            params = [p for g in optimizer.param_groups for p in g["params"]]
            if sync_grads is not None:
                sync_grads(params)
            nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            stats = {"policy_loss": pg.item(), "value_loss": vf.item(), "entropy": ent.item()}
    return stats


def train(
    collector: gs.Collector,
    actor: Actor,
    critic: nn.Module,
    cfg: PPOConfig,
    keys: Keys = DEFAULT_KEYS,
    critic_obs=None,
    log_every: int = 1,
    on_batch: Callable | None = None,
    sync_grads: Callable | None = None,
    log: bool = True,
) -> list[float]:
    """Runs PPO on the collector's batches; returns the mean return of the episodes that ended
    in each batch (nan when none did). ``log=False``: no progress bar (the other ranks of a
    distributed run)."""
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=cfg.lr, eps=1e-5)
    n_batches = len(collector)
    progress = Progress(collector.total_frames)
    history = []
    recent: list[float] = []
    for i, data in enumerate(collector):
        if cfg.anneal_lr:
            for group in optimizer.param_groups:
                group["lr"] = cfg.lr * (1 - i / n_batches)
        ppo_update(data, actor, critic, optimizer, cfg, keys, critic_obs, sync_grads)
        collector.update_policy_weights_()  # the weights were updated in place: a no-op, kept as TorchRL users write it
        returns = collector.episode_stats()["returns"]
        recent = (recent + returns.tolist())[-100:]
        mean = sum(recent) / len(recent) if recent else float("nan")
        history.append(float(returns.mean()) if returns.numel() else float("nan"))
        if log and (i % log_every == 0 or i == n_batches - 1):
            progress.update(collector.frames, f"return (last 100 episodes) {mean:8.2f}")
        if on_batch is not None:
            on_batch(i, data)
    if log:
        progress.close()
    return history


def evaluate(env: gs.EnvBase, actor: nn.Module, max_steps: int, reward_key="reward", done_key="done") -> torch.Tensor:
    """The return of the first episode of every env row, with the deterministic policy."""
    with torch.no_grad(), set_interaction_type("deterministic"):
        data = env.rollout(max_steps, actor, break_when_any_done=False)
    reward = data.get(("next", reward_key))
    reward = reward.reshape(*data.batch_size, -1).mean(-1)
    done = data.get(("next", done_key)).reshape(*data.batch_size, -1).any(-1)
    before_end = (torch.cumsum(done.long(), dim=1) - done.long()) == 0  # steps up to the first end
    return (reward * before_end).sum(1)


def sized(cfg: PPOConfig, args: argparse.Namespace, smoke_envs: int, smoke_steps: int) -> PPOConfig:
    """The config for this run: two tiny iterations with ``--smoke``, else ``--total-frames``."""
    if args.smoke:
        return dataclasses.replace(
            cfg, num_envs=smoke_envs, steps=smoke_steps, total_frames=2 * smoke_envs * smoke_steps
        )
    return dataclasses.replace(cfg, total_frames=args.total_frames)


def run(
    title: str,
    args,
    cfg: PPOConfig,
    env: gs.EnvBase | None,
    actor: Actor,
    critic: nn.Module,
    score: Callable[[], torch.Tensor],
    bar: float,
    what: str,
    make_collector: Callable | None = None,
    log: bool = True,
    **train_kwargs,
) -> float:
    """Trains with a ``gs.Collector`` on ``env`` (``--compile``: the compiled engine) or with
    ``make_collector(cfg)``'s collector, scores the actor (``score()``: one value per evaluation
    episode) and prints the result line (``log=False``: trains only, returns nan)."""
    if make_collector is not None:
        collector = make_collector(cfg)
    else:
        collector = gs.Collector(
            env, actor, frames_per_batch=cfg.num_envs * cfg.steps, total_frames=cfg.total_frames, compile=args.compile
        )
    start = time.perf_counter()
    train(collector, actor, critic, cfg, log_every=1 if args.smoke else 5, log=log, **train_kwargs)
    elapsed = time.perf_counter() - start
    runner = getattr(
        getattr(collector, "collector", collector), "_runner", None
    )  # (a distributed collector's local one)
    compile_s = runner.compile_seconds if runner is not None else 0.0
    collector.shutdown()
    if not log:
        return float("nan")
    scores = score()
    mean = float(scores.mean())
    verdict = "reached" if mean >= bar else "not reached"
    engine = "compiled" if args.compile else "eager"
    print(
        f"{title} ({engine}): {collector.frames} frames in {elapsed:.0f} s (compile {compile_s:.0f} s); evaluation mean "
        f"{what} {mean:.2f} over {scores.numel()} episodes (bar {bar}: {verdict})"
    )
    return mean


def common_args(description: str, total_frames: int) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--compile", action="store_true", help="the compiled collector engine")
    parser.add_argument("--total-frames", type=int, default=total_frames)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 2 iterations (CI)")
    return parser
