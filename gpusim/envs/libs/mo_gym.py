"""``MOGymWrapper`` and ``MOGymEnv``: `MO-Gymnasium <https://mo-gymnasium.farama.org>`_
multi-objective envs: gymnasium envs whose reward is a vector, one entry per objective.

Everything is :class:`~gpusim.envs.libs.gym.GymWrapper`'s (observations, actions, done flags,
vector envs, ``frame_skip``, the device edge) except the reward: its spec comes from the env's
``reward_space`` (``(*B, n_objectives)``, float32) and each step's reward vector is converted
once, as TorchRL's ``MOGymWrapper`` does.

Examples:
    >>> env = MOGymEnv("deep-sea-treasure-v0")
    >>> env.reward_spec.shape
    torch.Size([2])
    >>> env.rollout(3, break_when_any_done=False)["next", "reward"].shape
    torch.Size([3, 2])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs.gym import GymWrapper
from gpusim.specs import Bounded, Unbounded

__all__ = ["MOGymWrapper", "MOGymEnv"]


def _import_mo_gym(what: str) -> Any:
    return import_optional("mo_gymnasium", "mo-gymnasium", extra="mo_gymnasium", what=what)


def _reward_space(env: Any) -> Any:
    for target in (env, getattr(env, "unwrapped", None)):
        for name in ("single_reward_space", "reward_space"):
            space = getattr(target, name, None)
            if space is not None:
                return space
    if hasattr(env, "get_attr"):  # a vector env of MO envs
        return env.get_attr("reward_space")[0]
    raise TypeError(f"the env {type(env).__name__} has no reward_space: not a MO-Gymnasium env")


class MOGymWrapper(GymWrapper):
    """Wraps a MO-Gymnasium env (single or vector): :class:`GymWrapper` with a vector reward.

    Args:
        env: the MO-Gymnasium env (``mo_gymnasium.make(...)``, or an ``MOSyncVectorEnv``).
        **kwargs: :class:`GymWrapper`'s arguments.

    Raises:
        TypeError: the env has no ``reward_space``.

    Examples:
        >>> import mo_gymnasium as mo_gym
        >>> env = MOGymWrapper(mo_gym.make("deep-sea-treasure-v0"), categorical_action_encoding=True)
        >>> env.rand_step(env.reset())["next", "reward"].shape
        torch.Size([2])
    """

    def __init__(self, env: Any = None, **kwargs: Any) -> None:
        _import_mo_gym(type(self).__name__)
        space = _reward_space(env)
        super().__init__(env, **kwargs)
        shape = (*self.batch_size, *space.shape)
        self.__dict__["_reward_shape"] = shape
        low, high = np.asarray(space.low, dtype=np.float32), np.asarray(space.high, dtype=np.float32)
        if np.isfinite(low).all() and np.isfinite(high).all():
            spec = Bounded(
                torch.as_tensor(low).expand(shape), torch.as_tensor(high).expand(shape), shape=shape, device=self.device
            )
        else:
            spec = Unbounded(shape, device=self.device)
        self.reward_spec = spec

    def _reward_to_torch(self, reward: Any) -> torch.Tensor:
        return torch.from_numpy(np.array(reward, dtype=np.float32).reshape(self._reward_shape))


class MOGymEnv(MOGymWrapper):
    """Builds a MO-Gymnasium env by id (``mo_gymnasium.make``) and wraps it.

    Args:
        env_name: the id (``"deep-sea-treasure-v0"``, ``"mo-mountaincar-v0"``, ...).
        num_envs: ``0`` for one env; ``N > 0`` for an ``MOSyncVectorEnv`` of ``N`` copies.
        **kwargs: :class:`GymWrapper`'s arguments (``categorical_action_encoding``,
            ``from_pixels``, ``frame_skip``, ``device``) and ``mo_gymnasium.make`` keyword arguments.

    Raises:
        ValueError: an unknown id (gymnasium's error names it), a negative ``num_envs``.
        ImportError: mo-gymnasium is missing (saying ``pip install mo-gymnasium``).

    Examples:
        >>> env = MOGymEnv("deep-sea-treasure-v0", num_envs=3)
        >>> env.rollout(2, break_when_any_done=False)["next", "reward"].shape
        torch.Size([3, 2, 2])
    """

    _WRAPPER_ARGS = (
        "categorical_action_encoding",
        "from_pixels",
        "pixels_only",
        "frame_skip",
        "device",
        "batch_size",
        "allow_done_after_reset",
    )

    def __init__(self, env_name: str, num_envs: int = 0, **kwargs: Any) -> None:
        mo_gym = _import_mo_gym("MOGymEnv")
        if not isinstance(num_envs, int) or num_envs < 0:
            raise ValueError(f"num_envs must be a non-negative int, got {num_envs!r}")
        wrapper_kwargs = {k: kwargs.pop(k) for k in self._WRAPPER_ARGS if k in kwargs}
        if wrapper_kwargs.get("from_pixels"):
            kwargs.setdefault("render_mode", "rgb_array")
        try:
            if num_envs:
                from mo_gymnasium.wrappers.vector import MOSyncVectorEnv

                env = MOSyncVectorEnv([lambda: mo_gym.make(env_name, **kwargs) for _ in range(num_envs)])
            else:
                env = mo_gym.make(env_name, **kwargs)
        except TypeError as err:
            raise TypeError(
                f"MOGymEnv({env_name!r}): the env rejected the keyword arguments {sorted(kwargs)}: {err}"
            ) from err
        self.__dict__["env_name"] = env_name
        super().__init__(env, **wrapper_kwargs)

    def __repr__(self) -> str:
        return f"MOGymEnv(env={self.env_name!r}, batch_size={list(self.batch_size)}, device={self.device})"
