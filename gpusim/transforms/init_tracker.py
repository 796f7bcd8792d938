"""``InitTracker``: marks the first step of each episode.

``is_init`` (shaped like the ``done`` of its level) is True on the rows just reset and False
after any step, one entry per done level. A reset writes True on the rows it resets (every
row without a ``"_reset"`` entry) and False on the others.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import InitTracker, TransformedEnv
    >>> TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), InitTracker()).reset()["is_init"].flatten()
    tensor([True, True, True])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.specs import Categorical, Composite
from gpusim.transforms._levels import default_levels, done_levels_of, reset_mask_for, tget, tset
from gpusim.transforms.step_counter import _leaf_name
from gpusim.transforms.transform import Transform

__all__ = ["InitTracker"]


class InitTracker(Transform):
    """Writes ``init_key`` = True on reset rows, False after a step, at every done level.

    Args:
        init_key: leaf name of the flag (placed at every done level, e.g.
            ``("agents", "is_init")``).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import InitTracker, StepCounter, TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), StepCounter(max_steps=2))
        >>> env.append_transform(InitTracker())  # doctest: +ELLIPSIS
        TransformedEnv(...)
        >>> td = env.rollout(4, break_when_any_done=False)
        >>> td["is_init"][0].flatten().tolist()  # True on the first step of each episode
        [True, False, True, False]
        >>> td["next", "is_init"][0].flatten().tolist()
        [False, False, False, False]
    """

    def __init__(self, init_key: str = "is_init") -> None:
        super().__init__()
        self.init_key = _leaf_name(init_key, "init_key")
        self.__dict__["_plan"] = None  # [(key, done shape)]

    def _get_plan(self, tensordict: TensorDictBase) -> list[tuple]:
        plan = self.__dict__["_plan"]
        if plan is None:
            done = tget(tensordict, "done")
            shape = done.shape if done is not None else (*tensordict.batch_size, 1)
            plan = [(self.init_key, torch.Size(shape))]
        return plan

    @property
    def init_keys(self) -> list:
        """The flag entries, one per done level of the parent (``[init_key]`` without one).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> TransformedEnv(CartPoleEnv(), InitTracker()).transform.init_keys
            ['is_init']
        """
        plan = self.__dict__["_plan"]
        if plan is None:
            return [self.init_key]
        return [key for key, _ in plan]

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        levels = done_levels_of(output_spec)
        self.__dict__["_levels"] = levels
        plan = []
        for level in levels:
            shape = output_spec["full_done_spec"][level.keys[0]].shape
            plan.append((level.key(self.init_key), shape))
        self.__dict__["_plan"] = plan
        obs_spec = output_spec["full_observation_spec"]
        done_spec = output_spec["full_done_spec"]
        for level, (key, shape) in zip(levels, plan):
            device = done_spec[level.keys[0]].device
            obs_spec[key] = Categorical(2, shape=shape, dtype=torch.bool, device=device)
        return output_spec

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        device = tensordict_reset.device
        levels = self.__dict__.get("_levels") or default_levels(tensordict_reset.batch_size)
        for key, shape in self._get_plan(tensordict_reset):
            rows = reset_mask_for(tensordict, key, levels, tensordict_reset.batch_size)
            if rows is None:
                flag = torch.ones(shape, dtype=torch.bool, device=device)
            else:  # True exactly on the rows this reset touches
                flag = rows.reshape(*rows.shape, *([1] * (len(shape) - rows.ndim))).expand(shape).clone()
            tset(tensordict_reset, key, flag)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        device = next_tensordict.device
        for key, shape in self._get_plan(next_tensordict):
            tset(next_tensordict, key, torch.zeros(shape, dtype=torch.bool, device=device))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the flag marks env resets (use the transform in a ``TransformedEnv``).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from tensordict import TensorDict
            >>> InitTracker()(TensorDict({}, []))
            Traceback (most recent call last):
            ...
            NotImplementedError: InitTracker cannot be executed without a parent env: it marks env resets; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "InitTracker cannot be executed without a parent env: it marks env resets; it has no offline forward. Use it in a TransformedEnv."
        )

    def __repr__(self) -> str:
        return f"InitTracker(init_key={self.init_key!r})"
