"""Training benchmark: time to CartPole return 475 with one PPO, and collection throughput with
the policy in the loop, gpusim (eager and compiled Collector) against gymnasium's numpy vector
env and TorchRL's batched ``GymEnv``, alternating in one run.

Every contender trains the same PPO (examples/_ppo.py: same networks, same hyperparameters as
examples/ppo_cartpole.py, with more and smaller updates from 1024 envs on: ``_config``; same seed
per round) and stops when the mean return of the last 100 finished training episodes reaches 475
(or at ``--max-frames``). The compiled contender's time includes its compilation, cold (no cache
hit: ``cold_compiles``), which is also reported apart.

* gpusim eager / compiled: ``gs.Collector(gs.make("CartPole-v1", num_envs=N), actor, compile=...)``.
* gymnasium: ``CartPoleVectorEnv`` (numpy, autoreset on the next step: the reset steps are left
  out of the loss), the actor called on ``torch.from_numpy`` observations each step.
* torchrl: ``torchrl.collectors.Collector(GymWrapper(gym.make_vec("CartPole-v1", num_envs=N,
  vectorization_mode="sync"), categorical_action_encoding=True), actor)``: TorchRL's batched
  gymnasium env in one process (``GymEnv(num_envs=N)`` starts N worker processes, and TorchRL
  0.14.1's ``GymWrapper`` cannot wrap gymnasium's numpy ``CartPoleVectorEnv``: it reads an
  ``autoreset_mode`` attribute that env lacks).

* sb3-gpusim: Stable-Baselines3's ``PPO`` (``MlpPolicy``: the same 64-64 tanh networks with
  orthogonal init; the same steps, minibatches, epochs, clip, gamma, lambda, coefficients and
  annealed learning rate) on ``VecMonitor(gs.to_sb3(gs.make("CartPole-v1", num_envs=N)))``.
* sb3-dummy: the same SB3 PPO on SB3's ``DummyVecEnv`` of gymnasium's ``CartPole-v1`` (the
  reference for SB3 users). Both stop at the end of the rollout whose last 100 monitored
  episodes average 475 (``ep_info_buffer``), as the others check after each batch.

Throughput (``--throughput``): env-steps/s of collecting ``[N, T]`` batches with the actor
sampling actions in the loop (no training), after a warm-up batch (and the compilation).

Run it where torchrl is installed (it needs tensordict 0.14.3, which gpusim supports)::

    .venv-compare/bin/python benchmarks/bench_training.py --envs 64 4096 --rounds 1

Options: ``--only gpusim-eager,gpusim-compiled,gymnasium,torchrl,sb3-gpusim,sb3-dummy``,
``--max-frames``, ``--no-train`` (throughput only), ``--threads``, ``--quick`` (16 envs, at most
60 k frames, one round, every contender but the compiled one unless ``--only`` names it: checks
that the benchmark runs, in about a minute).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gc
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tensordict import TensorDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

from _ppo import Keys, PPOConfig, ppo_update  # noqa: E402
from ppo_cartpole import CONFIG, make_agent  # noqa: E402

import gpusim as gs  # noqa: E402
from gpusim.collectors._episodes import EpisodeTracker  # noqa: E402

BAR = 475.0
CONTENDERS = ("gpusim-eager", "gpusim-compiled", "gymnasium", "torchrl", "sb3-gpusim", "sb3-dummy")
#: The contenders of the throughput table (SB3 collects inside ``learn``: time to 475 only).
THROUGHPUT = ("gpusim-eager", "gpusim-compiled", "gymnasium", "torchrl")


class Window:
    """The returns of the last ``size`` finished episodes."""

    def __init__(self, size: int = 100):
        self.returns = collections.deque(maxlen=size)

    def add(self, returns: torch.Tensor) -> float:
        self.returns.extend(returns.tolist())
        return statistics.fmean(self.returns) if len(self.returns) >= 20 else float("-inf")


@dataclasses.dataclass
class Result:
    seconds: float
    frames: int
    reached: bool
    compile_s: float = 0.0
    final: float = float("nan")


#: From this many envs on, every contender trains with ``LARGE_BATCH`` instead of the example's
#: 64-env hyperparameters (with 32 steps and 4 minibatches per batch, 4096 envs make only 16
#: gradient steps per 131 k frames, and no contender reached 475 in 3 M frames).
LARGE = 1024
LARGE_BATCH = {"steps": 8, "minibatches": 16}


def _config(num_envs: int) -> PPOConfig:
    """The PPO of every contender at ``num_envs``: ``ppo_cartpole.py``'s, with ``LARGE_BATCH``
    from ``LARGE`` envs on. At 4096 envs an episode of return 475 ends at the earliest after
    475 * 4096 = 1.95 M frames; these settings reach the bar at about 2.05 M (8 settings of steps,
    minibatches, epochs and lr tried: all between 2.05 and 2.16 M)."""
    extra = LARGE_BATCH if num_envs >= LARGE else {}
    return PPOConfig(**{**CONFIG.__dict__, "num_envs": num_envs, **extra})


def _train_loop(batches, actor, critic, cfg, max_frames, frames_per_batch, stats) -> Result:
    """Runs PPO over ``batches`` (an iterator of ``[N, T]`` tensordicts) until the bar."""
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=cfg.lr, eps=1e-5)
    n_batches = max(1, max_frames // frames_per_batch)
    window = Window()
    start = time.perf_counter()
    frames, mean = 0, float("-inf")
    for i, data in enumerate(batches):
        frames += frames_per_batch
        mean = window.add(stats(data))
        if mean >= BAR:
            return Result(time.perf_counter() - start, frames, True, final=mean)
        if frames >= max_frames:
            break
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * max(0.05, 1 - i / n_batches)
        ppo_update(data, actor, critic, optimizer, cfg, _KEYS)
    return Result(time.perf_counter() - start, frames, False, final=mean)


_KEYS = Keys()


# ---------------------------------------------------------------------------- gpusim
def gpusim_batches(num_envs, actor, cfg, seed, compile, total_frames=-1):
    env = gs.make("CartPole-v1", num_envs=num_envs, seed=seed)
    options = {"verbose": False} if compile else False
    return gs.Collector(env, actor, frames_per_batch=num_envs * cfg.steps, total_frames=total_frames, compile=options)


def cold_compiles() -> None:
    """Every compile from now on starts cold: dynamo forgets its graphs and Inductor's on-disk
    caches are off (the compiled contender's time to 475 includes a compile as a first run
    on a machine pays it, not a cache hit left by the throughput runs)."""
    torch._dynamo.reset()
    torch.compiler.config.force_disable_caches = True


def train_gpusim(num_envs, seed, max_frames, compile) -> Result:
    if compile:
        cold_compiles()
    cfg = _config(num_envs)
    actor, critic = make_agent(seed)
    collector = gpusim_batches(num_envs, actor, cfg, seed, compile)

    def stats(_):
        return collector.episode_stats()["returns"]

    result = _train_loop(iter(collector), actor, critic, cfg, max_frames, collector.frames_per_batch, stats)
    if compile:
        result.compile_s = collector.compile_seconds
    collector.shutdown()
    return result


# ---------------------------------------------------------------------------- gymnasium
class GymnasiumBatches:
    """``[N, T]`` batches from gymnasium's numpy ``CartPoleVectorEnv`` driven by ``actor``.

    The env resets a finished row on the *next* step (gymnasium's NEXT_STEP autoreset): that
    step is marked ``valid=False`` (left out of the loss); its done flag on the previous step
    already cuts the advantage recursion."""

    def __init__(self, num_envs, actor, steps, seed):
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

        self.env = CartPoleVectorEnv(num_envs=num_envs)
        self.obs, _ = self.env.reset(seed=seed)
        self.prev_done = np.zeros(num_envs, dtype=bool)
        self.actor, self.steps, self.n = actor, steps, num_envs
        self.tracker = EpisodeTracker(torch.Size([num_envs]), torch.device("cpu"))

    def __iter__(self):
        return self

    def __next__(self):
        N, T = self.n, self.steps
        obs = torch.empty(T, N, 4)
        nxt = torch.empty(T, N, 4)
        act = torch.empty(T, N, dtype=torch.long)
        logp = torch.empty(T, N)
        rew = torch.empty(T, N, 1)
        term = torch.empty(T, N, 1, dtype=torch.bool)
        done = torch.empty(T, N, 1, dtype=torch.bool)
        valid = torch.empty(T, N, dtype=torch.bool)
        with torch.no_grad():
            for t in range(T):
                o = torch.from_numpy(self.obs).float()
                td = self.actor(TensorDict({"observation": o}, [N]))
                a = td["action"]
                self.obs, r, te, tr, _ = self.env.step(a.numpy())
                obs[t], act[t], logp[t] = o, a, td["log_prob"]
                nxt[t] = torch.from_numpy(self.obs)
                rew[t, :, 0] = torch.from_numpy(r)
                term[t, :, 0] = torch.from_numpy(te)
                done[t, :, 0] = torch.from_numpy(te | tr)
                valid[t] = torch.from_numpy(~self.prev_done)
                self.prev_done = te | tr
        data = TensorDict(
            {
                "observation": obs,
                "action": act,
                "log_prob": logp,
                "valid": valid,
                "next": {"observation": nxt, "reward": rew, "terminated": term, "done": done},
            },
            [T, N],
        ).transpose(0, 1)
        self.tracker.update(data["next", "reward"][..., 0], data["next", "done"][..., 0])
        return data


def train_gymnasium(num_envs, seed, max_frames) -> Result:
    cfg = _config(num_envs)
    actor, critic = make_agent(seed)
    batches = GymnasiumBatches(num_envs, actor, cfg.steps, seed)
    return _train_loop(
        batches, actor, critic, cfg, max_frames, num_envs * cfg.steps, lambda _: batches.tracker.returns()
    )


# ---------------------------------------------------------------------------- torchrl
def torchrl_batches(num_envs, actor, cfg, seed, total_frames=-1):
    import gymnasium as gym
    from torchrl.collectors import Collector as TorchRLCollector
    from torchrl.envs import GymWrapper

    # GymEnv(num_envs=N) starts N worker processes (gymnasium's AsyncVectorEnv): 4096 processes
    # at 4096 envs. TorchRL's batched GymEnv over gymnasium's in-process SyncVectorEnv instead:
    # TorchRL's wrapper takes SAME_STEP (or DISABLED) auto-reset only
    vec = gym.make_vec(
        "CartPole-v1",
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
    )
    env = GymWrapper(vec, categorical_action_encoding=True)
    env.set_seed(seed)
    return TorchRLCollector(
        env,
        actor,
        frames_per_batch=num_envs * cfg.steps,
        total_frames=total_frames,
        auto_register_policy_transforms=False,
    )


def train_torchrl(num_envs, seed, max_frames) -> Result:
    cfg = _config(num_envs)
    actor, critic = make_agent(seed)
    collector = torchrl_batches(num_envs, actor, cfg, seed)
    tracker = EpisodeTracker(torch.Size([num_envs]), torch.device("cpu"))

    def stats(data):
        done = data["next", "done"].reshape(num_envs, -1)
        tracker.update(data["next", "reward"].reshape(num_envs, -1), done)
        return tracker.returns()

    result = _train_loop(iter(collector), actor, critic, cfg, max_frames, num_envs * cfg.steps, stats)
    collector.shutdown()
    return result


# ---------------------------------------------------------------------------- stable-baselines3
def sb3_venv(kind: str, num_envs: int, seed: int):
    """``VecMonitor`` over ``gs.to_sb3`` (``kind="gpusim"``) or SB3's ``DummyVecEnv`` of
    gymnasium's CartPole-v1 (``kind="dummy"``)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    if kind == "gpusim":
        venv = gs.to_sb3(gs.make("CartPole-v1", num_envs=num_envs, seed=seed))
    else:
        import gymnasium as gym

        venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * num_envs)
    venv.seed(seed)
    return VecMonitor(venv)


def sb3_ppo(venv, num_envs: int, seed: int):
    """SB3's PPO with the hyperparameters of every other contender (``_config``)."""
    from stable_baselines3 import PPO

    cfg = _config(num_envs)
    return PPO(
        "MlpPolicy",
        venv,
        n_steps=cfg.steps,
        batch_size=num_envs * cfg.steps // cfg.minibatches,
        n_epochs=cfg.epochs,
        learning_rate=lambda remaining: cfg.lr * max(0.05, remaining),
        gamma=cfg.gamma,
        gae_lambda=cfg.lam,
        clip_range=cfg.clip,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm,
        policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": torch.nn.Tanh},
        seed=seed,
        device="cpu",
    )


def train_sb3(kind: str, num_envs: int, seed: int, max_frames: int) -> Result:
    from stable_baselines3.common.callbacks import BaseCallback

    steps = _config(num_envs).steps

    class StopAtBar(BaseCallback):
        """Stops after the rollout whose last 100 episodes average ``BAR`` (checked on the
        rollout's last step, before its update: as the other contenders check each batch)."""

        mean = float("-inf")

        def _on_step(self) -> bool:
            if self.n_calls % steps:
                return True
            returns = [info["r"] for info in self.model.ep_info_buffer]
            self.mean = statistics.fmean(returns) if len(returns) >= 20 else float("-inf")
            return self.mean < BAR

    model = sb3_ppo(sb3_venv(kind, num_envs, seed), num_envs, seed)
    callback = StopAtBar()
    start = time.perf_counter()
    model.learn(total_timesteps=max_frames, callback=callback)
    seconds = time.perf_counter() - start
    model.get_env().close()
    return Result(seconds, model.num_timesteps, callback.mean >= BAR, final=callback.mean)


# ---------------------------------------------------------------------------- throughput
def throughput(name, num_envs, steps, batches=3, seed=0, min_seconds=0.5) -> tuple[float, float]:
    """(env-steps/s, seconds to the first batch) collecting with the actor in the loop: at least
    ``batches`` batches and ``min_seconds`` after the first one (and a garbage collection: a
    compilation leaves a heap that a collection during three short batches would dominate)."""
    cfg = PPOConfig(**{**CONFIG.__dict__, "num_envs": num_envs, "steps": steps})
    actor, _ = make_agent(seed)
    start = time.perf_counter()
    if name.startswith("gpusim"):
        source = iter(gpusim_batches(num_envs, actor, cfg, seed, name.endswith("compiled")))
    elif name == "gymnasium":
        source = GymnasiumBatches(num_envs, actor, steps, seed)
    else:
        source = iter(torchrl_batches(num_envs, actor, cfg, seed))
    next(source)  # warm-up (and compilation)
    first = time.perf_counter() - start
    gc.collect()
    start = time.perf_counter()
    done = 0
    while done < batches or time.perf_counter() - start < min_seconds:
        next(source)
        done += 1
    return done * num_envs * steps / (time.perf_counter() - start), first


def _rate(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} k"


def _available(name: str) -> bool:
    module = {"torchrl": "torchrl", "sb3-gpusim": "stable_baselines3", "sb3-dummy": "stable_baselines3"}.get(name)
    if module is not None and importlib.util.find_spec(module) is None:
        print(f"{module} is not installed: skipping the {name} contender", file=sys.stderr)
        return False
    return True


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=None, help="default: 16 64 4096")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-frames", type=int, default=None, help="default: 3 M (60 k with --quick)")
    parser.add_argument("--only", default=None, help="comma-separated contenders (default: all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-train", action="store_true")
    parser.add_argument("--throughput-steps", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="16 envs, 60 k frames at most, no compiled contender")
    args = parser.parse_args(argv)
    if args.only is None:
        args.only = ",".join(c for c in CONTENDERS if not (args.quick and c == "gpusim-compiled"))
    unknown = [c for c in args.only.split(",") if c not in CONTENDERS]
    if unknown:
        parser.error(f"--only: unknown contender(s) {unknown}; expected some of {', '.join(CONTENDERS)}")
    if args.envs is None:
        args.envs = [16] if args.quick else [16, 64, 4096]
    if args.max_frames is None:
        args.max_frames = 60_000 if args.quick else 3_000_000
    if min(args.envs) < 1 or args.max_frames < 1 or args.rounds < 1:
        parser.error("--envs, --max-frames and --rounds must be positive")
    return args


def _secs(seconds: float) -> str:
    """Seconds with a decimal below 100 (a 64-env run reaches 475 in about 2 s)."""
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    names = [n for n in args.only.split(",") if _available(n)]
    os.environ.setdefault("GPUSIM_COMPILE_VERBOSE", "0")
    print(f"# bench_training: torch {torch.__version__}, {args.threads} threads, load {os.getloadavg()[0]:.1f}")
    collecting = [n for n in names if n in THROUGHPUT]
    if collecting:
        print("\n## Collection with the policy in the loop (env-steps/s)\n")
        print("| envs | " + " | ".join(collecting) + " | compiled / gymnasium |")
        print("| ---: |" + " ---: |" * (len(collecting) + 1))
        for n in args.envs:
            rates = {name: throughput(name, n, args.throughput_steps)[0] for name in collecting}
            ratio = (
                rates.get("gpusim-compiled", float("nan")) / rates.get("gymnasium", float("nan"))
                if "gymnasium" in rates
                else float("nan")
            )
            print(f"| {n} | " + " | ".join(_rate(rates[x]) for x in collecting) + f" | {ratio:.2f}x |", flush=True)
    if args.no_train:
        return
    print(f"\n## Time to CartPole return {BAR:.0f} (seconds; frames; compile included and apart)\n")
    print("| envs | round | " + " | ".join(names) + " |")
    print("| ---: | ---: |" + " ---: |" * len(names))
    for n in args.envs:
        for r in range(args.rounds):
            cells = []
            for name in names:  # alternating contenders within each round
                if name == "gpusim-eager":
                    res = train_gpusim(n, r, args.max_frames, compile=False)
                elif name == "gpusim-compiled":
                    res = train_gpusim(n, r, args.max_frames, compile=True)
                elif name == "gymnasium":
                    res = train_gymnasium(n, r, args.max_frames)
                elif name.startswith("sb3-"):
                    res = train_sb3(name[4:], n, r, args.max_frames)
                else:
                    res = train_torchrl(n, r, args.max_frames)
                mark = "" if res.reached else f" (not reached: {res.final:.0f})"
                extra = f", compile {_secs(res.compile_s)}" if name == "gpusim-compiled" else ""
                cells.append(f"{_secs(res.seconds)}; {res.frames / 1e3:.0f} k{extra}{mark}")
            print(f"| {n} | {r} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
