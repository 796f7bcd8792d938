"""``FiniteTensorDictCheck``: fail fast on NaN or infinite values.

This is a debugging transform: it reads one flag per step on the host (one device sync for all
entries together), so leave it out of hot loops.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.checks import FiniteTensorDictCheck
    >>> FiniteTensorDictCheck()(TensorDict({"obs": torch.tensor([float("nan")])}, []))
    Traceback (most recent call last):
    ...
    ValueError: Encountered a non-finite tensor: FiniteTensorDictCheck found non-finite values at key 'obs': tensor([nan])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import unravel
from gpusim.transforms._spec_utils import fmt_key
from gpusim.transforms.transform import Transform

__all__ = ["FiniteTensorDictCheck"]


class FiniteTensorDictCheck(Transform):
    """Checks that every floating entry of the env's output is finite, and raises otherwise.

    Raises:
        ValueError: naming the first key holding a NaN or infinite value.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), FiniteTensorDictCheck())
        >>> env.rollout(3).shape  # finite data passes through
        torch.Size([2, 3])
        >>> td = env.reset()
        >>> td["state"][0, 0] = float("inf")  # a corrupted state makes the next observation inf
        >>> env.step(env.rand_action(td))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Encountered a non-finite tensor: FiniteTensorDictCheck found non-finite values at key 'observation': tensor([    inf, ...])
    """

    def __init__(self) -> None:
        super().__init__()

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        items = [
            (unravel(k), v)
            for k, v in next_tensordict.items(True, True)
            if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())
        ]
        if not items:
            return next_tensordict
        flags = torch.stack([torch.isfinite(v).all() for _, v in items])
        if not bool(flags.all()):  # one host read for all entries
            for key, value in items:
                if not bool(torch.isfinite(value).all()):
                    raise ValueError(
                        f"Encountered a non-finite tensor: FiniteTensorDictCheck found non-finite values at key {fmt_key(key)}: "
                        f"{value.flatten()[:8]}"
                    )
        return next_tensordict
