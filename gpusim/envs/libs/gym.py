"""``GymWrapper`` and ``GymEnv``: gymnasium envs (single or vector) as gpusim envs.

A gymnasium env runs on the CPU in numpy, outside torch: the wrapper is the edge where data
changes hands. Per step it converts the action once (``.cpu().numpy()`` per action leaf),
steps the env, wraps each output array with one ``torch.from_numpy`` (no Python loop over the
envs of a vector env), and, for ``device="cuda"``, moves the whole output tensordict to the
device in one packed, pinned, non-blocking copy (:mod:`gpusim.envs.libs._edge`).

Specs are built from the spaces once (see :mod:`gpusim.envs.libs.gym_specs`): a non-dict
observation lives under ``"observation"`` (``"pixels"`` for images), ``Dict`` keys are kept;
reward is ``(*B, 1)`` float32; ``done``, ``terminated`` and ``truncated`` are always present.

A gymnasium vector env (``GymEnv(name, num_envs=N)`` or ``GymWrapper(vector_env)``) becomes one
env with ``batch_size=[N]``; partial resets go through gymnasium's ``reset_mask`` and the final
observation of an episode is what the done step returns (see
:mod:`gpusim.envs.libs.gym_vector` for the autoreset modes).

Examples:
    >>> env = GymEnv("Pendulum-v1", g=9.81)
    >>> env.g
    9.81
    >>> td = env.rollout(3)
    >>> td["next", "observation"].shape, td["next", "reward"].shape
    (torch.Size([3, 3]), torch.Size([3, 1]))
    >>> venv = GymEnv("CartPole-v1", num_envs=4)
    >>> venv.batch_size, venv.action_spec.shape
    (torch.Size([4]), torch.Size([4, 2]))
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._fasttd import inner
from gpusim.envs._fasttd import new_td as _new_td
from gpusim.envs.common import EnvBase, _cached_plan
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.envs.libs._edge import EdgeTransfer
from gpusim.envs.libs.gym_backend import (
    current_backend,
    gym_backend,
    import_gym_backend,
    import_gymnasium,
    set_gym_backend,
)
from gpusim.envs.libs.gym_info import BaseInfoDictReader, default_info_dict_reader
from gpusim.envs.libs.gym_specs import (
    GymLeaf,
    flat_multi_discrete,
    is_image_space,
    read_leaves,
    space_to_spec,
    spaces_of,
    write_actions,
)
from gpusim.envs.libs.gym_vector import VectorAdapter
from gpusim.specs import Bounded, Categorical, Composite, Unbounded

# TorchRL's torchrl.envs.libs.gym also gives the backend switch
__all__ = ["GymWrapper", "GymEnv", "gym_backend", "set_gym_backend"]

_SKIP_INFO = ("final_obs", "final_info", "final_observation", "episode")


def _is_gym026_env(env: Any) -> bool:
    """Whether ``env`` is a gym 0.26 ``gym.Env`` (the ``"gym"`` backend), without importing gym
    when it is not loaded."""
    gym = sys.modules.get("gym")
    return gym is not None and isinstance(env, gym.Env)


class GymWrapper(EnvBase):
    """Wraps a gymnasium env (``gymnasium.Env`` or ``gymnasium.vector.VectorEnv``).

    Args:
        env: the gymnasium env. A vector env gives ``batch_size=[env.num_envs]``.
        categorical_action_encoding: ``Discrete`` spaces as ``Categorical`` (int64 index)
            instead of ``OneHot``; applies to observations too.
        from_pixels: add the rendered frame under ``"pixels"`` (the env must have
            ``render_mode="rgb_array"``).
        pixels_only: with ``from_pixels``, drop the state observation.
        frame_skip: repeat each action this many times, summing rewards and stopping at the
            end of an episode (single envs only).
        device: where the data lives (``"cuda"``: moved there once per step).
        batch_size: optional check; must match the env's (``[]`` or ``[num_envs]``).
        allow_done_after_reset: passed to ``EnvBase``.

    A ``MultiDiscrete`` action space with an ``"action_mask"`` observation of shape ``nvec``
    (a grid game's legal ``(row, col)`` moves) gets a flat action spec, ``Categorical(prod(nvec))``
    (or a bool ``OneHot``), so that :class:`~gpusim.transforms.ActionMask` can mask every
    combination; the flat index is sent to the gym env as its row-major multi-index.

    Raises:
        TypeError: if ``env`` is not a gymnasium env, or a space has no spec equivalent.
        ValueError: for inconsistent arguments (``from_pixels`` without ``"rgb_array"``
            rendering, ``frame_skip < 1``, ``frame_skip > 1`` on a vector env, a wrong
            ``batch_size``).

    Examples:
        >>> import gymnasium as gym
        >>> env = GymWrapper(gym.make("CartPole-v1"), categorical_action_encoding=True)
        >>> env.action_spec
        Categorical(
            shape=torch.Size([]),
            space=CategoricalBox(n=2),
            device=cpu,
            dtype=torch.int64,
            domain=discrete)
    """

    _has_frame_skip = True  # _step repeats the action frame_skip times itself

    def __init__(
        self,
        env: Any = None,
        *,
        categorical_action_encoding: bool = False,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(kwargs)}")
        gym = import_gymnasium(type(self).__name__)
        if env is None:
            raise TypeError(f"{type(self).__name__} needs a gymnasium env (got None)")
        is_vector = isinstance(env, gym.vector.VectorEnv)
        if not is_vector and not isinstance(env, gym.Env) and not _is_gym026_env(env):
            raise TypeError(
                f"{type(self).__name__} expects a gymnasium.Env or gymnasium.vector.VectorEnv, got {type(env).__name__}"
            )
        B = torch.Size([int(env.num_envs)]) if is_vector else torch.Size([])
        if batch_size is not None and torch.Size(batch_size if not isinstance(batch_size, int) else [batch_size]) != B:
            raise ValueError(
                f"batch_size={list(batch_size) if not isinstance(batch_size, int) else [batch_size]} does not match the gymnasium env's batch {list(B)}"
            )
        frame_skip = 1 if frame_skip is None else frame_skip
        if not isinstance(frame_skip, int) or frame_skip < 1:
            raise ValueError(f"frame_skip must be a positive int, got {frame_skip!r}")
        if frame_skip > 1 and is_vector:
            raise ValueError(
                f"frame_skip={frame_skip} is not supported on vector envs (their rows end at different "
                "steps); use a single env or wrap the sub-envs with a frame-skip wrapper"
            )
        if from_pixels and getattr(env, "render_mode", None) != "rgb_array":
            raise ValueError(
                f"from_pixels=True needs an env with render_mode='rgb_array', got render_mode={getattr(env, 'render_mode', None)!r}"
            )
        super().__init__(
            device=device,
            batch_size=B,
            allow_done_after_reset=allow_done_after_reset,
            auto_reset_mode=AutoResetMode.SPARSE,  # the library runs on the host: done rows are read there
        )
        self.__dict__["_env"] = env
        self.__dict__["_is_vector"] = is_vector
        self.__dict__["_adapter"] = VectorAdapter(env) if is_vector else None
        self.__dict__["_info_readers"] = []
        self.categorical_action_encoding = categorical_action_encoding
        self.from_pixels = from_pixels
        self.pixels_only = pixels_only
        self.frame_skip = frame_skip
        self.__dict__["_edge"] = EdgeTransfer(self.device)
        self.__dict__["_needs_reset"] = True  # the library's env was not reset through this wrapper
        self._build_specs(gym, env, is_vector, B)

    # ------------------------------------------------------------------ specs
    def _build_specs(self, gym: Any, env: Any, is_vector: bool, B: torch.Size) -> None:
        device = self.device
        obs_space = env.single_observation_space if is_vector else env.observation_space
        act_space = env.single_action_space if is_vector else env.action_space
        self.__dict__["_action_space"] = env.action_space
        # single envs may hand out internal buffers: copy them; gymnasium vector envs copy already
        copy = not is_vector or getattr(env.unwrapped, "copy", True) is False
        obs_leaves: list[GymLeaf] = []
        obs_spec = Composite(shape=B, device=device)
        if not (self.from_pixels and self.pixels_only):
            if isinstance(obs_space, spaces_of(obs_space).Dict):
                spec, obs_leaves = space_to_spec(
                    obs_space,
                    batch_size=B,
                    device=device,
                    key=(),
                    copy=copy,
                    categorical_action_encoding=self.categorical_action_encoding,
                )
                obs_spec = spec
            else:
                name = "pixels" if is_image_space(obs_space) and not self.from_pixels else "observation"
                spec, obs_leaves = space_to_spec(
                    obs_space,
                    batch_size=B,
                    device=device,
                    key=(name,),
                    copy=copy,
                    categorical_action_encoding=self.categorical_action_encoding,
                )
                obs_spec[name] = spec
        if self.from_pixels:
            frame = self._first_frame()
            obs_spec["pixels"] = Bounded(0, 255, shape=(*B, *frame.shape[len(B) :]), dtype=torch.uint8, device=device)
        self.__dict__["_obs_leaves"] = obs_leaves
        if self._grid_mask_action(act_space, obs_spec, B):
            leaf = flat_multi_discrete(act_space, B, device, self.categorical_action_encoding, ("action",))
            act_spec, act_leaves = leaf.spec, [leaf]
        else:
            act_spec, act_leaves = space_to_spec(
                act_space,
                batch_size=B,
                device=device,
                key=("action",),
                categorical_action_encoding=self.categorical_action_encoding,
            )
        if isinstance(act_spec, Composite):  # Dict / Tuple action spaces nest under "action"
            self.full_action_spec = Composite(action=act_spec, shape=B, device=device)
        else:
            self.action_spec = act_spec
        self.__dict__["_act_leaves"] = act_leaves
        self.__dict__["_single_action_space"] = act_space
        self.observation_spec = obs_spec
        self.reward_spec = Unbounded((*B, 1), device=device, dtype=torch.float32)
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=device)
        self.done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=B, device=device)

    @staticmethod
    def _grid_mask_action(act_space: Any, obs_spec: Composite, B: torch.Size) -> bool:
        """A ``MultiDiscrete`` action whose legal moves are one ``"action_mask"`` observation of
        shape ``nvec`` (a board's ``(rows, cols)``): the action becomes one flat choice among
        ``prod(nvec)`` so the mask can say which combinations are legal (as TorchRL does)."""
        if not isinstance(act_space, spaces_of(act_space).MultiDiscrete):
            return False
        nvec = np.asarray(act_space.nvec)
        if nvec.ndim != 1 or "action_mask" not in obs_spec.keys():
            return False
        return tuple(obs_spec["action_mask"].shape[len(B) :]) == tuple(int(v) for v in nvec)

    def _first_frame(self) -> np.ndarray:
        if self._is_vector:
            self._adapter.reset()
        else:
            self._env.reset()
        return self._render()

    def _render(self) -> np.ndarray:
        frame = self._env.render()
        if self._is_vector and not isinstance(frame, np.ndarray):
            frame = np.stack(frame)
        if frame is None:
            raise RuntimeError(
                "the gymnasium env returned no frame from render(); from_pixels needs render_mode='rgb_array'"
            )
        return np.asarray(frame, dtype=np.uint8)

    # ------------------------------------------------------------------ attributes
    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            env = self.__dict__.get("_env")
            if env is None or name.startswith("__"):
                raise
        if self.__dict__.get("_is_vector"):
            for target in (env, env.unwrapped):
                if hasattr(target, name):
                    return getattr(target, name)
            if hasattr(env, "get_attr"):
                return env.get_attr(name)
        try:
            if not hasattr(env, "get_wrapper_attr"):  # gym 0.26: wrappers forward attributes themselves
                return getattr(env, name)
            return env.get_wrapper_attr(name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} and its gymnasium env have no attribute {name!r}") from None

    @property
    def env(self) -> Any:
        """The wrapped gymnasium env.

        Examples:
            >>> GymEnv("CartPole-v1").env.spec.id
            'CartPole-v1'
        """
        return self._env

    @property
    def lib(self) -> Any:
        """The gym backend module (gymnasium).

        Examples:
            >>> GymEnv("CartPole-v1").lib.__name__
            'gymnasium'
        """
        return import_gymnasium()

    # ------------------------------------------------------------------ info readers
    def set_info_dict_reader(
        self, info_dict_reader: BaseInfoDictReader | Callable | None = None, ignore_private: bool = True
    ) -> GymWrapper:
        """Registers a reader that copies ``info`` entries into every reset/step output.

        The reader's ``info_spec`` (per-env shapes) is added, batched, to the observation spec.
        With ``None``, the numeric entries of one step's info are discovered
        (:meth:`auto_register_info_dict`).

        Args:
            info_dict_reader: a reader (``reader(info, tensordict) -> tensordict`` with an
                ``info_spec``), e.g. :class:`default_info_dict_reader`; ``None``: discover.
            ignore_private: with ``None``, skip info keys starting with ``"_"``.

        Returns:
            ``self``.

        Raises:
            TypeError: if the reader has no ``info_spec``.
            ValueError: if one of its keys is already an observation key.

        Examples:
            >>> import gymnasium as gym
            >>> from gpusim.envs.libs import default_info_dict_reader
            >>> class WithX(gym.Wrapper):  # puts the cart position in the info dict
            ...     def step(self, action):
            ...         obs, reward, terminated, truncated, _ = self.env.step(action)
            ...         return obs, reward, terminated, truncated, {"x": float(obs[0])}
            >>> env = GymWrapper(WithX(gym.make("CartPole-v1")))
            >>> env = env.set_info_dict_reader(default_info_dict_reader(["x"]))
            >>> "x" in env.observation_spec.keys()
            True
            >>> td = env.rand_step(env.reset())
            >>> td["next", "x"].item() == td["next", "observation"][0].item()
            True
        """
        if info_dict_reader is None:
            return self.auto_register_info_dict(ignore_private=ignore_private)
        spec = getattr(info_dict_reader, "info_spec", None)
        if not isinstance(spec, Composite):
            raise TypeError(
                f"an info dict reader needs an info_spec Composite attribute, got {type(info_dict_reader).__name__}"
            )
        obs = self.full_observation_spec.clone()
        B = self.batch_size
        for key in spec.keys(True, True):
            if key in obs.keys(True, True):
                raise ValueError(f"the info key {key!r} is already an observation key of {type(self).__name__}")
            leaf = spec[key]
            obs[key] = leaf.expand(*B, *leaf.shape).to(self.device)
        if hasattr(info_dict_reader, "bind"):
            info_dict_reader.bind(B)
        self._info_readers.append(info_dict_reader)
        self.observation_spec = obs
        return self

    @property
    def info_dict_reader(self) -> list:
        """The registered info readers.

        Examples:
            >>> from gpusim.envs.libs import default_info_dict_reader
            >>> env = GymEnv("CartPole-v1")
            >>> env.info_dict_reader
            []
            >>> env.set_info_dict_reader(default_info_dict_reader(["x"])).info_dict_reader
            [default_info_dict_reader(keys=['x'])]
        """
        return self._info_readers

    def auto_register_info_dict(self, ignore_private: bool = True) -> GymWrapper:
        """Discovers the numeric info entries of a reset and one random step and registers a
        :class:`default_info_dict_reader` for them (this resets the gym env).

        Args:
            ignore_private: skip info keys starting with ``"_"``.

        Returns:
            ``self``.

        Raises:
            ValueError: the info dicts have no numeric entry.

        Examples:
            >>> import gymnasium as gym
            >>> class WithX(gym.Wrapper):  # puts the cart position in the info dict
            ...     def step(self, action):
            ...         obs, reward, terminated, truncated, _ = self.env.step(action)
            ...         return obs, reward, terminated, truncated, {"x": float(obs[0])}
            >>> env = GymWrapper(WithX(gym.make("CartPole-v1"))).auto_register_info_dict()
            >>> env.info_dict_reader[0].keys, env.observation_spec["x"].dtype
            (['x'], torch.float32)
            >>> GymEnv("CartPole-v1").auto_register_info_dict()  # CartPole's info dicts are empty
            Traceback (most recent call last):
            ...
            ValueError: GymEnv: the gym env's info dicts have no numeric entry to register
        """
        if self._is_vector:
            _, info0 = self._adapter.reset()
            _, _, _, _, info = self._adapter.step(self._action_space.sample())
            self._adapter.reset()
        else:
            _, info0 = self._env.reset()
            _, _, _, _, info = self._env.step(self._action_space.sample())
            self._env.reset()
        specs = {}
        for source in (info0, info):
            for key, value in source.items():
                if key in specs or key in _SKIP_INFO or (ignore_private and key.startswith("_")):
                    continue
                arr = np.asarray(value)
                if arr.dtype.kind not in "biuf":
                    continue
                shape = arr.shape[1:] if self._is_vector else arr.shape
                dtype = torch.float32 if arr.dtype.kind == "f" else torch.from_numpy(np.zeros((), arr.dtype)).dtype
                specs[key] = Unbounded(shape, dtype=dtype)
        if not specs:
            raise ValueError(f"{type(self).__name__}: the gym env's info dicts have no numeric entry to register")
        return self.set_info_dict_reader(
            default_info_dict_reader(list(specs), spec=specs, ignore_private=ignore_private)
        )

    # ------------------------------------------------------------------ conversion
    def _to_device(self, td: TensorDict) -> TensorDictBase:
        if self.device.type == "cpu":
            return td
        return self._edge(td)

    def _read_obs(self, obs: Any) -> dict:
        key, to_torch = self._obs_plan
        if key is not None:  # the common case: one array under one root key
            return {key: to_torch(obs)}
        src = read_leaves(self._obs_leaves, obs, {})
        if self.from_pixels:
            src["pixels"] = torch.from_numpy(self._render())
        return src

    @_cached_plan
    def _obs_plan(self) -> tuple:
        """``(key, to_torch)`` of a single-array observation under one root key without
        rendered pixels (read with one call), else ``(None, None)``."""
        leaves = self._obs_leaves
        if len(leaves) == 1 and not leaves[0].path and len(leaves[0].key) == 1 and not self.from_pixels:
            return leaves[0].key[0], leaves[0].to_torch
        return None, None

    def _finish(self, src: dict, info: dict) -> TensorDictBase:
        td = _new_td(src, self.batch_size, self._edge.host_device)
        for reader in self._info_readers:
            reader(info, td)
        return td if self._on_cpu else self._to_device(td)

    def _step_data(self, obs: Any, reward: Any, terminated: Any, truncated: Any, info: dict) -> TensorDictBase:
        """The ``"next"`` data of a step: one ``from_numpy`` per leaf for vector envs."""
        src = self._read_obs(obs)
        if self._is_vector:
            # the adapter hands out bool arrays and their OR; one reshape (a numpy view) + from_numpy per leaf
            shape = self._flag_shape
            kept = [(k, v) for k, v in src.items() if type(v) is torch.Tensor and k != "pixels"]
            src["reward"] = self._reward_to_torch(reward)
            src["terminated"] = terminated = torch.from_numpy(terminated.reshape(shape))
            src["truncated"] = truncated = torch.from_numpy(truncated.reshape(shape))
            src["done"] = done = torch.from_numpy(self._adapter.last_done.reshape(shape))
            td = self._finish(src, info)
            # the leaves an auto-reset may keep as they are (see _kept_leaves)
            if not self._on_cpu:
                kept = [(k, td.get(k)) for k, _ in kept]
                terminated, truncated, done = td.get("terminated"), td.get("truncated"), td.get("done")
            leaves = [(k, v, v._version) for k, v in kept]
            flags = [
                ("terminated", terminated, terminated._version),
                ("truncated", truncated, truncated._version),
                ("done", done, done._version),
            ]
            self.__dict__["_last_step"] = (self._adapter.last_obs, leaves, flags)
            return td
        else:
            term, trunc = bool(terminated), bool(truncated)
            src["reward"] = self._reward_to_torch(reward)
            # one numpy allocation, three row views (torch.tensor of a list costs ~3x more per leaf)
            flags = np.array([[term], [trunc], [term or trunc]])
            src["terminated"] = torch.from_numpy(flags[0])
            src["truncated"] = torch.from_numpy(flags[1])
            src["done"] = torch.from_numpy(flags[2])
        return self._finish(src, info)

    @_cached_plan
    def _on_cpu(self) -> bool:
        return self.device.type == "cpu"

    def _reward_to_torch(self, reward: Any) -> torch.Tensor:
        """The step's reward as a float32 tensor of the reward spec's shape (``(*B, 1)``)."""
        if self._is_vector:
            reward = np.asarray(reward)
            if reward.dtype != np.float32:
                reward = reward.astype(np.float32)
            return torch.from_numpy(reward.reshape(self._flag_shape))
        return torch.from_numpy(np.array([float(reward)], dtype=np.float32))

    def _reset_output(self, obs: Any, info: dict) -> TensorDictBase:
        """The data of a reset (all rows): observations and False done flags."""
        src = self._read_obs(obs)
        flags = np.zeros((3, *self._flag_shape), dtype=bool)  # one allocation, three numpy views
        src["terminated"] = torch.from_numpy(flags[0])
        src["truncated"] = torch.from_numpy(flags[1])
        src["done"] = torch.from_numpy(flags[2])
        return self._finish(src, info)

    @_cached_plan
    def _flag_shape(self) -> tuple:
        return (*self.batch_size, 1)

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_readers(self) -> None:
        for reader in self._info_readers:
            if hasattr(reader, "reset"):
                reader.reset()

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        # a vector env resets the selected rows through gymnasium's masked reset and returns the
        # current observation of the others; the episode merge keeps the previous data there
        if self._info_readers:
            self._reset_readers()
        self.__dict__["_needs_reset"] = False
        if self._is_vector:
            if masks.sparse:
                mask = masks.host_rows()
            else:
                rows = masks.env_rows()
                mask = None if rows is None else rows.reshape(self.batch_size).cpu().numpy()
            kept = self._kept_leaves(tensordict, masks, mask)
            obs, info = self._adapter.reset(mask)
            out = self._reset_output(obs, info)
            if kept:
                data = inner(out)
                for key in kept:
                    masks.mark_merged(data[key] if data is not None else out.get(key))
            return out
        obs, info = self._env.reset()
        return self._reset_output(obs, info)

    def _kept_leaves(self, previous: TensorDictBase | None, masks: ResetMasks, mask: np.ndarray | None) -> list:
        """The root leaves whose reset data already equals ``previous`` in the rows not reset, so
        the episode merge may keep them as they are (:meth:`ResetMasks.mark_merged`).

        Only in an auto-reset (``maybe_reset``) whose ``previous`` holds the very tensors of this
        env's last step, unmodified (same objects, same versions), with no adapter call since,
        and whose mask covers every row that ended at that step. Then the masked reset returns
        the library's current observation (that step's) in the rows not reset, and their done
        flags were all False (``done = terminated | truncated``, and ``done`` rows are reset), as
        the reset output's flags are. Anything else keeps the generic merge."""
        record = self.__dict__.pop("_last_step", None)
        if record is None or previous is None or mask is None or not masks.auto:
            return []
        raw_obs, leaves, flags = record
        adapter = self._adapter
        if adapter.last_obs is not raw_obs:
            return []
        if adapter.has_pending and np.count_nonzero(adapter.pending > mask):  # an ended row not reset
            return []
        data = inner(previous)

        def unchanged(key: str, value: torch.Tensor, version: int) -> bool:
            now = data.get(key) if data is not None else previous.get(key, None)
            return now is value and value._version == version

        kept = [key for key, value, version in leaves if unchanged(key, value, version)]
        if all(unchanged(*flag) for flag in flags):  # the flags are only known False together
            kept += [key for key, _, _ in flags]
        return kept

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        return self._reset_rows(tensordict, self.episode.resolve(tensordict, self._sparse_now()), **kwargs)

    def _check_was_reset(self) -> None:
        if self._needs_reset:
            raise RuntimeError(
                f"{type(self).__name__}.step was called before reset(): call env.reset() first and step from its output"
            )

    def _gym_step(self, action: Any) -> tuple:
        """Steps the gym env (``frame_skip`` times for a single env, summing the rewards and
        stopping at the end of an episode); returns gymnasium's 5-tuple."""
        if self._is_vector:
            return self._adapter.step(action)
        obs, reward, terminated, truncated, info = self._env.step(action)
        for _ in range(self.frame_skip - 1):
            if terminated or truncated:
                break
            obs, r, terminated, truncated, info = self._env.step(action)
            reward = reward + r
        return obs, reward, terminated, truncated, info

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self._check_was_reset()
        action = write_actions(self._act_leaves, tensordict, self._single_action_space)
        return self._step_data(*self._gym_step(action))

    # ------------------------------------------------------------------ batched workers
    def _buffer_stepper(
        self, input_keys: list, inputs: list[torch.Tensor], next_keys: list, outputs: list[torch.Tensor]
    ) -> Callable[[], bool] | None:
        """The direct step of a batched env's worker: a function that steps the gym env on the
        action held in ``inputs`` (the tensors of ``input_keys``, e.g. a worker's row of shared
        memory) and writes the ``"next"`` data straight into ``outputs`` (the tensors of
        ``next_keys``): one numpy copy per leaf, no tensordict. It writes what :meth:`step`
        would put under ``"next"``, byte for byte, and returns ``True``; it returns ``False``
        (nothing done: take the tensordict path) once info readers or the debug mode are on.

        ``None`` when this env's step is more than that: a vector env, rendered pixels, a
        nested observation or action, data off the CPU, action guards or state entries, a
        subclass with its own step, or buffers that do not match the specs.

        Examples:
            >>> env = GymEnv("Pendulum-v1")
            >>> keys = ["observation", "reward", "terminated", "truncated", "done"]
            >>> outputs = [torch.zeros(3), torch.zeros(1), *[torch.zeros(1, dtype=torch.bool)] * 3]
            >>> step = env._buffer_stepper(["action", "observation"], [torch.zeros(1), torch.zeros(3)], keys, outputs)
            >>> _ = env.set_seed(0)
            >>> expected = env.step(env.reset().set("action", torch.zeros(1)))["next"]
            >>> _ = env.set_seed(0)
            >>> _ = env.reset()
            >>> step(), all(torch.equal(expected[k], out) for k, out in zip(keys, outputs))
            (True, True)
        """
        obs_key, _ = self._obs_plan
        leaves = self._act_leaves
        cls = type(self)
        if (
            self._is_vector
            or obs_key is None
            or not self._on_cpu
            or len(leaves) != 1
            or leaves[0].path
            or leaves[0].key != ("action",)
            or self._action_guards
            or self._echo_state_keys
            or cls._step is not GymWrapper._step
            or cls._gym_step is not GymWrapper._gym_step
            or cls.step is not EnvBase.step
            or cls._step_output is not EnvBase._step_output
            or cls._finish_step is not EnvBase._finish_step
        ):
            return None
        if "action" not in input_keys or sorted(next_keys, key=str) != sorted(
            [obs_key, "reward", "terminated", "truncated", "done"], key=str
        ):
            return None
        out = dict(zip(next_keys, outputs))
        obs_spec = self.observation_spec[obs_key]
        expected = {
            obs_key: (obs_spec.shape, obs_spec.dtype),
            "reward": (torch.Size([1]), torch.float32),
            **{k: (torch.Size([1]), torch.bool) for k in ("terminated", "truncated", "done")},
        }
        for key, (shape, dtype) in expected.items():
            t = out[key]
            if t.shape != shape or t.dtype != dtype or t.device.type != "cpu" or not t.is_contiguous():
                return None
        action = inputs[input_keys.index("action")]
        to_numpy = leaves[0].to_numpy
        obs_np = out[obs_key].numpy()
        np_dtype = obs_np.dtype
        reward_np, term_np, trunc_np, done_np = (out[k].numpy() for k in ("reward", "terminated", "truncated", "done"))
        d = self.__dict__

        def step() -> bool:
            if d["_info_readers"] or d["run_type_checks"]:
                return False
            self._check_was_reset()
            obs, reward, terminated, truncated, _ = self._gym_step(to_numpy(action))
            obs_np[...] = np.asarray(obs, dtype=np_dtype).reshape(obs_np.shape)
            reward_np[0] = float(reward)
            term, trunc = bool(terminated), bool(truncated)
            term_np[0], trunc_np[0], done_np[0] = term, trunc, term or trunc
            return True

        return step

    def _set_seed(self, seed: int | None) -> None:
        if self._is_vector:
            self._adapter.reset(None, seed=seed)
        else:
            self._env.reset(seed=seed)
        self._action_space.seed(seed)

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Closes the gymnasium env (closing it again does nothing unless ``raise_if_closed``).

        Examples:
            >>> env = GymEnv("CartPole-v1")
            >>> env.close()
            >>> env.is_closed
            True
        """
        env = self.__dict__.get("_env")
        self.__dict__["_needs_reset"] = True
        if env is not None and not self.is_closed:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env.close()
        super().close(raise_if_closed=raise_if_closed)


def _accepts_autoreset_mode(gym: Any, env_name: str) -> bool:
    """Whether the vector entry point of ``env_name`` takes an ``autoreset_mode`` keyword."""
    entry = gym.spec(env_name).vector_entry_point
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        try:
            entry = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return False
    try:
        return "autoreset_mode" in inspect.signature(entry).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


class GymEnv(GymWrapper):
    """Builds a gymnasium env by id and wraps it (``gymnasium.make`` / ``gymnasium.make_vec``).

    Args:
        env_name: the gymnasium id (``"Pendulum-v1"``).
        num_envs: ``0`` for a single env; ``N > 0`` for a gymnasium vector env with
            ``batch_size=[N]``.
        vectorization_mode: ``"vector_entry_point"``, ``"sync"`` or ``"async"`` (gymnasium's
            default when ``None``: the env's own vector implementation if it has one, else
            ``"sync"``). Sync/async vector envs are built with ``AutoresetMode.DISABLED``
            unless ``vector_kwargs`` says otherwise.
        vector_kwargs: passed to the vector env constructor (sync/async).
        categorical_action_encoding, from_pixels, pixels_only, frame_skip, device, batch_size,
            allow_done_after_reset: see :class:`GymWrapper`. ``from_pixels`` sets
            ``render_mode="rgb_array"``.
        **kwargs: forwarded to ``gymnasium.make`` (``g=9.81``, ``max_episode_steps=...``,
            ``render_mode=...``).

    Raises:
        TypeError: if the gymnasium env rejects a keyword argument (naming it).
        ValueError: for a negative ``num_envs``, or ``from_pixels`` with another ``render_mode``.
        ImportError: if gymnasium is not installed (saying ``pip install gymnasium``).

    Examples:
        >>> env = GymEnv("CartPole-v1", num_envs=8, categorical_action_encoding=True)
        >>> env.rollout(5, break_when_any_done=False).shape
        torch.Size([8, 5])
    """

    def __init__(
        self,
        env_name: str,
        *,
        num_envs: int = 0,
        vectorization_mode: str | None = None,
        vector_kwargs: dict | None = None,
        categorical_action_encoding: bool = False,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        backend = current_backend()
        gym = import_gym_backend(backend, "GymEnv")
        if not isinstance(num_envs, int) or num_envs < 0:
            raise ValueError(f"num_envs must be a non-negative int, got {num_envs!r}")
        if from_pixels:
            mode = kwargs.setdefault("render_mode", "rgb_array")
            if mode != "rgb_array":
                raise ValueError(f"from_pixels=True needs render_mode='rgb_array', got render_mode={mode!r}")
        if backend == "gym" and num_envs:
            raise ValueError(
                f"GymEnv(num_envs={num_envs}) under the 'gym' (0.26) backend: gym's vector envs have another "
                "reset API; use the gymnasium backend for vector envs, or SerialEnv/ParallelEnv of single envs"
            )
        if backend == "gym":  # gym 0.26's checker uses numpy aliases removed in numpy 2 (TorchRL disables it too)
            kwargs.setdefault("disable_env_checker", True)
        try:
            if num_envs:
                env = self._make_vec(gym, env_name, num_envs, vectorization_mode, vector_kwargs, kwargs)
            else:
                if vectorization_mode is not None or vector_kwargs is not None:
                    raise ValueError("vectorization_mode and vector_kwargs need num_envs > 0")
                env = gym.make(env_name, **kwargs)
        except TypeError as err:
            raise TypeError(
                f"GymEnv({env_name!r}): the gymnasium env rejected the keyword arguments {sorted(kwargs)}: {err}"
            ) from err
        self.__dict__["env_name"] = env_name
        self.__dict__["num_envs"] = num_envs
        super().__init__(
            env,
            categorical_action_encoding=categorical_action_encoding,
            from_pixels=from_pixels,
            pixels_only=pixels_only,
            frame_skip=frame_skip,
            device=device,
            batch_size=batch_size,
            allow_done_after_reset=allow_done_after_reset,
        )

    @staticmethod
    def _make_vec(
        gym: Any, env_name: str, num_envs: int, mode: str | None, vector_kwargs: dict | None, kwargs: dict
    ) -> Any:
        if mode is None:
            spec = gym.spec(env_name)
            mode = "vector_entry_point" if spec.vector_entry_point is not None else "sync"
        mode = getattr(mode, "value", mode)
        if mode in ("sync", "async"):
            vector_kwargs = dict(vector_kwargs or {})
            vector_kwargs.setdefault("autoreset_mode", gym.vector.AutoresetMode.DISABLED)
        elif mode != "vector_entry_point":
            raise ValueError(f"vectorization_mode must be 'vector_entry_point', 'sync' or 'async', got {mode!r}")
        elif "autoreset_mode" not in kwargs and _accepts_autoreset_mode(gym, env_name):
            # an env's own vector class (ale-py's AtariVectorEnv) takes its keywords through
            # ``kwargs``; SAME_STEP returns the final observations with the step that ends an
            # episode, so the adapter needs no masked reset (NEXT_STEP ones are accepted too)
            kwargs = {**kwargs, "autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}
        return gym.make_vec(env_name, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=vector_kwargs, **kwargs)

    def __repr__(self) -> str:
        return f"GymEnv(env={self.env_name!r}, batch_size={list(self.batch_size)}, device={self.device})"
