"""Messages and metadata checks for the inputs of ``step``/``reset``: something that is not a
tensordict, an action on another device (no data is read).

Examples:
    >>> import numpy as np, torch
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.envs._step_inputs import not_a_tensordict, same_device
    >>> print(not_a_tensordict(CartPoleEnv(batch_size=[2]), np.zeros(2), "reset"))
    CartPoleEnv.reset expects None or a TensorDict of batch_size [2] (e.g. the previous step's data with a '_reset' entry), got numpy.ndarray
    >>> same_device(torch.device("cuda", 0), torch.device("cuda")), same_device(torch.device("cpu"), torch.device("meta"))
    (True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from gpusim.envs import _keys

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["same_device", "not_a_tensordict"]


def same_device(value: torch.device, spec: torch.device) -> bool:
    """Whether a tensor on ``value`` lives where a spec on ``spec`` says (``cuda`` is any index;
    CPU memory is one place whatever the index: ``cpu:1`` is ``cpu``, as torch and TorchRL treat it).

    Examples:
        >>> same_device(torch.device("cpu"), torch.device("cpu:1")), same_device(torch.device("cpu"), torch.device("meta"))
        (True, False)
    """
    if value.type != spec.type:
        return False
    return value.type == "cpu" or spec.index is None or value.index == spec.index


def not_a_tensordict(env: EnvBase, value: Any, where: str) -> str:
    """The message of a ``step``/``reset`` given something that is not a tensordict."""
    name = type(env).__name__
    got = f"{type(value).__module__}.{type(value).__qualname__}".replace("builtins.", "")
    if where == "reset":
        return (
            f"{name}.reset expects None or a TensorDict of batch_size {list(env.batch_size)} (e.g. the previous "
            f"step's data with a '_reset' entry), got {got}"
        )
    spec = env.full_action_spec
    actions = ", ".join(f"{_keys.fmt(k)} (shape {list(spec[k].shape)}, dtype {spec[k].dtype})" for k in env.action_keys)
    return (
        f"{name}.step expects a TensorDict of batch_size {list(env.batch_size)} holding the action entry "
        f"{actions} and the state from reset(), got {got}: write the action into the reset output, e.g. "
        f"td = env.reset(); td['action'] = torch.as_tensor(action); env.step(td)"
    )
