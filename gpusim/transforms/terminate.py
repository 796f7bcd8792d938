"""``TerminateTransform``: ends episodes when a user predicate on the step output holds.

After every step, ``stop(next_td)`` (a bool, or a bool tensor broadcastable to the done entries)
is OR-ed into the ``terminated`` entries and, with ``write_done=True``, into the ``done``
entries (``truncated`` entries are left alone), so that ``rollout(break_when_any_done=True)``
stops at the goal.

Examples:
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import StepCounter, TransformedEnv
    >>> env = TransformedEnv(PendulumEnv(seed=0), StepCounter())
    >>> env.append_transform(TerminateTransform(lambda td: td["step_count"] >= 3))  # doctest: +ELLIPSIS
    TransformedEnv(...)
    >>> env.rollout(10).shape
    torch.Size([3])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import as_tuple
from gpusim.transforms.transform import Transform

__all__ = ["TerminateTransform"]


class TerminateTransform(Transform):
    """Terminates the episodes for which ``stop(next_tensordict)`` is True.

    Args:
        stop: a callable on the step output (``"next"`` data) returning a bool or a bool tensor
            broadcastable to the env's done entries (a trailing dim is added as needed).

    Keyword Args:
        write_done: also set the ``done`` entries (default), not only ``terminated``.

    Raises:
        ValueError: ``stop`` is not callable.
        RuntimeError: on a forward call (the transform needs a parent environment).

    Examples:
        >>> TerminateTransform(lambda td: True).write_done
        True
    """

    def __init__(self, stop: Callable[[TensorDictBase], Any], *, write_done: bool = True) -> None:
        if not callable(stop):
            raise ValueError(f"TerminateTransform: `stop` must be a callable, got {type(stop).__name__}")
        super().__init__()
        self.stop = stop
        self.write_done = bool(write_done)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        flag = torch.as_tensor(self.stop(next_tensordict), device=next_tensordict.device).bool()
        parent = self.parent
        done_keys = list(parent.done_keys) if parent is not None else ["done", "terminated"]
        for key in done_keys:
            leaf = as_tuple(key)[-1]
            if leaf == "truncated" or (leaf == "done" and not self.write_done):
                continue
            current = next_tensordict.get(key, None)
            if current is None:
                continue
            f = flag.reshape(*flag.shape, *([1] * (current.ndim - flag.ndim))) if flag.ndim < current.ndim else flag
            next_tensordict.set(key, current | f.expand(current.shape))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the transform cannot be executed without a parent environment.

        Examples:
            >>> from tensordict import TensorDict
            >>> TerminateTransform(lambda td: True)(TensorDict())
            Traceback (most recent call last):
            ...
            RuntimeError: TerminateTransform cannot be executed without a parent environment (use it in a TransformedEnv).
        """
        raise RuntimeError(
            "TerminateTransform cannot be executed without a parent environment (use it in a TransformedEnv)."
        )
