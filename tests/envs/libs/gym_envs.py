"""Small gymnasium envs for the wrapper tests: every space type, a counter, rendering, infos.

``SpaceEnv`` draws each observation from its observation space seeded by ``(start, t)``, so
every space type (Dict, Tuple, Text, MultiDiscrete, ...) gets valid, reproducible values; its
``step`` asserts that the action is inside the action space, so a wrong numpy conversion in the
wrapper fails loudly. The ``"counter"`` observation is ``[start, t]``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

INF = np.inf

OBS_SPACES = {
    "counter": lambda: spaces.Box(-INF, INF, (2,), np.float32),
    "box": lambda: spaces.Box(-1.0, 2.0, (3,), np.float32),
    "box_mixed": lambda: spaces.Box(np.array([-1.0, -INF], np.float32), np.array([1.0, INF], np.float32)),
    "box_f64": lambda: spaces.Box(-1.0, 1.0, (2, 2), np.float64),
    "box_int": lambda: spaces.Box(0, 9, (4,), np.int64),
    "image": lambda: spaces.Box(0, 255, (8, 6, 3), np.uint8),
    "discrete": lambda: spaces.Discrete(5, start=1),
    "multidiscrete": lambda: spaces.MultiDiscrete([3, 4], start=[0, 2]),
    "multibinary": lambda: spaces.MultiBinary(4),
    "multibinary2d": lambda: spaces.MultiBinary([2, 3]),
    "text": lambda: spaces.Text(max_length=6, min_length=1),
    "tuple": lambda: spaces.Tuple((spaces.Box(-1.0, 1.0, (2,), np.float32), spaces.Discrete(3))),
    "dict": lambda: spaces.Dict(
        {
            "pos": spaces.Box(-1.0, 1.0, (2,), np.float32),
            "flags": spaces.MultiBinary(3),
            "nested": spaces.Dict({"k": spaces.Discrete(4), "v": spaces.Box(-INF, INF, (1,), np.float32)}),
        }
    ),
}

ACTION_SPACES = {
    "box": lambda: spaces.Box(-2.0, 2.0, (2,), np.float32),
    "discrete": lambda: spaces.Discrete(3, start=2),
    "multidiscrete": lambda: spaces.MultiDiscrete([2, 5]),
    "multibinary": lambda: spaces.MultiBinary(3),
    "dict": lambda: spaces.Dict({"move": spaces.Box(-1.0, 1.0, (2,), np.float32), "fire": spaces.Discrete(2)}),
    "tuple": lambda: spaces.Tuple((spaces.Discrete(2), spaces.Box(-1.0, 1.0, (1,), np.float32))),
}


class SpaceEnv(gym.Env):
    """Counter env with configurable spaces.

    Args:
        obs: a key of ``OBS_SPACES``.
        action: a key of ``ACTION_SPACES``.
        ep_len: the episode terminates after this many steps.
        truncate_at: the episode is truncated after this many steps (when smaller).
        render_mode: ``"rgb_array"`` renders a (6, 5, 3) frame filled with ``t``.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        obs: str = "counter",
        action: str = "discrete",
        ep_len: int = 5,
        truncate_at: int | None = None,
        render_mode: str | None = None,
    ):
        self.observation_space = OBS_SPACES[obs]()
        self.action_space = ACTION_SPACES[action]()
        self.obs_kind = obs
        self.ep_len = ep_len
        self.truncate_at = truncate_at
        self.render_mode = render_mode
        self.t = 0
        self.start = 0
        self.last_obs = None
        self.last_action = None

    def _obs(self):
        if self.obs_kind == "counter":
            obs = np.array([self.start, self.t], dtype=np.float32)
        else:
            self.observation_space.seed(self.start * 1000 + self.t)
            obs = self.observation_space.sample()
        self.last_obs = obs
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.start = int(self.np_random.integers(0, 100))
        return self._obs(), {"x": float(self.start), "count": 0}

    def step(self, action):
        assert self.action_space.contains(action), f"{action!r} not in {self.action_space}"
        self.last_action = action
        self.t += 1
        terminated = self.t >= self.ep_len
        truncated = self.truncate_at is not None and self.t >= self.truncate_at
        return self._obs(), float(self.t), terminated, truncated, {"x": self.start + 0.5 * self.t, "count": self.t}

    def render(self):
        if self.render_mode == "rgb_array":
            return np.full((6, 5, 3), self.t, dtype=np.uint8)
        return None


def sync_vector(n: int = 3, mode: str = "DISABLED", ep_lens=None, **kwargs) -> gym.vector.SyncVectorEnv:
    """A SyncVectorEnv of ``SpaceEnv``s (episode lengths ``ep_lens``, default 2, 3, 4, ...)."""
    ep_lens = ep_lens or [2 + i for i in range(n)]
    fns = [lambda L=L: SpaceEnv(ep_len=L, **kwargs) for L in ep_lens]
    return gym.vector.SyncVectorEnv(fns, autoreset_mode=getattr(gym.vector.AutoresetMode, mode))
