"""``TensorDictPrimer`` (extra entries set at reset and carried through steps) and
``gSDENoise`` (the primer of gSDE exploration noise).

Primer entries are added to the observation and state specs (expanded to the env batch size
when given without it); a primer of an action key replaces that action's spec instead of
becoming a state (the reset then writes an initial action). A reset writes their initial value for all rows (zeros/``default_value``,
or a draw from the spec with ``random=True``); the base env's partial-reset merge keeps the
value of rows that are not reset. A step copies them from the input into ``"next"`` when
nothing (a policy, another transform) wrote a new value there.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.specs import Unbounded
    >>> from gpusim.transforms import TensorDictPrimer, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), TensorDictPrimer(hidden=Unbounded((3,)), default_value=1.0))
    >>> env.reset()["hidden"]
    tensor([[1., 1., 1.],
            [1., 1., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.specs import Composite, TensorSpec, Unbounded
from gpusim.transforms._levels import tget, tset
from gpusim.transforms.transform import Transform

__all__ = ["TensorDictPrimer", "gSDENoise"]


class TensorDictPrimer(Transform):
    """Primes the tensordict with entries that the env itself does not produce (e.g. RNN states).

    Args:
        primers: a dict or Composite of specs (the batch dims may be left out).
        random: draw the reset values from the specs (``spec.rand()``).
        default_value: the reset value when ``random=False``: a number, a callable returning a
            tensor (broadcast to the spec shape), or a dict of those per key.
        reset_key: accepted for API compatibility (the parent's ``"_reset"`` merge is used).
        expand_specs: ``False``: every primer must already start with the env's batch dims
            (raises otherwise when the specs are computed); ``True`` or ``None``: primers without
            them are expanded to the env's batch size (TorchRL's documented behaviour).
        **kwargs: primers given as keyword arguments (``hidden=Unbounded((3,))``). A primer may
            be a Composite: its leaves are primed under its key.

    Raises:
        ValueError: both ``primers`` and keyword primers, or a non-spec primer.

    Examples:
        A recurrent state that a policy updates and the env carries from step to step:

        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.specs import Unbounded
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), TensorDictPrimer(hidden=Unbounded((3,))))
        >>> sorted(env.state_spec.keys())  # read back at every step
        ['hidden', 'state']
        >>> def policy(td):  # counts its calls in the hidden state
        ...     td["action"] = torch.zeros(2, dtype=torch.long)
        ...     td["hidden"] = td["hidden"] + 1
        ...     return td
        >>> td = env.rollout(3, policy)
        >>> td["hidden"][0, :, 0].tolist()  # what the policy wrote, from the 0 set at reset
        [1.0, 2.0, 3.0]
    """

    restarts_on_native_autoreset = True  # per-episode state: restarted on a native auto-reset

    def __init__(
        self,
        primers: Mapping[NestedKey, TensorSpec] | Composite | None = None,
        random: bool | None = False,
        default_value: float | Callable | Mapping | None = 0.0,
        reset_key: NestedKey | None = None,
        expand_specs: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if primers is not None and kwargs:
            raise ValueError("TensorDictPrimer takes primers either as a dict/Composite or as kwargs, not both")
        if primers is None:
            primers = kwargs
        items = []
        for key, spec in primers.items() if not isinstance(primers, Composite) else [(None, primers)]:
            if isinstance(spec, Composite):  # its leaves, under its key
                prefix = () if key is None else _keys.unravel(key)
                prefix = prefix if isinstance(prefix, tuple) else (prefix,)
                for leaf in spec.keys(True, True):
                    leaf = leaf if isinstance(leaf, tuple) else (leaf,)
                    items.append((_keys.unravel((*prefix, *leaf)), spec[leaf]))
            else:
                items.append((key, spec))
        specs = {}
        for key, spec in items:
            if not isinstance(spec, TensorSpec):
                raise ValueError(f"TensorDictPrimer primer {key!r} must be a TensorSpec, got {type(spec).__name__}")
            specs[_keys.unravel(key)] = spec
        if isinstance(default_value, Mapping):
            missing = [k for k in specs if k not in {_keys.unravel(d) for d in default_value}]
            if missing:
                raise ValueError(f"TensorDictPrimer default_value dict misses the primers {missing}")
            default_value = {_keys.unravel(k): v for k, v in default_value.items()}
        super().__init__()
        self.primers = specs  # as given
        self.random = bool(random)
        self.default_value = 0.0 if default_value is None else default_value
        self.reset_key = reset_key
        self.expand_specs = expand_specs
        self.__dict__["_specs"] = dict(specs)  # expanded to the env batch size

    @property
    def in_keys(self) -> list:
        """Always empty: primers read nothing.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> TensorDictPrimer(hidden=Unbounded((3,))).in_keys
            []
        """
        return []

    @in_keys.setter
    def in_keys(self, value) -> None:
        pass

    @property
    def out_keys(self) -> list:
        """The primed entries.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> TensorDictPrimer(hidden=Unbounded((3,)), cell=Unbounded((3,))).out_keys
            ['hidden', 'cell']
        """
        return list(self.__dict__.get("primers", {}).keys())

    @out_keys.setter
    def out_keys(self, value) -> None:
        pass

    def _expand(self, spec: TensorSpec, batch_size: torch.Size, device, key: NestedKey = None) -> TensorSpec:
        if tuple(spec.shape[: len(batch_size)]) != tuple(batch_size):
            if self.__dict__.get("expand_specs") is False:
                raise ValueError(
                    f"TensorDictPrimer: the primer {key!r} has shape {list(spec.shape)}, which does not start with "
                    f"the env batch size {list(batch_size)} (expand_specs=False)"
                )
            spec = spec.expand(*batch_size, *spec.shape)
        if device is not None and spec.device != torch.device(device):
            spec = spec.to(device)
        return spec

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        obs_spec = output_spec["full_observation_spec"]
        device = output_spec.device
        specs = {}
        for key, spec in self.primers.items():
            spec = self._expand(spec, output_spec.shape, device, key)
            specs[key] = spec
            obs_spec[key] = spec.clone()
        self.__dict__["_specs"] = specs
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        state_spec = input_spec["full_state_spec"]
        action_keys = {_keys.unravel(k) for k in input_spec["full_action_spec"].keys(True, True)}
        for key, spec in self.__dict__["_specs"].items():
            if key in action_keys:  # a primed action (an initial action at reset) stays an action
                input_spec["full_action_spec"][key] = spec.clone()
            else:
                state_spec[key] = spec.clone()
        return input_spec

    def _value(self, key: NestedKey, spec: TensorSpec, batch_size, device) -> torch.Tensor:
        if tuple(spec.shape[: len(batch_size)]) != tuple(batch_size):
            spec = spec.expand(*batch_size, *spec.shape)
        if self.random:
            value = spec.rand()
        else:
            default = self.default_value
            if isinstance(default, Mapping):
                default = default[key]
            if callable(default):
                value = torch.as_tensor(default(), dtype=spec.dtype).expand(spec.shape).clone()
            else:
                value = torch.full(spec.shape, default, dtype=spec.dtype)
        return value.to(device) if device is not None else value

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for key, spec in self.__dict__["_specs"].items():
            tset(tensordict_reset, key, self._value(key, spec, tensordict_reset.batch_size, tensordict_reset.device))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.__dict__["_specs"]:
            if tget(next_tensordict, key) is None:
                value = tget(tensordict, key)
                if value is not None:
                    tset(next_tensordict, key, value)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline: fills the missing primer entries (batch dims of the data).

        Args:
            tensordict: the data (written in place; present entries are kept).

        Returns:
            ``tensordict`` with every primer entry.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Unbounded
            >>> primer = TensorDictPrimer(hidden=Unbounded((3,)), default_value=0.5)
            >>> primer(TensorDict({}, [2]))["hidden"]
            tensor([[0.5000, 0.5000, 0.5000],
                    [0.5000, 0.5000, 0.5000]])
        """
        for key, spec in self.__dict__["_specs"].items():
            if tget(tensordict, key) is None:
                tset(tensordict, key, self._value(key, spec, tensordict.batch_size, tensordict.device))
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def __repr__(self) -> str:
        return f"{type(self).__name__}(primers={list(self.primers)}, random={self.random})"


class gSDENoise(TensorDictPrimer):  # noqa: N801 (TorchRL's name)
    """Primes ``"_eps_gSDE"``: the gSDE exploration noise, drawn (randn) at reset.

    Args:
        state_dim: the feature dim of the state the noise multiplies.
        action_dim: the action dim.
        shape: leading shape of the noise (the env batch dims are added when missing).
        **kwargs: passed to :class:`TensorDictPrimer` (``random`` defaults to ``True``).

    The noise has shape ``(*shape, action_dim, state_dim)`` (``(*shape, 1)`` when a dim is not
    given).

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[4], seed=0), gSDENoise(state_dim=3, action_dim=1))
        >>> env.reset()["_eps_gSDE"].shape
        torch.Size([4, 1, 3])
    """

    def __init__(
        self,
        state_dim: int | None = None,
        action_dim: int | None = None,
        shape: tuple | torch.Size | None = None,
        **kwargs: Any,
    ) -> None:
        shape = () if shape is None else tuple(shape)
        tail = (1,) if state_dim is None or action_dim is None else (action_dim, state_dim)
        random = kwargs.pop("random", True)
        super().__init__(primers={"_eps_gSDE": Unbounded(shape=(*shape, *tail))}, random=random, **kwargs)
