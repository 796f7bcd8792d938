"""``ConditionalPolicySwitch``: lets a second policy act where a condition holds.

After a step (or a reset), the rows for which ``condition`` holds (and whose episode did not end)
are handed to ``policy``, and the env is stepped again with its action; those rows return the
result of that second step, so that the outer policy only sees its own turns (e.g. the opponent
of a two-player game moves inside the env). The transforms before this one run for both steps.
Deciding whether the second step happens reads the condition on the host.

Examples:
    >>> import torch
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
    >>> env = TransformedEnv(PendulumEnv(seed=0), Compose(
    ...     StepCounter(step_count_key="total"),
    ...     ConditionalPolicySwitch(policy=lambda td: td.set("action", torch.zeros(1)),
    ...                             condition=lambda td: td["total"] % 2 == 1),
    ...     StepCounter(step_count_key="mine")))
    >>> td = env.rollout(3)
    >>> td["next", "total"].flatten().tolist(), td["next", "mine"].flatten().tolist()
    ([2, 4, 6], [1, 2, 3])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.transforms.transform import Transform

__all__ = ["ConditionalPolicySwitch"]


def _where(mask: torch.Tensor, new: TensorDictBase, old: TensorDictBase) -> TensorDictBase:
    """``old`` with the rows of ``mask`` taken from ``new`` (keys of ``old``; a fresh tensordict)."""
    out = old.copy()
    for key, value in old.items(True, True):
        other = new.get(key, None)
        if not isinstance(value, torch.Tensor) or not isinstance(other, torch.Tensor) or other.shape != value.shape:
            continue
        m = mask.reshape(*mask.shape, *([1] * (value.ndim - mask.ndim)))
        out.set(key, torch.where(m, other.to(value.dtype), value))
    return out


class ConditionalPolicySwitch(Transform):
    """Steps the env again with ``policy``'s action where ``condition`` holds.

    Args:
        policy: a callable on a tensordict (the env's next root data) that writes the action.
        condition: a callable on the step (or reset) output returning a bool or a bool tensor of
            the batch shape (or one element).

    Raises:
        RuntimeError: the condition returns something else, or on a call without an env.

    Examples:
        >>> t = ConditionalPolicySwitch(policy=lambda td: td, condition=lambda td: False)
        >>> t.in_keys, t.out_keys
        ([], [])
    """

    def __init__(
        self, policy: Callable[[TensorDictBase], TensorDictBase], condition: Callable[[TensorDictBase], Any]
    ) -> None:
        super().__init__()
        self.__dict__["policy"] = policy
        self.condition = condition

    def _cond(self, data: TensorDictBase, batch_size: torch.Size) -> torch.Tensor:
        cond = self.condition(data)
        if isinstance(cond, bool):
            cond = torch.tensor(cond, device=data.device)
        elif not isinstance(cond, torch.Tensor):
            raise RuntimeError(
                "ConditionalPolicySwitch: calling the condition function should return a boolean or a tensor, "
                f"got {type(cond).__name__}"
            )
        if tuple(cond.shape) not in ((1,), (), tuple(batch_size)):
            raise RuntimeError(
                "ConditionalPolicySwitch: tensor outputs must have the shape of the tensordict "
                f"{list(batch_size)}, or contain a single element; got shape {list(cond.shape)}"
            )
        return cond.bool().reshape(-1)[0].expand(batch_size) if cond.numel() == 1 else cond.bool()

    def _second_step(self, parent: Any, td: TensorDictBase, cond: torch.Tensor) -> TensorDictBase:
        if bool(cond.all()):
            return parent._step_output(td)
        return parent._step_rows(td, cond)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        batch_size = next_tensordict.batch_size
        cond = self._cond(next_tensordict, batch_size)
        parent = self.parent
        for key in parent.done_keys:
            done = next_tensordict.get(key, None)
            if isinstance(done, torch.Tensor) and done.shape[: len(batch_size)] == batch_size:
                cond = cond & ~done.reshape(*batch_size, -1).any(-1)
        if not bool(cond.any()):
            return next_tensordict
        root = parent.step_mdp(tensordict.copy().set("next", next_tensordict))
        td = self.policy(root)
        out = self._second_step(parent, td, cond)
        return out if bool(cond.all()) else _where(cond, out, next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        from gpusim.transforms._levels import default_levels, reset_mask_for

        batch_size = tensordict_reset.batch_size
        cond = self._cond(tensordict_reset, batch_size)
        parent = self.parent
        keys = list(parent.done_keys)
        mask = reset_mask_for(tensordict, keys[0], default_levels(batch_size), batch_size) if keys else None
        if mask is not None:
            cond = cond & mask.reshape(*batch_size, -1).any(-1)
        if not bool(cond.any()):
            return tensordict_reset
        td = self.policy(tensordict_reset.copy())
        out = self._second_step(parent, td, cond).exclude(*parent.reward_keys)
        return out if bool(cond.all()) else _where(cond, out, tensordict_reset)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the transform steps its parent env.

        Examples:
            >>> from tensordict import TensorDict
            >>> ConditionalPolicySwitch(policy=lambda td: td, condition=lambda td: True)(TensorDict())
            Traceback (most recent call last):
            ...
            RuntimeError: ConditionalPolicySwitch cannot be called independently, only its step and reset methods are functional.
        """
        raise RuntimeError(
            "ConditionalPolicySwitch cannot be called independently, only its step and reset methods are functional."
        )
