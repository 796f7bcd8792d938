"""Where the time of the ``GymEnv`` edge goes: the hand-written floor, the same loop written
inline with gpusim's own checks and episode calls, then each generic layer added back.

``bench_gym.py`` compares ``GymEnv``'s ``rand_action`` + ``step_and_maybe_reset`` loop with
a hand-written "floor" (torch random action, gymnasium step, two tensordicts, masked reset of
the done rows). This script splits the gap, measuring alternately in one process (median of
``--repeats``, microseconds per step, 4096 envs of gymnasium's numpy ``CartPoleVectorEnv``):

* ``floor``: ``bench_gym.floor_loop``;
* ``inlined``: one function doing what gpusim's loop must do on top of the floor, with no
  layers: the action's shape/dtype check, the adapter's step, the ``"next"`` tensordict and
  the next root, the auto-reset masks (``EpisodePlan.sparse_done_masks``), the ``"_reset"``
  entry (``EpisodePlan.write``), the library's masked reset and the merge
  (``EpisodePlan.merge``, every leaf marked merged): the least a tensordict edge with
  TorchRL's semantics can cost here;
* ``+rand``, ``+step``, ``+mdp``, ``+reset``: cumulatively, the parts of ``inlined`` replaced by
  gpusim's generic calls (``env.rand_action``, ``env.step``, ``env._step_mdp``,
  ``env.maybe_reset``); the last is the whole generic loop (what ``bench_gym.py`` times);
* ``fused``: ``inlined`` plus what a real fused ``GymEnv`` loop could not skip: the partial-step
  and state checks, the step_mdp plan (it carries the other root entries, e.g. a policy's
  outputs) and the check that the leaves skipping the merge are the step's own, unmodified;
* the same ``inlined`` and ``gpusim`` loops with one-hot actions (``OneHot.rand`` draws the
  action, the step decodes it with one matrix product), whose extra cost is the encoding's.

Usage::

    python benchmarks/bench_gym_edge.py [--num-envs 4096] [--steps 200] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np
import torch
from bench_gym import floor_loop
from tensordict import TensorDict

from gpusim.envs.libs import GymEnv

new_td = TensorDict._new_unsafe


def make_loop(n: int, steps: int, onehot: bool, generic: frozenset) -> callable:
    """The loop ``inlined``, with the parts named in ``generic`` run by gpusim's generic calls."""
    env = GymEnv("CartPole-v1", num_envs=n, categorical_action_encoding=not onehot)
    adapter, episode = env._adapter, env.episode
    batch = torch.Size([n])
    spec = env.full_action_spec["action"]
    shape, dtype = spec.shape, spec.dtype
    arange = torch.arange(2)
    keys = ("observation", "terminated", "truncated", "done")

    record: list = []
    safe = "safe" in generic

    def step(td):
        data = td._tensordict
        action = data.get("action")
        if action.shape != shape or action.dtype != dtype:
            raise ValueError("bad action")
        if safe and (data.get("_step") is not None or data.get("observation") is None):
            raise ValueError("partial step or missing state")
        index = (action @ arange) if onehot else action
        obs, reward, term, trunc, _ = adapter.step(index.numpy())
        o = torch.from_numpy(obs)
        t, u = torch.from_numpy(term.reshape(n, 1)), torch.from_numpy(trunc.reshape(n, 1))
        d = torch.from_numpy(adapter.last_done.reshape(n, 1))
        data["next"] = new_td(
            {
                "observation": o,
                "reward": torch.from_numpy(reward.reshape(n, 1)),
                "terminated": t,
                "truncated": u,
                "done": d,
            },
            batch,
        )
        if safe:
            record[:] = [(k, v, v._version) for k, v in zip(keys, (o, t, u, d))]
        return td

    def reset(root):
        masks = episode.sparse_done_masks(root)
        if masks is None:
            return root
        episode.write(root, masks)
        mask = masks.host_rows()
        if safe:  # the leaves may skip the merge only if they are the step's, unmodified
            data = root._tensordict
            if any(data.get(k) is not v or v._version != ver for k, v, ver in record):
                raise RuntimeError("edited leaves: the generic merge would run")
            if np.count_nonzero(adapter.pending > mask):
                raise RuntimeError("an ended row not reset")
        obs, _ = adapter.reset(mask)
        flags = np.zeros((3, n, 1), dtype=bool)
        out = new_td(
            {
                "observation": torch.from_numpy(obs),
                "terminated": torch.from_numpy(flags[0]),
                "truncated": torch.from_numpy(flags[1]),
                "done": torch.from_numpy(flags[2]),
            },
            batch,
        )
        for value in out._tensordict.values():
            masks.mark_merged(value)
        return episode.merge(out, root, masks)

    def run():
        td = env.reset()
        for _ in range(steps):
            if "rand" in generic:
                td = env.rand_action(td)
            else:
                td._tensordict["action"] = spec.rand() if onehot else torch.randint(0, 2, (n,))
            td = env.step(td) if "step" in generic else step(td)
            if "mdp" in generic:
                root = env._step_mdp(td)
            else:
                nxt = td._tensordict["next"]._tensordict
                root = new_td({k: nxt[k] for k in keys}, batch)
            td = env.maybe_reset(root) if "reset" in generic else reset(root)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n, steps = args.num_envs, args.steps
    everything = frozenset({"rand", "step", "mdp", "reset"})
    loops = {"inlined": make_loop(n, steps, False, frozenset())}
    parts: list = []
    for part in ("rand", "step", "mdp", "reset"):  # cumulative: the reset's layer needs the step's record
        parts.append(part)
        loops["+" + part + (" (= gpusim)" if part == "reset" else "")] = make_loop(n, steps, False, frozenset(parts))
    loops["fused"] = make_loop(n, steps, False, frozenset({"safe", "mdp"}))
    loops["inlined, one-hot"] = make_loop(n, steps, True, frozenset())
    loops["gpusim, one-hot"] = make_loop(n, steps, True, everything)
    venv = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    loops = {"floor": floor_loop(venv, steps), **loops}  # after a GymEnv registered the masked reset
    for fn in loops.values():
        fn()
    times = {k: [] for k in loops}
    for _ in range(args.repeats):
        for name, fn in loops.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) / steps * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    floor, inlined = med["floor"], med["inlined"]
    print(f"CartPole-v1, {n} envs, {steps} steps, median of {args.repeats} (torch threads={args.threads})")
    print(f"  {'loop':20s} {'us/step':>8s} {'vs inlined':>11s} {'vs previous':>12s} {'floor / loop':>13s}")
    previous = None
    for name, us in med.items():
        if name.startswith("inlined") or name == "fused":
            previous = None
        step = "" if previous is None else f"{us - previous:+12.1f}"
        print(f"  {name:20s} {us:8.1f} {us - inlined:+11.1f} {step:>12s} {floor / us:13.3f}")
        previous = us


if __name__ == "__main__":
    main()
