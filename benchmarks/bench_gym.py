"""GymEnv over gymnasium vector envs: how thin is the edge?

Contenders, measured alternately in one run (median of ``--repeats``), env-steps/s:

* ``raw numpy vec``: gymnasium's numpy ``CartPoleVectorEnv``
  (``make_vec("CartPole-v1", num_envs=N, vectorization_mode="vector_entry_point")``), a bare
  ``step(action_space.sample())`` loop (NEXT_STEP autoreset inside the env);
* ``gpusim loop``: ``GymEnv("CartPole-v1", num_envs=N)`` over that same env, a
  ``rand_action`` + ``step_and_maybe_reset`` loop (one-hot actions, the default, and
  ``categorical_action_encoding=True``); nothing stored, like the raw loop;
* ``floor``: the same work written by hand with no framework (torch random action, gymnasium
  step, two tensordicts, masked reset of the done rows): the ceiling any tensordict edge can
  reach against the raw loop;
* ``gpusim rollout``: ``env.rollout(T, break_when_any_done=False)`` (stores every step and
  stacks them into ``[N, T]``), next to ``raw + storage``: the raw loop keeping its arrays and
  stacking them the same way;
* on gymnasium's ``SyncVectorEnv`` (``--sync-envs`` envs, AutoresetMode.DISABLED): the raw
  loop, gpusim's ``GymWrapper`` and TorchRL 0.14.1's ``GymWrapper``, all three on the same kind
  of env; TorchRL cannot wrap the numpy ``CartPoleVectorEnv`` (it rejects NEXT_STEP
  autoreset), and its ``GymEnv(num_envs=N)`` starts N processes (run here with
  ``--torchrl-procs`` of them).

Both wall-clock and process CPU time are reported: on a shared machine the CPU-time ratio is
the steadier one.

Usage::

    python benchmarks/bench_gym.py [--num-envs 4096] [--steps 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np
import torch

from gpusim.envs.libs import GymEnv, GymWrapper


def timed(fn, steps: int, n: int) -> tuple[float, float]:
    """Runs ``fn`` and returns (env-steps/s wall, env-steps/s CPU)."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    w1, c1 = time.perf_counter(), time.process_time()
    return n * steps / (w1 - w0), n * steps / max(c1 - c0, 1e-9)


def raw_loop(venv, steps: int, store: bool = False):
    manual_reset = getattr(venv, "autoreset_mode", None) == gym.vector.AutoresetMode.DISABLED

    def run():
        out = []
        for _ in range(steps):
            a = venv.action_space.sample()
            res = venv.step(a)
            if manual_reset:
                done = res[2] | res[3]
                if done.any():
                    venv.reset(options={"reset_mask": done})
            if store:
                out.append((a, *res[:4]))
        if store:
            for i in range(5):
                np.stack([o[i] for o in out], axis=1)

    return run


def floor_loop(venv, steps: int):
    """The least any tensordict edge can do per step, written by hand with no framework: a torch
    random action, the gymnasium step, one tensordict for ``"next"`` and one for the next root,
    and the masked reset of the done rows (the same adapter GymEnv uses). It bounds what a
    wrapper can reach against the raw loop."""
    from tensordict import TensorDict

    from gpusim.envs.libs.gym_vector import MASKED_RESETS

    n = venv.num_envs
    batch = torch.Size([n])
    masked_reset = MASKED_RESETS[type(venv.unwrapped)]

    def run():
        obs, _ = venv.reset()
        root = TensorDict._new_unsafe({"observation": torch.from_numpy(obs)}, batch)
        for _ in range(steps):
            action = torch.randint(0, 2, (n,))
            root._tensordict["action"] = action
            obs, reward, term, trunc, _ = venv.step(action.numpy())
            done = term | trunc
            nxt = {
                "observation": torch.from_numpy(obs),
                "reward": torch.from_numpy(reward.astype(np.float32).reshape(n, 1)),
                "terminated": torch.from_numpy(term.reshape(n, 1)),
                "truncated": torch.from_numpy(trunc.reshape(n, 1)),
                "done": torch.from_numpy(done.reshape(n, 1)),
            }
            root._tensordict["next"] = TensorDict._new_unsafe(nxt, batch)
            new = {k: v for k, v in nxt.items() if k != "reward"}
            if done.any():
                obs, _ = masked_reset(venv.unwrapped, done)
                flags = torch.from_numpy(np.zeros((3, n, 1), dtype=bool))
                new.update(observation=torch.from_numpy(obs), terminated=flags[0], truncated=flags[1], done=flags[2])
            root = TensorDict._new_unsafe(new, batch)

    return run


def gpusim_loop(env, steps: int):
    def run():
        td = env.reset()
        for _ in range(steps):
            td = env.rand_action(td)
            _, td = env.step_and_maybe_reset(td)

    return run


def gpusim_rollout(env, steps: int):
    return lambda: env.rollout(steps, break_when_any_done=False)


def torchrl_rollout(env, steps: int):
    return lambda: env.rollout(steps, break_when_any_done=False)


def sync_env(n: int):
    return gym.make_vec(
        "CartPole-v1",
        num_envs=n,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.DISABLED},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[4096])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sync-envs", type=int, default=64)
    parser.add_argument("--sync-steps", type=int, default=100)
    parser.add_argument("--torchrl-procs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-torchrl", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    for n in args.num_envs:
        venv = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
        venv.reset(seed=0)
        venv_floor = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
        venv_floor.reset(seed=0)
        g_onehot = GymEnv("CartPole-v1", num_envs=n)
        g_cat = GymEnv("CartPole-v1", num_envs=n, categorical_action_encoding=True)
        for e in (g_onehot, g_cat):
            e.set_seed(0)
        contenders = {
            "raw numpy vec (loop)": raw_loop(venv, args.steps),
            "gpusim loop, one-hot": gpusim_loop(g_onehot, args.steps),
            "gpusim loop, categorical": gpusim_loop(g_cat, args.steps),
            "floor: hand-written tensordict loop": floor_loop(venv_floor, args.steps),
            "raw + storage": raw_loop(venv, args.steps, store=True),
            "gpusim rollout, one-hot": gpusim_rollout(g_onehot, args.steps),
            "gpusim rollout, categorical": gpusim_rollout(g_cat, args.steps),
        }
        for fn in contenders.values():  # warm-up
            fn()
        results = {k: [] for k in contenders}
        for _ in range(args.repeats):
            for name, fn in contenders.items():
                results[name].append(timed(fn, args.steps, n))
        print(
            f"\nCartPole-v1, gymnasium numpy CartPoleVectorEnv, num_envs={n}, {args.steps} steps, "
            f"median of {args.repeats} (torch threads={args.threads})"
        )
        _report(
            results,
            {
                "gpusim loop, one-hot": "raw numpy vec (loop)",
                "gpusim loop, categorical": "raw numpy vec (loop)",
                "floor: hand-written tensordict loop": "raw numpy vec (loop)",
                "gpusim rollout, one-hot": "raw + storage",
                "gpusim rollout, categorical": "raw + storage",
            },
        )

    # ---- SyncVectorEnv: raw vs gpusim vs torchrl on the same kind of env
    n, steps = args.sync_envs, args.sync_steps
    raw_sync = sync_env(n)
    raw_sync.reset(seed=0)
    g_sync = GymWrapper(sync_env(n))
    g_sync.set_seed(0)
    contenders = {
        "raw SyncVectorEnv (loop)": raw_loop(raw_sync, steps),
        "gpusim GymWrapper rollout": gpusim_rollout(g_sync, steps),
    }
    t_envs = []
    if not args.no_torchrl:
        from torchrl.envs import GymEnv as TGymEnv
        from torchrl.envs import GymWrapper as TGymWrapper

        try:
            TGymWrapper(gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point"))
            print("\n(torchrl wrapped the numpy CartPoleVectorEnv)")
        except Exception as err:  # noqa: BLE001 - report why the peer cannot run
            print(f"\ntorchrl GymWrapper(CartPoleVectorEnv) fails: {type(err).__name__}: {str(err)[:120]}")
        t_sync = TGymWrapper(sync_env(n))
        t_sync.set_seed(0)
        t_envs.append(t_sync)
        contenders["torchrl GymWrapper rollout"] = torchrl_rollout(t_sync, steps)
        if args.torchrl_procs:
            t_async = TGymEnv("CartPole-v1", num_envs=args.torchrl_procs)
            t_async.set_seed(0)
            t_envs.append(t_async)
            g_async_ref = GymEnv("CartPole-v1", num_envs=args.torchrl_procs, vectorization_mode="async")
            contenders[f"torchrl GymEnv(num_envs={args.torchrl_procs}) rollout [processes]"] = torchrl_rollout(
                t_async, steps
            )
            contenders[f"gpusim GymEnv(num_envs={args.torchrl_procs}, 'async') rollout"] = gpusim_rollout(
                g_async_ref, steps
            )
    for fn in contenders.values():
        fn()
    results = {k: [] for k in contenders}
    for _ in range(args.repeats):
        for name, fn in contenders.items():
            m = args.torchrl_procs if "num_envs=" in name else n
            results[name].append(timed(fn, steps, m))
    print(f"\nCartPole-v1, gymnasium SyncVectorEnv (DISABLED autoreset), num_envs={n}, {steps} steps")
    ref = "gpusim GymWrapper rollout"
    pairs = {"gpusim GymWrapper rollout": "raw SyncVectorEnv (loop)"}
    if "torchrl GymWrapper rollout" in results:
        pairs["gpusim GymWrapper rollout"] = "raw SyncVectorEnv (loop)"
        pairs[ref + " "] = "torchrl GymWrapper rollout"
        results[ref + " "] = results[ref]
    for k in list(results):
        if "async" in k:
            pairs[k] = next(j for j in results if j.startswith("torchrl GymEnv"))
    _report(results, pairs)
    for e in t_envs:
        e.close()


def _report(results: dict, pairs: dict) -> None:
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in results.items()}
    seen = set()
    for name, (w, c) in med.items():
        if name.strip() in seen:
            continue
        seen.add(name.strip())
        print(f"  {name.strip():<58s} wall {w / 1e6:8.3f} M/s   cpu {c / 1e6:8.3f} M/s")
    for a, b in pairs.items():
        rw = statistics.median(x[0] / y[0] for x, y in zip(results[a], results[b]))
        rc = statistics.median(x[1] / y[1] for x, y in zip(results[a], results[b]))
        print(f"  ratio {a.strip()} / {b}: wall {rw:.2f}, cpu {rc:.2f}")


if __name__ == "__main__":
    main()
