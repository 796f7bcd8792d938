"""``EnvMetaData`` and ``get_env_metadata``: an env's specs and structure without the env.

A batched env needs its workers' specs before any worker exists (to build its own specs and
its shared buffers). The metadata is taken from one env instance, which is then closed.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> meta = get_env_metadata(lambda: CartPoleEnv(batch_size=[3]))
    >>> meta.batch_size
    torch.Size([3])
    >>> meta.expand(2, 3).specs["output_spec", "full_observation_spec", "observation"].shape
    torch.Size([2, 3, 4])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase

from gpusim.specs import Composite

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["EnvMetaData", "get_env_metadata"]


class EnvMetaData:
    """The structure of an env: a zero-filled step tensordict, the specs, batch size, device.

    Args:
        tensordict: ``env.fake_tensordict()``: the keys, shapes and dtypes of one step.
        specs: ``Composite(input_spec=..., output_spec=...)`` with the env's batch shape.
        batch_size: the env batch dims.
        env_str: a readable description of the env (its ``repr``).
        device: the env device (``None``: entries on several devices).
        batch_locked: whether the env only accepts tensordicts of its own batch size.
        worker_refusal: why the env cannot be the worker of a batched env (a transform that
            needs its own ``step_and_maybe_reset``), or ``None``; batched envs raise it.
        supports_set_state: whether the env honours ``reset(td, set_state=True)`` (its
            ``_supports_set_state``); a batched env does when all its workers do.
        state_is_intent: whether state entries in a ``reset`` input ask for that state when
            ``set_state`` is not given (TorchRL's transition rule, with a warning); ``False``
            for envs whose data always holds their state (the native envs): a batched env of
            them then resets fresh without a warning, as the env itself does.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> meta = EnvMetaData.metadata_from_env(PendulumEnv())
        >>> meta.specs["input_spec", "full_action_spec", "action"].shape
        torch.Size([1])
    """

    def __init__(
        self,
        tensordict: TensorDictBase,
        specs: Composite,
        batch_size: Any,
        env_str: str,
        device: torch.device | str | None,
        batch_locked: bool = True,
        worker_refusal: str | None = None,
        supports_set_state: bool = False,
        state_is_intent: bool = True,
    ) -> None:
        if not isinstance(tensordict, TensorDictBase):
            raise TypeError(f"tensordict must be a TensorDictBase, got {type(tensordict).__name__}")
        if not isinstance(specs, Composite) or "input_spec" not in specs.keys() or "output_spec" not in specs.keys():
            raise TypeError("specs must be a Composite with 'input_spec' and 'output_spec' entries")
        self.tensordict = tensordict
        self.specs = specs
        self.batch_size = torch.Size(batch_size)
        self.env_str = env_str
        # None: the env's entries live on several devices (a partial DeviceCastTransform)
        self.device = None if device is None else torch.device(device)
        self.batch_locked = bool(batch_locked)
        self.worker_refusal = worker_refusal
        self.supports_set_state = bool(supports_set_state)
        self.state_is_intent = bool(state_is_intent)

    @classmethod
    def metadata_from_env(cls, env: EnvBase) -> EnvMetaData:
        """Reads the metadata of a live env (clones: the result does not alias the env).

        Args:
            env: the env.

        Returns:
            Its metadata.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> meta = EnvMetaData.metadata_from_env(CartPoleEnv(batch_size=[2]))
            >>> meta.batch_size, sorted(meta.tensordict.keys())
            (torch.Size([2]), ['action', 'done', 'next', 'observation', 'state', 'terminated'])
        """
        specs = Composite(
            input_spec=env.input_spec.clone(),
            output_spec=env.output_spec.clone(),
            shape=env.batch_size,
            device=env.device,
        )
        try:
            env._check_batched_worker()
            refusal = None
        except RuntimeError as err:
            refusal = str(err)
        return cls(
            env.fake_tensordict(),
            specs,
            env.batch_size,
            repr(env),
            env.device,
            env.batch_locked,
            refusal,
            bool(env._supports_set_state),
            # probed on the env's own full data: an env that reads no intent from it says False
            bool(env._input_td_has_state(env.fake_tensordict())),
        )

    # ------------------------------------------------------------------ accessors
    @property
    def input_spec(self) -> Composite:
        """``Composite(full_action_spec=..., full_state_spec=...)``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> meta = EnvMetaData.metadata_from_env(CartPoleEnv(batch_size=[2]))
            >>> meta.input_spec["full_action_spec"]["action"].shape
            torch.Size([2])
        """
        return self.specs["input_spec"]

    @property
    def output_spec(self) -> Composite:
        """``Composite(full_observation_spec=..., full_reward_spec=..., full_done_spec=...)``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> meta = EnvMetaData.metadata_from_env(CartPoleEnv(batch_size=[2]))
            >>> meta.output_spec["full_observation_spec"]["observation"].shape
            torch.Size([2, 4])
        """
        return self.specs["output_spec"]

    @property
    def has_dynamic_specs(self) -> bool:
        """Whether a spec leaf has a dynamic (``-1``) dim (a batched env then exchanges the
        data without preallocated buffers).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> EnvMetaData.metadata_from_env(CartPoleEnv()).has_dynamic_specs
            False
        """
        from gpusim.specs.utils import has_dynamic_dims

        return has_dynamic_dims(self.specs)

    # ------------------------------------------------------------------ transforms
    def expand(self, *shape: Any) -> EnvMetaData:
        """The metadata of a batch of such envs: ``shape`` must end with :attr:`batch_size`.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> EnvMetaData.metadata_from_env(PendulumEnv()).expand(4).tensordict.shape
            torch.Size([4])
        """
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        size = torch.Size(shape)
        n = len(self.batch_size)
        if len(size) < n or (n and tuple(size[-n:]) != tuple(self.batch_size)):
            raise ValueError(
                f"EnvMetaData.expand: the new shape {list(size)} must end with the batch size {list(self.batch_size)}"
            )
        return EnvMetaData(
            self.tensordict.expand(size).clone(),
            self.specs.expand(size),
            size,
            self.env_str,
            self.device,
            self.batch_locked,
            self.worker_refusal,
            self.supports_set_state,
        )

    def to(self, device: torch.device | str) -> EnvMetaData:
        """A copy on another device (specs and tensordict).

        Args:
            device: the target device.

        Returns:
            A new ``EnvMetaData``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> meta = EnvMetaData.metadata_from_env(CartPoleEnv()).to("cpu")
            >>> meta.device, meta.tensordict.device
            (device(type='cpu'), device(type='cpu'))
        """
        device = torch.device(device)
        return EnvMetaData(
            self.tensordict.to(device),
            self.specs.to(device),
            self.batch_size,
            self.env_str,
            device,
            self.batch_locked,
            self.worker_refusal,
            self.supports_set_state,
        )

    def clone(self) -> EnvMetaData:
        """A deep copy.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> meta = EnvMetaData.metadata_from_env(CartPoleEnv())
            >>> copy = meta.clone()
            >>> copy == meta, copy.specs is meta.specs
            (True, False)
        """
        return EnvMetaData(
            self.tensordict.clone(),
            self.specs.clone(),
            self.batch_size,
            self.env_str,
            self.device,
            self.batch_locked,
            self.worker_refusal,
            self.supports_set_state,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EnvMetaData):
            return NotImplemented
        return self.batch_size == other.batch_size and self.device == other.device and self.specs == other.specs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"EnvMetaData(env_str={self.env_str.splitlines()[0]!r}, batch_size={list(self.batch_size)}, "
            f"device={self.device}, batch_locked={self.batch_locked})"
        )


def get_env_metadata(env_or_fn: EnvBase | Callable[..., EnvBase], kwargs: dict | None = None) -> EnvMetaData:
    """Returns the :class:`EnvMetaData` of an env, or of the env a factory builds.

    A factory is called once with ``kwargs``; the env it returns is closed before returning,
    so no env is kept alive. An :class:`~gpusim.envs.batched.EnvCreator` without extra kwargs
    answers from the metadata it already holds.

    Args:
        env_or_fn: an ``EnvBase`` instance or a callable returning one.
        kwargs: keyword arguments for the factory.

    Raises:
        TypeError: when ``env_or_fn`` is neither an env nor a callable, or the factory does not
            return an ``EnvBase``.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> get_env_metadata(CartPoleEnv, {"batch_size": [2]}).batch_size
        torch.Size([2])
    """
    from gpusim.envs.common import EnvBase

    if isinstance(env_or_fn, EnvBase):
        if kwargs:
            raise ValueError("get_env_metadata: kwargs can only be given with a factory, not an env")
        return EnvMetaData.metadata_from_env(env_or_fn)
    if not callable(env_or_fn):
        raise TypeError(
            f"get_env_metadata expects an EnvBase or a callable returning one, got {type(env_or_fn).__name__}"
        )
    kwargs = {} if kwargs is None else dict(kwargs)
    cached = getattr(env_or_fn, "_gpusim_env_metadata", None)
    if cached is not None and not kwargs:
        return cached().clone()
    env = env_or_fn(**kwargs)
    if not isinstance(env, EnvBase):
        raise TypeError(f"the env factory {env_or_fn!r} returned a {type(env).__name__}, not a gpusim EnvBase")
    try:
        return EnvMetaData.metadata_from_env(env)
    finally:
        env.close()
