"""Environment helpers: ``step_mdp``, ``terminated_or_truncated``, ``make_composite_from_td``,
``RandomPolicy``, exploration type and library discovery.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.envs.utils import step_mdp
    >>> td = TensorDict({"obs": torch.zeros(3), "action": torch.ones(3),
    ...                  "next": {"obs": torch.ones(3), "reward": torch.ones(3)}}, [3])
    >>> step_mdp(td)["obs"]
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import enum
import functools
import importlib.util
from typing import Any, Callable, Sequence

from tensordict import NonTensorData, NonTensorStack, TensorDictBase

from gpusim.envs._keys import DONE_NAMES, NestedKey, as_tuple, join, leaf_keys, unravel
from gpusim.envs._step_mdp import StepMDPPlan
from gpusim.specs import Composite, NonTensor, TensorSpec, Unbounded

__all__ = [
    "step_mdp",
    "terminated_or_truncated",
    "make_composite_from_td",
    "RandomPolicy",
    "ExplorationType",
    "set_exploration_type",
    "exploration_type",
    "get_available_libraries",
]


def _as_key_list(keys: NestedKey | Sequence[NestedKey]) -> list:
    if isinstance(keys, (str, tuple)):
        return [unravel(keys)]
    return [unravel(k) for k in keys]


def step_mdp(
    tensordict: TensorDictBase,
    next_tensordict: TensorDictBase | None = None,
    keep_other: bool = True,
    exclude_reward: bool = True,
    exclude_done: bool = False,
    exclude_action: bool = True,
    reward_keys: NestedKey | Sequence[NestedKey] = "reward",
    done_keys: NestedKey | Sequence[NestedKey] = "done",
    action_keys: NestedKey | Sequence[NestedKey] = "action",
) -> TensorDictBase:
    """Builds the root of the next step from a stepped tensordict.

    The result holds the root keys except ``"next"`` and the excluded ones, then the keys of
    ``"next"`` (which win over root keys). With ``next_tensordict``, the result is written into
    it and it is returned.

    Args:
        tensordict: a tensordict with a ``"next"`` entry.
        next_tensordict: optional destination.
        keep_other: keep root keys that are neither action, reward nor done.
        exclude_reward: drop the reward keys.
        exclude_done: drop the done keys.
        exclude_action: drop the action keys.
        reward_keys, done_keys, action_keys: the keys of each family.

    Returns:
        The root of the next step (``next_tensordict`` when given).

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import CartPoleEnv
        >>> td = CartPoleEnv(batch_size=[2], seed=0).rand_step()
        >>> sorted(td.keys())
        ['action', 'done', 'next', 'observation', 'state', 'terminated']
        >>> root = step_mdp(td)  # "next" becomes the root; action and reward are dropped
        >>> sorted(root.keys()), torch.equal(root["observation"], td["next", "observation"])
        (['done', 'observation', 'state', 'terminated'], True)
        >>> sorted(step_mdp(td, exclude_action=False, exclude_reward=False).keys())
        ['action', 'done', 'observation', 'reward', 'state', 'terminated']
    """
    plan = StepMDPPlan(
        _as_key_list(action_keys),
        _as_key_list(reward_keys),
        _as_key_list(done_keys),
        keep_other=keep_other,
        exclude_reward=exclude_reward,
        exclude_done=exclude_done,
        exclude_action=exclude_action,
    )
    return plan(tensordict, next_tensordict)


def _done_levels_from_data(data: TensorDictBase) -> dict[tuple, list[str]]:
    levels: dict[tuple, list[str]] = {}
    for key in data.keys(True, True):
        tkey = as_tuple(key)
        if tkey[-1] in DONE_NAMES:
            levels.setdefault(tkey[:-1], []).append(tkey[-1])
    return levels


def terminated_or_truncated(
    data: TensorDictBase,
    full_done_spec: Composite | None = None,
    key: str | None = "_reset",
    write_full_false: bool = False,
) -> bool:
    """ORs ``done``/``terminated``/``truncated`` per done level into ``key`` at that level.

    Args:
        data: the tensordict holding the done entries.
        full_done_spec: the env's done spec; when ``None``, done levels are read from ``data``.
        key: entry to write at each level (``None``: write nothing).
        write_full_false: also write levels where nothing is done.

    Returns:
        Whether any entry is done (this reads device values: not for the sync-free path).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"done": torch.tensor([[False], [True]])}, [2])
        >>> terminated_or_truncated(td)
        True
        >>> td["_reset"]
        tensor([[False],
                [ True]])
    """
    if full_done_spec is not None:
        levels: dict[tuple, list[str]] = {}
        for k in leaf_keys(full_done_spec):
            t = as_tuple(k)
            if t[-1] in DONE_NAMES:
                levels.setdefault(t[:-1], []).append(t[-1])
    else:
        levels = _done_levels_from_data(data)
    any_done = False
    for prefix, names in levels.items():
        node = data if prefix == () else data.get(prefix, None)
        if node is None:
            continue
        flag = None
        for name in names:
            value = node.get(name, None)
            if value is not None:
                flag = value if flag is None else flag | value
        if flag is None:
            continue
        level_any = bool(flag.any())
        any_done = any_done or level_any
        if key is not None and (level_any or write_full_false):
            data.set(join(prefix, key), flag)
    return any_done


def make_composite_from_td(data: TensorDictBase, *, unsqueeze_null_shapes: bool = True) -> Composite:
    """A Composite of ``Unbounded`` specs matching the shapes and dtypes of ``data``.

    Args:
        data: the tensordict to describe.
        unsqueeze_null_shapes: give tensors without feature dims (shape == batch shape) a
            trailing singleton dim in the spec.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> spec = make_composite_from_td(TensorDict({"x": torch.zeros(3, 2)}, [3]))
        >>> spec["x"].shape
        torch.Size([3, 2])
    """
    specs: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, (NonTensorData, NonTensorStack)):
            specs[key] = NonTensor(shape=value.batch_size, device=data.device)
        elif isinstance(value, TensorDictBase):
            specs[key] = make_composite_from_td(value, unsqueeze_null_shapes=unsqueeze_null_shapes)
        else:
            shape = value.shape
            if unsqueeze_null_shapes and shape == data.batch_size:
                shape = (*shape, 1)
            specs[key] = Unbounded(shape=shape, dtype=value.dtype, device=value.device)
    return Composite(specs, shape=data.batch_size, device=data.device)


class RandomPolicy:
    """A policy drawing actions from an action spec.

    Args:
        action_spec: a leaf spec or a Composite of action specs.
        action_key: where to write a leaf spec's sample.

    Examples:
        >>> from tensordict import TensorDict
        >>> from gpusim.specs import Categorical
        >>> policy = RandomPolicy(Categorical(3, shape=(4,)))
        >>> policy(TensorDict({}, [4]))["action"].shape
        torch.Size([4])
    """

    def __init__(self, action_spec: TensorSpec | Composite, action_key: NestedKey = "action") -> None:
        if not isinstance(action_spec, (TensorSpec, Composite)):
            raise TypeError(f"action_spec must be a spec, got {type(action_spec).__name__}")
        self.action_spec = action_spec
        self.action_key = action_key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        if isinstance(self.action_spec, Composite):
            return tensordict.update(self.action_spec.rand())
        return tensordict.set(self.action_key, self.action_spec.rand())


class ExplorationType(enum.Enum):
    """How a stochastic policy picks actions (set with :class:`set_exploration_type`).

    Examples:
        >>> [t.value for t in ExplorationType]
        ['deterministic', 'random', 'mode', 'mean']
        >>> ExplorationType("random")
        <ExplorationType.RANDOM: 'random'>
    """

    DETERMINISTIC = "deterministic"
    RANDOM = "random"
    MODE = "mode"
    MEAN = "mean"


_EXPLORATION_TYPE: list[ExplorationType | None] = [None]


def exploration_type() -> ExplorationType | None:
    """The exploration type in force (``None`` when unset).

    Examples:
        >>> exploration_type() is None
        True
        >>> with set_exploration_type("mode"):
        ...     exploration_type()
        <ExplorationType.MODE: 'mode'>
    """
    return _EXPLORATION_TYPE[0]


class set_exploration_type:
    """Context manager and decorator setting the exploration type.

    Examples:
        >>> with set_exploration_type(ExplorationType.RANDOM):
        ...     exploration_type()
        <ExplorationType.RANDOM: 'random'>
    """

    def __init__(self, type: ExplorationType | str) -> None:
        if isinstance(type, str):
            try:
                type = ExplorationType(type.lower())
            except ValueError as err:
                names = [t.value for t in ExplorationType]
                raise ValueError(f"unknown exploration type {type!r}; expected one of {names}") from err
        if not isinstance(type, ExplorationType):
            raise TypeError(f"expected an ExplorationType, got {type!r}")
        self.type = type
        self._previous: list[ExplorationType | None] = []

    def __enter__(self) -> "set_exploration_type":
        self._previous.append(_EXPLORATION_TYPE[0])
        _EXPLORATION_TYPE[0] = self.type
        return self

    def __exit__(self, *exc) -> None:
        _EXPLORATION_TYPE[0] = self._previous.pop()

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_exploration_type(self.type):
                return fn(*args, **kwargs)

        return wrapper


_LIBRARIES = ("gymnasium", "vmas", "triton", "torchrl")


def get_available_libraries() -> dict[str, bool]:
    """Which optional libraries are importable (checked without importing them).

    Examples:
        >>> "gymnasium" in get_available_libraries()
        True
    """
    return {name: importlib.util.find_spec(name) is not None for name in _LIBRARIES}
