"""``AutoResetTransform`` and ``AutoResetEnv``: envs that reset themselves inside ``_step``.

Some simulators start the next episode on their own when one ends: the step that ends an
episode returns the *first observation of the next episode* with ``done=True``. Wrapped in an
:class:`AutoResetEnv` with an :class:`AutoResetTransform` (what ``SomeEnv(..., auto_reset=True)``
builds), such an env follows the ordinary protocol: on the done rows, the ``"next"``
observations are replaced by fill values (NaN for floats, -1 for signed integers, False for
bools: they are not valid observations of the ending episode) and kept aside; the reset that
follows (``step_and_maybe_reset``, ``rollout``) does not call the env's reset but hands out the
kept observations on the reset rows.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim import EnvBase, Unbounded, Composite
    >>> class Loop(EnvBase):  # counts to 3, then starts again by itself
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.observation_spec = Composite(count=Unbounded((1,)))
    ...         self.action_spec = Unbounded((1,))
    ...         self.count = torch.zeros(1)
    ...     def _reset(self, td):
    ...         self.count.zero_()
    ...         return TensorDict({"count": self.count.clone()}, [])
    ...     def _step(self, td):
    ...         self.count += 1
    ...         done = self.count >= 3
    ...         if done.any():
    ...             self.count.zero_()
    ...         return TensorDict({"count": self.count.clone(), "reward": torch.ones(1), "done": done}, [])
    ...     def _set_seed(self, seed):
    ...         pass
    >>> env = Loop(auto_reset=True)
    >>> r = env.rollout(4, break_when_any_done=False)
    >>> r["next", "count"].flatten().tolist(), r["count"].flatten().tolist()
    ([1.0, 2.0, nan, 1.0], [0.0, 1.0, 2.0, 0.0])
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs.common import TRANSFORM_HOOKS
from gpusim.envs.episode import ResetMasks
from gpusim.transforms._levels import done_levels_of
from gpusim.transforms.transform import Transform
from gpusim.transforms.transformed_env import TransformedEnv

__all__ = ["AutoResetTransform", "AutoResetEnv"]


class AutoResetTransform(Transform):
    """Replaces the observations of the done rows of an auto-resetting env by fill values and
    hands them out at the next reset (the module docstring shows a rollout). Its container must be
    an :class:`AutoResetEnv`.

    Keyword Args:
        replace: ``False``: leave the observations of done rows as they are (no fill).
        fill_float: fill value of floating-point observations (``"nan"`` or a number).
        fill_int: fill value of signed integer observations.
        fill_bool: fill value of bool (and unsigned) observations.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0, auto_reset=True)  # builds the pair
        >>> env.transform
        AutoResetTransform()
        >>> t = AutoResetTransform(fill_float=0.0)
        >>> t.fill_float, t.fill_int, t.fill_bool
        (0.0, -1, False)
        >>> t = AutoResetTransform(replace=False)  # done rows keep the env's observations
        >>> t.fill_float, t.fill_int, t.fill_bool
        (None, None, None)
    """

    def __init__(
        self,
        *,
        replace: bool | None = None,
        fill_float: float | str | None = "nan",
        fill_int: int | None = -1,
        fill_bool: bool | None = False,
    ) -> None:
        super().__init__()
        if replace is False:
            fill_float = fill_int = fill_bool = None
        self.fill_float = float("nan") if fill_float == "nan" else fill_float
        self.fill_int = fill_int
        self.fill_bool = fill_bool
        self.__dict__["_saved"] = []  # [(level prefix, done rows, {key: next-episode value})]

    def _fill_for(self, value: torch.Tensor) -> Any:
        if value.dtype.is_floating_point:
            return self.fill_float
        if value.dtype.is_signed:
            return self.fill_int
        return self.fill_bool

    def _check_container(self) -> None:
        if not isinstance(self.container, AutoResetEnv):
            raise RuntimeError(
                f"{type(self).__name__} must be the transform of an AutoResetEnv, got a "
                f"{type(self.container).__name__} container"
            )

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._check_container()
        parent = self.parent
        obs_keys = list(parent.full_observation_spec.keys(True, True))
        saved = []
        for level in done_levels_of(parent.output_spec):
            done = next_tensordict.get(level.key("done"), None)
            if done is None or not bool(done.any()):
                continue
            rows = done.squeeze(-1)
            values = {}
            for key in obs_keys:
                tkey = key if isinstance(key, tuple) else (key,)
                if tkey[: len(level.prefix)] != level.prefix:
                    continue
                value = next_tensordict.get(key, None)
                if not isinstance(value, torch.Tensor):
                    continue
                values[key] = value.clone()
                fill = self._fill_for(value)
                if fill is not None:
                    mask = rows.reshape(*rows.shape, *([1] * (value.ndim - rows.ndim)))
                    next_tensordict.set(key, torch.where(mask, torch.full_like(value, fill), value))
            saved.append((level.prefix, rows, values))
        if saved:
            self.__dict__["_saved"] = saved
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        self._check_container()
        saved, self.__dict__["_saved"] = self.__dict__["_saved"], []
        for _, rows, values in saved:
            for key, value in values.items():
                current = tensordict_reset.get(key, None)
                if current is None or current.shape != value.shape:
                    tensordict_reset.set(key, value)
                    continue
                mask = rows.reshape(*rows.shape, *([1] * (value.ndim - rows.ndim)))
                tensordict_reset.set(key, torch.where(mask, value, current.to(value.dtype)))
        return tensordict_reset


class AutoResetEnv(TransformedEnv):
    """The :class:`TransformedEnv` of an auto-resetting env: a reset with ``"_reset"`` entries
    (the reset that follows a done step) does not reset the base env (it already started the
    next episode) but lets its :class:`AutoResetTransform` hand out the kept observations; a
    reset without them (the first one) resets the base env.

    ``SomeEnv(..., auto_reset=True)`` builds one; further transforms go in a
    :class:`TransformedEnv` around it (the auto-reset transform stays the only one inside).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import StepCounter, TransformedEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0, auto_reset=True)
        >>> isinstance(env, AutoResetEnv), type(env.base_env).__name__
        (True, 'CartPoleEnv')
        >>> env.reset()["observation"].shape  # the first reset resets the base env
        torch.Size([2, 4])
        >>> TransformedEnv(env, StepCounter()).reset()["step_count"].flatten().tolist()
        [0, 0]
    """

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        if tensordict is None or masks.full:
            return super()._reset_rows(tensordict, masks, **kwargs)
        base = self.base_env
        tensordict_reset = tensordict.exclude(*base.reset_keys, *self.reset_keys)
        base._complete_done(tensordict_reset)
        for key in base.done_keys:  # the reset rows start an episode
            done = tensordict_reset.get(key, None)
            if done is not None:
                rows = masks.for_key(key)
                if rows is None:
                    tensordict_reset.set(key, torch.zeros_like(done))
                else:
                    tensordict_reset.set(key, done & ~rows.reshape(*rows.shape, *([1] * (done.ndim - rows.ndim))))
        return self.transform._reset(TensorDict({}, batch_size=base.batch_size, device=base.device), tensordict_reset)

    def insert_transform(self, index: int, transform: Transform) -> AutoResetEnv:
        """Not allowed: the auto-reset transform must stay the only transform.

        Raises:
            RuntimeError: always.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter
            >>> CartPoleEnv(auto_reset=True).insert_transform(0, StepCounter())
            Traceback (most recent call last):
            ...
            RuntimeError: cannot insert a transform in an AutoResetEnv; wrap it in a TransformedEnv
        """
        raise RuntimeError(f"cannot insert a transform in an {type(self).__name__}; wrap it in a TransformedEnv")


def _wrap_auto_reset(env: Any, replace: bool | None = True) -> AutoResetEnv:
    """What ``SomeEnv(..., auto_reset=True, auto_reset_replace=...)`` returns."""
    return AutoResetEnv(env, AutoResetTransform(replace=replace))


TRANSFORM_HOOKS["auto_reset"] = _wrap_auto_reset
