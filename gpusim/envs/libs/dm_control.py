"""``DMControlWrapper`` and ``DMControlEnv``: `DeepMind Control Suite
<https://github.com/google-deepmind/dm_control>`_ tasks as gpusim envs.

Layout (TorchRL's documented one): the env has ``batch_size=[]``; every entry of the task's
observation dict keeps its name (``"position"``, ``"velocity"``, ...) with its ``dm_env`` dtype
(float64 for the suite) and shape (scalars become ``(1,)``); ``reward`` is ``(1,)`` in the reward
spec's dtype; the action is ``Bounded`` by the task's action spec. ``done``, ``terminated`` and
``truncated`` are ``(1,)``: a ``LAST`` time step with discount 1 is a truncation (time limit),
otherwise a termination. ``from_pixels=True`` adds the rendered frame under ``"pixels"``
(``uint8``, ``(H, W, 3)``; ``pixels_only=True`` drops the state entries). ``frame_skip`` repeats an
action, sums the rewards and stops at the end of an episode.

Rendering headless: when ``MUJOCO_GL`` is unset and there is no display, the first import sets
``MUJOCO_GL=egl`` (MuJoCo's offscreen backend) before ``dm_control`` is loaded.

Specs are converted once from the ``dm_env`` specs; a step copies each observation array once
(``torch.from_numpy``) and, with a non-CPU ``device``, moves the output with one packed transfer.

Examples:
    >>> env = DMControlEnv("cartpole", "balance", seed=0)
    >>> sorted(env.observation_spec.keys())
    ['position', 'velocity']
    >>> td = env.rand_step(env.reset())
    >>> td["next", "position"].shape, td["next", "reward"].dtype
    (torch.Size([3]), torch.float64)
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs._wrapper import LibraryWrapper
from gpusim.specs import Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded

__all__ = ["DMControlWrapper", "DMControlEnv"]


def _import_dm_control(what: str) -> Any:
    if "dm_control" not in sys.modules and "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"  # headless rendering (read by dm_control at import)
    return import_optional("dm_control", "dm_control", extra="dm_control", what=what)


def _torch_dtype(np_dtype: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype


def dm_spec_to_spec(spec: Any, device: torch.device | None = None, categorical: bool = False) -> TensorSpec:
    """Converts a ``dm_env`` spec (``Array``, ``BoundedArray``, ``DiscreteArray`` or a dict of
    them) to a gpusim spec; scalar arrays become ``(1,)``.

    Examples:
        >>> from dm_env import specs
        >>> spec = dm_spec_to_spec(specs.BoundedArray((2,), np.float64, -1.0, 1.0))
        >>> type(spec).__name__, spec.shape, spec.dtype
        ('Bounded', torch.Size([2]), torch.float64)
        >>> spec.space.low, spec.space.high
        (tensor([-1., -1.], dtype=torch.float64), tensor([1., 1.], dtype=torch.float64))
    """
    from dm_env import specs as dm_specs

    if isinstance(spec, dict):
        return Composite({k: dm_spec_to_spec(v, device, categorical) for k, v in spec.items()}, device=device)
    shape = tuple(spec.shape) or (1,)
    if isinstance(spec, dm_specs.DiscreteArray):
        if categorical:
            return Categorical(spec.num_values, shape=shape[:-1] if spec.shape == () else shape, device=device)
        return OneHot(spec.num_values, shape=(spec.num_values,), device=device, dtype=torch.int64)
    dtype = _torch_dtype(spec.dtype)
    if isinstance(spec, dm_specs.BoundedArray):
        low = torch.as_tensor(np.array(np.broadcast_to(spec.minimum, spec.shape)).reshape(shape), dtype=dtype)
        high = torch.as_tensor(np.array(np.broadcast_to(spec.maximum, spec.shape)).reshape(shape), dtype=dtype)
        return Bounded(low, high, shape=shape, dtype=dtype, device=device)
    if isinstance(spec, dm_specs.Array):
        return Unbounded(shape, dtype=dtype, device=device)
    raise TypeError(f"unsupported dm_env spec {spec!r}")


class DMControlWrapper(LibraryWrapper):
    """Wraps a ``dm_control`` environment (``suite.load(...)``, or a ``pixels.Wrapper`` of one).

    Args:
        env: the dm_control environment.
        from_pixels: render a frame after every reset/step under ``"pixels"``.
        pixels_only: with ``from_pixels``, drop the state observations (default ``True``, as
            TorchRL documents it).
        frame_skip: repeat each action this many times (rewards summed; stops at the end of an
            episode).
        camera_id: the camera rendered with ``from_pixels``.
        render_kwargs: extra ``physics.render`` arguments (``height``, ``width``).
        device: where the data lives (moved there once per step).
        batch_size: optional check; must be ``[]``.
        allow_done_after_reset: passed to ``EnvBase``.

    Raises:
        TypeError: ``env`` is not a dm_control environment, or an unknown keyword argument.
        ValueError: ``frame_skip < 1`` or a non-empty ``batch_size``.

    Examples:
        >>> from dm_control import suite
        >>> env = DMControlWrapper(suite.load("pendulum", "swingup"), frame_skip=2)
        >>> env.action_spec.shape, env.frame_skip
        (torch.Size([1]), 2)
    """

    _has_frame_skip = True  # _step repeats the action frame_skip times itself

    library = "dm_control"

    def __init__(
        self,
        env: Any = None,
        *,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        camera_id: int | str = 0,
        render_kwargs: dict | None = None,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        self._no_kwargs(kwargs, "__init__")
        dm_control = _import_dm_control(type(self).__name__)
        from dm_control.rl import control
        from dm_control.suite.wrappers import pixels

        if not isinstance(env, (control.Environment, pixels.Wrapper)):
            raise TypeError(
                f"{type(self).__name__} expects a dm_control Environment (suite.load) or pixels.Wrapper, "
                f"got {type(env).__name__}"
            )
        if batch_size is not None and tuple(torch.Size(batch_size)) != ():
            raise ValueError(f"batch_size must be [] for a dm_control env, got {list(batch_size)}")
        frame_skip = 1 if frame_skip is None else frame_skip
        if not isinstance(frame_skip, int) or frame_skip < 1:
            raise ValueError(f"frame_skip must be a positive int, got {frame_skip!r}")
        super().__init__(
            device=device,
            batch_size=[],
            allow_done_after_reset=allow_done_after_reset,
            auto_reset_mode=AutoResetMode.SPARSE,
        )
        if from_pixels and not isinstance(env, pixels.Wrapper):
            render = {"camera_id": camera_id, **(render_kwargs or {})}
            env = pixels.Wrapper(env, pixels_only=pixels_only, render_kwargs=render)
        self._wrap(env)
        self.__dict__["_lib"] = dm_control
        self.from_pixels = from_pixels or isinstance(env, pixels.Wrapper)
        self.pixels_only = pixels_only
        self.frame_skip = frame_skip
        self._build_specs()

    def _build_specs(self) -> None:
        env = self._env
        device = self.device
        obs = dm_spec_to_spec(env.observation_spec(), device)
        self.__dict__["_obs_plan"] = [(k, _np_of(v.dtype), torch.Size(v.shape)) for k, v in obs.items()]
        self.observation_spec = obs
        reward = env.reward_spec()
        self.__dict__["_reward_np"] = np.dtype(reward.dtype)
        self.reward_spec = Unbounded((1,), dtype=_torch_dtype(reward.dtype), device=device)
        action = dm_spec_to_spec(env.action_spec(), device)
        self.__dict__["_action_np"] = np.dtype(env.action_spec().dtype)
        self.action_spec = action
        flag = Categorical(2, shape=(1,), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone(), device=device)

    @property
    def lib(self) -> Any:
        """The dm_control module.

        Examples:
            >>> DMControlEnv("cartpole", "balance", seed=0).lib.__name__
            'dm_control'
        """
        return self._lib

    @property
    def _task(self) -> Any:
        env = self._env
        return env._env.task if hasattr(env, "_env") else env.task

    # ------------------------------------------------------------------ conversion
    def _observation(self, observation: dict, src: dict) -> dict:
        for key, np_dtype, shape in self._obs_plan:
            arr = np.array(observation[key], dtype=np_dtype)  # a copy: dm_control reuses its buffers
            src[key] = torch.from_numpy(arr).view(shape)
        return src

    def _finish(self, src: dict) -> TensorDictBase:
        td = new_td(src, torch.Size([]), self._edge.host_device)
        return self._to_device(td)

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        self._no_kwargs(kwargs)
        if self._selects_nothing(masks):
            return self._previous_or_zeros()  # nothing to reset: the merge keeps the data
        timestep = self._env.reset()
        src = self._observation(timestep.observation, {})
        src.update(self._flag_tensors((1,)))
        return self._finish(src)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        if action.device.type != "cpu":
            action = action.cpu()
        action = action.detach().numpy()
        if action.dtype != self._action_np:
            action = action.astype(self._action_np)
        env = self._env
        reward = 0.0
        for _ in range(self.frame_skip):
            timestep = env.step(action)
            reward = reward + (timestep.reward or 0.0)
            if timestep.last():
                break
        last = timestep.last()
        truncated = last and bool(np.isclose(timestep.discount, 1.0))
        terminated = last and not truncated
        src = self._observation(timestep.observation, {})
        src["reward"] = torch.from_numpy(np.array([reward], dtype=self._reward_np))
        flags = torch.tensor([[terminated], [truncated], [last]])  # one allocation, three (1,) views
        src["terminated"], src["truncated"], src["done"] = flags[0], flags[1], flags[2]
        return self._finish(src)

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        self._task._random = np.random.RandomState(seed)


def _np_of(dtype: torch.dtype) -> np.dtype:
    return torch.zeros((), dtype=dtype).numpy().dtype


def available_envs() -> list[tuple[str, list[str]]]:
    """The suite's ``(domain, [task, ...])`` pairs (benchmarking and extra tasks).

    Examples:
        >>> ("cartpole", "balance") in [(d, t) for d, ts in available_envs() for t in ts]
        True
    """
    _import_dm_control("available_envs")
    from dm_control import suite

    out: dict[str, list[str]] = {}
    for domain, task in (*suite.BENCHMARKING, *suite.EXTRA):
        out.setdefault(domain, []).append(task)
    return list(out.items())


class DMControlEnv(DMControlWrapper):
    """Loads a suite task by domain and task name (``suite.load``) and wraps it.

    Args:
        env_name: the domain (``"cheetah"``).
        task_name: the task (``"run"``).
        seed: the task's random seed (``task_kwargs["random"]``).
        from_pixels, pixels_only, frame_skip, camera_id, render_kwargs, device, batch_size,
            allow_done_after_reset: see :class:`DMControlWrapper`.
        **kwargs: task keyword arguments (``time_limit=...``), passed as ``task_kwargs``.

    Raises:
        ValueError: an unknown domain/task pair (naming the known ones).
        ImportError: dm_control is missing (saying ``pip install dm_control``).

    Examples:
        >>> env = DMControlEnv("cartpole", "swingup", time_limit=0.05, seed=1)
        >>> env.rollout(100).shape  # the 0.05 s time limit ends the episode after 5 steps
        torch.Size([5])
    """

    def __init__(
        self,
        env_name: str,
        task_name: str,
        *,
        seed: int | None = None,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        camera_id: int | str = 0,
        render_kwargs: dict | None = None,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        _import_dm_control("DMControlEnv")
        from dm_control import suite

        known = dict(available_envs())
        if env_name not in known or task_name not in known[env_name]:
            raise ValueError(f"unknown dm_control task ({env_name!r}, {task_name!r}); known: {known}")
        task_kwargs = dict(kwargs)
        if seed is not None:
            task_kwargs["random"] = np.random.RandomState(seed)
        try:
            env = suite.load(env_name, task_name, task_kwargs=task_kwargs)
        except TypeError as err:
            raise TypeError(
                f"DMControlEnv({env_name!r}, {task_name!r}): the task rejected {sorted(kwargs)}: {err}"
            ) from err
        self.__dict__["env_name"] = env_name
        self.__dict__["task_name"] = task_name
        super().__init__(
            env,
            from_pixels=from_pixels,
            pixels_only=pixels_only,
            frame_skip=frame_skip,
            camera_id=camera_id,
            render_kwargs=render_kwargs,
            device=device,
            batch_size=batch_size,
            allow_done_after_reset=allow_done_after_reset,
        )

    def __repr__(self) -> str:
        return f"DMControlEnv(env={self.env_name!r}, task={self.task_name!r}, batch_size={list(self.batch_size)})"
