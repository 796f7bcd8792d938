"""The policy of a rollout: tensordict policies are used as they are (their output is merged
into the input when they return a new tensordict); a ``torch.nn.Module`` that is not a
tensordict module reads observation tensors and returns the action tensor (as TorchRL
accepts), unless its ``forward`` takes one tensordict (a parameter named ``tensordict`` or
``td``, or annotated as a tensordict).

Examples:
    >>> import torch
    >>> from gpusim import CartPoleEnv
    >>> env = CartPoleEnv()
    >>> class ArgMax(torch.nn.Module):
    ...     def forward(self, scores):
    ...         return scores.argmax(-1)
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 2), ArgMax())
    >>> policy = rollout_policy(env, net)  # called on the observation tensor
    >>> policy(env.reset())["action"].dtype
    torch.int64
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["rollout_policy"]


def _positional_names(fn: Callable) -> list[str] | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds and p.default is inspect.Parameter.empty]


def _tensor_policy(env: EnvBase, module: Callable, forward: Callable) -> Callable[[TensorDictBase], TensorDictBase]:
    """Wraps a callable of observation tensors: arguments named like observation entries get
    those entries, otherwise the observation entries are passed in spec order."""
    observations = [k for k in env.observation_keys]
    names = _positional_names(forward) or []
    if names and all(n in observations for n in names):
        in_keys = names
    elif len(names) <= len(observations) and names:
        in_keys = observations[: len(names)]
    else:
        raise TypeError(
            f"rollout: the policy {type(module).__name__} takes {names or 'no'} positional arguments; a policy that is "
            f"not a tensordict module must take observation tensors (the env's observations are {observations})"
        )
    action_key = env.action_key

    def policy(tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.set(action_key, module(*[tensordict.get(k) for k in in_keys]))

    return policy


def _takes_tensordict(fn: Callable) -> bool:
    """Whether ``fn`` takes one tensordict: one positional parameter named ``tensordict`` or
    ``td``, or annotated as a tensordict."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return False
    if len(params) != 1:
        return False
    annotation = params[0].annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return params[0].name in ("tensordict", "td") or "TensorDict" in text


def rollout_policy(env: EnvBase, policy: Any) -> Callable[[TensorDictBase], TensorDictBase]:
    """The callable ``rollout`` uses for ``policy`` (``td -> td`` with the action written in):
    a ``torch.nn.Module`` that is not a tensordict module is called on observation tensors;
    anything else is called on the tensordict."""
    if isinstance(policy, nn.Module) and not isinstance(policy, TensorDictModuleBase):
        if not _takes_tensordict(policy.forward):
            return _tensor_policy(env, policy, policy.forward)
    return _merge_output(policy)


def _merge_output(policy: Callable) -> Callable[[TensorDictBase], TensorDictBase]:
    """``policy`` whose output, when it is a new tensordict, is merged into its input."""

    def merged(tensordict: TensorDictBase) -> TensorDictBase:
        out = policy(tensordict)
        if out is not tensordict and isinstance(out, TensorDictBase):
            tensordict.update(out)
        return tensordict

    return merged
