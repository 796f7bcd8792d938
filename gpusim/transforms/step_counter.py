"""``StepCounter``: counts the steps of each episode and truncates after ``max_steps``.

The count lives in the tensordict (``step_count``, one per done level, shape of that level's
``done``): a reset writes 0 (the base env's partial-reset merge keeps the count of the rows that
are not reset; without an env the transform keeps them itself), a step writes ``count + 1``.
With ``max_steps``, ``truncated = count >= max_steps OR the env's own truncated`` (added to the
done spec if missing) and (``update_done=True``) ``done |= truncated``; without ``max_steps`` no
``truncated`` entry is added (TorchRL's behaviour). Nested (MARL) done levels count
independently.

Examples:
    >>> import gpusim as gs
    >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)  # CartPoleEnv + StepCounter(500)
    >>> env.transform.max_steps
    500
    >>> td = env.rollout(3)
    >>> td["next", "step_count"][0].squeeze(-1).tolist()
    [1, 2, 3]
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from gpusim.envs import _keys
from gpusim.specs import Bounded, Categorical, Composite
from gpusim.transforms._levels import default_levels, done_levels_of, reset_mask_for, tget, tset
from gpusim.transforms.transform import Transform

__all__ = ["StepCounter"]


def _leaf_name(key, what: str) -> str:
    if isinstance(key, str):
        return key
    key = _keys.unravel(key)
    if isinstance(key, str):
        return key
    raise ValueError(f"{what} can only be of type str: a leaf name (it is placed at every done level), got {key!r}")


class StepCounter(Transform):
    """Counts the steps from reset and optionally truncates after ``max_steps``.

    Args:
        max_steps: truncate episodes after this many steps (``None``: never). Must be > 0.
        truncated_key: leaf name of the truncated entry written at every done level.
        step_count_key: leaf name of the count entry written at every done level.
        update_done: also set ``done`` where the transform truncates.

    Raises:
        ValueError: ``max_steps <= 0`` or a non-int ``max_steps``.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import StepCounter, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), StepCounter(max_steps=2))
        >>> td = env.rollout(4, break_when_any_done=False)
        >>> td["next", "step_count"][0].squeeze(-1).tolist()
        [1, 2, 1, 2]
        >>> td["next", "truncated"][0].squeeze(-1).tolist()  # done is set too: the row resets
        [False, True, False, True]
        >>> "step_count" in env.state_spec.keys()  # read back at the next step
        True
    """

    restarts_on_native_autoreset = True  # per-episode state: restarted on a native auto-reset

    def __init__(
        self,
        max_steps: int | None = None,
        truncated_key: str = "truncated",
        step_count_key: str = "step_count",
        update_done: bool = True,
    ) -> None:
        if max_steps is not None:
            if isinstance(max_steps, bool) or not isinstance(max_steps, int):
                raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
            if max_steps <= 0:
                raise ValueError(f"max_steps must be > 0, got {max_steps}")
        super().__init__()
        self.max_steps = max_steps
        self.truncated_key = _leaf_name(truncated_key, "truncated_key")
        self.step_count_key = _leaf_name(step_count_key, "step_count_key")
        self.update_done = update_done
        self.__dict__["_plan"] = None

    # one entry per done level: (count key, truncated key, done key, done shape)
    def _level_plan(self, output_spec) -> list[tuple]:
        plan = []
        for level in done_levels_of(output_spec):
            done_shape = output_spec["full_done_spec"][level.keys[0]].shape
            plan.append(
                (
                    level.key(self.step_count_key),
                    level.key(self.truncated_key),
                    level.key("done"),
                    done_shape,
                )
            )
        return plan

    def _get_plan(self, tensordict: TensorDictBase) -> list[tuple]:
        plan = self.__dict__["_plan"]
        if plan is None:  # used without an env: a root level shaped like "done"
            done = tget(tensordict, "done")
            shape = done.shape if done is not None else (*tensordict.batch_size, 1)
            plan = [(self.step_count_key, self.truncated_key, "done", torch.Size(shape))]
        return plan

    def _plan_column(self, index: int, default: NestedKey) -> list[NestedKey]:
        """One key per done level of the parent (``[default]`` before the transform has one)."""
        plan = self.__dict__["_plan"]
        return [default] if plan is None else [entry[index] for entry in plan]

    @property
    def step_count_keys(self) -> list[NestedKey]:
        """The count entries, one per done level of the parent (``[step_count_key]`` without one).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> TransformedEnv(PendulumEnv(), StepCounter()).transform.step_count_keys
            ['step_count']
        """
        return self._plan_column(0, self.step_count_key)

    @property
    def truncated_keys(self) -> list[NestedKey]:
        """The truncated entries, one per done level of the parent (``[truncated_key]`` without one).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> TransformedEnv(PendulumEnv(), StepCounter(10)).transform.truncated_keys
            ['truncated']
        """
        return self._plan_column(1, self.truncated_key)

    @property
    def all_truncated_keys(self) -> list[NestedKey]:
        """The truncated entries of every done level (TorchRL's name; the same list as
        :attr:`truncated_keys`, since gpusim counts at every level).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> TransformedEnv(PendulumEnv(), StepCounter(10)).transform.all_truncated_keys
            ['truncated']
        """
        return self.truncated_keys

    @property
    def done_keys(self) -> list[NestedKey]:
        """The ``done`` entries the transform updates, one per done level of the parent.

        Examples:
            >>> from gpusim.envs.native import TicTacToeEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> TransformedEnv(TicTacToeEnv(), StepCounter(10)).transform.done_keys
            ['done']
        """
        return self._plan_column(2, "done")

    @property
    def all_done_keys(self) -> list[NestedKey]:
        """The ``done`` entries of every done level (TorchRL's name; the same list as
        :attr:`done_keys`).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> TransformedEnv(PendulumEnv(), StepCounter(10)).transform.all_done_keys
            ['done']
        """
        return self.done_keys

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        plan = self._level_plan(output_spec)
        self.__dict__["_plan"] = plan
        self.__dict__["_levels"] = done_levels_of(output_spec)
        done_spec = output_spec["full_done_spec"]
        obs_spec = output_spec["full_observation_spec"]
        devices = []
        groups = {}  # the shape of each nested done group (the state spec gets the same group)
        for count_key, trunc_key, done_key, shape in plan:
            device = done_spec[done_key].device
            devices.append(device)
            if isinstance(done_key, tuple) and len(done_key) > 1:
                groups[done_key[:-1]] = done_spec[done_key[:-1]].shape
            if self.max_steps is not None and trunc_key not in done_spec.keys(True, True):
                done_spec[trunc_key] = Categorical(2, shape=shape, dtype=torch.bool, device=device)
            obs_spec[count_key] = self._count_spec(shape, device)
        self.__dict__["_devices"] = devices
        self.__dict__["_groups"] = groups
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        plan = self.__dict__["_plan"]
        if plan is None:
            return input_spec
        state_spec = input_spec["full_state_spec"]
        devices = self.__dict__["_devices"]
        groups = self.__dict__.get("_groups", {})
        for (count_key, _, _done_key, shape), device in zip(plan, devices):
            group = count_key[:-1] if isinstance(count_key, tuple) else ()
            if group and group in groups and state_spec.get(group, None) is None:
                state_spec[group] = Composite(shape=groups[group], device=device)
            state_spec[count_key] = self._count_spec(shape, device)
        return input_spec

    def _count_spec(self, shape: torch.Size, device) -> Bounded:
        high = self.max_steps if self.max_steps is not None else torch.iinfo(torch.int64).max
        return Bounded(0, high, shape=shape, dtype=torch.int64, device=device)

    # ------------------------------------------------------------------ data
    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        levels = self.__dict__.get("_levels") or default_levels(tensordict_reset.batch_size)
        for count_key, trunc_key, done_key, shape in self._get_plan(tensordict_reset):
            done = tget(tensordict_reset, done_key)
            device = tensordict_reset.device if done is None else done.device
            count = torch.zeros(shape, dtype=torch.int64, device=device)
            prev = tget(tensordict, count_key) if tensordict is not None else None
            rows = reset_mask_for(tensordict, count_key, levels, tensordict_reset.batch_size)
            if prev is not None and rows is not None:  # rows not reset keep their count (also without an env)
                rows = rows.reshape(*rows.shape, *([1] * (count.ndim - rows.ndim)))
                count = torch.where(rows, count, prev.to(torch.int64))
            tset(tensordict_reset, count_key, count)
            if self.max_steps is not None and tget(tensordict_reset, trunc_key) is None:
                tset(tensordict_reset, trunc_key, torch.zeros(shape, dtype=torch.bool, device=device))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        max_steps = self.max_steps
        for count_key, trunc_key, done_key, shape in self._get_plan(next_tensordict):
            count = tget(tensordict, count_key)
            done = tget(next_tensordict, done_key)
            if count is None:
                device = next_tensordict.device if done is None else done.device
                count = torch.zeros(shape, dtype=torch.int64, device=device)
            count = count + 1
            tset(next_tensordict, count_key, count)
            truncated = tget(next_tensordict, trunc_key)
            if max_steps is not None:
                hit = count >= max_steps
                truncated = hit if truncated is None else truncated | hit
                if self.update_done and done is not None:
                    tset(next_tensordict, done_key, done | hit)
            if truncated is not None:  # without max_steps, only the env's own truncated (TorchRL's behaviour)
                tset(next_tensordict, trunc_key, truncated)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the count is made by env steps (use the transform in a ``TransformedEnv``).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from tensordict import TensorDict
            >>> StepCounter()(TensorDict({}, []))
            Traceback (most recent call last):
            ...
            NotImplementedError: StepCounter cannot be called independently: it counts env steps; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "StepCounter cannot be called independently: it counts env steps; it has no offline forward. Use it in a TransformedEnv."
        )

    def __repr__(self) -> str:
        return (
            f"StepCounter(max_steps={self.max_steps}, truncated_key={self.truncated_key!r}, "
            f"step_count_key={self.step_count_key!r}, update_done={self.update_done})"
        )
