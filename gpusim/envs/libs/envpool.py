"""``MultiThreadedEnvWrapper`` and ``MultiThreadedEnv``: `EnvPool <https://github.com/sail-sg/envpool>`_'s
batched C++ env pools as gpusim envs.

An EnvPool pool steps ``num_envs`` envs in C++ threads and hands back batched numpy arrays: the
wrapper converts each output array once (``torch.from_numpy``, no loop over the envs) and, with a
non-CPU ``device``, moves the output with one packed transfer.

Layout: ``batch_size=[num_envs]``; a non-dict observation under ``"observation"`` (dict
observations keep their keys); ``reward`` ``(N, 1)`` float32; ``done``, ``terminated`` and
``truncated`` ``(N, 1)``. ``Discrete`` actions are ``OneHot`` unless
``categorical_action_encoding=True`` (the documented default; TorchRL 0.14's code always uses
indices). TorchRL's implementation gives reward and done flags the shape ``(N,)``; gpusim keeps
the trailing 1 that every other env and the documentation use.

Partial resets go through ``"_reset"``: the selected rows are reset with ``pool.reset(env_ids)``
(the others keep their data), which is also how ``step_and_maybe_reset`` resets finished rows, so
the next root holds the first observation of the new episode. EnvPool also auto-resets a finished
env on its next ``step`` (ignoring that step's action) if it was not reset explicitly.

Seeding: EnvPool seeds a pool when it is built. ``MultiThreadedEnv.set_seed`` rebuilds its pool with
the seed; a wrapped pool cannot be re-seeded (``set_seed`` raises, naming the fix).

Examples:
    >>> env = MultiThreadedEnv(4, "CartPole-v1", create_env_kwargs={"seed": 0})
    >>> env.batch_size, env.action_spec.shape
    (torch.Size([4]), torch.Size([4, 2]))
    >>> env.rollout(3, break_when_any_done=False)["next", "reward"].shape
    torch.Size([4, 3, 1])
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs._wrapper import LibraryWrapper
from gpusim.envs.libs.gym_specs import read_leaves, space_to_spec, write_actions
from gpusim.specs import Categorical, Composite, Unbounded

__all__ = ["MultiThreadedEnvWrapper", "MultiThreadedEnv"]


def _import_envpool(what: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's Box precision notes at import
        return import_optional("envpool", "envpool", extra="envpool", what=what)


class MultiThreadedEnvWrapper(LibraryWrapper):
    """Wraps an EnvPool pool built with ``env_type="gymnasium"`` (synchronous: ``batch_size`` of
    the pool equal to ``num_envs``).

    Args:
        env: the pool (``envpool.make(task_id, env_type="gymnasium", num_envs=N)``).
        categorical_action_encoding: ``Discrete`` actions as ``Categorical`` indices instead of
            ``OneHot``.
        device: where the data lives (moved there once per step).
        allow_done_after_reset: passed to ``EnvBase``.

    Raises:
        TypeError: ``env`` is not a gymnasium-type EnvPool pool, or an unknown keyword argument.
        ValueError: an asynchronous pool (``batch_size != num_envs``), or ``frame_skip > 1``
            (the rows of a pool end at different steps).

    Examples:
        >>> import envpool
        >>> pool = envpool.make("Pendulum-v1", env_type="gymnasium", num_envs=2, seed=0)
        >>> env = MultiThreadedEnvWrapper(pool)
        >>> env.rand_step(env.reset())["next", "observation"].shape
        torch.Size([2, 3])
    """

    library = "EnvPool"

    def __init__(
        self,
        env: Any = None,
        *,
        categorical_action_encoding: bool = False,
        frame_skip: int | None = None,
        device: torch.device | str | int | None = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        self._no_kwargs(kwargs, "__init__")
        envpool = _import_envpool(type(self).__name__)
        from envpool.python.gymnasium_envpool import GymnasiumEnvPoolMixin

        if not isinstance(env, envpool.python.envpool.EnvPoolMixin):
            raise TypeError(f"{type(self).__name__} expects an EnvPool pool (envpool.make), got {type(env).__name__}")
        if not isinstance(env, GymnasiumEnvPoolMixin):
            raise TypeError(
                f"{type(self).__name__} needs a pool built with env_type='gymnasium', got {type(env).__name__}"
            )
        if frame_skip not in (None, 1):
            raise ValueError(f"frame_skip={frame_skip!r} is not supported: the rows of a pool end at different steps")
        config = env.config
        n = int(config["num_envs"])
        if int(config["batch_size"]) != n:
            raise ValueError(
                f"asynchronous pools are not supported: batch_size={config['batch_size']} != num_envs={n}; "
                "build the pool with batch_size=num_envs"
            )
        super().__init__(
            device=device,
            batch_size=[n],
            allow_done_after_reset=allow_done_after_reset,
            auto_reset_mode=AutoResetMode.SPARSE,
        )
        self._wrap(env)
        self.categorical_action_encoding = categorical_action_encoding
        self.num_workers = n
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gymnasium's Box precision notes on EnvPool's float64 bounds
            self._build_specs()

    def _build_specs(self) -> None:
        env = self._env
        B = self.batch_size
        device = self.device
        gym = import_optional("gymnasium", "gymnasium", extra="envpool")
        obs_space = env.spec.observation_space
        if isinstance(obs_space, gym.spaces.Dict):
            obs_spec, leaves = space_to_spec(
                obs_space,
                batch_size=B,
                device=device,
                key=(),
                copy=False,
                categorical_action_encoding=self.categorical_action_encoding,
            )
        else:
            spec, leaves = space_to_spec(
                obs_space,
                batch_size=B,
                device=device,
                key=("observation",),
                copy=False,
                categorical_action_encoding=self.categorical_action_encoding,
            )
            obs_spec = Composite(observation=spec, shape=B, device=device)
        act_spec, act_leaves = space_to_spec(
            env.spec.action_space,
            batch_size=B,
            device=device,
            key=("action",),
            categorical_action_encoding=self.categorical_action_encoding,
        )
        self.__dict__["_obs_leaves"] = leaves
        self.__dict__["_act_leaves"] = act_leaves
        self.__dict__["_act_space"] = env.spec.action_space
        self.observation_spec = obs_spec
        if isinstance(act_spec, Composite):
            self.full_action_spec = Composite(action=act_spec, shape=B, device=device)
        else:
            self.action_spec = act_spec
        self.reward_spec = Unbounded((*B, 1), dtype=torch.float32, device=device)
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=B, device=device
        )

    @property
    def lib(self) -> Any:
        """The envpool module.

        Examples:
            >>> MultiThreadedEnv(2, "CartPole-v1").lib.__name__
            'envpool'
        """
        return _import_envpool("lib")

    # ------------------------------------------------------------------ conversion
    def _observations(self, obs: Any, rows: np.ndarray | None) -> dict:
        leaves = self._obs_leaves
        if rows is None:
            if len(leaves) == 1 and not leaves[0].path:  # the common case: one array
                return {leaves[0].key[0]: leaves[0].to_torch(obs)}
            return read_leaves(leaves, obs, {})
        # a partial reset: the pool returns the selected rows only; they are scattered into
        # zero-filled full-batch arrays (the other rows take the previous data in the episode merge)
        n = self.batch_size[0]
        full: dict = {}
        for leaf in leaves:
            part = obs
            for p in leaf.path:
                part = part[p]
            part = np.asarray(part)
            whole = np.zeros((n, *part.shape[1:]), dtype=part.dtype)
            whole[rows] = part
            dst = full
            for name in leaf.key[:-1]:
                dst = dst.setdefault(name, {})
            dst[leaf.key[-1]] = leaf.to_torch(whole)
        return full

    def _finish(self, src: dict) -> TensorDictBase:
        td = new_td(src, self.batch_size, self._edge.host_device)
        return self._to_device(td)

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        self._no_kwargs(kwargs)
        mask = masks.env_rows()
        rows = None
        if mask is not None:
            rows = np.flatnonzero(mask.reshape(-1).cpu().numpy()).astype(np.int32)
            if len(rows) == self.batch_size[0]:
                rows = None
        if rows is not None and len(rows) == 0:
            obs = None
        else:
            obs, _ = self._env.reset() if rows is None else self._env.reset(rows)
        if obs is None:
            src = self.full_observation_spec.zero().to_dict()
        else:
            src = self._observations(obs, rows)
        src.update(self._flag_tensors((*self.batch_size, 1)))
        return self._finish(src)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = write_actions(self._act_leaves, tensordict, self._act_space)
        obs, reward, terminated, truncated, _ = self._env.step(action)
        src = self._observations(obs, None)
        shape = (*self.batch_size, 1)
        src["reward"] = torch.from_numpy(np.asarray(reward, dtype=np.float32).reshape(shape))
        terminated = np.asarray(terminated, dtype=bool).reshape(shape)
        truncated = np.asarray(truncated, dtype=bool).reshape(shape)
        src["terminated"] = torch.from_numpy(terminated)
        src["truncated"] = torch.from_numpy(truncated)
        src["done"] = torch.from_numpy(terminated | truncated)
        return self._finish(src)

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            raise RuntimeError(
                f"{type(self).__name__}: an EnvPool pool is seeded when it is built; pass seed= to envpool.make "
                f"(or use MultiThreadedEnv, whose set_seed rebuilds the pool), got set_seed({seed})"
            )


class MultiThreadedEnv(MultiThreadedEnvWrapper):
    """Builds an EnvPool pool by task name and wraps it.

    Args:
        num_workers: the number of envs (``num_envs``; the env's ``batch_size``).
        env_name: the EnvPool task id (``"CartPole-v1"``, ``"Pong-v5"``).
        create_env_kwargs: more ``envpool.make`` arguments (``seed``, ``num_threads``,
            ``max_episode_steps``, ...).
        categorical_action_encoding, device, allow_done_after_reset: see
            :class:`MultiThreadedEnvWrapper`.

    Raises:
        ValueError: an unknown task id (naming a few known ones), ``num_workers < 1``.
        ImportError: envpool is missing (saying ``pip install envpool``).

    Examples:
        >>> env = MultiThreadedEnv(2, "Pendulum-v1")
        >>> _ = env.set_seed(3)  # rebuilds the pool with seed 3
        >>> env.rollout(2).shape
        torch.Size([2, 2])
    """

    def __init__(
        self,
        num_workers: int,
        env_name: str,
        *,
        create_env_kwargs: dict | None = None,
        categorical_action_encoding: bool = False,
        frame_skip: int | None = None,
        device: torch.device | str | int | None = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        self.__dict__["env_name"] = env_name
        self.__dict__["create_env_kwargs"] = dict(create_env_kwargs or {})
        self.__dict__["_num_envs"] = num_workers
        pool = self._make_pool(self.create_env_kwargs.get("seed"))
        super().__init__(
            pool,
            categorical_action_encoding=categorical_action_encoding,
            frame_skip=frame_skip,
            device=device,
            allow_done_after_reset=allow_done_after_reset,
            **kwargs,
        )

    def _make_pool(self, seed: int | None) -> Any:
        envpool = _import_envpool("MultiThreadedEnv")
        known = envpool.list_all_envs()
        if self.env_name not in known:
            raise ValueError(f"unknown EnvPool task {self.env_name!r}; known tasks include {known[-12:]}")
        kwargs = dict(self.create_env_kwargs)
        kwargs.pop("num_envs", None)
        if seed is not None:
            kwargs["seed"] = seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return envpool.make(self.env_name, env_type="gymnasium", num_envs=self._num_envs, **kwargs)
            except (TypeError, ValueError) as err:
                raise TypeError(
                    f"MultiThreadedEnv({self.env_name!r}): envpool.make rejected {sorted(kwargs)}: {err}"
                ) from err

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        old = self._env
        self.__dict__["_env"] = self._make_pool(seed)
        old.close()

    def __repr__(self) -> str:
        return f"MultiThreadedEnv(env={self.env_name!r}, num_workers={self.num_workers}, device={self.device})"
