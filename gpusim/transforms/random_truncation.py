"""``RandomTruncationTransform``: random episode horizons, to decorrelate batched envs that would
otherwise all truncate at the same step.

At the first reset every row draws a horizon uniformly in ``[1, max_horizon]`` (the rows spread
over the phases of an episode at once). At later resets of a row, the horizon is drawn in
``[min_horizon, max_horizon]`` with probability ``prob`` (``first_episode_prob`` for the row's
first episode after the initial spread), else it is ``max_horizon``. A step whose
``step_count`` reaches the horizon sets ``truncated`` and ``done``. The horizons are a device
tensor; draws use ``torch.where`` over all rows (no host read of the reset mask).

Place it after a :class:`~gpusim.transforms.StepCounter` (it reads ``"step_count"``).

Examples:
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
    >>> env = TransformedEnv(PendulumEnv(batch_size=[4], seed=0),
    ...                      Compose(StepCounter(), RandomTruncationTransform(min_horizon=2, max_horizon=4, prob=1.0)))
    >>> td = env.rollout(12, break_when_any_done=False)
    >>> int(td["next", "step_count"].max()) <= 4
    True
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.specs import Categorical, Composite
from gpusim.transforms._levels import default_levels, done_levels_of, reset_mask_for
from gpusim.transforms.transform import Transform

__all__ = ["RandomTruncationTransform"]


def _check_prob(name: str, value: float) -> float:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"RandomTruncationTransform: {name} must be in [0, 1], got {value}")
    return float(value)


class RandomTruncationTransform(Transform):
    """Truncates each episode at a random horizon (see the module docs for the draws).

    Args:
        min_horizon: the smallest horizon of a random draw after the first reset (>= 1).
        max_horizon: the largest horizon, and the horizon without a random draw (>= min_horizon).
        prob: probability of a random horizon at a reset (default 0: only the initial spread).
        first_episode_prob: that probability for each row's first episode after the initial
            spread (default: ``prob``).

    Raises:
        ValueError: a probability outside ``[0, 1]``, a horizon < 1 or ``min_horizon >
            max_horizon``.
        RuntimeError: (when the env is built) no ``"step_count"`` entry before it in the chain.

    Examples:
        >>> RandomTruncationTransform(min_horizon=5, max_horizon=10, prob=0.1).first_episode_prob
        0.1
    """

    restarts_on_native_autoreset = True  # per-episode state: restarted on a native auto-reset

    def __init__(
        self, min_horizon: int, max_horizon: int, prob: float = 0.0, first_episode_prob: float | None = None
    ) -> None:
        super().__init__()
        self.prob = _check_prob("prob", prob)
        self.first_episode_prob = _check_prob(
            "first_episode_prob", prob if first_episode_prob is None else first_episode_prob
        )
        if min_horizon < 1:
            raise ValueError(f"RandomTruncationTransform: min_horizon must be >= 1, got {min_horizon}")
        if max_horizon < 1:
            raise ValueError(f"RandomTruncationTransform: max_horizon must be >= 1, got {max_horizon}")
        if min_horizon > max_horizon:
            raise ValueError(
                f"RandomTruncationTransform: min_horizon ({min_horizon}) must be <= max_horizon ({max_horizon})"
            )
        self.min_horizon = int(min_horizon)
        self.max_horizon = int(max_horizon)
        self._horizons: torch.Tensor | None = None  # per row, shaped like step_count
        self._first_episode: torch.Tensor | None = None
        self._initialized = False

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        obs = output_spec["full_observation_spec"]
        if "step_count" not in obs.keys():
            raise RuntimeError(
                "RandomTruncationTransform requires a StepCounter earlier in the transform chain (it reads "
                "'step_count'): use Compose(StepCounter(), RandomTruncationTransform(...))"
            )
        done = output_spec["full_done_spec"]
        if "truncated" not in done.keys():
            flag = done["done"]
            done["truncated"] = Categorical(2, shape=flag.shape, dtype=torch.bool, device=flag.device)
        self.__dict__["_levels"] = done_levels_of(output_spec)
        return output_spec

    def _draw(self, shape: torch.Size, low: int, device) -> torch.Tensor:
        return torch.randint(low, self.max_horizon + 1, shape, device=device)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        count = tensordict_reset.get("step_count", None)
        if count is None:
            return tensordict_reset
        done = tensordict_reset.get("done", None)
        if done is not None:
            tensordict_reset.set("truncated", torch.zeros_like(done))
        shape, device = count.shape, count.device
        if not self._initialized or self._horizons is None or self._horizons.shape != shape:
            self._horizons = self._draw(shape, 1, device)  # the initial spread
            self._first_episode = torch.ones(shape, dtype=torch.bool, device=device)
            self._initialized = True
            return tensordict_reset
        levels = self.__dict__.get("_levels") or default_levels(tensordict_reset.batch_size)
        rows = reset_mask_for(tensordict, "step_count", levels, tensordict_reset.batch_size)
        rows = (
            torch.ones(shape, dtype=torch.bool, device=device)
            if rows is None
            else rows.reshape(*rows.shape, *([1] * (len(shape) - rows.ndim))).expand(shape)
        )
        p = torch.where(self._first_episode, self.first_episode_prob, self.prob)
        random = torch.rand(shape, device=device) < p
        new = torch.where(random, self._draw(shape, self.min_horizon, device), self.max_horizon)
        self._horizons = torch.where(rows, new, self._horizons)
        self._first_episode = self._first_episode & ~rows
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        count = next_tensordict.get("step_count", None)
        if count is None or self._horizons is None:
            return next_tensordict  # not reset through an env yet: nothing to compare with
        cut = count >= self._horizons
        truncated = next_tensordict.get("truncated", None)
        done = next_tensordict.get("done", None)
        next_tensordict.set("truncated", cut if truncated is None else truncated | cut)
        next_tensordict.set("done", cut if done is None else done | cut)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: horizons are drawn at env resets (use it in a TransformedEnv).

        Examples:
            >>> from tensordict import TensorDict
            >>> RandomTruncationTransform(1, 5)(TensorDict())
            Traceback (most recent call last):
            ...
            NotImplementedError: RandomTruncationTransform truncates env episodes; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "RandomTruncationTransform truncates env episodes; it has no offline forward. Use it in a TransformedEnv."
        )
