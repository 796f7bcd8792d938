"""``EnvCreator``: a picklable env factory that shares statistics across workers.

``EnvCreator(fn, kwargs)`` builds one env in the calling process when it is created: that env
gives the metadata (specs) and the *shared state*: the tensors of every module of the env that
opts in to cross-worker sharing, moved to shared memory. Every env the creator builds afterwards
(in any worker process) adopts these tensors, so running statistics (``VecNorm``) are common to
all workers.

Opting in: a module (transform) of the env defines

* ``_shared_state() -> dict[str, Tensor | TensorDictBase | str]``: the live tensors to share
  (strings, such as the path of a file every process maps, are passed as they are), and
* ``_load_shared_state(state) -> None``: adopt the given tensors in place of its own (no copy).

``VecNorm`` (statistics in its ``stats`` tensordict, adopted through ``_set_td``) is recognised
as such without defining them.

The creator pickles its factory with cloudpickle (or a small fallback), so lambdas and
closures can be sent to spawned workers; the shared tensors travel by shared-memory handle.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> creator = EnvCreator(lambda: CartPoleEnv(batch_size=[2]))
    >>> creator.meta_data.batch_size
    torch.Size([2])
    >>> import pickle
    >>> pickle.loads(pickle.dumps(creator))().batch_size
    torch.Size([2])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torch import nn

from gpusim.envs.batched import _serialize
from gpusim.envs.batched.metadata import EnvMetaData

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["EnvCreator", "collect_shared_state", "load_shared_state"]

SharedState = dict  # module name -> {entry name -> shared tensor / tensordict}


def _share(value: Any, where: str) -> Any:
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":  # CUDA tensors are shared by IPC handle as they are
            return value
        return value.share_memory_()
    if isinstance(value, TensorDictBase):
        return value.share_memory_()
    if isinstance(value, str):  # e.g. the path of a file every process maps
        return value
    raise TypeError(f"{where}._shared_state() must return tensors, tensordicts or strings, got {type(value).__name__}")


def _protocol(module: nn.Module) -> tuple[Callable[[], dict], Callable[[dict], None]] | None:
    """The ``(get, load)`` shared-state functions of ``module``, or ``None`` if it shares nothing.

    Modules implement ``_shared_state``/``_load_shared_state``; transforms that keep their
    running statistics in a ``stats`` tensordict adopted through ``_set_td`` (``VecNorm``) are
    recognised without them.
    """
    cls = type(module)
    if callable(getattr(cls, "_shared_state", None)) and callable(getattr(cls, "_load_shared_state", None)):
        return module._shared_state, module._load_shared_state
    if isinstance(getattr(cls, "stats", None), property) and callable(getattr(cls, "_set_td", None)):
        if isinstance(module.stats, TensorDictBase):
            return (lambda: {"stats": module.stats}), (lambda state: module._set_td(state["stats"]))
    return None


def collect_shared_state(env: nn.Module) -> SharedState:
    """Moves the opted-in state of every module of ``env`` to shared memory and returns it.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> collect_shared_state(CartPoleEnv())
        {}
    """
    state: SharedState = {}
    for name, module in env.named_modules():
        protocol = _protocol(module)
        if protocol is None:
            continue
        entries = protocol[0]()
        if not isinstance(entries, dict):
            raise TypeError(f"{type(module).__name__}._shared_state() must return a dict")
        where = f"{type(module).__name__} ({name or 'root'})"
        state[name] = {k: _share(v, where) for k, v in entries.items()}
    return state


def load_shared_state(env: nn.Module, state: SharedState) -> None:
    """Makes the modules of ``env`` adopt the shared tensors of :func:`collect_shared_state`.

    Args:
        env: a freshly built env of the same structure as the one the state was collected from.
        state: what :func:`collect_shared_state` returned.

    Raises:
        KeyError: when ``env`` has no module of a shared name (the factory built a different
            structure from the one it built in the main process).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv, VecNorm
        >>> make = lambda: TransformedEnv(CartPoleEnv(batch_size=[2]), VecNorm(in_keys=["observation"]))
        >>> state = collect_shared_state(make())
        >>> a, b = make(), make()
        >>> load_shared_state(a, state)
        >>> load_shared_state(b, state)
        >>> a.transform.stats["observation_sum"] is b.transform.stats["observation_sum"]
        True
    """
    if not state:
        return
    modules = dict(env.named_modules())
    for name, entries in state.items():
        module = modules.get(name)
        protocol = None if module is None else _protocol(module)
        if protocol is None:
            raise KeyError(
                f"the env built by the factory has no module {name!r} able to load shared state "
                f"(modules: {sorted(modules)})"
            )
        protocol[1](entries)


def _rebuild(payload: bytes, meta_data: EnvMetaData, shared_state: SharedState, share_memory: bool) -> EnvCreator:
    create_env_fn, create_env_kwargs = _serialize.loads(payload)
    creator = EnvCreator.__new__(EnvCreator)
    creator._init_from(create_env_fn, create_env_kwargs, meta_data, shared_state, share_memory)
    return creator


class EnvCreator:
    """Wraps an env factory so that it pickles and shares statistics across workers.

    Args:
        create_env_fn: a callable returning a gpusim ``EnvBase`` (lambdas are fine).
        create_env_kwargs: keyword arguments for ``create_env_fn``.
        share_memory: move the opted-in module state to shared memory and make every env
            built by the creator use it (see the module docstring).
        **kwargs: more keyword arguments for ``create_env_fn`` (``create_env_kwargs`` entries
            win over them).

    Raises:
        TypeError: ``create_env_fn`` is not callable, or does not return an ``EnvBase``.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> creator = EnvCreator(PendulumEnv, {"g": 9.81})
        >>> creator().g
        9.81
        >>> EnvCreator(PendulumEnv, g=3.7)().g  # the factory's kwargs as keywords
        3.7
    """

    def __init__(
        self,
        create_env_fn: Callable[..., EnvBase],
        create_env_kwargs: dict | None = None,
        share_memory: bool = True,
        **kwargs: Any,
    ) -> None:
        from gpusim.envs.common import EnvBase

        if create_env_kwargs is not None and not isinstance(create_env_kwargs, dict):
            raise TypeError(f"create_env_kwargs must be a dict, got {type(create_env_kwargs).__name__}")
        create_env_kwargs = {**kwargs, **(create_env_kwargs or {})}
        if isinstance(create_env_fn, EnvCreator):
            create_env_kwargs = {**create_env_fn.create_env_kwargs, **create_env_kwargs}
            create_env_fn = create_env_fn.create_env_fn
        if not callable(create_env_fn):
            raise TypeError(f"create_env_fn must be callable, got {type(create_env_fn).__name__}")
        kwargs = dict(create_env_kwargs)
        shadow_env = create_env_fn(**kwargs)
        if not isinstance(shadow_env, EnvBase):
            raise TypeError(
                f"the env factory {create_env_fn!r} returned a {type(shadow_env).__name__}, not a gpusim EnvBase"
            )
        try:
            meta_data = EnvMetaData.metadata_from_env(shadow_env)
            shared_state = collect_shared_state(shadow_env) if share_memory else {}
        finally:
            shadow_env.close()
        self._init_from(create_env_fn, kwargs, meta_data, shared_state, share_memory)

    def _init_from(
        self,
        create_env_fn: Callable[..., EnvBase],
        create_env_kwargs: dict,
        meta_data: EnvMetaData | None,
        shared_state: SharedState,
        share_memory: bool,
    ) -> None:
        self.create_env_fn = create_env_fn
        self.create_env_kwargs = create_env_kwargs
        self._meta_data = meta_data
        self._shared_state = shared_state
        self.share_memory = share_memory

    @property
    def meta_data(self) -> EnvMetaData:
        """The :class:`EnvMetaData` of the envs this creator builds (a variant's is read from
        one env built with its kwargs, on first use).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> EnvCreator(PendulumEnv, {"batch_size": [4]}).meta_data.batch_size
            torch.Size([4])
        """
        if self._meta_data is None:
            env = self.create_env_fn(**self.create_env_kwargs)
            try:
                self._meta_data = EnvMetaData.metadata_from_env(env)
            finally:
                env.close()
        return self._meta_data

    def _gpusim_env_metadata(self) -> EnvMetaData:
        return self.meta_data

    def make_variant(self, **kwargs: Any) -> EnvCreator:
        """A creator of the same factory with updated keyword arguments that shares this one's
        shared state (statistics, counters): e.g. workers with different settings whose
        ``VecNorm`` statistics are common.

        Args:
            **kwargs: entries that update a copy of :attr:`create_env_kwargs`.

        Returns:
            A new ``EnvCreator`` (this one is unchanged).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> light = EnvCreator(PendulumEnv, g=9.81)
            >>> heavy = light.make_variant(g=20.0)
            >>> light().g, heavy().g, heavy.shared_state is light.shared_state
            (9.81, 20.0, True)
        """
        out = EnvCreator.__new__(EnvCreator)
        out._init_from(
            self.create_env_fn, {**self.create_env_kwargs, **kwargs}, None, self._shared_state, self.share_memory
        )
        return out

    @property
    def shared_state(self) -> SharedState:
        """The shared-memory tensors every built env adopts (module name -> entries).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv, VecNorm
            >>> creator = EnvCreator(lambda: TransformedEnv(CartPoleEnv(), VecNorm(in_keys=["observation"], decay=1.0)))
            >>> list(creator.shared_state)  # the VecNorm module's statistics
            ['transform']
            >>> env_a, env_b = creator(), creator()
            >>> _ = env_a.rollout(3)  # updates the statistics every env of the creator reads
            >>> env_b.transform.stats["observation_count"].item()  # 1 reset + 3 steps
            4.0
        """
        return self._shared_state

    def __call__(self, **kwargs: Any) -> EnvBase:
        """Builds an env (``kwargs`` update the creator's ``create_env_kwargs``)."""
        env = self.create_env_fn(**{**self.create_env_kwargs, **kwargs})
        if self.share_memory:
            load_shared_state(env, self._shared_state)
        return env

    def __reduce__(self) -> tuple:
        payload = _serialize.dumps((self.create_env_fn, self.create_env_kwargs))
        return _rebuild, (payload, self.meta_data, self._shared_state, self.share_memory)

    def __repr__(self) -> str:
        return f"EnvCreator({self.meta_data.env_str.splitlines()[0]}, kwargs={self.create_env_kwargs})"
