"""Module-level factories and failing envs for the batched-env tests (picklable by name)."""

from __future__ import annotations

import os
import time

import torch
from tensordict import TensorDictBase

from gpusim.transforms import Transform, TransformedEnv
from tests.envs.toy_envs import CountingEnv


class FailingEnv(CountingEnv):
    """A ``CountingEnv`` that fails on its ``fail_at``-th step: ``mode`` is ``"raise"``
    (ValueError), ``"exit"`` (``os._exit(3)``: the process dies) or ``"hang"`` (sleeps 60 s)."""

    def __init__(self, mode: str = "raise", fail_at: int = 2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.mode = mode
        self.fail_at = fail_at
        self.steps = 0

    def _step(self, td):
        self.steps += 1
        if self.steps >= self.fail_at:
            if self.mode == "raise":
                raise ValueError("boom at step 2")
            if self.mode == "exit":
                os._exit(3)
            if self.mode == "hang":
                time.sleep(60)
        return super()._step(td)


class MethodEnv(CountingEnv):
    """A ``CountingEnv`` with a method and an attribute only the workers have."""

    label = "method-env"

    def scaled(self, x: float, offset: float = 0.0) -> float:
        return self.max_count * x + offset


class SharedCounter(Transform):
    """Counts the steps it sees in a one-element tensor it can share across workers
    (the ``_shared_state`` / ``_load_shared_state`` protocol of ``EnvCreator``)."""

    def __init__(self) -> None:
        super().__init__(in_keys=[], out_keys=[])
        self.calls = torch.zeros(1)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.calls.add_(1)
        return next_tensordict

    def _shared_state(self) -> dict:
        return {"calls": self.calls}

    def _load_shared_state(self, state: dict) -> None:
        self.calls = state["calls"]


def counting_env(max_count: int = 5) -> CountingEnv:
    return CountingEnv(max_count=max_count)


def counting_env_with_shared_counter() -> TransformedEnv:
    return TransformedEnv(CountingEnv(), SharedCounter())


#: a module-level lambda (pickled by value)
counting_lambda = lambda: CountingEnv(max_count=4)  # noqa: E731


def fds() -> int:
    """Number of open file descriptors of this process (Linux)."""
    return len(os.listdir("/proc/self/fd"))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    # a zombie still answers: look at its state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
