"""The key plan of ``step_mdp``, built once per env (at spec-lock time) and applied per step.

``step_mdp`` builds the root of the next step: the root keys except ``"next"`` and the
excluded ones, then every key of ``"next"`` (which wins over root keys). No data moves: the
result references the same tensors.

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

from typing import Sequence

from tensordict import TensorDictBase

from gpusim.envs._fasttd import exclusion_tree, fast_get, is_plain, merge_excluding, merge_flat
from gpusim.envs._keys import NestedKey, exclusive


class StepMDPPlan:
    """Precomputed exclusion lists for ``step_mdp``.

    Args:
        action_keys, reward_keys, done_keys: the env's keys.
        keep_other: keep root keys that are not in ``"next"`` (policy outputs, ...).
        exclude_reward, exclude_done, exclude_action: drop those keys from the result.
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
    ) -> None:
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
        kept_root: list = []
        if not exclude_action:
            kept_root += list(action_keys)
        if not exclude_reward:
            kept_root += list(reward_keys)
        if not exclude_done:
            kept_root += list(done_keys)
        self.kept_root = tuple(exclusive(kept_root))
        self._root_tree = exclusion_tree(self.root_exclude)
        self._next_tree = exclusion_tree(self.next_exclude)
        flat = all(isinstance(k, str) for k in (*self.root_exclude, *self.next_exclude))
        self._flat = (frozenset(self.root_exclude), frozenset(self.next_exclude)) if flat else None
        # parents of excluded nested keys (deepest first), dropped when the exclusion empties
        # them; the plain-TensorDict merge drops them itself, the public-API paths below do not
        self.prune = tuple(
            sorted(
                {k[:i] for k in (*root_exclude, *next_exclude) if isinstance(k, tuple) for i in range(1, len(k))},
                key=len,
                reverse=True,
            )
        )

    def __call__(
        self, tensordict: TensorDictBase, next_tensordict: TensorDictBase | None = None
    ) -> TensorDictBase:
        nxt = fast_get(tensordict, "next")
        public_api = not (self.keep_other and is_plain(tensordict) and is_plain(nxt))
        if self.keep_other and self._flat is not None:
            out = merge_flat(tensordict, nxt, *self._flat)
        elif self.keep_other:
            out = merge_excluding(tensordict, nxt, self._root_tree, self._next_tree)
        else:
            out = tensordict.select(*self.kept_root, strict=False)
            out.update(nxt.exclude(*self.next_exclude) if self.next_exclude else nxt)
        for prefix in self.prune if public_api else ():
            sub = out.get(prefix, None)
            if isinstance(sub, TensorDictBase) and sub.is_empty():
                del out[prefix]
        if next_tensordict is not None:
            return next_tensordict.update(out)
        return out
