"""Gymnasium counterparts of the native classic-control envs, for the parity tests.

Each case knows how to build the gymnasium env, how to inject a state into it, how to draw
actions (continuous actions reach beyond the bounds to exercise clipping) and how to draw
states that cover the whole state space, termination regions included.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from gpusim.envs.native import AcrobotEnv, CartPoleEnv, MountainCarContinuousEnv, MountainCarEnv, PendulumEnv


@dataclasses.dataclass(frozen=True)
class GymCase:
    env_cls: type
    gym_id: str
    state_low: tuple[float, ...]  # box of states drawn by the random-state parity test
    state_high: tuple[float, ...]
    reset_low: tuple[float, ...]  # gymnasium's start-state ranges
    reset_high: tuple[float, ...]
    continuous: bool
    can_terminate: bool
    state_dtype: type = np.float64
    extra_states: Callable[[int], np.ndarray] | None = None

    def __str__(self) -> str:
        return self.gym_id

    def make_gym(self, **kwargs):
        return gym.make(self.gym_id, **kwargs).unwrapped

    def inject(self, genv, state: np.ndarray) -> None:
        genv.state = np.array(state, dtype=self.state_dtype)
        if hasattr(genv, "steps_beyond_terminated"):
            genv.steps_beyond_terminated = None

    def actions(self, rng: np.random.Generator, genv, n: int) -> np.ndarray:
        if self.continuous:
            high = float(genv.action_space.high[0])
            return rng.uniform(-1.5 * high, 1.5 * high, size=(n, 1)).astype(np.float32)
        return rng.integers(0, genv.action_space.n, size=(n,))

    def torch_action(self, actions: np.ndarray) -> torch.Tensor:
        if self.continuous:
            return torch.as_tensor(actions, dtype=torch.float32)
        return torch.as_tensor(actions, dtype=torch.int64)

    def gym_action(self, actions: np.ndarray, i: int):
        return actions[i] if self.continuous else int(actions[i])

    def random_states(self, rng: np.random.Generator, n: int) -> np.ndarray:
        low, high = np.array(self.state_low), np.array(self.state_high)
        states = rng.uniform(low, high, size=(n, len(low)))
        if self.extra_states is not None:
            states = np.concatenate([states, self.extra_states(n)], 0)
        return states.astype(np.float32)


def _mountain_car_edges(n: int) -> np.ndarray:
    # the left wall with negative / positive velocity, the goal line, the speed bounds
    return np.array(
        [[-1.2, -0.07], [-1.2, 0.01], [-1.19, -0.05], [0.5, 0.0], [0.45, 0.0], [0.49, 0.07], [0.6, 0.07], [0.0, -0.07]],
        dtype=np.float32,
    )


CASES = [
    GymCase(
        CartPoleEnv,
        "CartPole-v1",
        state_low=(-2.6, -3.0, -0.25, -3.0),
        state_high=(2.6, 3.0, 0.25, 3.0),
        reset_low=(-0.05,) * 4,
        reset_high=(0.05,) * 4,
        continuous=False,
        can_terminate=True,
    ),
    GymCase(
        PendulumEnv,
        "Pendulum-v1",
        state_low=(-20.0, -9.0),
        state_high=(20.0, 9.0),
        reset_low=(-math.pi, -1.0),
        reset_high=(math.pi, 1.0),
        continuous=True,
        can_terminate=False,
    ),
    GymCase(
        MountainCarEnv,
        "MountainCar-v0",
        state_low=(-1.2, -0.07),
        state_high=(0.6, 0.07),
        reset_low=(-0.6, 0.0),
        reset_high=(-0.4, 0.0),
        continuous=False,
        can_terminate=True,
        extra_states=_mountain_car_edges,
    ),
    GymCase(
        MountainCarContinuousEnv,
        "MountainCarContinuous-v0",
        state_low=(-1.2, -0.07),
        state_high=(0.6, 0.07),
        reset_low=(-0.6, 0.0),
        reset_high=(-0.4, 0.0),
        continuous=True,
        can_terminate=True,
        state_dtype=np.float32,
        extra_states=_mountain_car_edges,
    ),
    GymCase(
        AcrobotEnv,
        "Acrobot-v1",
        state_low=(-math.pi, -math.pi, -4 * math.pi, -9 * math.pi),
        state_high=(math.pi, math.pi, 4 * math.pi, 9 * math.pi),
        reset_low=(-0.1,) * 4,
        reset_high=(0.1,) * 4,
        continuous=False,
        can_terminate=True,
    ),
]
