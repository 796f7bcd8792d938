"""Env ids and transform presets shared by ``gpusim bench``, ``gpusim check`` and ``gpusim compare``.

An env id is one of:

* a native id registered with :func:`gpusim.make` (``"CartPole-v1"``, ``"Pendulum-v1"``, ...):
  the batched tensor env with gymnasium's time limit;
* ``"gym:<gymnasium id>"``: :class:`~gpusim.envs.libs.GymEnv` over gymnasium's vector env;
* ``"vmas:<scenario>"``: :class:`~gpusim.envs.libs.VmasEnv` (e.g. ``"vmas:simple_spread"``).

Transform presets are named after the transform class and built with the arguments the fps
tables use (``CatFrames`` stacks 4 frames of the first observation key, ...), from
``gpusim.transforms`` or, for the TorchRL contender, from ``torchrl.envs`` with the same names
and arguments.

Examples:
    >>> ref = parse_env_id("vmas:simple_spread")
    >>> ref.kind, ref.name
    ('vmas', 'simple_spread')
    >>> env = build_env("CartPole-v1", num_envs=4, transforms=["RewardSum"], seed=0)
    >>> env.rollout(3, break_when_any_done=False)["next", "episode_reward"].shape
    torch.Size([4, 3, 1])
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import torch

from gpusim.registry import registered_ids

__all__ = [
    "EnvRef",
    "parse_env_id",
    "known_env_ids",
    "build_env",
    "TRANSFORM_PRESETS",
    "build_transforms",
    "check_transform_names",
]

_PREFIXES = {"gym": "gymnasium", "vmas": "vmas"}


@dataclasses.dataclass(frozen=True)
class EnvRef:
    """A parsed env id: ``kind`` is ``"native"``, ``"gym"`` or ``"vmas"``; ``name`` the id or
    scenario inside that kind.

    Examples:
        >>> EnvRef("native", "CartPole-v1").label
        'CartPole-v1'
        >>> EnvRef("gym", "CartPole-v1").label
        'gym:CartPole-v1'
    """

    kind: str
    name: str

    @property
    def label(self) -> str:
        """The id as the user writes it.

        Examples:
            >>> EnvRef("native", "CartPole-v1").label, EnvRef("vmas", "simple_spread").label
            ('CartPole-v1', 'vmas:simple_spread')
        """
        return self.name if self.kind == "native" else f"{self.kind}:{self.name}"


def known_env_ids() -> list[str]:
    """The native ids, then the forms of the wrapped ids.

    Examples:
        >>> known_env_ids()[0], known_env_ids()[-1]
        ('CartPole-v1', 'vmas:<scenario>')
    """
    return [*registered_ids(), "gym:<gymnasium id>", "vmas:<scenario>"]


def parse_env_id(env_id: str) -> EnvRef:
    """Parses an env id (see the module docstring).

    Args:
        env_id: ``"CartPole-v1"``, ``"gym:Acrobot-v1"``, ``"vmas:simple_spread"``, ...

    Raises:
        ValueError: naming the id and listing the known ones, if it is neither a native id nor
            a ``gym:``/``vmas:`` id with a name.

    Examples:
        >>> parse_env_id("Pendulum-v1")
        EnvRef(kind='native', name='Pendulum-v1')
        >>> parse_env_id("Pong")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown env id 'Pong'; known ids: ['CartPole-v1', 'Pendulum-v1', ..., 'MinAtar/Breakout-v1', ..., 'gym:<gymnasium id>', 'vmas:<scenario>']
    """
    if not isinstance(env_id, str):
        raise ValueError(f"an env id must be a str, got {env_id!r}")
    prefix, sep, name = env_id.partition(":")
    if sep and prefix in _PREFIXES:
        if not name:
            raise ValueError(f"env id {env_id!r} names no {prefix} env after the colon")
        return EnvRef(prefix, name)
    if env_id in registered_ids():
        return EnvRef("native", env_id)
    raise ValueError(f"unknown env id {env_id!r}; known ids: {known_env_ids()}")


def _require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ImportError(f"{what} needs {module}, which is not installed: pip install {module}")


def build_env(
    env_id: str | EnvRef,
    num_envs: int,
    device: torch.device | str | None = None,
    seed: int | None = 0,
    transforms: Sequence[str] = (),
):
    """Builds the gpusim env named by ``env_id``, with the named transform presets appended.

    Args:
        env_id: an env id (see the module docstring) or a parsed :class:`EnvRef`.
        num_envs: the batch size (a positive int).
        device: where the env's data lives (``None``: CPU).
        seed: the env's seed.
        transforms: names from :data:`TRANSFORM_PRESETS`, appended in order.

    Returns:
        The env: ``make(...)`` for native ids (a ``TransformedEnv`` with the time limit),
        ``GymEnv``/``VmasEnv`` for wrapped ids, inside a ``TransformedEnv`` when transforms are
        given.

    Raises:
        ValueError: for an unknown env id, transform name or a bad ``num_envs``.
        ImportError: when the wrapped library is not installed (saying what to install).

    Examples:
        >>> build_env("Acrobot-v1", num_envs=2).batch_size
        torch.Size([2])
    """
    ref = env_id if isinstance(env_id, EnvRef) else parse_env_id(env_id)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    check_transform_names(transforms)
    if ref.kind == "native":
        from gpusim.registry import make

        env = make(ref.name, num_envs=num_envs, device=device, seed=seed)
    elif ref.kind == "gym":
        _require("gymnasium", f"env id {ref.label!r}")
        from gpusim.envs.libs import GymEnv

        env = GymEnv(ref.name, num_envs=num_envs, device=device)
        if seed is not None:
            env.set_seed(seed)
    else:
        _require("vmas", f"env id {ref.label!r}")
        from gpusim.envs.libs import VmasEnv

        env = VmasEnv(ref.name, num_envs=num_envs, device=device, seed=seed)
    if not transforms:
        return env
    from gpusim import transforms as gs_transforms
    from gpusim.transforms import TransformedEnv

    if not isinstance(env, TransformedEnv):
        env = TransformedEnv(env)
    for t in build_transforms(transforms, gs_transforms, env.observation_keys[0]):
        env.append_transform(t)
    return env


def _cat_frames(module: ModuleType, obs_key: Any):
    return module.CatFrames(4, dim=-1, in_keys=[obs_key])


# name -> builder(module, first observation key): the same arguments for gpusim and torchrl
TRANSFORM_PRESETS: dict[str, Callable[[ModuleType, Any], Any]] = {
    "RewardSum": lambda m, key: m.RewardSum(),
    "InitTracker": lambda m, key: m.InitTracker(),
    "CatFrames": _cat_frames,
    "VecNorm": lambda m, key: m.VecNorm(in_keys=[key]),
    "ObservationNorm": lambda m, key: m.ObservationNorm(loc=0.0, scale=1.0, in_keys=[key]),
    "RewardScaling": lambda m, key: m.RewardScaling(loc=0.0, scale=0.5),
    "RewardClipping": lambda m, key: m.RewardClipping(-1.0, 1.0),
    "DoubleToFloat": lambda m, key: m.DoubleToFloat(),
}
"""Transform presets by name (``StepCounter`` is not one: :func:`gpusim.make` already adds the
time limit as a ``StepCounter``)."""


def check_transform_names(names: Sequence[str]) -> None:
    """Raises ``ValueError`` naming the first unknown preset and listing the known ones.

    Examples:
        >>> check_transform_names(["VecNorm"])
        >>> check_transform_names(["Vecnorm"])
        Traceback (most recent call last):
        ...
        ValueError: unknown transform 'Vecnorm'; known transforms: ['CatFrames', 'DoubleToFloat', 'InitTracker', 'ObservationNorm', 'RewardClipping', 'RewardScaling', 'RewardSum', 'VecNorm']
    """
    for name in names:
        if name not in TRANSFORM_PRESETS:
            hint = " (make() already adds the time limit as a StepCounter)" if name == "StepCounter" else ""
            raise ValueError(f"unknown transform {name!r}{hint}; known transforms: {sorted(TRANSFORM_PRESETS)}")


def build_transforms(names: Sequence[str], module: ModuleType, obs_key: Any) -> list:
    """Builds the named presets from ``module`` (``gpusim.transforms`` or ``torchrl.envs``).

    Args:
        names: preset names (see :data:`TRANSFORM_PRESETS`).
        module: the module holding the transform classes.
        obs_key: the observation key the observation transforms read.

    Examples:
        >>> import gpusim.transforms as T
        >>> [type(t).__name__ for t in build_transforms(["CatFrames", "VecNorm"], T, "observation")]
        ['CatFrames', 'VecNorm']
    """
    check_transform_names(names)
    return [TRANSFORM_PRESETS[name](module, obs_key) for name in names]
