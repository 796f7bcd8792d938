"""Elementwise reward (and value) maps: ``SignTransform``, ``LineariseRewards``, ``SuccessReward``.

Stateless, batched tensor functions on the env device, with the specs they imply:

* ``SignTransform`` writes ``sign(x)`` (a ``Bounded(-1, 1)`` spec), forward and inverse;
* ``LineariseRewards`` turns a vector reward ``(*B, k)`` into ``(*B, 1)`` by a weighted sum (the
  bounds follow the signs of the weights);
* ``SuccessReward`` writes ``scale * success`` as the reward at every step (never at reset),
  a sparse reward from a binary success signal.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"reward": torch.tensor([[1.0, -2.0]]), "success": torch.tensor([[True]])}, [1])
    >>> LineariseRewards(in_keys=["reward"], weights=[2.0, 1.0])(td.clone())["reward"]
    tensor([[0.]])
    >>> SignTransform(in_keys=["reward"])(td.clone())["reward"]
    tensor([[ 1., -1.]])
    >>> SuccessReward(scale=3.0)(td.clone())["reward"]
    tensor([[3.]])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, unravel
from gpusim.specs import Bounded, Composite, TensorSpec, Unbounded
from gpusim.transforms._keyed import KeyedTransform
from gpusim.transforms._spec_utils import OUTPUT_SPECS, fmt_key, locate
from gpusim.transforms.transform import Transform

__all__ = ["SignTransform", "LineariseRewards", "SuccessReward"]


class SignTransform(KeyedTransform):
    """Writes the sign (-1, 0 or 1) of every ``in_key`` to its ``out_key`` (and of every
    ``out_key_inv`` to its ``in_key_inv`` on the inverse path).

    Args:
        in_keys: forward inputs (observations, rewards, ...).
        out_keys: forward outputs (default: ``in_keys``).
        in_keys_inv: inner names of the inverse keys.
        out_keys_inv: outer names of the inverse keys (default: ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> SignTransform(in_keys=["x"], out_keys=["s"])(TensorDict({"x": torch.tensor([-3.0, 0.0, 2.0])}, []))["s"]
        tensor([-1.,  0.,  1.])
    """

    invertible = True

    def _apply_transform(self, x: torch.Tensor) -> torch.Tensor:
        return x.sign()

    def _inv_apply_transform(self, x: torch.Tensor) -> torch.Tensor:
        return x.sign()

    def _sign_spec(self, spec: TensorSpec) -> TensorSpec:
        return Bounded(-1.0, 1.0, shape=spec.shape, dtype=spec.dtype, device=spec.device)

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        return self._sign_spec(spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """Unchanged: the inverse keys keep their specs (TorchRL's behaviour).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> t = SignTransform(in_keys=["reward"], in_keys_inv=["action"])
            >>> env = TransformedEnv(PendulumEnv(batch_size=[2]), t)
            >>> env.action_spec.space.high.max().item()  # still Pendulum's torque bound
            2.0
        """
        return input_spec


class LineariseRewards(KeyedTransform):
    """Weighted sum of a multi-objective reward: ``(*B, k) -> (*B, 1)``.

    Args:
        in_keys: the vector rewards.
        out_keys: the scalar rewards (default: ``in_keys``).
        weights: one weight per objective (default: all ones); the same weights apply to every
            in_key.

    Raises:
        ValueError: weights of more than one dim; a number of weights that differs from the
            number of objectives (when attached or called).
        NotImplementedError: (when attached) a reward with discrete values.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from gpusim.specs import Bounded, Composite
        >>> t = LineariseRewards(in_keys=["reward"], weights=[2.0, -1.0])
        >>> t(TensorDict({"reward": torch.tensor([[1.0, 3.0], [0.5, 0.0]])}, [2]))["reward"]
        tensor([[-1.],
                [ 1.]])
        >>> spec = t.transform_reward_spec(Composite(reward=Bounded(0.0, 1.0, shape=(2,))))
        >>> spec["reward"].shape, spec["reward"].space.low, spec["reward"].space.high
        (torch.Size([1]), tensor([-1.]), tensor([2.]))
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | NestedKey,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        *,
        weights: Sequence[float] | torch.Tensor | None = None,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if weights is not None:
            weights = torch.as_tensor(weights)
            if weights.ndim >= 2:
                raise ValueError(
                    f"LineariseRewards: Expected weights to be a unidimensional tensor, got {weights.ndim} dims"
                )
        self.register_buffer("weights", weights)

    def _check_count(self, k: int) -> None:
        if self.weights is not None and self.weights.numel() != k:
            raise ValueError(
                f"LineariseRewards: the number of rewards and weights must match, got {k} rewards and "
                f"{self.weights.numel()} weights"
            )

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        self._check_count(reward.shape[-1])
        if self.weights is None:
            return reward.sum(-1, keepdim=True)
        return (reward * self.weights.to(reward.device)).sum(-1, keepdim=True)

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        if not (spec.dtype.is_floating_point and isinstance(spec, (Bounded, Unbounded))):
            raise NotImplementedError(
                f"LineariseRewards: Aggregation of rewards that take discrete values is not supported. "
                f"({fmt_key(key)} has a {type(spec).__name__} spec of dtype {spec.dtype})"
            )
        *batch, k = spec.shape
        self._check_count(k)
        shape = (*batch, 1)
        if not isinstance(spec, Bounded):
            return Unbounded(shape=shape, dtype=spec.dtype, device=spec.device)
        w = (
            torch.ones(k, dtype=spec.dtype, device=spec.device)
            if self.weights is None
            else self.weights.to(device=spec.device, dtype=spec.dtype)
        )
        low, high = spec.space.low.expand(spec.shape), spec.space.high.expand(spec.shape)
        pos, neg = w.clamp(min=0), w.clamp(max=0)
        new_low = (pos * low + neg * high).sum(-1, keepdim=True)
        new_high = (pos * high + neg * low).sum(-1, keepdim=True)
        return Bounded(new_low, new_high, shape=shape, dtype=spec.dtype, device=spec.device)


class SuccessReward(Transform):
    """Sparse reward from a binary success signal: ``reward = scale * success`` at every step.

    The reward spec becomes ``Bounded`` over ``{0, scale}``, shaped like the success entry (or
    like the existing reward when the success entry is not in the env's output specs). Nothing
    is written at reset.

    Args:
        success_key: the boolean (or 0/1) success entry.
        reward_key: the reward entry written.
        scale: the reward on success.

    Raises:
        RuntimeError: (spec time) neither the success entry nor the reward entry gives a shape.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = SuccessReward(scale=3.0)
        >>> t(TensorDict({"success": torch.tensor([[True], [False]])}, [2]))["reward"]
        tensor([[3.],
                [0.]])
    """

    def __init__(
        self, success_key: NestedKey = "success", reward_key: NestedKey = "reward", *, scale: float = 1.0
    ) -> None:
        super().__init__(in_keys=[success_key], out_keys=[reward_key])
        self.scale = float(scale)

    def _apply_transform(self, success: torch.Tensor) -> torch.Tensor:
        return success.to(torch.get_default_dtype()) * self.scale

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _reward_leaf(self, shape, device) -> Bounded:
        return Bounded(
            min(0.0, self.scale), max(0.0, self.scale), shape=shape, dtype=torch.get_default_dtype(), device=device
        )

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        success = unravel(self.in_keys[0])
        name = locate(output_spec, OUTPUT_SPECS, success)
        shape = device = None
        if name is not None:
            leaf = output_spec[name][success]
            shape, device = leaf.shape, leaf.device
        output_spec["full_reward_spec"] = self.transform_reward_spec(output_spec["full_reward_spec"], shape, device)
        return output_spec

    def transform_reward_spec(self, reward_spec: Composite, shape=None, device=None) -> Composite:
        """Writes the ``{0, scale}`` reward leaf into ``reward_spec`` (shaped like ``shape``, or
        like the existing reward leaf).

        Raises:
            RuntimeError: no ``shape`` is given and ``reward_spec`` has no reward leaf.

        Examples:
            >>> import torch
            >>> from gpusim.specs import Composite
            >>> spec = SuccessReward(scale=3.0).transform_reward_spec(Composite(), torch.Size([2, 1]))
            >>> spec["reward"].shape, spec["reward"].space.high.max().item()
            (torch.Size([2, 1]), 3.0)
        """
        reward = unravel(self.out_keys[0])
        if shape is None and reward in reward_spec.keys(True, True):
            leaf = reward_spec[reward]
            shape, device = leaf.shape, leaf.device
        if shape is None:
            raise RuntimeError(
                f"SuccessReward could not infer the reward shape: {fmt_key(self.in_keys[0])} is not in the env's "
                f"output specs and {fmt_key(reward)} is not an existing reward entry"
            )
        reward_spec[reward] = self._reward_leaf(shape, device)
        return reward_spec

    def __repr__(self) -> str:
        return f"SuccessReward(success_key={self.in_keys[0]!r}, reward_key={self.out_keys[0]!r}, scale={self.scale})"
