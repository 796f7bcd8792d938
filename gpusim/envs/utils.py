"""Environment helpers: ``step_mdp``, ``terminated_or_truncated``, ``make_composite_from_td``,
``RandomPolicy``, exploration type and library discovery.

As TorchRL's ``torchrl.envs.utils``, this module also gives ``check_env_specs``,
``MarlGroupMapType`` and ``check_marl_grouping`` (resolved on first use).

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

import importlib.util
from collections.abc import Sequence
from typing import Any

from tensordict import NonTensorData, NonTensorStack, TensorDictBase, is_tensorclass
from tensordict.nn import InteractionType, set_interaction_type
from tensordict.nn.probabilistic import interaction_type  # (tensordict.nn exports it from 0.15 on only)

from gpusim.envs._keys import DONE_NAMES, NestedKey, as_tuple, join, leaf_keys, unravel
from gpusim.envs._step_mdp import StepMDPPlan
from gpusim.specs import Composite, NonTensor, TensorSpec, Unbounded

__all__ = [
    "step_mdp",
    "StepMDP",
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
    ``"next"`` (which win over root keys). It is made of new containers at every level: no
    sub-tensordict of the input is returned or shared (the tensors are, without copy), and
    containers left empty by the exclusions are dropped. Locked inputs and lazy stacks
    (whose members may hold different keys, also under ``"next"``) are accepted; a lazy stack
    gives a lazy stack. With ``next_tensordict``, the result is written into it and it is
    returned.

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


class StepMDP:
    """:func:`step_mdp` with an env's keys, planned once: a callable for loops that move to the
    next step many times (the env's own step loop uses the same plan).

    A reward entry that is also a state entry of the env is kept (the env reads it back). The
    empty ``Composite`` entries of the observation and state specs are kept (empty containers),
    as in TorchRL's rollouts; empty reward groups are dropped like the rewards.

    Args:
        env: the env whose action, reward and done keys are used.
        keep_other, exclude_reward, exclude_done, exclude_action: as in :func:`step_mdp`.

    Examples:
        >>> from gpusim import CartPoleEnv
        >>> env = CartPoleEnv()
        >>> td = env.rand_step(env.reset())
        >>> sorted(StepMDP(env, exclude_done=True)(td).keys())
        ['observation', 'state']
    """

    def __init__(
        self,
        env: Any,
        *,
        keep_other: bool = True,
        exclude_reward: bool = True,
        exclude_done: bool = False,
        exclude_action: bool = True,
    ) -> None:
        state_keys = set(env.state_keys)
        self.plan = StepMDPPlan(
            env.action_keys,
            [k for k in env.reward_keys if k not in state_keys] + _empty_groups(env.full_reward_spec),
            env.done_keys,
            keep_other=keep_other,
            exclude_reward=exclude_reward,
            exclude_done=exclude_done,
            exclude_action=exclude_action,
            keep_empty=True,
        )

    def __call__(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """The root of the next step of ``tensordict`` (written into ``next_tensordict`` when given)."""
        return self.plan(tensordict, next_tensordict)


def _empty_groups(spec: Composite | None) -> list:
    """The keys of the empty ``Composite`` entries of ``spec`` (outermost first; a reward
    group without leaves is excluded from the next root like the reward leaves)."""
    if spec is None:
        return []
    out = []
    for key, value in spec.items(True):
        if isinstance(value, Composite) and not list(value.keys(True, True)):
            tkey = as_tuple(key)
            if not any(tkey[: len(p)] == p for p in out):
                out.append(tkey)
    return [unravel(k) for k in out]


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

    When something is done, ``key`` is written at every done level (``False`` rows included);
    when nothing is done, ``key`` is removed from every level, unless ``write_full_false``
    (then it is written, all ``False``).

    Args:
        data: the tensordict holding the done entries.
        full_done_spec: the env's done spec; when ``None``, done levels are read from ``data``
            (every sub-tensordict holding a ``done``, ``terminated`` or ``truncated`` entry).
        key: entry to write at each level (``None``: write nothing).
        write_full_false: write ``key`` also when nothing is done.

    Returns:
        Whether any entry of any level is done (this reads device values: not for the
        sync-free path).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"done": torch.tensor([[False], [True]]),
        ...                  "agents": {"done": torch.zeros(2, 3, 1, dtype=torch.bool)}}, [2])
        >>> terminated_or_truncated(td)
        True
        >>> td["_reset"].squeeze(-1).tolist(), td["agents", "_reset"].shape
        ([False, True], torch.Size([2, 3, 1]))
        >>> td["done"][1] = False
        >>> terminated_or_truncated(td), "_reset" in td.keys()
        (False, False)
    """
    if full_done_spec is not None:
        levels: dict[tuple, list[str]] = {}
        for k in leaf_keys(full_done_spec):
            t = as_tuple(k)
            levels.setdefault(t[:-1], []).append(t[-1])
    else:
        levels = _done_levels_from_data(data)
    any_done = False
    written = []
    for prefix, names in levels.items():
        node = data if prefix == () else data.get(prefix, None)
        if node is None:
            continue
        flag = None
        for name in names:
            value = node.get(name, None)
            if value is not None:
                flag = value.clone() if flag is None else flag | value
        if flag is None:
            continue
        any_done = bool(flag.any()) or any_done
        if key is not None:
            node.set(key, flag)
            written.append(join(prefix, key))
    if written and not any_done and not write_full_false:
        data.exclude(*written, inplace=True)
    return any_done


def make_composite_from_td(
    data: TensorDictBase, *, unsqueeze_null_shapes: bool = True, dynamic_shape: bool = False
) -> Composite:
    """A Composite of ``Unbounded`` specs matching the shapes and dtypes of ``data`` (non-tensor
    entries give ``NonTensor`` specs carrying their value as example data; a tensorclass entry
    gives a Composite of its fields whose ``data_cls`` is that class).

    Args:
        data: the tensordict to describe.
        unsqueeze_null_shapes: give tensors without feature dims (shape == batch shape) a
            trailing singleton dim in the spec.
        dynamic_shape: mark the last dim of every tensor spec as dynamic (``-1``: data whose
            last dim changes from step to step).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> spec = make_composite_from_td(TensorDict({"x": torch.zeros(3, 2)}, [3]))
        >>> spec["x"].shape
        torch.Size([3, 2])
    """
    specs: dict[str, Any] = {}
    for key, value in data.items():
        if is_tensorclass(value) and not isinstance(value, (NonTensorData, NonTensorStack)):
            # a tensorclass: its fields, rebuilt as that class by zero()/one()/rand()
            inner = make_composite_from_td(
                value.to_tensordict(), unsqueeze_null_shapes=unsqueeze_null_shapes, dynamic_shape=dynamic_shape
            )
            inner.data_cls = type(value)
            specs[key] = inner
        elif isinstance(value, NonTensorData):
            specs[key] = NonTensor(shape=value.batch_size, device=data.device, example_data=value.data)
        elif isinstance(value, NonTensorStack):
            specs[key] = NonTensor(shape=value.batch_size, device=data.device)
        elif isinstance(value, TensorDictBase):
            specs[key] = make_composite_from_td(
                value, unsqueeze_null_shapes=unsqueeze_null_shapes, dynamic_shape=dynamic_shape
            )
        else:
            shape = value.shape
            if unsqueeze_null_shapes and shape == data.batch_size:
                shape = (*shape, 1)
            if dynamic_shape:
                shape = (*shape[:-1], -1)
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


# The exploration switch is tensordict's interaction-type switch (as in TorchRL), so that
# tensordict's probabilistic modules (``ProbabilisticTensorDictModule``) follow it: under
# ``set_exploration_type(ExplorationType.RANDOM)`` they sample, under ``DETERMINISTIC`` (or
# ``MODE``/``MEAN``) they take the distribution's deterministic value.
ExplorationType = InteractionType
exploration_type = interaction_type
set_exploration_type = set_interaction_type


_LIBRARIES = ("gymnasium", "vmas", "triton", "torchrl")


def get_available_libraries() -> dict[str, bool]:
    """Which optional libraries are importable (checked without importing them).

    Examples:
        >>> "gymnasium" in get_available_libraries()
        True
    """
    return {name: importlib.util.find_spec(name) is not None for name in _LIBRARIES}


_ELSEWHERE = {
    "check_env_specs": "gpusim.envs.checks",
    "MarlGroupMapType": "gpusim.envs.libs.marl",
    "check_marl_grouping": "gpusim.envs.libs.marl",
}


def __getattr__(name: str):
    """TorchRL's ``torchrl.envs.utils`` names defined in other gpusim modules."""
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module 'gpusim.envs.utils' has no attribute {name!r}")
