"""``make``: native envs by id, with gymnasium's time limits.

Each registered id maps to a native env class and the ``max_episode_steps`` gymnasium registers
for it; :func:`make` wraps the env in ``TransformedEnv(env, StepCounter(max_steps=limit))`` so
that episodes are truncated exactly where gymnasium's ``TimeLimit`` would truncate them. Ids
without a time limit (``TicTacToe-v0``: a game ends within nine moves) give the env itself.

It lives at the top of the package because it composes two subpackages (native envs and
transforms); neither imports the other.

Examples:
    >>> env = make("CartPole-v1", num_envs=4, seed=0)
    >>> env.rollout(3, break_when_any_done=False)["next", "truncated"].shape
    torch.Size([4, 3, 1])
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch

from gpusim.envs.native import (
    AcrobotEnv,
    CartPoleEnv,
    MountainCarContinuousEnv,
    MountainCarEnv,
    PendulumEnv,
    TicTacToeEnv,
)
from gpusim.envs.common import EnvBase
from gpusim.envs.native.mpe import SCENARIOS as _MPE_SCENARIOS
from gpusim.transforms import StepCounter, TransformedEnv

__all__ = ["make", "registered_ids", "EnvEntry"]


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """A registered id: the native class and gymnasium's ``max_episode_steps`` (``None``: no
    time limit).

    Examples:
        >>> EnvEntry(CartPoleEnv, 500).max_episode_steps
        500
    """

    env_cls: type
    max_episode_steps: int | None


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


def registered_ids() -> list[str]:
    """The ids :func:`make` knows.

    Examples:
        >>> registered_ids()[:6]
        ['CartPole-v1', 'Pendulum-v1', 'MountainCar-v0', 'MountainCarContinuous-v0', 'Acrobot-v1', 'TicTacToe-v0']
        >>> "MPE/simple_spread-v0" in registered_ids()
        True
    """
    return list(_REGISTRY)


def _env_kwargs(env_cls: type) -> set[str]:
    params = inspect.signature(env_cls.__init__).parameters
    return {name for name, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}


def make(
    env_id: str,
    num_envs: int | None = None,
    device: torch.device | str | None = None,
    seed: int | None = None,
    **kwargs: Any,
) -> EnvBase:
    """Build the native env registered as ``env_id``, with gymnasium's time limit.

    Args:
        env_id: a gymnasium id: ``"CartPole-v1"``, ``"Pendulum-v1"``, ``"MountainCar-v0"``,
            ``"MountainCarContinuous-v0"`` or ``"Acrobot-v1"``; ``"TicTacToe-v0"``; or an MPE
            scenario ``"MPE/<scenario>-v0"`` (VMAS's keyword arguments: ``n_agents=3``,
            ``continuous_actions=False``, ``max_steps=100``...).
        num_envs: the batch size (``None``: an unbatched env, ``batch_size=[]``).
        device: where the data lives (``None``: CPU).
        seed: seed of the env's reset noise.
        **kwargs: the env's physical constants (e.g. ``g=9.81`` for Pendulum-v1).

    Returns:
        ``TransformedEnv(env, StepCounter(max_steps=max_episode_steps))``, or the env itself for
        ids without a time limit.

    Raises:
        ValueError: if ``env_id`` is unknown (the message lists the known ids), or
            ``num_envs`` is not a positive int.
        TypeError: if a keyword argument is not a parameter of the env (named in the message).

    Examples:
        >>> env = make("Pendulum-v1", num_envs=8, g=9.81)
        >>> env.base_env.g
        9.81
        >>> make("TicTacToe-v0", num_envs=2).batch_size
        torch.Size([2])
        >>> make("MPE/simple_spread-v0", num_envs=4, n_agents=2).group_map
        {'agents': ['agent_0', 'agent_1']}
    """
    entry = _REGISTRY.get(env_id)
    if entry is None:
        raise ValueError(f"Unknown env id {env_id!r}; known ids: {registered_ids()}")
    if num_envs is not None and (isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1):
        raise ValueError(f"num_envs must be a positive int or None, got {num_envs!r}")
    unknown = sorted(set(kwargs) - _env_kwargs(entry.env_cls))
    if unknown:
        raise TypeError(
            f"make({env_id!r}) got unexpected keyword argument(s) {unknown}; "
            f"{entry.env_cls.__name__} accepts {sorted(_env_kwargs(entry.env_cls))}"
        )
    batch_size = [] if num_envs is None else [num_envs]
    env = entry.env_cls(batch_size=batch_size, device=device, seed=seed, **kwargs)
    if entry.max_episode_steps is None:
        return env
    return TransformedEnv(env, StepCounter(max_steps=entry.max_episode_steps))
