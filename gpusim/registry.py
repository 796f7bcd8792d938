"""``make`` and ``register``: envs by id, with gymnasium's time limits.

Each registered id maps to an entry point (an env class, a callable or ``"module:attr"``), the
``max_episode_steps`` of its time limit (for the built-in native envs, the one gymnasium
registers) and default keyword arguments; :func:`register` adds ids. :func:`make` wraps the
env in ``TransformedEnv(env, StepCounter(max_steps=limit))`` so that episodes are truncated
exactly where gymnasium's ``TimeLimit`` would truncate them. Ids without a time limit
(``TicTacToe-v0``: a game ends within nine moves) give the env itself.

It lives at the top of the package because it composes two subpackages (native envs and
transforms); neither imports the other.

Examples:
    >>> env = make("CartPole-v1", num_envs=4, seed=0)
    >>> env.rollout(3, break_when_any_done=False)["next", "truncated"].shape
    torch.Size([4, 3, 1])
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch

from gpusim.envs.common import EnvBase
from gpusim.envs.native import (
    AcrobotEnv,
    CartPoleEnv,
    MountainCarContinuousEnv,
    MountainCarEnv,
    PendulumEnv,
    TicTacToeEnv,
)
from gpusim.envs.native.minatar import AsterixEnv, BreakoutEnv, FreewayEnv, SeaquestEnv, SpaceInvadersEnv
from gpusim.envs.native.mpe import SCENARIOS as _MPE_SCENARIOS
from gpusim.transforms import Compose, PixelRenderTransform, StepCounter, TransformedEnv

__all__ = ["make", "register", "registered_ids", "EnvEntry"]

_UNSET: Any = object()  # make()'s max_episode_steps: the registered limit


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """A registered id: its entry point, the ``max_episode_steps`` of its time limit (``None``: no
    time limit) and default keyword arguments.

    Args:
        entry_point: an env class, a callable returning an env, or ``"module:attr"`` (imported by
            the first :func:`make` that needs it).
        max_episode_steps: the ``StepCounter`` limit :func:`make` wraps the env in, or ``None``.
        defaults: keyword arguments given to the entry point (a call's own keyword arguments
            prevail).

    Examples:
        >>> EnvEntry(CartPoleEnv, 500).max_episode_steps
        500
        >>> EnvEntry("gpusim.envs.native:PendulumEnv", 200).env_cls.__name__
        'PendulumEnv'
    """

    entry_point: Any
    max_episode_steps: int | None
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def env_cls(self) -> Callable[..., Any]:
        """The entry point itself (a ``"module:attr"`` string imported).

        Examples:
            >>> EnvEntry("gpusim.envs.native:PendulumEnv", 200).env_cls.__name__
            'PendulumEnv'
        """
        if not isinstance(self.entry_point, str):
            return self.entry_point
        module, _, attr = self.entry_point.partition(":")
        try:
            target = importlib.import_module(module)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as err:
            raise ImportError(f"entry point {self.entry_point!r} could not be loaded: {err}") from err
        if not callable(target):
            raise TypeError(f"entry point {self.entry_point!r} is {target!r}, which is not callable")
        return target


_REGISTRY: dict[str, EnvEntry] = {
    "CartPole-v1": EnvEntry(CartPoleEnv, 500),
    "Pendulum-v1": EnvEntry(PendulumEnv, 200),
    "MountainCar-v0": EnvEntry(MountainCarEnv, 200),
    "MountainCarContinuous-v0": EnvEntry(MountainCarContinuousEnv, 999),
    "Acrobot-v1": EnvEntry(AcrobotEnv, 500),
    "TicTacToe-v0": EnvEntry(TicTacToeEnv, None),
    # the MPE scenarios (VMAS's horizon: ``max_steps=`` of the env, no time limit by default)
    **{f"MPE/{name}-v0": EnvEntry(cls, None) for name, cls in _MPE_SCENARIOS.items()},
}
# the ``minatar`` package's gymnasium ids (no time limit): -v0 the 6 actions, -v1 the minimal set
_MINATAR = {
    "Asterix": AsterixEnv,
    "Breakout": BreakoutEnv,
    "Freeway": FreewayEnv,
    "Seaquest": SeaquestEnv,
    "SpaceInvaders": SpaceInvadersEnv,
}
for _name, _cls in _MINATAR.items():
    _REGISTRY[f"MinAtar/{_name}-v0"] = EnvEntry(_cls, None, {"use_minimal_action_set": False})
    _REGISTRY[f"MinAtar/{_name}-v1"] = EnvEntry(_cls, None, {"use_minimal_action_set": True})

#: the arguments :func:`make` gives every entry point itself
_MAKE_ARGS = ("batch_size", "device", "seed")


def registered_ids() -> list[str]:
    """The ids :func:`make` knows, in registration order (the built-in ones first).

    Examples:
        >>> registered_ids()[:6]
        ['CartPole-v1', 'Pendulum-v1', 'MountainCar-v0', 'MountainCarContinuous-v0', 'Acrobot-v1', 'TicTacToe-v0']
        >>> "MinAtar/Breakout-v1" in registered_ids(), "MPE/simple_spread-v0" in registered_ids()
        (True, True)
    """
    return list(_REGISTRY)


def _check_limit(max_episode_steps: object) -> int | None:
    if max_episode_steps is not None and (
        isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) or max_episode_steps < 1
    ):
        raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
    return max_episode_steps


def _signature_kwargs(entry: Callable[..., Any]) -> tuple[set[str], bool]:
    """The keyword arguments ``entry`` accepts besides ``batch_size``/``device``/``seed``, and
    whether it takes ``**kwargs`` (then any name is accepted)."""
    target = entry.__init__ if isinstance(entry, type) else entry
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):  # a builtin without a signature: accept anything
        return set(), True
    names = {
        name
        for i, (name, p) in enumerate(params.items())
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and not (isinstance(entry, type) and i == 0)  # self
    }
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return names - set(_MAKE_ARGS), var_kw


def _check_entry_kwargs(where: str, entry: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Raise ``TypeError`` naming the keyword arguments ``entry`` does not take."""
    accepted, var_kw = _signature_kwargs(entry)
    unknown = sorted(set(kwargs) - accepted)
    if unknown and not var_kw:
        name = getattr(entry, "__name__", repr(entry))
        raise TypeError(
            f"{where} got unexpected keyword argument(s) {unknown}; it accepts num_envs, device, seed, "
            f"max_episode_steps, from_pixels, pixels_only and {name}'s keyword arguments {sorted(accepted)}"
        )


def register(env_id: str, entry_point: Any, *, max_episode_steps: int | None = None, **defaults: Any) -> None:
    """Registers ``env_id`` for :func:`make`.

    :func:`make` then calls ``entry_point(batch_size=..., device=..., seed=..., **defaults,
    **kwargs)`` and wraps the env in ``TransformedEnv(env, StepCounter(max_episode_steps))``
    when a time limit is given (truncation exactly where gymnasium's ``TimeLimit`` truncates).

    Args:
        env_id: the new id (e.g. ``"MyPendulum-v0"``).
        entry_point: an env class (e.g. a :class:`~gpusim.envs.native.NativeEnv` subclass), a
            callable taking ``batch_size``, ``device`` and ``seed`` keyword arguments and
            returning an env, or ``"module:attr"`` (imported by the first :func:`make`).

    Keyword Args:
        max_episode_steps: the time limit (``None``: none); :func:`make` may override it.
        **defaults: keyword arguments for the entry point (``make``'s own prevail).

    Raises:
        ValueError: ``env_id`` is already registered or not a non-empty string; a malformed
            ``"module:attr"``; a bad ``max_episode_steps``.
        TypeError: an entry point that is neither callable nor a string, or ``defaults`` it does
            not accept (named in the message).

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> register("MoonPendulum-v0", PendulumEnv, max_episode_steps=100, g=1.62)
        >>> env = make("MoonPendulum-v0", num_envs=2, seed=0)
        >>> env.base_env.g, env.transform.max_steps
        (1.62, 100)
        >>> register("MoonPendulum-v0", PendulumEnv)
        Traceback (most recent call last):
        ...
        ValueError: env id 'MoonPendulum-v0' is already registered (entry point PendulumEnv); pick another id
        >>> _ = _REGISTRY.pop("MoonPendulum-v0")  # (keep the doctest's registry clean)
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env_id must be a non-empty str, got {env_id!r}")
    if env_id in _REGISTRY:
        old = _REGISTRY[env_id].entry_point
        name = old if isinstance(old, str) else getattr(old, "__name__", repr(old))
        raise ValueError(f"env id {env_id!r} is already registered (entry point {name}); pick another id")
    if isinstance(entry_point, str):
        module, sep, attr = entry_point.partition(":")
        if not (sep and module and attr):
            raise ValueError(f"a string entry point must be 'module:attr', got {entry_point!r}")
    elif not callable(entry_point):
        raise TypeError(f"entry_point must be an env class, a callable or 'module:attr', got {entry_point!r}")
    else:
        _check_entry_kwargs(f"register({env_id!r})", entry_point, defaults)
    _REGISTRY[env_id] = EnvEntry(entry_point, _check_limit(max_episode_steps), dict(defaults))


def make(
    env_id: str,
    num_envs: int | None = None,
    device: torch.device | str | None = None,
    seed: int | None = None,
    *,
    max_episode_steps: Any = _UNSET,
    from_pixels: bool = False,
    pixels_only: bool = True,
    render_size: tuple[int, int] | None = None,
    **kwargs: Any,
) -> EnvBase:
    """Build the env registered as ``env_id``, with its time limit.

    Args:
        env_id: a gymnasium id: ``"CartPole-v1"``, ``"Pendulum-v1"``, ``"MountainCar-v0"``,
            ``"MountainCarContinuous-v0"`` or ``"Acrobot-v1"``; ``"TicTacToe-v0"``; a MinAtar
            id, ``"MinAtar/<Game>-v0"`` (6 actions) or ``"MinAtar/<Game>-v1"`` (minimal set); an
            MPE scenario ``"MPE/<scenario>-v0"`` (VMAS's keyword arguments: ``n_agents=3``,
            ``continuous_actions=False``, ``max_steps=100``...); or an id added with
            :func:`register`.
        num_envs: the batch size (``None``: an unbatched env, ``batch_size=[]``).
        device: where the data lives (``None``: CPU).
        seed: seed of the env's random numbers.
        max_episode_steps: overrides the registered time limit (``None``: no time limit), as
            gymnasium's ``make`` does.
        from_pixels: add the env's rendered frames (``[*B, H, W, 3]`` uint8, gymnasium's
            ``rgb_array`` frames, drawn on the env device) under ``"pixels"`` to every step and
            reset, through a :class:`~gpusim.transforms.PixelRenderTransform`.
        pixels_only: with ``from_pixels``, drop the vector ``"observation"`` (default ``True``,
            as ``GymEnv``); the ``"state"`` entry stays.
        render_size: with ``from_pixels``, the frame size ``(H, W)`` (e.g. ``(84, 84)``): the
            frames are drawn directly at that size (``env.render(td, size=...)``); ``None``: the
            env's own size.
        **kwargs: the env's keyword arguments (e.g. ``g=9.81`` for Pendulum-v1); they prevail
            over the defaults given to :func:`register`.

    Returns:
        ``TransformedEnv(env, StepCounter(max_steps=max_episode_steps))``, or the env itself for
        ids without a time limit; with ``from_pixels``, the ``PixelRenderTransform`` comes first.

    Raises:
        ValueError: if ``env_id`` is unknown (the message lists the known ids), or
            ``num_envs`` is not a positive int.
        TypeError: if a keyword argument is not a parameter of the env (named in the message,
            with the accepted ones).

    Examples:
        >>> env = make("Pendulum-v1", num_envs=8, g=9.81)
        >>> env.base_env.g
        9.81
        >>> make("TicTacToe-v0", num_envs=2).batch_size
        torch.Size([2])
        >>> make("CartPole-v1", max_episode_steps=50).transform.max_steps
        50
        >>> env = make("CartPole-v1", num_envs=4, from_pixels=True)
        >>> sorted(env.observation_spec.keys()), env.observation_spec["pixels"].shape
        (['pixels', 'step_count'], torch.Size([4, 400, 600, 3]))
        >>> make("CartPole-v1", num_envs=4, from_pixels=True, render_size=(64, 64)).observation_spec["pixels"].shape
        torch.Size([4, 64, 64, 3])
        >>> make("MinAtar/Breakout-v1", num_envs=2, sticky_action_prob=0.0).action_spec.n
        3
        >>> make("MPE/simple_spread-v0", num_envs=4, n_agents=2).group_map
        {'agents': ['agent_0', 'agent_1']}
    """
    entry = _REGISTRY.get(env_id)
    if entry is None:
        raise ValueError(f"Unknown env id {env_id!r}; known ids: {registered_ids()}")
    if num_envs is not None and (isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1):
        raise ValueError(f"num_envs must be a positive int or None, got {num_envs!r}")
    limit = entry.max_episode_steps if max_episode_steps is _UNSET else _check_limit(max_episode_steps)
    env_cls = entry.env_cls
    kwargs = {**entry.defaults, **kwargs}
    _check_entry_kwargs(f"make({env_id!r})", env_cls, kwargs)
    for name, flag in (("from_pixels", from_pixels), ("pixels_only", pixels_only)):
        if not isinstance(flag, bool):
            raise TypeError(f"make({env_id!r}): {name} must be a bool, got {flag!r}")
    if render_size is not None and not from_pixels:
        raise ValueError(f"make({env_id!r}): render_size={render_size!r} needs from_pixels=True")
    batch_size = [] if num_envs is None else [num_envs]
    env = env_cls(batch_size=batch_size, device=device, seed=seed, **kwargs)
    if not isinstance(env, EnvBase):
        raise TypeError(f"the entry point of {env_id!r} returned {type(env).__name__}, not an env (EnvBase)")
    transforms = [PixelRenderTransform(pixels_only=pixels_only, size=render_size)] if from_pixels else []
    if limit is not None:
        transforms.append(StepCounter(max_steps=limit))
    if not transforms:
        return env
    return TransformedEnv(env, transforms[0] if len(transforms) == 1 else Compose(*transforms))
