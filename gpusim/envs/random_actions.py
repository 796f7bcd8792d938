"""Compile-friendly random actions from a counter-based stream.

``torch.randint``/``torch.rand`` inside a compiled CPU graph run as scalar Philox loops and pull
the whole fused step out of vectorized code (BENCHMARKS.md measures 10x). ``HashRandomPolicy``
draws the same kind of actions as ``action_spec.rand()`` from an integer hash of
``(seed, counter, env index)`` instead, which fuses with the step. It is the default policy of
compiled rollouts; specs it cannot express (masks, infinite bounds, ...) fall back to
``spec.rand()``.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.specs import Categorical, Composite
    >>> spec = Composite(action=Categorical(3, shape=(5,)), shape=(5,))
    >>> policy = HashRandomPolicy(spec, torch.Size([5]), seed=0)
    >>> policy(TensorDict({}, [5]))["action"].shape
    torch.Size([5])
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import leaf_keys
from gpusim.envs.native.rng import CounterRNG
from gpusim.specs import Binary, Bounded, Categorical, Composite, OneHot

__all__ = ["HashRandomPolicy"]


def _supported(spec) -> bool:
    if isinstance(spec, Categorical):
        return spec.mask is None and spec.dtype is not torch.bool
    if isinstance(spec, OneHot):
        return getattr(spec, "mask", None) is None
    if isinstance(spec, Bounded):
        return spec.dtype.is_floating_point and bool(torch.isfinite(spec.low).all() and torch.isfinite(spec.high).all())
    return isinstance(spec, Binary)


class HashRandomPolicy:
    """Uniform random actions for every leaf of ``action_spec`` from a :class:`CounterRNG`.

    Args:
        action_spec: the env's ``full_action_spec``.
        batch_size: the env batch dims (leading dims of every leaf).
        seed: the stream's seed (``None``: drawn from torch's global generator, so
            ``torch.manual_seed`` makes it reproducible).

    Raises:
        ValueError: if a leaf is of a kind it cannot draw (use ``spec.rand()`` then; see
            :meth:`supports`).

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> env = PendulumEnv(batch_size=[4], seed=0)
        >>> policy = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)
        >>> action = policy(env.reset())["action"]
        >>> action.shape, bool((action.abs() <= 2.0).all())  # uniform in the action bounds
        (torch.Size([4, 1]), True)
        >>> torch.equal(HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)(env.reset())["action"], action)
        True
    """

    def __init__(self, action_spec: Composite, batch_size: torch.Size, seed: int | None = None) -> None:
        self.keys = leaf_keys(action_spec)
        if not self.supports(action_spec):
            raise ValueError(f"HashRandomPolicy cannot draw every action leaf of {self.keys}")
        nb = len(batch_size)
        self.specs = [action_spec[k] for k in self.keys]
        self.sizes = [
            (math.prod(s.shape[nb:]) if not isinstance(s, OneHot) else math.prod(s.shape[nb:-1]))
            for s in self.specs
        ]
        # Bounds read once: a Composite stores batch-uniform bounds compactly, and reading
        # ``spec.low`` then builds a full copy.
        self.bounds = [(s.low, s.high) if isinstance(s, Bounded) else None for s in self.specs]
        self.batch_size = torch.Size(batch_size)
        device = self.specs[0].device if self.specs else None
        if seed is None:
            seed = int(torch.randint(0, 2**31 - 1, ()))
        self.rng = CounterRNG(self.batch_size, num=max(1, sum(self.sizes)), device=device, seed=seed, bits=24)

    @staticmethod
    def supports(action_spec: Composite) -> bool:
        """Whether every leaf of ``action_spec`` is a kind this policy draws.

        Supported: ``Categorical`` and ``OneHot`` without a mask, ``Binary``, and floating
        ``Bounded`` with finite bounds.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv, TicTacToeEnv
            >>> HashRandomPolicy.supports(CartPoleEnv().full_action_spec)
            True
            >>> from gpusim.specs import Composite, Unbounded
            >>> HashRandomPolicy.supports(Composite(action=Unbounded((1,))))  # no bounds to draw in
            False
        """
        keys = leaf_keys(action_spec)
        return bool(keys) and all(_supported(action_spec[k]) for k in keys)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.write(tensordict, self.rng.uniform())

    def write(self, tensordict: TensorDictBase, u: torch.Tensor) -> TensorDictBase:
        """Writes the actions made from uniforms ``u`` (``[*B, rng.num]`` in ``[0, 1)``) into
        ``tensordict`` and returns it (for callers with a stream of their own).

        Args:
            tensordict: the data to write into.
            u: uniforms in ``[0, 1)``, one column per drawn value.

        Returns:
            ``tensordict`` with the actions.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3])
            >>> policy = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)
            >>> u = torch.tensor([[0.1], [0.6], [0.9]])  # below 1/2: action 0, else 1
            >>> policy.write(TensorDict({}, [3]), u)["action"]
            tensor([0, 1, 1])
        """
        start = 0
        for key, spec, size, bounds in zip(self.keys, self.specs, self.sizes, self.bounds):
            part = u[..., start : start + size]
            start += size
            if isinstance(spec, OneHot):
                idx = (part * spec.n).to(torch.int64).clamp_max(spec.n - 1)
                value = torch.nn.functional.one_hot(idx.reshape(spec.shape[:-1]), spec.n).to(spec.dtype)
            elif isinstance(spec, Categorical):
                value = (part * spec.n).to(torch.int64).clamp_max(spec.n - 1).reshape(spec.shape).to(spec.dtype)
            elif isinstance(spec, Binary):
                value = (part < 0.5).reshape(spec.shape).to(spec.dtype)
            else:
                low, high = bounds
                value = torch.addcmul(low, part.reshape(spec.shape), high - low).to(spec.dtype)
            tensordict.set(key, value)
        return tensordict
