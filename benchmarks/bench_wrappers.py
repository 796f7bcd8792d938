"""Library wrappers: the raw library's own step loop vs gpusim's wrapper vs TorchRL 0.14.1's wrapper
of the same library, each at the library's natural batch size, measured alternately in one run
(median of ``--repeats``), env-steps/s.

* raw: the library's own loop: random (or constant) actions drawn the library's way, its own
  step call, and a reset when an episode ends (auto-resetting pools step on);
* gpusim / torchrl: ``env.rollout(T, break_when_any_done=False)`` (every step's data is kept and
  stacked into ``[*B, T]``) with random actions from the action spec, or the same constant-action
  policy as the raw loop for the JAX simulators (whose raw loop uses a fixed action array).

Cases (natural batch): PettingZoo MPE ``simple_spread`` (parallel, 1), dm_control
``cartpole/balance`` (1), EnvPool ``CartPole-v1`` (256, C++ threads), Brax ``fast`` (1024: a
trivial step, so the per-step cost of the tensordict edge shows in full), Brax MJX
``inverted_pendulum`` (128: real physics) and Jumanji ``Snake-v1`` (256) on CPU JAX, MO-Gymnasium ``deep-sea-treasure`` (1), OpenSpiel
``tic_tac_toe`` (1), chess (1, gpusim vs TorchRL only: python-chess's loop without a move
vocabulary is a different amount of work) and gym 0.26 ``CartPole-v1`` (1). A case whose library
is missing is skipped with a note. TorchRL contenders need torchrl 0.14.1 (tensordict 0.14.x):
run this script with a venv that has both (gpusim works with tensordict 0.14.3).

Usage::

    python benchmarks/bench_wrappers.py [--cases pettingzoo dm_control ...] [--repeats 3] [--no-torchrl]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

os.environ.setdefault("MUJOCO_GL", "egl")


def _gym_loop(raw) -> Callable:
    """A gym(nasium)-API single env's own loop: sampled actions, a reset when an episode ends."""
    raw.reset(seed=0)
    raw.action_space.seed(0)

    def raw_loop(steps):
        for _ in range(steps):
            _, _, term, trunc, _ = raw.step(raw.action_space.sample())
            if term or trunc:
                raw.reset()

    return raw_loop


def _const_policy(value: torch.Tensor) -> Callable:
    def policy(td):
        return td.set("action", value)

    return policy


def case_pettingzoo(args):
    from mpe2 import simple_spread_v3

    from gpusim.envs.libs import PettingZooWrapper

    raw = simple_spread_v3.parallel_env(max_cycles=25)
    raw.reset(seed=0)

    def raw_loop(steps):
        for _ in range(steps):
            if not raw.agents:
                raw.reset()
            _, _, term, trunc, _ = raw.step({a: raw.action_space(a).sample() for a in raw.agents})

    ours = PettingZooWrapper(simple_spread_v3.parallel_env(max_cycles=25), seed=0)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.pettingzoo import PettingZooWrapper as T

        theirs = T(simple_spread_v3.parallel_env(max_cycles=25), seed=0)
        out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
    return 1, 300, out


def case_dm_control(args):
    from dm_control import suite

    from gpusim.envs.libs import DMControlEnv

    raw = suite.load("cartpole", "balance", task_kwargs={"random": 0})
    spec = raw.action_spec()
    rng = np.random.default_rng(0)
    raw.reset()

    def raw_loop(steps):
        for _ in range(steps):
            ts = raw.step(rng.uniform(spec.minimum, spec.maximum, spec.shape))
            if ts.last():
                raw.reset()

    ours = DMControlEnv("cartpole", "balance", seed=0)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.dm_control import DMControlEnv as T

        theirs = T("cartpole", "balance")
        out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
    return 1, 300, out


def case_envpool(args, n=256):
    import envpool

    from gpusim.envs.libs import MultiThreadedEnv

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=0)
    raw.reset()
    rng = np.random.default_rng(0)

    def raw_loop(steps):  # the pool auto-resets finished envs on their next step
        for _ in range(steps):
            raw.step(rng.integers(0, 2, n))

    ours = MultiThreadedEnv(n, "CartPole-v1", categorical_action_encoding=True, create_env_kwargs={"seed": 0})
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.envpool import MultiThreadedEnv as T

        try:
            theirs = T(n, "CartPole-v1", create_env_kwargs={"seed": 0})
            out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
        except KeyError as err:  # torchrl 0.14.1 reads the pool's spaces under its 'gym' backend
            print(f"envpool: torchrl's MultiThreadedEnv fails with this envpool ({err})")
    return n, 100, out


def case_brax(args, n=1024, name="fast", steps=100):
    import brax.envs
    import jax

    from gpusim.envs.libs import BraxEnv

    env = brax.envs.get_environment(name)
    step = jax.jit(jax.vmap(env.step))
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    action = jax.numpy.full((n, env.action_size), 0.5)
    holder = [state]

    def raw_loop(steps):
        s = holder[0]
        for _ in range(steps):
            s = step(s, action)
        jax.block_until_ready(s)
        holder[0] = s

    policy = _const_policy(torch.full((n, env.action_size), 0.5))
    ours = BraxEnv(name, batch_size=[n], seed=0)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, policy, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.brax import BraxEnv as T

        theirs = T(name, batch_size=[n])
        out["torchrl"] = lambda s: theirs.rollout(s, policy, break_when_any_done=False)
    return n, steps, out


def case_brax_mjx(args):
    """A physics env (MJX inverted pendulum, ~30 s of XLA compilation per contender on CPU)."""
    return case_brax(args, n=128, name="inverted_pendulum", steps=10)


def case_jumanji(args, n=256):
    import jax
    import jumanji

    from gpusim.envs.libs import JumanjiEnv

    env = jumanji.make("Snake-v1")
    step = jax.jit(jax.vmap(env.step))
    state, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    action = jax.numpy.zeros((n,), dtype=jax.numpy.int32)
    holder = [state]

    def raw_loop(steps):  # Snake restarts finished games itself only through reset: keep stepping
        s = holder[0]
        for _ in range(steps):
            s, ts = step(s, action)
        jax.block_until_ready(ts.reward)
        holder[0] = s

    policy = _const_policy(torch.zeros(n, dtype=torch.int32))
    ours = JumanjiEnv("Snake-v1", batch_size=[n], seed=0)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, policy, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.jumanji import JumanjiEnv as T

        theirs = T("Snake-v1", batch_size=[n])
        theirs.set_seed(0)
        out["torchrl"] = lambda s: theirs.rollout(s, policy, break_when_any_done=False)
    return n, 50, out


def case_mo_gymnasium(args):
    import mo_gymnasium as mo_gym

    from gpusim.envs.libs import MOGymEnv

    raw_loop = _gym_loop(mo_gym.make("deep-sea-treasure-v0"))
    ours = MOGymEnv("deep-sea-treasure-v0", categorical_action_encoding=True)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.gym import MOGymEnv as T

        theirs = T("deep-sea-treasure-v0", categorical_action_encoding=True)
        out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
    return 1, 500, out


def case_open_spiel(args):
    import pyspiel

    from gpusim.envs.libs import OpenSpielEnv

    game = pyspiel.load_game("tic_tac_toe")
    rng = np.random.default_rng(0)
    holder = [game.new_initial_state()]

    def raw_loop(steps):
        state = holder[0]
        for _ in range(steps):
            if state.is_terminal():
                state = game.new_initial_state()
            legal = state.legal_actions()
            state.apply_action(legal[rng.integers(len(legal))])
            state.observation_tensor(0), state.observation_tensor(1), state.returns()
        holder[0] = state

    ours = OpenSpielEnv("tic_tac_toe", categorical_actions=True, seed=0)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.openspiel import OpenSpielEnv as T

        theirs = T("tic_tac_toe", categorical_actions=True)
        out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
    return 1, 300, out


def case_chess(args):
    from gpusim.envs.custom import ChessEnv

    ours = ChessEnv()
    out = {"gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs import ChessEnv as T

        theirs = T()
        out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
    return 1, 200, out


def case_gym026(args):
    import gym

    from gpusim.envs.libs import GymEnv, set_gym_backend

    raw_loop = _gym_loop(gym.make("CartPole-v1", disable_env_checker=True))
    with set_gym_backend("gym"):
        ours = GymEnv("CartPole-v1", categorical_action_encoding=True)
    out = {"raw": raw_loop, "gpusim": lambda s: ours.rollout(s, break_when_any_done=False)}
    if not args.no_torchrl:
        from torchrl.envs.libs.gym import GymEnv as T
        from torchrl.envs.libs.gym import set_gym_backend as tset

        with tset("gym"):
            theirs = T("CartPole-v1", categorical_action_encoding=True)
        out["torchrl"] = lambda s: theirs.rollout(s, break_when_any_done=False)
    return 1, 500, out


CASES = {
    "pettingzoo": (case_pettingzoo, "mpe2"),
    "dm_control": (case_dm_control, "dm_control"),
    "envpool": (case_envpool, "envpool"),
    "brax": (case_brax, "brax"),
    "brax_mjx": (case_brax_mjx, "brax"),
    "jumanji": (case_jumanji, "jumanji"),
    "mo_gymnasium": (case_mo_gymnasium, "mo_gymnasium"),
    "open_spiel": (case_open_spiel, "pyspiel"),
    "chess": (case_chess, "chess"),
    "gym026": (case_gym026, "gym"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-torchrl", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    rows = []
    for name in args.cases:
        fn, module = CASES[name]
        if importlib.util.find_spec(module) is None:
            print(f"{name}: skipped ({module} is not installed)")
            continue
        n, steps, contenders = fn(args)
        for run in contenders.values():
            run(max(steps // 10, 2))  # warm-up (and JIT compilation for the JAX cases)
        res: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(args.repeats):
            for key, run in contenders.items():
                t0 = time.perf_counter()
                run(steps)
                res[key].append(n * steps / (time.perf_counter() - t0))
        med = {k: statistics.median(v) for k, v in res.items()}
        rows.append((name, n, med))
        parts = [f"{k} {v:,.0f}" for k, v in med.items()]
        ratios = []
        if "raw" in med:
            ratios.append(f"gpusim/raw {med['gpusim'] / med['raw']:.2f}x")
        if "torchrl" in med:
            ratios.append(f"gpusim/torchrl {med['gpusim'] / med['torchrl']:.2f}x")
        print(f"{name:13s} batch {n:5d}: " + ", ".join(parts) + " env-steps/s; " + ", ".join(ratios), flush=True)
    print("\n| case | batch | raw | gpusim | torchrl 0.14.1 | gpusim/raw | gpusim/torchrl |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, n, med in rows:
        raw, ours, theirs = med.get("raw"), med["gpusim"], med.get("torchrl")
        cell = lambda v: "—" if v is None else f"{v:,.0f}"  # noqa: E731
        r1 = "—" if raw is None else f"{ours / raw:.2f}x"
        r2 = "—" if theirs is None else f"{ours / theirs:.2f}x"
        print(f"| {name} | {n} | {cell(raw)} | {cell(ours)} | {cell(theirs)} | {r1} | {r2} |")


if __name__ == "__main__":
    main()
