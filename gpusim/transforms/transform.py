"""``Transform``: the base class of every environment transform.

A transform maps the data coming out of an environment (``_call`` on the ``"next"`` data of a
step, ``_reset`` on the output of a reset), the data going into it (``_inv_call``, applied to
actions and states before the base env steps, in reverse order over a chain) and the specs
(``transform_output_spec`` / ``transform_input_spec``) so that the transformed env keeps its
spec contract.

The simple way to write a transform is to pass ``in_keys``/``out_keys`` and override
``_apply_transform`` (forward, one tensor at a time) and/or ``_inv_apply_transform`` (inverse),
plus the ``transform_*_spec`` methods for the specs it changes. Stateful transforms override
``_step`` and ``_reset`` instead.

A transform belongs to at most one environment: ``set_container`` registers it (a
:class:`~gpusim.transforms.TransformedEnv` or a :class:`~gpusim.transforms.Compose`) and
``parent`` returns the environment made of the base env and the transforms before this one.
Registering a transform that already belongs to an environment raises; ``clone()`` returns a
parent-less copy whose buffers are the very same tensors.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms import Transform
    >>> class Double(Transform):
    ...     def _apply_transform(self, obs):
    ...         return obs * 2
    >>> t = Double(in_keys=["obs"], out_keys=["obs2"])
    >>> t(TensorDict({"obs": torch.ones(2)}, [2]))["obs2"]
    tensor([2., 2.])
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torch import nn

from gpusim.envs import _edits
from gpusim.envs._keys import NestedKey, unravel

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.envs.common import EnvBase
    from gpusim.specs import Composite

__all__ = ["Transform"]


def _as_key_list(keys: Any, name: str) -> list[NestedKey]:
    """Normalizes ``None`` / a key / a sequence of keys into a list of unravelled keys."""
    if keys is None or keys == ():  # () is no key (an empty tuple cannot name an entry)
        return []
    if isinstance(keys, (str, tuple)):
        keys = [keys]
    out = []
    for key in keys:
        if not isinstance(key, (str, tuple)) or (isinstance(key, tuple) and not key):
            raise TypeError(f"{name} entries must be str or non-empty tuples of str, got {key!r}")
        out.append(unravel(key))
    return out


class Transform(nn.Module):
    """Environment transform parent class.

    Args:
        in_keys: keys read by the forward transform (observations, rewards, ...).
        out_keys: keys written by the forward transform (default: ``in_keys``).
        in_keys_inv: the inner names of the inverse keys: what the base env receives (TorchRL's
            convention). Before the base env steps, each ``out_keys_inv`` entry of the input is
            mapped by ``_inv_apply_transform`` and written to the matching ``in_keys_inv``.
        out_keys_inv: the outer names of the inverse keys, as given to the transformed env
            (default: ``in_keys_inv``).

    Hooks (override what you need):

    * ``_apply_transform(tensor) -> tensor``: forward, one key at a time;
    * ``_call(next_tensordict)``: forward on a tensordict (default: ``_apply_transform`` on every
      present ``in_key``, written to the matching ``out_key``);
    * ``_step(tensordict, next_tensordict)``: called after the base env step with the root
      data and the ``"next"`` data (default: ``_call(next_tensordict)``);
    * ``_reset(tensordict, tensordict_reset)``: called after the base env reset with the input
      of ``reset`` (``"_reset"`` masks still in it) and the reset output (default:
      ``_call(tensordict_reset)``);
    * ``_reset_env_preprocess(tensordict)``: called on the input of ``reset`` before the base env
      resets (default: identity);
    * ``_inv_apply_transform(tensor)`` / ``_inv_call(tensordict)``: the inverse;
    * ``transform_observation_spec``, ``transform_reward_spec``, ``transform_done_spec``
      (each receives and returns the ``full_*_spec`` Composite), ``transform_action_spec``,
      ``transform_state_spec``; or ``transform_output_spec`` / ``transform_input_spec``
      directly;
    * ``transform_env_device(device)``, ``transform_env_batch_size(batch_size)``: what the
      transformed env reports (default: the inner env's);
    * ``_set_seed(seed) -> next seed``: for transforms that draw random numbers.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> class AddOne(Transform):
        ...     def _apply_transform(self, obs):
        ...         return obs + 1
        ...     def _inv_apply_transform(self, action):
        ...         return action - 1
        >>> t = AddOne(in_keys=["obs"], in_keys_inv=["action"])
        >>> td = TensorDict({"obs": torch.zeros(1), "action": torch.ones(1)}, [1])
        >>> t(td)["obs"]
        tensor([1.])
        >>> t.inv(td)["action"], td["action"]  # inv never writes into its input
        (tensor([0.]), tensor([1.]))
    """

    #: Whether the transform has an inverse (informative; ``_inv_call`` does the work).
    invertible: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        _edits.edited()  # read by compiled steps that run past Dynamo's guards (gpusim.envs._edits)
        super().__setattr__(name, value)

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        in_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
    ) -> None:
        super().__init__()
        self.__dict__["_container"] = None
        self.__dict__["_parent_cache"] = None
        self.__dict__["_missing_tolerance"] = False
        self.in_keys = in_keys
        self.out_keys = out_keys
        self.in_keys_inv = in_keys_inv
        self.out_keys_inv = out_keys_inv

    # ------------------------------------------------------------------ keys
    @property
    def in_keys(self) -> list[NestedKey]:
        """Keys read by the forward transform (a single key or nested tuple key is accepted).

        Examples:
            >>> Transform(in_keys="obs").in_keys
            ['obs']
            >>> Transform(in_keys=[("agents", "obs"), ("pixels",)]).in_keys
            [('agents', 'obs'), 'pixels']
        """
        return self.__dict__.get("_in_keys", [])

    @in_keys.setter
    def in_keys(self, value) -> None:
        self.__dict__["_in_keys"] = _as_key_list(value, "in_keys")

    @property
    def out_keys(self) -> list[NestedKey]:
        """Keys written by the forward transform (``in_keys`` unless given).

        Examples:
            >>> Transform(in_keys=["obs"]).out_keys
            ['obs']
            >>> Transform(in_keys=["obs"], out_keys=["obs_t"]).out_keys
            ['obs_t']
        """
        out = self.__dict__.get("_out_keys")
        return list(self.in_keys) if out is None else out

    @out_keys.setter
    def out_keys(self, value) -> None:
        self.__dict__["_out_keys"] = None if value is None else _as_key_list(value, "out_keys")

    @property
    def in_keys_inv(self) -> list[NestedKey]:
        """The inner names of the inverse keys: what the base env receives.

        Examples:
            >>> Transform(in_keys_inv=["action"], out_keys_inv=["action_outer"]).in_keys_inv
            ['action']
        """
        return self.__dict__.get("_in_keys_inv", [])

    @in_keys_inv.setter
    def in_keys_inv(self, value) -> None:
        self.__dict__["_in_keys_inv"] = _as_key_list(value, "in_keys_inv")

    @property
    def out_keys_inv(self) -> list[NestedKey]:
        """The outer names read by the inverse transform (``in_keys_inv`` unless given).

        Examples:
            >>> Transform(in_keys_inv=["action"]).out_keys_inv
            ['action']
            >>> Transform(in_keys_inv=["action"], out_keys_inv=["action_outer"]).out_keys_inv
            ['action_outer']
        """
        out = self.__dict__.get("_out_keys_inv")
        return list(self.in_keys_inv) if out is None else out

    @out_keys_inv.setter
    def out_keys_inv(self, value) -> None:
        self.__dict__["_out_keys_inv"] = None if value is None else _as_key_list(value, "out_keys_inv")

    def _check_key_pairs(self) -> None:
        """Raises ``ValueError`` when in/out key lists have different lengths (call it from
        ``__init__`` of subclasses that map keys one to one)."""
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(
                f"{type(self).__name__}: in_keys {self.in_keys} and out_keys {self.out_keys} must have the same length"
            )
        if len(self.in_keys_inv) != len(self.out_keys_inv):
            raise ValueError(
                f"{type(self).__name__}: in_keys_inv {self.in_keys_inv} and out_keys_inv "
                f"{self.out_keys_inv} must have the same length"
            )

    # ------------------------------------------------------------------ forward
    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        """Forward transform of one tensor (override)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no forward per-key transform: override _apply_transform (or _call/_step/_reset)"
        )

    @property
    def missing_tolerance(self) -> bool:
        """Whether absent keys are skipped (``True``) or raise a ``KeyError`` (the default).

        Examples:
            >>> from gpusim.transforms import RewardScaling
            >>> t = RewardScaling(loc=0.0, scale=2.0)
            >>> t.missing_tolerance
            False
            >>> t.set_missing_tolerance(True)
            >>> t.missing_tolerance
            True
        """
        return self.__dict__.get("_missing_tolerance", False)

    def set_missing_tolerance(self, mode: bool = False) -> None:
        """Skip (``True``) or reject (``False``) data that lacks an ``in_key``.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> from gpusim.transforms import RewardScaling
            >>> t = RewardScaling(loc=0.0, scale=2.0)
            >>> td = TensorDict({"observation": torch.zeros(2, 3)}, [2])  # no "reward"
            >>> _ = t(td)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            KeyError: "RewardScaling: 'reward' not found in the data ..."
            >>> t.set_missing_tolerance(True)
            >>> sorted(t(td).keys())  # skipped
            ['observation']
        """
        self.__dict__["_missing_tolerance"] = bool(mode)

    def _missing(self, key: NestedKey, tensordict: TensorDictBase) -> KeyError:
        return KeyError(
            f"{type(self).__name__}: {key!r} not found in the data (keys: "
            f"{sorted(map(str, tensordict.keys(True, True)))[:20]}); set_missing_tolerance(True) skips absent keys"
        )

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Applies ``_apply_transform`` to every ``in_key`` and writes ``out_key``; an absent
        ``in_key`` raises a ``KeyError`` unless :attr:`missing_tolerance` is set."""
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is not None:
                next_tensordict.set(out_key, self._apply_transform(value))
            elif not self.missing_tolerance:
                raise self._missing(in_key, next_tensordict)
        return next_tensordict

    def _tolerant_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``_call`` that skips absent keys (reset outputs may lack step-only entries)."""
        mode = self.missing_tolerance
        self.set_missing_tolerance(True)
        try:
            return self._call(tensordict)
        finally:
            self.set_missing_tolerance(mode)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Transforms the ``"next"`` data of a step (``tensordict`` is the root input)."""
        return self._call(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        """Transforms the output of a reset (``tensordict`` is the input, with its ``"_reset"``);
        default: ``_call`` that skips absent keys."""
        return self._tolerant_call(tensordict_reset)

    #: Whether the transform keeps per-episode state that a native auto-reset (an env that
    #: restarts its finished rows inside ``_step``, see ``EnvBase.native_autoreset``) must
    #: restart: then :meth:`_reset_on_native_autoreset` runs :meth:`_reset` on those rows.
    restarts_on_native_autoreset: bool = False

    def _reset_on_native_autoreset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """Hook of a native auto-reset: ``tensordict`` is the next root with the ``"_reset"``
        entries of the rows the env restarted inside its step (its data already went through
        :meth:`_step`), ``tensordict_reset`` a copy to update and return (the rows not reset
        are restored afterwards). Default: :meth:`_reset` when
        :attr:`restarts_on_native_autoreset`, else unchanged (a stateless transform already
        transformed the step's data)."""
        if self.restarts_on_native_autoreset:
            return self._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        """Preprocesses the input of ``reset`` before the base env resets (default: identity)."""
        return tensordict

    def _step_skipped(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Called instead of ``_step`` when an inverse transform skipped every row of a step
        (``"_step"`` all ``False``): ``next_tensordict`` holds the current data of the rows.

        Transforms do not step then (default: nothing); one that assembles its output from
        work done on the inverse path (``MultiAction``) writes it here.
        """
        return next_tensordict

    def _post_step_mdp(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Called by ``step_and_maybe_reset`` and ``rollout`` once ``step_mdp`` has built the
        next root ``tensordict_`` from the stepped ``tensordict`` (before finished rows reset).

        A transform may edit both (e.g. drop entries from the data a rollout records). Default:
        nothing. A transform that overrides it is listed by ``_has_post_step_mdp``.
        """
        return tensordict, tensordict_

    def _has_post_step_mdp(self) -> bool:
        """Whether :meth:`_post_step_mdp` does anything (``TransformedEnv`` skips it otherwise)."""
        return type(self)._post_step_mdp is not Transform._post_step_mdp

    def _check_batched_worker_compat(self) -> None:
        """Raises ``RuntimeError`` when the transform cannot run inside the worker env of a
        ``SerialEnv``/``ParallelEnv`` (checked when the batched env is built). Default: it can."""

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        """Edits the zero-filled step structure of the env (``env.fake_tensordict()``) where the
        data the transform produces differs from what the specs alone describe (default: no change).

        Args:
            fake_tensordict: the structure of one step (root and ``"next"``), from the specs.

        Returns:
            The structure of one step with this transform.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(PendulumEnv(), Transform())
            >>> sorted(Transform().transform_fake_tensordict(env.fake_tensordict())["next"].keys())
            ['done', 'observation', 'reward', 'state', 'terminated']
        """
        return fake_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use (replay buffers, stored data): the forward transform on ``tensordict``.

        Calling the transform (``t(td)``) runs this. The default applies ``_call``: every present
        ``in_key`` is transformed and written to its ``out_key``, in place.

        Args:
            tensordict: the data to transform (written in place).

        Returns:
            ``tensordict``, transformed.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.transforms import RewardScaling
            >>> td = TensorDict({"reward": torch.ones(2, 1)}, [2])
            >>> RewardScaling(loc=0.5, scale=2.0)(td)["reward"].flatten()
            tensor([2.5000, 2.5000])
        """
        return self._call(tensordict)

    # ------------------------------------------------------------------ inverse
    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        """Inverse transform of one tensor (override)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no inverse per-key transform: override _inv_apply_transform (or _inv_call)"
        )

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies ``_inv_apply_transform`` to every present outer ``out_key_inv`` and writes the
        result to the inner ``in_key_inv`` (TorchRL's documented direction)."""
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is not None:
                tensordict.set(in_key, self._inv_apply_transform(value))
            elif in_key == out_key and not self.missing_tolerance:
                raise self._missing(out_key, tensordict)
        return tensordict

    def _has_inverse(self) -> bool:
        """Whether the inverse path does anything (``TransformedEnv`` skips it otherwise).

        Default: the transform has ``in_keys_inv`` or overrides ``_inv_call``. Override when
        the answer depends on the instance (e.g. an ``_inv_call`` that is a no-op unless enabled).
        """
        return bool(self.in_keys_inv) or type(self)._inv_call is not Transform._inv_call

    def _inverse_exports(self) -> list[NestedKey]:
        """Keys the inverse writes that the caller's data keeps after a step (default: none).

        ``TransformedEnv`` steps the base env on a shallow copy of the input; an inverse that
        moves an action to the state spec (e.g. ``ActionDiscretizer`` with another
        ``out_action_key``) lists it here so that the env copies it back into the step's input.
        """
        return []

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Inverse transform on a shallow copy of ``tensordict`` (the input is never written).

        This is what a ``TransformedEnv`` applies to the input of a step before the base env
        sees it: each ``out_keys_inv`` entry is mapped and written to its ``in_keys_inv`` key.

        Args:
            tensordict: the outer data (actions, states).

        Returns:
            A new tensordict with the inner data.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.transforms import DoubleToFloat
            >>> t = DoubleToFloat(in_keys_inv=["action"])  # the base env takes float64 actions
            >>> td = TensorDict({"action": torch.zeros(2)}, [2])
            >>> t.inv(td)["action"].dtype, td["action"].dtype
            (torch.float64, torch.float32)
        """
        return self._inv_call(tensordict.clone(False))

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        """Transforms ``output_spec`` (observation, reward and done composites) in place.

        The default dispatches to ``transform_observation_spec``, ``transform_reward_spec`` and
        ``transform_done_spec`` with the ``full_*_spec`` composites and stores their results.
        ``output_spec`` is unlocked; return it (or a replacement). A ``TransformedEnv`` calls
        it on a clone of the base env's ``output_spec`` whenever its chain changes.

        Args:
            output_spec: ``Composite(full_observation_spec=..., full_reward_spec=...,
                full_done_spec=...)``, unlocked.

        Returns:
            The transformed output spec.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import InitTracker
            >>> spec = CartPoleEnv(batch_size=[2]).output_spec.clone().unlock_()
            >>> spec = InitTracker().transform_output_spec(spec)
            >>> spec["full_observation_spec"]["is_init"].shape
            torch.Size([2, 1])
        """
        for name, fn in (
            ("full_observation_spec", self.transform_observation_spec),
            ("full_reward_spec", self.transform_reward_spec),
            ("full_done_spec", self.transform_done_spec),
        ):
            if name in output_spec.keys():
                output_spec[name] = fn(output_spec[name])
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """Transforms ``input_spec`` (action and state composites) in place.

        The default dispatches to ``transform_action_spec`` and ``transform_state_spec``.

        Args:
            input_spec: ``Composite(full_action_spec=..., full_state_spec=...)``, unlocked.

        Returns:
            The transformed input spec.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import DTypeCastTransform, TransformedEnv
            >>> cast = DTypeCastTransform(torch.float32, torch.float64, in_keys_inv=["action"])
            >>> env = TransformedEnv(PendulumEnv(batch_size=[2]), cast)
            >>> env.base_env.action_spec.dtype, env.action_spec.dtype  # float64 actions outside
            (torch.float32, torch.float64)
        """
        for name, fn in (
            ("full_action_spec", self.transform_action_spec),
            ("full_state_spec", self.transform_state_spec),
        ):
            if name in input_spec.keys():
                input_spec[name] = fn(input_spec[name])
        return input_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        """Transforms the ``full_observation_spec`` Composite (default: unchanged).

        Override it to declare the observations a transform adds or changes.

        Args:
            observation_spec: the ``full_observation_spec`` Composite (unlocked).

        Returns:
            The transformed Composite.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.specs import Unbounded
            >>> from gpusim.transforms import TransformedEnv
            >>> class Speed(Transform):  # writes |cart velocity| as "speed"
            ...     def _call(self, td):
            ...         return td.set("speed", td["observation"][..., 1:2].abs())
            ...     def transform_observation_spec(self, observation_spec):
            ...         observation_spec["speed"] = Unbounded((*observation_spec.shape, 1))
            ...         return observation_spec
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), Speed())
            >>> env.observation_spec["speed"].shape, env.reset()["speed"].shape
            (torch.Size([2, 1]), torch.Size([2, 1]))
        """
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        """Transforms the ``full_reward_spec`` Composite (default: unchanged).

        Args:
            reward_spec: the ``full_reward_spec`` Composite (unlocked).

        Returns:
            The transformed Composite.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import BinarizeReward, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), BinarizeReward())
            >>> type(env.base_env.reward_spec).__name__, type(env.reward_spec).__name__
            ('Unbounded', 'Binary')
        """
        return reward_spec

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        """Transforms the ``full_done_spec`` Composite (default: unchanged).

        Args:
            done_spec: the ``full_done_spec`` Composite (unlocked).

        Returns:
            The transformed Composite.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), StepCounter(10))
            >>> env.base_env.done_keys, env.done_keys  # StepCounter adds "truncated"
            (['done', 'terminated'], ['done', 'terminated', 'truncated'])
        """
        return done_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        """Transforms the ``full_action_spec`` Composite (default: unchanged).

        Args:
            action_spec: the ``full_action_spec`` Composite (unlocked).

        Returns:
            The transformed Composite: the actions the transformed env accepts.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), Transform())
            >>> Transform().transform_action_spec(env.full_action_spec) is env.full_action_spec
            True
        """
        return action_spec

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        """Transforms the ``full_state_spec`` Composite (default: unchanged).

        Transforms that keep a running value in the tensordict (``StepCounter``, ``RewardSum``)
        declare it here, as the next step reads it back.

        Args:
            state_spec: the ``full_state_spec`` Composite (unlocked).

        Returns:
            The transformed Composite.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import RewardSum, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), RewardSum())
            >>> sorted(env.base_env.state_spec.keys()), sorted(env.state_spec.keys())
            (['state'], ['episode_reward', 'state'])
        """
        return state_spec

    def transform_env_device(self, device: torch.device) -> torch.device:
        """The device the transformed env reports, given the inner one (default: unchanged).

        Args:
            device: the device of the env before this transform.

        Returns:
            The device of the env after it.

        Examples:
            >>> Transform().transform_env_device(torch.device("cpu"))
            device(type='cpu')
            >>> from gpusim.transforms import DeviceCastTransform
            >>> DeviceCastTransform("meta", "cpu").transform_env_device(torch.device("cpu"))
            device(type='meta')
        """
        return device

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        """The batch size the transformed env reports, given the inner one (default: unchanged).

        Args:
            batch_size: the batch size of the env before this transform.

        Returns:
            The batch size of the env after it.

        Examples:
            >>> Transform().transform_env_batch_size(torch.Size([4]))
            torch.Size([4])
        """
        return batch_size

    # ------------------------------------------------------------------ container / parent
    def set_container(self, container: Transform | EnvBase) -> None:
        """Registers the transform in ``container`` (a ``Compose`` or a ``TransformedEnv``).

        ``Compose`` and ``TransformedEnv`` call it; users rarely do.

        Args:
            container: the ``Compose`` or ``TransformedEnv`` that holds the transform.

        Raises:
            RuntimeError: the transform already belongs to an environment.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> t = StepCounter()
            >>> env = TransformedEnv(CartPoleEnv(), t)  # calls t.set_container
            >>> t.container is env
            True
            >>> TransformedEnv(CartPoleEnv(), t)
            Traceback (most recent call last):
            ...
            RuntimeError: StepCounter already has a parent environment: transforms cannot be reused across environments; clone() it to get a parent-less copy that shares its buffers
        """
        current = self.__dict__["_container"]
        if current is not None and current is not container and self._env_container() is not None:
            raise RuntimeError(
                f"{type(self).__name__} already has a parent environment: transforms cannot be "
                "reused across environments; clone() it to get a parent-less copy that shares "
                "its buffers"
            )
        self.__dict__["_container"] = container
        self.reset_parent()

    def reset_parent(self) -> None:
        """Drops the cached ``parent`` (called whenever the chain of transforms changes).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(), Compose(StepCounter(), Transform()))
            >>> t = env.transform[1]
            >>> p = t.parent
            >>> t.parent is p  # cached
            True
            >>> t.reset_parent()
            >>> t.parent is p  # rebuilt
            False
        """
        self.__dict__["_parent_cache"] = None

    def _detach_container(self) -> None:
        self.__dict__["_container"] = None
        self.reset_parent()

    def _env_container(self) -> EnvBase | None:
        from gpusim.envs.common import EnvBase

        container = self.__dict__["_container"]
        while container is not None and not isinstance(container, EnvBase):
            container = container.__dict__.get("_container")
        return container

    @property
    def container(self) -> EnvBase | None:
        """The environment holding the transform (through any ``Compose``), or ``None``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import Compose, TransformedEnv
            >>> t = Transform()
            >>> t.container is None
            True
            >>> env = TransformedEnv(CartPoleEnv(), Compose(t))
            >>> t.container is env
            True
        """
        return self._env_container()

    @property
    def collector(self) -> Any:
        """The collector registered with the environment holding the transform
        (:meth:`EnvBase.register_collector <gpusim.envs.EnvBase.register_collector>`), or
        ``None``. Not carried to the workers of a batched env.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> class Collector:
            ...     pass
            >>> env, collector = TransformedEnv(CartPoleEnv(), StepCounter()), Collector()
            >>> env.register_collector(collector)
            >>> env.transform.collector is collector
            True
        """
        container = self.container
        return None if container is None else container.collector

    def _preceding(self) -> tuple[EnvBase, list[Transform]] | None:
        """``(base_env, transforms before self)`` when the transform belongs to an env."""
        from gpusim.envs.common import EnvBase

        container = self.__dict__["_container"]
        if container is None:
            return None
        if isinstance(container, EnvBase):
            return container.base_env, []
        outer = container._preceding()
        if outer is None:
            return None
        base_env, before = outer
        for t in container.transforms:
            if t is self:
                break
            before.append(t)
        return base_env, before

    @property
    def parent(self) -> EnvBase | None:
        """The environment up to (excluding) this transform, or ``None`` without container.

        It is a ``TransformedEnv`` of the base env with the transforms that come before this
        one (the same transform objects, so their buffers are shared). Cached until the chain
        changes. A transform reads its input specs from it.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(), Compose(StepCounter(), Transform()))
            >>> parent = env.transform[1].parent  # the base env + StepCounter
            >>> "step_count" in parent.observation_spec.keys(), env.transform[0].parent.transform
            (True, Compose())
        """
        cached = self.__dict__["_parent_cache"]
        if cached is not None:
            return cached
        found = self._preceding()
        if found is None:
            return None
        from gpusim.transforms.transformed_env import _parent_view

        base_env, before = found
        parent = _parent_view(base_env, before)
        self.__dict__["_parent_cache"] = parent
        return parent

    def clone(self) -> Transform:
        """A parent-less copy whose buffers and parameters are the same tensors.

        Examples:
            >>> t = Transform(in_keys=["a"])
            >>> t.register_buffer("stat", torch.zeros(1))
            >>> c = t.clone()
            >>> c.stat is t.stat, c.parent is None
            (True, True)
        """
        out = copy.copy(self)
        state = dict(self.__dict__)
        for name in ("_buffers", "_parameters", "_non_persistent_buffers_set"):
            if name in state:
                state[name] = copy.copy(state[name])
        if "_modules" in state:
            state["_modules"] = {
                k: (m.clone() if isinstance(m, Transform) else m) for k, m in state["_modules"].items()
            }
        for name in ("_in_keys", "_out_keys", "_in_keys_inv", "_out_keys_inv"):
            if state.get(name) is not None:
                state[name] = list(state[name])
        state["_container"] = None
        state["_parent_cache"] = None
        out.__dict__ = state
        return out

    # ------------------------------------------------------------------ misc
    def set_seed(self, seed: int | None) -> int | None:
        """Seeds the transform's random numbers (if any); returns the seed for the next user.

        ``TransformedEnv.set_seed`` seeds the base env, then passes the returned seed to the
        transforms in order.

        Args:
            seed: the seed (``None``: unseeded).

        Returns:
            The seed for the next seeded object (unchanged when the transform draws nothing).

        Examples:
            >>> Transform().set_seed(7)
            7
        """
        return self._set_seed(seed)

    def _set_seed(self, seed: int | None) -> int | None:
        return seed

    def to(self, *args: Any, **kwargs: Any) -> Transform:
        """Moves the transform's buffers (and any device-held state) to a device/dtype.

        Args:
            *args: as for ``torch.nn.Module.to`` (a device, a dtype, or both).
            **kwargs: as for ``torch.nn.Module.to``.

        Returns:
            ``self``.

        Examples:
            >>> t = Transform()
            >>> t.register_buffer("stat", torch.zeros(1))
            >>> t.to(torch.float64).stat.dtype
            torch.float64
        """
        super().to(*args, **kwargs)
        self.reset_parent()
        return self

    def empty_cache(self) -> None:
        """Drops cached data derived from the parent (the cached ``parent`` itself).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> t = Transform()
            >>> env = TransformedEnv(CartPoleEnv(), t)
            >>> p = t.parent
            >>> t.empty_cache()
            >>> t.parent is p
            False
        """
        self.reset_parent()

    def close(self) -> None:
        """Releases resources (default: nothing); ``TransformedEnv.close`` calls it.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(), Transform())
            >>> env.close()  # closes the transforms, then the base env
            >>> env.is_closed
            True
        """

    def __repr__(self) -> str:
        fields = []
        if self.in_keys:
            fields.append(f"in_keys={self.in_keys}")
        if self.out_keys and self.out_keys != self.in_keys:
            fields.append(f"out_keys={self.out_keys}")
        if self.in_keys_inv:
            fields.append(f"in_keys_inv={self.in_keys_inv}")
        if self.out_keys_inv and self.out_keys_inv != self.in_keys_inv:
            fields.append(f"out_keys_inv={self.out_keys_inv}")
        return f"{type(self).__name__}({', '.join(fields)})"

    def __setstate__(self, state: dict) -> None:  # pickling keeps no parent
        state = dict(state)
        state["_container"] = None
        state["_parent_cache"] = None
        self.__dict__.update(state)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_container"] = None
        state["_parent_cache"] = None
        return state
