"""The key plan of ``step_mdp``, built once per env (at spec-lock time) and applied per step.

``step_mdp`` builds the root of the next step: the root keys except ``"next"`` and the
excluded ones, then every key of ``"next"`` (which wins over root keys). The result is made of
new containers at every level (a sub-tensordict of the input is never returned or shared, so
writing into the result never changes the input), holding the input's tensors (no data is
copied). Containers left without any entry are dropped (an env's plan, ``keep_empty``, keeps
the containers that were empty in the input: the empty ``Composite`` entries of its specs, as
TorchRL's rollouts do). Locked inputs and lazy stacks (with
heterogeneous ``"next"`` entries) are accepted; a lazy stack gives a lazy stack.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> plan = StepMDPPlan(action_keys=["action"], reward_keys=["reward"], done_keys=["done"])
    >>> td = TensorDict({"obs": torch.zeros(2), "action": torch.ones(2),
    ...                  "next": {"obs": torch.ones(2), "reward": torch.ones(2)}}, [2])
    >>> sorted(plan(td).keys())
    ['obs']
"""

from __future__ import annotations

from collections.abc import Sequence

from tensordict import LazyStackedTensorDict, TensorDictBase, is_non_tensor

from gpusim.envs._fasttd import ExclusionTree, entry_trees, exclusion_tree, fast_get, merge_plain
from gpusim.envs._keys import NestedKey, exclusive


class StepMDPPlan:
    """Precomputed exclusion trees for ``step_mdp``.

    Args:
        action_keys, reward_keys, done_keys: the env's keys.
        keep_other: keep root keys that are not in ``"next"`` (policy outputs, ...); without it
            only the actions (when kept) come from the root.
        exclude_reward, exclude_done, exclude_action: drop those keys from the result.
        keep_empty: keep the containers that are empty in the input (not those emptied by
            the exclusions).
    """

    def __init__(
        self,
        action_keys: Sequence[NestedKey] = ("action",),
        reward_keys: Sequence[NestedKey] = ("reward",),
        done_keys: Sequence[NestedKey] = ("done",),
        *,
        keep_other: bool = True,
        exclude_reward: bool = True,
        exclude_done: bool = False,
        exclude_action: bool = True,
        keep_empty: bool = False,
    ) -> None:
        self.keep_empty = keep_empty
        next_exclude: list = []
        if exclude_reward:
            next_exclude += list(reward_keys)
        if exclude_done:
            next_exclude += list(done_keys)
        root_exclude = ["next", *next_exclude]
        if exclude_action:
            root_exclude += list(action_keys)
        self.keep_other = keep_other
        self.root_exclude = tuple(exclusive(root_exclude))
        self.next_exclude = tuple(exclusive(next_exclude))
        self._root_tree = exclusion_tree(self.root_exclude)
        self._next_tree = exclusion_tree(self.next_exclude)
        # without keep_other, the root contributes its actions only (when they are kept)
        kept = [] if exclude_action else list(action_keys)
        self._root_include = None if keep_other else exclusion_tree(exclusive(kept))

    def __call__(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase | None = None) -> TensorDictBase:
        if isinstance(tensordict, LazyStackedTensorDict):
            out = LazyStackedTensorDict.lazy_stack([self(td) for td in tensordict.tensordicts], tensordict.stack_dim)
        else:
            nxt = fast_get(tensordict, "next")
            if nxt is None:
                raise KeyError("step_mdp: the input tensordict has no 'next' entry (step the env first)")
            keep = self.keep_empty
            out = merge_plain(tensordict, nxt, self._root_tree, self._root_include, self._next_tree, keep)
            if out is None:
                out = nxt.empty()
                _copy(tensordict, out, self._root_tree, self._root_include, keep)
                _copy(nxt, out, self._next_tree, None, keep)
        if next_tensordict is None:
            return out
        return _update(next_tensordict, out)


def _is_container(value) -> bool:
    return isinstance(value, TensorDictBase) and not is_non_tensor(value)


def _copy(
    src: TensorDictBase,
    dest: TensorDictBase,
    exclude: ExclusionTree | None,
    include: ExclusionTree | None,
    keep_empty: bool = False,
) -> bool:
    """Public-API path: writes the entries of ``src`` (minus ``exclude``, restricted to
    ``include``) into ``dest``, building new sub-containers; returns whether anything was
    written. Lazy stacks are walked stack member by stack member (their members may hold
    different keys)."""
    if isinstance(src, LazyStackedTensorDict) and _same_stack(src, dest):
        written = False
        for s, d in zip(src.tensordicts, dest.tensordicts):
            written = _copy(s, d, exclude, include, keep_empty) or written
        return written
    written = False
    for key in src.keys():
        keep, e, i = entry_trees(key, exclude, include)
        if not keep:
            continue
        value = src.get(key)
        if _is_container(value):
            sub = dest.get(key, None)
            fresh = sub is None or not _is_container(sub)
            if fresh:
                sub = value.empty()
            if keep_empty and len(value.keys()) == 0:  # empty in the input, not emptied here
                if fresh:
                    dest.set(key, sub)
                written = True
                continue
            if _copy(value, sub, e, i, keep_empty):
                if fresh:
                    dest.set(key, sub)
                written = True
            continue
        dest.set(key, value)
        written = True
    return written


def _same_stack(a: TensorDictBase, b: TensorDictBase) -> bool:
    return (
        isinstance(b, LazyStackedTensorDict) and a.stack_dim == b.stack_dim and len(a.tensordicts) == len(b.tensordicts)
    )


def _update(dest: TensorDictBase, out: TensorDictBase) -> TensorDictBase:
    """``dest.update(out)``, member by member when both are lazy stacks (heterogeneous keys)."""
    if isinstance(out, LazyStackedTensorDict) and _same_stack(out, dest):
        for d, o in zip(dest.tensordicts, out.tensordicts):
            _update(d, o)
        return dest
    return dest.update(out)
