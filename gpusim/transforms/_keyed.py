"""``KeyedTransform``: the per-key base of the stateless transforms.

A keyed transform applies one tensor function to each ``in_key`` (written to the matching
``out_key``) of the data that comes out of the env, and optionally an inverse tensor function to
the data that goes into it. It transforms the specs of those keys with the same tensor function
(see :func:`~gpusim.transforms._spec_utils.map_leaf`). As in TorchRL, keys the env does not have
leave the specs alone when the transform is attached; data that lacks them raises a ``KeyError``
naming the key at the first step (reset outputs may lack them).

Inverse keys follow TorchRL's documented convention: ``in_keys_inv`` are the names the inner
(base) env expects, ``out_keys_inv`` the names seen from outside the transformed env (default:
``in_keys_inv``). Before the base env steps, ``out_keys_inv`` are read from the input, mapped by
``_inv_apply_transform`` and written to ``in_keys_inv``; the outer spec of an inverse key is the
inner spec mapped by ``_inv_spec_fn``.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms._keyed import KeyedTransform
    >>> class Neg(KeyedTransform):
    ...     def _apply_transform(self, x):
    ...         return -x
    ...     _inv_apply_transform = _apply_transform
    >>> Neg(in_keys=["obs"])(TensorDict({"obs": torch.ones(2)}, [2]))["obs"]
    tensor([-1., -1.])
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gpusim.envs._keys import NestedKey, as_tuple
from gpusim.specs import Composite, TensorSpec
from gpusim.transforms._spec_utils import INPUT_SPECS, OUTPUT_SPECS, drop_leaf, find_keys, fmt_key, map_leaf
from gpusim.transforms.transform import Transform

__all__ = ["KeyedTransform"]


class KeyedTransform(Transform):
    """Base class of transforms that map keys one to one with a tensor function.

    Subclasses override ``_apply_transform`` (forward) and/or ``_inv_apply_transform``
    (inverse). The spec of a forward key is ``map_leaf(spec, self._spec_fn(key))`` with the
    ``_spec_bounds`` / ``_spec_values_change`` class settings; subclasses with special spec
    rules override :meth:`_transform_leaf_spec` / :meth:`_inv_transform_leaf_spec`.

    Args:
        in_keys: forward input keys.
        out_keys: forward output keys (default ``in_keys``).
        in_keys_inv: inner (base env) names of the inverse keys.
        out_keys_inv: outer names of the inverse keys (default ``in_keys_inv``).

    Raises:
        ValueError: key lists of different lengths.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> class Neg(KeyedTransform):  # negates the observation, and the action on the way in
        ...     _spec_bounds = "sorted"  # a decreasing map: the image of [low, high] is [-high, -low]
        ...     def _apply_transform(self, x):
        ...         return -x
        ...     _inv_apply_transform = _apply_transform
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), Neg(in_keys=["observation"], in_keys_inv=["action"]))
        >>> td = env.reset()
        >>> theta = td["state"][:, 0]  # Pendulum observes [cos(theta), sin(theta), theta_dot]
        >>> torch.allclose(td["observation"][:, 0], -theta.cos())
        True
        >>> env.action_spec.low.flatten().tolist()  # the bounds follow the map: [-2, 2] -> [-2, 2]
        [-2.0, -2.0]
    """

    #: how ``Bounded`` bounds follow the tensor function (see ``map_leaf``)
    _spec_bounds: str = "map"
    #: ``False`` when the function only moves values (discrete specs are kept)
    _spec_values_change: bool = True
    #: the ``output_spec`` sub-composites forward keys may live in
    _forward_spec_names: tuple[str, ...] = OUTPUT_SPECS

    def __init__(self, in_keys=None, out_keys=None, in_keys_inv=None, out_keys_inv=None) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self._check_key_pairs()

    @property
    def _name(self) -> str:
        return type(self).__name__

    # ------------------------------------------------------------------ forward specs
    def _spec_fn(self, key: NestedKey) -> Callable[[torch.Tensor], torch.Tensor]:
        """The tensor function whose image the forward spec of ``key`` describes."""
        return self._apply_transform

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        """The spec of ``out_key`` given the spec of ``in_key`` (override for special rules)."""
        return map_leaf(
            spec,
            self._spec_fn(key),
            key=key,
            owner=self._name,
            bounds=self._spec_bounds,
            values_change=self._spec_values_change,
        )

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        """Maps the spec of every ``in_key`` into its ``out_key`` (same sub-composite).

        Keys that are not in the observation, reward or done specs are skipped.

        Args:
            output_spec: the env's ``output_spec`` (unlocked).

        Returns:
            ``output_spec`` with the ``out_key`` specs.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import RewardScaling
            >>> spec = CartPoleEnv().output_spec.clone().unlock_()
            >>> spec["full_observation_spec"]["observation"].high
            tensor([4.8000,    inf, 0.4189,    inf])
            >>> double = RewardScaling(loc=0.0, scale=2.0, in_keys=["observation"])
            >>> double.transform_output_spec(spec)["full_observation_spec"]["observation"].high
            tensor([9.6000,    inf, 0.8378,    inf])
        """
        found = find_keys(output_spec, self._forward_spec_names, self.in_keys)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in found:  # TorchRL's behaviour: keys the env lacks are left alone
                continue
            sub = output_spec[found[in_key]]
            spec = self._transform_leaf_spec(sub[in_key], in_key)
            self._check_prefix(sub, in_key, spec)
            sub[out_key] = spec
        return output_spec

    def _spec_of_keys(self, spec: TensorSpec | Composite) -> TensorSpec | Composite:
        """A leaf spec: its image (as the first ``in_key``'s); a Composite: the image of every
        ``in_key`` it holds written to the ``out_key`` (the composite is returned)."""
        if not isinstance(spec, Composite):
            return self._transform_leaf_spec(spec, self.in_keys[0] if self.in_keys else "")
        keys = set(spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in keys:
                spec[out_key] = self._transform_leaf_spec(spec[in_key], in_key)
        return spec

    def transform_observation_spec(self, observation_spec: TensorSpec | Composite) -> TensorSpec | Composite:
        """The spec(s) of the forward keys in an observation spec: a leaf spec or a Composite
        (TorchRL's calling convention; attached to an env, ``transform_output_spec`` is used)."""
        return self._spec_of_keys(observation_spec)

    def transform_reward_spec(self, reward_spec: TensorSpec | Composite) -> TensorSpec | Composite:
        """The spec(s) of the forward keys in a reward spec (a leaf spec or a Composite)."""
        return self._spec_of_keys(reward_spec)

    def _check_prefix(self, sub: Composite, key: NestedKey, spec: TensorSpec) -> None:
        """Raises ``ValueError`` when the new spec of ``key`` no longer starts with the batch
        dims of the composite holding it (e.g. a dim op that reached into the batch dims)."""
        tkey = as_tuple(key)
        holder = sub if len(tkey) == 1 else sub[tkey[:-1]]
        batch = tuple(holder.shape)
        if tuple(spec.shape[: len(batch)]) != batch:
            raise ValueError(
                f"{self._name}: the transformed spec of {fmt_key(key)} has shape {list(spec.shape)}, "
                f"which does not start with the batch dims {list(batch)}: the transform must only "
                "touch feature dims"
            )

    # ------------------------------------------------------------------ inverse specs
    def _inv_spec_fn(self, key: NestedKey) -> Callable[[torch.Tensor], torch.Tensor]:
        """The function mapping inner values of inverse key ``key`` to outer values (the
        outer spec is the inner spec's image); default: the forward function."""
        return self._apply_transform

    def _inv_transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        """The outer spec of inverse key ``key`` given its inner spec."""
        return map_leaf(
            spec,
            self._inv_spec_fn(key),
            key=key,
            owner=self._name,
            bounds=self._spec_bounds,
            values_change=self._spec_values_change,
        )

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """Replaces the inner spec of every ``in_key_inv`` by the outer spec at ``out_key_inv``.

        Keys that are not in the action or state specs are skipped.

        Args:
            input_spec: the env's ``input_spec`` (unlocked).

        Returns:
            ``input_spec`` with the outer specs.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import DTypeCastTransform
            >>> cast = DTypeCastTransform(torch.float32, torch.float64, in_keys_inv=["action"])
            >>> spec = cast.transform_input_spec(PendulumEnv().input_spec.clone().unlock_())
            >>> spec["full_action_spec"]["action"].dtype  # what the transformed env accepts
            torch.float64
        """
        found = find_keys(input_spec, INPUT_SPECS, self.in_keys_inv)
        for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
            if inner not in found:
                continue
            sub = input_spec[found[inner]]
            spec = self._inv_transform_leaf_spec(sub[inner], inner)
            self._check_prefix(sub, inner, spec)
            if outer != inner:
                drop_leaf(sub, inner)
            sub[outer] = spec
        return input_spec

    # inverse data: the base Transform._inv_call reads out_keys_inv and writes in_keys_inv
