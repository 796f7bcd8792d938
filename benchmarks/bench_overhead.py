"""Framework overhead: per-step cost of ``step_and_maybe_reset`` on a trivial counter env at
small batch, gpusim vs TorchRL 0.14's ``EnvBase`` (the same env written as a TorchRL
subclass), measured alternately in one run.

Usage::

    python benchmarks/bench_overhead.py [--steps 20000] [--batch 1] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from tensordict import TensorDict

import gpusim as gs


def make_gpusim_counter(batch: int, max_count: int):
    class Counter(gs.EnvBase):
        def __init__(self):
            super().__init__(batch_size=[batch])
            B = self.batch_size
            self.observation_spec = gs.Composite(observation=gs.Unbounded((*B, 1)), shape=B)
            self.state_spec = gs.Composite(state=gs.Unbounded((*B, 1)), shape=B)
            self.action_spec = gs.Categorical(2, shape=B)
            self.reward_spec = gs.Unbounded((*B, 1))
            flag = gs.Categorical(2, shape=(*B, 1), dtype=torch.bool)
            self.done_spec = gs.Composite(done=flag, terminated=flag.clone(), shape=B)

        def _reset(self, td):
            zeros = torch.zeros(*self.batch_size, 1)
            false = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
            return TensorDict({"observation": zeros, "state": zeros, "done": false, "terminated": false},
                              self.batch_size)

        def _step(self, td):
            state = td["state"] + 1
            done = state >= max_count
            return TensorDict({"observation": state, "state": state, "reward": state, "done": done,
                               "terminated": done}, self.batch_size)

        def _set_seed(self, seed):
            pass

    return Counter()


def make_torchrl_counter(batch: int, max_count: int):
    from torchrl.data import Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase

    class Counter(EnvBase):
        def __init__(self):
            super().__init__(batch_size=[batch])
            B = self.batch_size
            self.observation_spec = Composite(observation=Unbounded((*B, 1)), state=Unbounded((*B, 1)), shape=B)
            self.state_spec = Composite(state=Unbounded((*B, 1)), shape=B)
            self.action_spec = Categorical(2, shape=B)
            self.reward_spec = Unbounded((*B, 1))
            flag = Categorical(2, shape=(*B, 1), dtype=torch.bool)
            self.done_spec = Composite(done=flag, terminated=flag.clone(), shape=B)

        def _reset(self, td):
            zeros = torch.zeros(*self.batch_size, 1)
            false = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
            return TensorDict({"observation": zeros, "state": zeros, "done": false, "terminated": false},
                              self.batch_size)

        def _step(self, td):
            state = td["state"] + 1
            done = state >= max_count
            return TensorDict({"observation": state, "state": state, "reward": state, "done": done,
                               "terminated": done}, self.batch_size)

        def _set_seed(self, seed):
            pass

    return Counter()


def time_loop(env, steps: int) -> float:
    """Seconds per step of a ``step_and_maybe_reset`` loop with a constant action."""
    action = torch.zeros(env.batch_size, dtype=torch.long)
    td = env.reset()
    for _ in range(200):  # warm-up
        td["action"] = action
        _, td = env.step_and_maybe_reset(td)
    start = time.perf_counter()
    for _ in range(steps):
        td["action"] = action
        _, td = env.step_and_maybe_reset(td)
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-count", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(2)
    envs = {
        "gpusim": make_gpusim_counter(args.batch, args.max_count),
        "torchrl": make_torchrl_counter(args.batch, args.max_count),
    }
    results: dict[str, list[float]] = {name: [] for name in envs}
    for _ in range(args.repeats):
        for name, env in envs.items():
            results[name].append(time_loop(env, args.steps))
    g = statistics.median(results["gpusim"]) * 1e6
    t = statistics.median(results["torchrl"]) * 1e6
    print(f"step_and_maybe_reset, counter env, batch {args.batch}, CPU, median of {args.repeats}:")
    print(f"  gpusim : {g:8.1f} us/step")
    print(f"  torchrl: {t:8.1f} us/step")
    print(f"  gpusim / torchrl cost ratio: {g / t:.2f} (target <= 0.50)")


if __name__ == "__main__":
    main()
