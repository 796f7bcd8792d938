"""Framework overhead: per-step cost of ``step_and_maybe_reset`` on a trivial counter env at
small batch, gpusim vs TorchRL 0.14's ``EnvBase`` (the same env written as a TorchRL
subclass), measured alternately in one run.

Two more loops bound what any framework can reach here: ``env _step only`` (the loop calling
the env's own ``_step`` and storing its output under ``"next"``: the user's code) and
``inlined`` (that, plus what ``step_and_maybe_reset`` must do on top, written in one function:
the action's shape/dtype check, the state check, the next root, the host read of ``done``,
gpusim's ``maybe_reset`` when a row is done).

Usage::

    python benchmarks/bench_overhead.py [--steps 20000] [--batch 1] [--repeats 5] [--no-torchrl]
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
            return TensorDict(
                {"observation": zeros, "state": zeros, "done": false, "terminated": false}, self.batch_size
            )

        def _step(self, td):
            state = td["state"] + 1
            done = state >= max_count
            return TensorDict(
                {"observation": state, "state": state, "reward": state, "done": done, "terminated": done},
                self.batch_size,
            )

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
            return TensorDict(
                {"observation": zeros, "state": zeros, "done": false, "terminated": false}, self.batch_size
            )

        def _step(self, td):
            state = td["state"] + 1
            done = state >= max_count
            return TensorDict(
                {"observation": state, "state": state, "reward": state, "done": done, "terminated": done},
                self.batch_size,
            )

        def _set_seed(self, seed):
            pass

    return Counter()


def time_loop(env, steps: int, fn=None) -> float:
    """Seconds per step of a ``step_and_maybe_reset`` loop (or of ``fn``) with a constant action."""
    fn = fn or env.step_and_maybe_reset
    action = torch.zeros(env.batch_size, dtype=torch.long)
    td = env.reset()
    for _ in range(200):  # warm-up
        td["action"] = action
        _, td = fn(td)
    start = time.perf_counter()
    for _ in range(steps):
        td["action"] = action
        _, td = fn(td)
    return (time.perf_counter() - start) / steps


def bound_loops(env) -> dict:
    """``env _step only`` and ``inlined`` (see the module docstring) for the gpusim counter."""
    batch = env.batch_size
    new = TensorDict._new_unsafe

    def step_only(td):
        td._tensordict["next"] = env._step(td)
        return td, td

    def inlined(td):
        data = td._tensordict
        action = data.get("action")
        if action is None or action.shape != batch or action.dtype != torch.int64:
            raise ValueError("bad action")
        if data.get("state") is None:
            raise KeyError("state")
        nxt = env._step(td)
        data["next"] = nxt
        n = nxt._tensordict
        root = new(
            {"observation": n["observation"], "state": n["state"], "done": n["done"], "terminated": n["terminated"]},
            batch,
        )
        if n["done"].numpy().any():
            root = env.maybe_reset(root)
        return td, root

    return {"env _step only": step_only, "inlined": inlined}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-count", type=int, default=1000)
    parser.add_argument("--no-torchrl", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(2)
    gpusim = make_gpusim_counter(args.batch, args.max_count)
    loops = {name: (gpusim, fn) for name, fn in bound_loops(gpusim).items()}
    loops["gpusim"] = (gpusim, None)
    if not args.no_torchrl:
        loops["torchrl"] = (make_torchrl_counter(args.batch, args.max_count), None)
    results: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.repeats):
        for name, (env, fn) in loops.items():
            results[name].append(time_loop(env, args.steps, fn))
    med = {name: statistics.median(v) * 1e6 for name, v in results.items()}
    print(f"step_and_maybe_reset, counter env, batch {args.batch}, CPU, median of {args.repeats}:")
    for name, us in med.items():
        print(f"  {name:15s}: {us:8.1f} us/step")
    if "torchrl" in med:
        t = med["torchrl"]
        print(
            f"  cost / torchrl: gpusim {med['gpusim'] / t:.2f}, inlined {med['inlined'] / t:.2f}, "
            f"env _step only {med['env _step only'] / t:.2f} (target <= 0.33)"
        )


if __name__ == "__main__":
    main()
