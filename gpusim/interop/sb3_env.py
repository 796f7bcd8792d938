"""A gpusim env as a Stable-Baselines3 ``VecEnv``: :class:`SB3VecEnv`, built by :func:`gpusim.to_sb3`.

Stable-Baselines3 (SB3) trains on its own vector-env API, not gymnasium's: ``reset() -> obs``,
``step(actions) -> (obs, rewards, dones, infos)`` with ``dones = terminated | truncated``, one
info dict per env, and for an env whose episode ended on this step:

* ``infos[i]["terminal_observation"]``: the last observation of the ended episode (the returned
  observation is already the first one of the next episode: SB3 auto-resets on the same step);
* ``infos[i]["TimeLimit.truncated"]``: ``True`` when the episode was cut by a time limit rather
  than terminated (SB3 bootstraps the value of those states).

:class:`SB3VecEnv` maps a gpusim env onto that API through the gymnasium view
(:class:`~gpusim.interop.gymnasium_env.GymnasiumVectorEnv` in ``same_step`` mode, which runs the
env's ``step_and_maybe_reset``): spaces, action encoding and observation conversion are that
view's. The gpusim env is one batched program, so ``get_attr``/``set_attr``/``env_method`` act on
it once and answer one value per requested index.

This module imports ``stable_baselines3``: use it through :func:`gpusim.to_sb3`, which says what
to install when it is missing.

Examples:
    >>> import gpusim as gs
    >>> from stable_baselines3.common.vec_env import VecMonitor
    >>> venv = VecMonitor(SB3VecEnv(gs.make("CartPole-v1", num_envs=4, seed=0)))
    >>> obs = venv.reset()
    >>> obs.shape, venv.action_space
    ((4, 4), Discrete(2))
    >>> obs, rewards, dones, infos = venv.step(venv.action_space.sample()[None].repeat(4, 0))
    >>> rewards.dtype, dones.dtype, len(infos)
    (dtype('float32'), dtype('bool'), 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn

from gpusim.envs._edits import edited
from gpusim.envs.common import EnvBase
from gpusim.interop.gymnasium_env import GymnasiumVectorEnv

__all__ = ["SB3VecEnv"]


class SB3VecEnv(VecEnv):
    """A gpusim env with one batch dim, seen as a Stable-Baselines3 ``VecEnv``.

    Args:
        env: the gpusim env, with one batch dim (``num_envs``), one reward per env and root
            ``done``/``terminated`` flags (``truncated`` when a time limit is set, as
            :func:`gpusim.make` does).
        observation_keys: the observation entries SB3 sees (default: those of
            :func:`gpusim.to_gymnasium`). One key gives its ``Box``/``Discrete`` space, several a
            ``Dict`` space (use SB3's ``MultiInputPolicy``).
        render_mode: ``None`` or ``"rgb_array"`` (frames from the ``render_key`` observation).
        render_key: the observation entry holding ``(num_envs, H, W, C)`` uint8 frames.
        compile: run each step as one compiled graph (``True`` or a dict of
            :class:`~gpusim.envs.compiled.CompiledRollout` arguments): the same data, several
            times faster at small batches, after a compilation (:attr:`compile_seconds`).

    Raises:
        TypeError, ValueError, KeyError: an env the gymnasium view cannot describe (see
            :class:`~gpusim.interop.gymnasium_env.GymnasiumVectorEnv`), each naming the value.

    Examples:
        >>> import numpy as np
        >>> import gpusim as gs
        >>> venv = SB3VecEnv(gs.make("CartPole-v1", num_envs=2, seed=0))
        >>> venv.seed(3)
        [3, 4]
        >>> first = venv.reset()
        >>> again = (venv.seed(3), venv.reset())[1]
        >>> bool((first == again).all())
        True
        >>> for _ in range(500):  # a fixed action ends every episode within a few dozen steps
        ...     obs, rewards, dones, infos = venv.step(np.zeros(2, dtype=np.int64))
        ...     if dones.any():
        ...         break
        >>> i = int(np.flatnonzero(dones)[0])
        >>> infos[i]["terminal_observation"].shape, infos[i]["TimeLimit.truncated"]
        ((4,), False)
    """

    def __init__(
        self,
        env: EnvBase,
        *,
        observation_keys: Any = None,
        render_mode: str | None = None,
        render_key: Any = "pixels",
        compile: bool | dict = False,
    ) -> None:
        self.gymnasium_env = GymnasiumVectorEnv(
            env,
            observation_keys=observation_keys,
            autoreset_mode="same_step",
            render_mode=render_mode,
            render_key=render_key,
            compile=compile,
        )
        self.gpusim_env = env
        self.render_mode = render_mode
        view = self.gymnasium_env
        super().__init__(view.num_envs, view.single_observation_space, view.single_action_space)
        self._actions: Any = None

    @property
    def compile_seconds(self) -> float:
        """Seconds spent compiling the step so far (``0.0`` without ``compile``).

        Examples:
            >>> import gpusim as gs
            >>> SB3VecEnv(gs.make("CartPole-v1", num_envs=2)).compile_seconds
            0.0
        """
        return self.gymnasium_env.compile_seconds

    # ------------------------------------------------------------------ SB3's stepping API
    def reset(self) -> VecEnvObs:
        """Resets every env; the seed given to :meth:`seed` (if any) is used once.

        gpusim seeds the whole batch with one seed: the first of the seeds SB3 stores
        (``seed + index``) seeds the env; each row draws its own stream from it.

        Examples:
            >>> import gpusim as gs
            >>> SB3VecEnv(gs.make("Pendulum-v1", num_envs=3, seed=0)).reset().shape
            (3, 3)
        """
        seed = self._seeds[0]
        obs, _ = self.gymnasium_env.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Stores the actions of the next :meth:`step_wait` (SB3's two-phase step).

        Examples:
            >>> import numpy as np
            >>> import gpusim as gs
            >>> venv = SB3VecEnv(gs.make("CartPole-v1", num_envs=2, seed=0))
            >>> _ = venv.reset()
            >>> venv.step_async(np.array([0, 1]))
            >>> venv.step_wait()[1]
            array([1., 1.], dtype=float32)
        """
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Steps every env with the stored actions; ``(obs, rewards, dones, infos)`` in SB3's form.

        Raises:
            RuntimeError: no actions were given (:meth:`step_async`) or :meth:`reset` was not called.

        Examples:
            >>> import numpy as np
            >>> import gpusim as gs
            >>> venv = SB3VecEnv(gs.make("Pendulum-v1", num_envs=2, seed=0))
            >>> _ = venv.reset()
            >>> for t in range(200):
            ...     obs, rewards, dones, infos = venv.step(np.zeros((2, 1), dtype=np.float32))
            >>> dones, infos[0]["TimeLimit.truncated"], infos[0]["terminal_observation"].shape
            (array([ True,  True]), True, (3,))
        """
        actions = self._actions
        if actions is None:
            raise RuntimeError("step_wait(): no actions; call step(actions) (or step_async first)")
        self._actions = None
        obs, rewards, terminated, truncated, extras = self.gymnasium_env.step(actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final = extras["final_obs"]
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = final[i]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Closes the gpusim env.

        Examples:
            >>> import gpusim as gs
            >>> venv = SB3VecEnv(gs.make("CartPole-v1", num_envs=2))
            >>> venv.close(); venv.gpusim_env.is_closed
            True
        """
        self.gymnasium_env.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One frame per env (``render_mode="rgb_array"``), else ``None`` per env.

        Examples:
            >>> import gpusim as gs
            >>> SB3VecEnv(gs.make("CartPole-v1", num_envs=2)).get_images()
            [None, None]
        """
        frames = self.gymnasium_env.render()
        return list(frames) if frames is not None else [None] * self.num_envs

    # ------------------------------------------------------------------ attributes and methods
    def _target(self, attr_name: str, owner: bool = False) -> Any:
        """The object whose ``attr_name`` SB3 reads: the gpusim env (which forwards to its base env
        through transforms), else the gymnasium view. With ``owner``, the object that holds the
        attribute itself (the base env for a physical constant), so that setting it takes effect."""
        env = self.gpusim_env
        if owner:
            node = env
            while node is not None:
                if attr_name in vars(node) or hasattr(type(node), attr_name):
                    return node
                inner = getattr(node, "base_env", None)  # a TransformedEnv's wrapped env; None at the bottom
                node = inner if inner is not node else None
        for candidate in (env, self.gymnasium_env):
            if hasattr(candidate, attr_name):
                return candidate
        raise AttributeError(
            f"neither the gpusim env ({type(env).__name__}) nor its gymnasium view has an attribute {attr_name!r}"
        )

    def _count(self, indices: VecEnvIndices) -> int:
        return len(list(self._get_indices(indices)))

    def has_attr(self, attr_name: str) -> bool:
        """Whether the gpusim env (or its gymnasium view) has ``attr_name``.

        Examples:
            >>> import gpusim as gs
            >>> SB3VecEnv(gs.make("Pendulum-v1", num_envs=2)).has_attr("g")
            True
        """
        try:
            self._target(attr_name)
        except AttributeError:
            return False
        return True

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute, once per requested env (the batch shares one env object).

        A per-env tensor attribute (a ``[num_envs]`` tensor) answers each env's own value.

        Examples:
            >>> import gpusim as gs
            >>> SB3VecEnv(gs.make("Pendulum-v1", num_envs=3, g=9.81)).get_attr("g", indices=[0, 2])
            [9.81, 9.81]
        """
        value = getattr(self._target(attr_name), attr_name)
        rows = list(self._get_indices(indices))
        if _per_env(value, self.num_envs):
            return [value[i] for i in rows]
        return [value] * len(rows)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Sets the attribute of the gpusim env (for every env: the batch shares one env object).

        Raises:
            ValueError: ``indices`` selects only some envs (the envs share one object; give a
                ``[num_envs]`` tensor value instead where the env supports per-env values).

        Examples:
            >>> import gpusim as gs
            >>> venv = SB3VecEnv(gs.make("Pendulum-v1", num_envs=2))
            >>> venv.set_attr("g", 3.7); venv.get_attr("g")
            [3.7, 3.7]
        """
        if self._count(indices) != self.num_envs:
            raise ValueError(
                f"set_attr({attr_name!r}, indices={indices!r}): the {self.num_envs} envs share one gpusim env, so an "
                "attribute is set for all of them; pass indices=None"
            )
        setattr(self._target(attr_name, owner=True), attr_name, value)
        edited()  # (an env or transform counts its own edits; the view's attributes too)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Calls the gpusim env's method once; its result is answered once per requested env.

        Examples:
            >>> import gpusim as gs
            >>> venv = SB3VecEnv(gs.make("CartPole-v1", num_envs=2))
            >>> venv.env_method("numel")
            [2, 2]
        """
        result = getattr(self._target(method_name), method_name)(*method_args, **method_kwargs)
        edited()  # the method may have changed the env: a compiled step checks Dynamo's guards again
        return [result] * self._count(indices)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """``False`` per env: gpusim envs are not wrapped in gymnasium wrappers.

        Examples:
            >>> import gymnasium as gym
            >>> import gpusim as gs
            >>> SB3VecEnv(gs.make("CartPole-v1", num_envs=2)).env_is_wrapped(gym.Wrapper)
            [False, False]
        """
        return [False] * self._count(indices)


def _per_env(value: Any, n: int) -> bool:
    """Whether ``value`` holds one entry per env (a ``[num_envs, ...]`` tensor or array)."""
    return isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim >= 1 and value.shape[0] == n
