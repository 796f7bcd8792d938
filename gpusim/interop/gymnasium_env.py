"""A gpusim env as a ``gymnasium.vector.VectorEnv``: :class:`GymnasiumVectorEnv`, built by
:func:`gpusim.to_gymnasium`.

Spaces come from the specs (:func:`gpusim.envs.libs.gym_specs.spec_to_space`: ``Box`` from
``Bounded``/``Unbounded``, ``Discrete`` from ``Categorical``/``OneHot``, ``MultiDiscrete``,
``MultiBinary``, ``Dict`` for several observation entries). The batch dim of the gpusim env is
the vector env's ``num_envs``.

Auto-reset follows one of gymnasium's modes (``metadata["autoreset_mode"]``), chosen at
construction:

* ``SAME_STEP`` (default): gpusim's ``step_and_maybe_reset``. A step that ends an episode
  returns the first observation of the next one, and the last observation of the ended one in
  ``infos["final_obs"]`` (``infos["_final_obs"]`` marks the rows).
* ``NEXT_STEP``: gymnasium's default, which observation wrappers (``NormalizeObservation``)
  require. A step that ends an episode returns its last observation; the next step resets those
  rows and returns their first observation with reward 0 and no termination, ignoring their
  action. The env must have a functional step (``env.functional_step``, as the native envs):
  the other rows are stepped in the same call and the reset rows' step is discarded.
* ``DISABLED``: no auto-reset; reset rows with ``reset(options={"reset_mask": mask})``.

Episode statistics: gymnasium's vector ``RecordEpisodeStatistics`` reads the mode from
``metadata["autoreset_mode"]``. Its ``NEXT_STEP`` bookkeeping is right in every gymnasium 1.x;
its ``SAME_STEP`` bookkeeping is right only in releases that carry gymnasium's fix for it
(1.4.0 does): older ones skip the first step of every episode after a row's first, so those
episodes come out one step and one reward short. Pair it with ``autoreset_mode="next_step"``
(as the examples do) unless your gymnasium has that fix.

Observations: every observation entry of the env except ``step_count`` entries (the time-limit
counter of ``StepCounter``, bookkeeping rather than an observation of the task); name the
entries with ``observation_keys`` to choose others.

Transform state: ``state_dict()``/``load_state_dict()`` reach the gpusim env's (a
``VecNorm``'s statistics, for instance), also through gymnasium wrappers via ``unwrapped``.

This module imports gymnasium: use it through :func:`gpusim.to_gymnasium`, which says what to
install when gymnasium is missing.

Examples:
    >>> import numpy as np
    >>> import gpusim as gs
    >>> envs = GymnasiumVectorEnv(gs.make("CartPole-v1", num_envs=3, seed=0))  # observes "observation"
    >>> obs, infos = envs.reset(seed=0)
    >>> obs.shape, envs.single_action_space, envs.metadata["autoreset_mode"].name
    ((3, 4), Discrete(2), 'SAME_STEP')
    >>> obs, rewards, terminations, truncations, infos = envs.step(np.array([0, 1, 0]))
    >>> rewards, terminations
    (array([1., 1., 1.]), array([False, False, False]))
    >>> envs.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import AutoResetMode, merge_rows
from gpusim.envs.libs.gym_specs import spec_to_space
from gpusim.specs import Composite, MultiOneHot, OneHot, TensorSpec

__all__ = ["GymnasiumVectorEnv"]

_MODE_NAMES = {
    "same_step": AutoresetMode.SAME_STEP,
    "next_step": AutoresetMode.NEXT_STEP,
    "disabled": AutoresetMode.DISABLED,
}


def _parse_mode(mode: Any) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    if isinstance(mode, str):
        for name, value in _MODE_NAMES.items():
            if mode.lower() in (name, value.value.lower()):
                return value
    raise ValueError(
        f"autoreset_mode must be a gymnasium.vector.AutoresetMode or one of {sorted(_MODE_NAMES)}, got {mode!r}"
    )


class _Leaf:
    """One observation or action entry: its key, spec, gymnasium shape and converters."""

    def __init__(self, key: Any, spec: TensorSpec, space: Any, copy: bool) -> None:
        self.key = key
        self.spec = spec
        self.shape = tuple(batch_space(space, spec.shape[0]).shape)  # the batched gymnasium shape
        # one-hot entries are seen as indices; the other conversions may share memory on the CPU
        self.indexed = isinstance(spec, (OneHot, MultiOneHot))
        self.copy = copy and not self.indexed

    def get(self, td: TensorDictBase) -> torch.Tensor:
        return td.get(self.key)

    def to_numpy(self, value: torch.Tensor) -> np.ndarray:
        array = self.spec.to_numpy(value)
        return array.copy() if self.copy and value.device.type == "cpu" else array

    def to_torch(self, value: torch.Tensor) -> torch.Tensor:
        return self.spec.to_categorical(value) if self.indexed else value

    def encode(self, value: Any, what: str) -> torch.Tensor:
        shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
        if tuple(shape) != self.shape:
            raise ValueError(
                f"{what}: the action for {_keys.fmt(self.key)} has shape {tuple(shape)}, expected {self.shape} "
                "(the action_space's)"
            )
        if isinstance(value, torch.Tensor):
            value = value.to(self.spec.device)
        return self.spec.encode(value)


def _nest(leaves: Sequence[_Leaf], values: Sequence[Any]) -> dict:
    """Nested dicts keyed like the leaves' (tuple) keys."""
    out: dict = {}
    for leaf, value in zip(leaves, values):
        path = _keys.as_tuple(leaf.key)
        node = out
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = value
    return out


def actions_as_given(td: TensorDictBase) -> TensorDictBase:
    """The policy of a compiled gymnasium step: the actions are already in ``td``.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"action": [1]}, [])
        >>> actions_as_given(td) is td
        True
    """
    return td


def _pick(data: Any, key: Any) -> Any:
    for name in _keys.as_tuple(key):
        if not isinstance(data, dict) or name not in data:
            raise KeyError(f"the action dict has no entry {_keys.fmt(key)}")
        data = data[name]
    return data


class GymnasiumVectorEnv(gym.vector.VectorEnv):
    """A gpusim env with a batch dim, seen as a ``gymnasium.vector.VectorEnv``.

    Args:
        env: the gpusim env, with one batch dim (``num_envs``), one reward entry of shape
            ``(num_envs, 1)`` or ``(num_envs,)`` and root ``done``/``terminated`` flags
            (``truncated`` when present).
        observation_keys: the entries returned as observations (default: every observation
            entry of the env but ``step_count`` entries, the time-limit counter). One key gives
            its space directly; several give a ``Dict``.
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` or ``"disabled"`` (or a
            ``gymnasium.vector.AutoresetMode``); see the module docstring.
        as_torch: return tensors on the env's device (the env's own tensors where no conversion
            is needed; one-hot entries as indices; rewards and flags of shape ``(num_envs,)``)
            instead of numpy arrays. Actions may then be tensors (or arrays).
        copy: numpy mode: return arrays the caller owns (``False``: arrays may share memory
            with the env's tensors, which are its state for the native envs).
        render_mode: ``None`` or ``"rgb_array"``: ``render()`` then returns one frame per env
            from the ``render_key`` entry of the latest data; for a native env without a
            ``"pixels"`` observation (no ``from_pixels``), the frames its ``render`` draws from
            the latest state.
        render_key: the observation entry holding ``(num_envs, H, W, C)`` uint8 frames.
        compile: ``same_step`` mode: run each ``step_and_maybe_reset`` as one compiled graph
            (:class:`~gpusim.envs.compiled.CompiledRollout`'s ``step``; ``True``, or a dict of
            its keyword arguments, e.g. ``{"verbose": False}``). The data is the eager data;
            small batches step several times faster, after a compilation of seconds
            (:attr:`compile_seconds`).

    Raises:
        TypeError: ``env`` is not a gpusim env, or ``compile`` is not a bool or a dict.
        ValueError, KeyError: an env gymnasium cannot describe (batch dims, reward, done
            flags), an unknown observation key, an unknown auto-reset or render mode, or
            ``next_step`` on an env whose step is not functional; each names the value.

    Examples:
        Episode statistics with gymnasium's wrapper, in the mode it counts right in every
        gymnasium 1.x (``NEXT_STEP``: the step after an episode's end returns the reset
        observation, reward 0, and is not counted):

        >>> import numpy as np
        >>> import gpusim as gs
        >>> from gymnasium.wrappers.vector import ClipAction, RecordEpisodeStatistics
        >>> envs = GymnasiumVectorEnv(gs.make("Pendulum-v1", num_envs=2, seed=0), autoreset_mode="next_step")
        >>> envs = RecordEpisodeStatistics(ClipAction(envs))
        >>> obs, _ = envs.reset(seed=1)
        >>> lengths = []
        >>> for _ in range(401):  # two episodes of 200 steps, and the reset step between them
        ...     obs, rewards, terminations, truncations, infos = envs.step(np.full((2, 1), 5.0))
        ...     if "episode" in infos:
        ...         lengths.append(infos["episode"]["l"].tolist())
        >>> lengths
        [[200, 200], [200, 200]]

        The statistics of a ``VecNorm`` (any transform state) through the wrappers:

        >>> from gpusim.transforms import TransformedEnv, VecNorm
        >>> normed = TransformedEnv(gs.make("CartPole-v1", num_envs=2, seed=0), VecNorm(in_keys=["observation"]))
        >>> envs = RecordEpisodeStatistics(GymnasiumVectorEnv(normed, autoreset_mode="next_step"))
        >>> _ = envs.reset(seed=0)
        >>> _ = envs.step(np.array([0, 1]))
        >>> stats = envs.unwrapped.state_dict()  # the VecNorm follows make's StepCounter
        >>> count = stats["transform.transforms.1._extra_state"]["stats"]["observation_count"]
        >>> list(stats), round(count.item(), 2)  # 2 reset rows + 2 stepped rows (decayed)
        (['transform.transforms.1._extra_state'], 4.0)
    """

    def __init__(
        self,
        env: EnvBase,
        *,
        observation_keys: Any = None,
        autoreset_mode: Any = AutoresetMode.SAME_STEP,
        as_torch: bool = False,
        copy: bool = True,
        render_mode: str | None = None,
        render_key: Any = "pixels",
        compile: bool | dict = False,
    ) -> None:
        if not isinstance(env, EnvBase):
            raise TypeError(f"GymnasiumVectorEnv needs a gpusim EnvBase as env, got {type(env).__name__}")
        if len(env.batch_size) != 1:
            raise ValueError(
                f"a gymnasium vector env has one batch dim (num_envs); the env has batch_size {list(env.batch_size)}"
            )
        self.gpusim_env = env
        self.num_envs = int(env.batch_size[0])
        self.as_torch = bool(as_torch)
        self._copy = bool(copy)
        mode = _parse_mode(autoreset_mode)
        if mode is AutoresetMode.NEXT_STEP and not env.functional_step:
            raise ValueError(
                f"autoreset_mode='next_step' needs an env whose step is a pure function of the tensordict "
                f"(functional_step, e.g. the native envs), so that rows can be stepped and discarded; "
                f"{type(env).__name__} is not: use 'same_step' or 'disabled'"
            )
        self._mode = mode
        self._runner = self._compiled_runner(env, mode, compile)
        self._reward_key, self._flag_keys = self._check_reward_and_done(env)
        self._obs_leaves = self._leaves(env.full_observation_spec, self._observation_keys(env, observation_keys))
        self._action_leaves = self._leaves(env.full_action_spec, env.action_keys)
        self.single_observation_space = self._space(self._obs_leaves)
        self.single_action_space = self._space(self._action_leaves)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._render_key = self._check_render(env, render_mode, render_key)
        self.render_mode = render_mode
        self.metadata = {"autoreset_mode": mode, "render_modes": ["rgb_array"] if self._render_key else []}
        self._td: TensorDictBase | None = None
        self._pending: torch.Tensor | None = None  # NEXT_STEP: the rows whose episode ended last step

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _compiled_runner(env: EnvBase, mode: AutoresetMode, compile: Any) -> Any:
        if compile is None or compile is False:
            return None
        if compile is not True and not isinstance(compile, dict):
            raise TypeError(f"compile must be a bool or a dict of CompiledRollout arguments, got {compile!r}")
        if mode is not AutoresetMode.SAME_STEP:
            raise ValueError(
                f"compile needs autoreset_mode='same_step' (one compiled step_and_maybe_reset), got {mode.value!r}"
            )
        from gpusim.envs.compiled import CompiledRollout

        return CompiledRollout(env, actions_as_given, **({} if compile is True else compile))

    @property
    def compile_seconds(self) -> float:
        """Seconds spent compiling the step so far (``0.0`` without ``compile``).

        Examples:
            >>> import gpusim as gs
            >>> GymnasiumVectorEnv(gs.make("CartPole-v1", num_envs=2)).compile_seconds
            0.0
        """
        return 0.0 if self._runner is None else self._runner.compile_seconds

    @staticmethod
    def _check_reward_and_done(env: EnvBase) -> tuple[Any, tuple]:
        n = env.batch_size[0]
        rewards = env.reward_keys
        if len(rewards) != 1:
            raise ValueError(f"a gymnasium vector env has one reward per env; the env has reward entries {rewards}")
        shape = tuple(env.full_reward_spec[rewards[0]].shape)
        if shape not in ((n,), (n, 1)):
            raise ValueError(
                f"the reward {_keys.fmt(rewards[0])} has shape {list(shape)}, expected [{n}, 1] or [{n}] "
                "(one reward per env)"
            )
        root = set(env.full_done_spec.keys())
        missing = {"done", "terminated"} - root
        if missing:
            raise ValueError(
                f"a gymnasium vector env needs root 'done' and 'terminated' flags; the env's done entries are "
                f"{env.done_keys}"
            )
        return rewards[0], ("terminated", "truncated" if "truncated" in root else None)

    @staticmethod
    def _observation_keys(env: EnvBase, keys: Any) -> list:
        available = list(env.observation_keys)
        if keys is None:
            # the time-limit counters are bookkeeping, not observations of the task
            chosen = [k for k in available if _keys.as_tuple(k)[-1] != "step_count"]
            return chosen or available
        if isinstance(keys, (str, tuple)):
            keys = [keys]
        chosen = [_keys.unravel(k) for k in keys]
        for key in chosen:
            if key not in available:
                raise KeyError(
                    f"observation_keys: {_keys.fmt(key)} is not an observation of the env; it has {available}"
                )
        if not chosen:
            raise ValueError("observation_keys must name at least one observation entry")
        return chosen

    def _leaves(self, spec: Composite, keys: Sequence[Any]) -> list[_Leaf]:
        return [_Leaf(k, spec[k], spec_to_space(spec[k], 1, _keys.fmt(k)), self._copy) for k in keys]

    @staticmethod
    def _space(leaves: Sequence[_Leaf]) -> Any:
        if len(leaves) == 1:
            return spec_to_space(leaves[0].spec, 1, _keys.fmt(leaves[0].key))

        def build(tree: dict) -> Any:
            return gym.spaces.Dict({k: build(v) if isinstance(v, dict) else v for k, v in tree.items()})

        return build(_nest(leaves, [spec_to_space(leaf.spec, 1, _keys.fmt(leaf.key)) for leaf in leaves]))

    def _check_render(self, env: EnvBase, render_mode: str | None, render_key: Any) -> Any:
        if render_mode is None:
            return None
        if render_mode != "rgb_array":
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        key = _keys.unravel(render_key)
        if key not in env.observation_keys and key == "pixels" and _drawn_env(env) is not None:
            return _DRAWN  # no frames in the data: the env draws them from its state (render())
        if key not in env.observation_keys:
            raise KeyError(
                f"render_mode='rgb_array' reads frames from the observation {_keys.fmt(key)}, which the env does not "
                f"have (observations: {env.observation_keys}); pass render_key="
            )
        spec = env.full_observation_spec[key]
        if spec.dtype != torch.uint8 or len(spec.shape) != 4 or spec.shape[-1] not in (1, 3, 4):
            raise ValueError(
                f"render_key {_keys.fmt(key)} must hold uint8 frames of shape [num_envs, H, W, C] (C in 1, 3, 4), "
                f"got dtype {spec.dtype} and shape {list(spec.shape)}"
            )
        return key

    # ------------------------------------------------------------------ conversions
    def _observations(self, td: TensorDictBase) -> Any:
        convert = self._convert_obs
        values = [convert(leaf, leaf.get(td)) for leaf in self._obs_leaves]
        return values[0] if len(values) == 1 else _nest(self._obs_leaves, values)

    def _convert_obs(self, leaf: _Leaf, value: torch.Tensor) -> Any:
        return leaf.to_torch(value) if self.as_torch else leaf.to_numpy(value)

    def _vector(self, value: torch.Tensor, dtype: np.dtype) -> Any:
        value = value.reshape(self.num_envs)
        if self.as_torch:
            return value
        return value.detach().cpu().numpy().astype(dtype)

    def _write_actions(self, td: TensorDictBase, actions: Any) -> bool:
        """Writes the actions into ``td``. With a compiled step, returns whether each one has its
        spec's shape and device, contiguous (what the step may run past Dynamo's guards with,
        ``CompiledRollout.step(trusted=True)``: a tensor given as is may differ), and refuses another
        dtype here (the traced step would fail to compile it where the eager one names it)."""
        leaves = self._action_leaves
        dense = self._runner is not None  # a strided numpy view is copied for the compiled step
        if len(leaves) > 1 and not isinstance(actions, dict):
            raise TypeError(
                f"step: the env has several action entries, pass a dict of them; got {type(actions).__name__}"
            )
        laid_out = True
        for leaf in leaves:
            value = leaf.encode(actions if len(leaves) == 1 else _pick(actions, leaf.key), "step")
            if dense:
                value = value.contiguous()  # (the tensor itself when it is contiguous)
                spec = leaf.spec
                if value.dtype != spec.dtype:  # (a tensor given as is; the eager step says the same)
                    raise TypeError(
                        f"step: the action {_keys.fmt(leaf.key)} has dtype {value.dtype}, expected {spec.dtype} "
                        "(the action spec's dtype)"
                    )
                laid_out = laid_out and (value.shape, value.device) == (spec.shape, spec.device)
            td.set(leaf.key, value)
        return laid_out

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Resets every env (or the rows of ``options["reset_mask"]``); returns ``(observations, infos)``.

        Args:
            seed: seeds the gpusim env (one seed for the whole batch) before the reset.
            options: ``None`` or ``{"reset_mask": mask}``, a bool array (or tensor) of shape
                ``(num_envs,)`` with at least one True: only those rows are reset.

        Raises:
            TypeError, ValueError: a seed that is not an int, an unknown option, or a bad reset mask.
            RuntimeError: a reset mask before the first full reset.

        Examples:
            >>> import numpy as np
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=3)
            >>> envs = GymnasiumVectorEnv(env, observation_keys="observation")
            >>> obs, infos = envs.reset(seed=0)
            >>> obs.shape, infos
            ((3, 4), {})
            >>> new, _ = envs.reset(options={"reset_mask": np.array([True, False, False])})
            >>> bool((new[1:] == obs[1:]).all())  # rows 1 and 2 kept their state
            True
        """
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise TypeError(f"reset(seed=...) takes one int for the whole batch (or None), got {seed!r}")
        super().reset(seed=None if seed is None else int(seed))
        env = self.gpusim_env
        if seed is not None:
            env.set_seed(int(seed))
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"reset: unknown options {sorted(options)}; the only option is 'reset_mask'")
        if mask is None:
            self._td = env.reset()
            self._pending = None
        else:
            rows = self._reset_mask(mask)
            td = self._td
            if td is None:
                raise RuntimeError("reset(options={'reset_mask': ...}) resets some envs: call reset() first")
            td.set("_reset", rows.unsqueeze(-1))
            self._td = env.reset(td)
            if self._pending is not None:
                self._pending = self._pending & ~rows
        return self._observations(self._td), {}

    def _reset_mask(self, mask: Any) -> torch.Tensor:
        n = self.num_envs
        rows = torch.as_tensor(mask, device=self.gpusim_env.device)
        if rows.dtype is not torch.bool or tuple(rows.shape) != (n,):
            raise ValueError(
                f"options['reset_mask'] must be a bool array of shape ({n},), got dtype {rows.dtype} and shape "
                f"{tuple(rows.shape)}"
            )
        if not bool(rows.any()):
            raise ValueError("options['reset_mask'] must select at least one env (it is all False)")
        return rows

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        """One step of every env; returns ``(observations, rewards, terminations, truncations, infos)``.

        Raises:
            RuntimeError: called before :meth:`reset`.
            ValueError, TypeError: actions that do not match the action space (naming the entry).

        Examples:
            >>> import numpy as np
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=3)
            >>> envs = GymnasiumVectorEnv(env, observation_keys="observation")
            >>> _ = envs.reset(seed=0)
            >>> obs, rewards, terminations, truncations, infos = envs.step(np.array([0, 1, 1]))
            >>> obs.shape, rewards, truncations
            ((3, 4), array([1., 1., 1.]), array([False, False, False]))
        """
        td = self._td
        if td is None:
            raise RuntimeError("step() was called before reset(): call reset() first")
        env = self.gpusim_env
        mode = self._mode
        if mode is AutoresetMode.NEXT_STEP:
            return self._step_next(td, actions)
        laid_out = self._write_actions(td, actions)
        infos: dict = {}
        if mode is AutoresetMode.SAME_STEP:
            runner = self._runner
            stepped, root = env.step_and_maybe_reset(td) if runner is None else runner.step(td, trusted=laid_out)
            nxt = stepped.get("next")
            ended = self._ended(nxt)
            self._final_obs(nxt, ended, infos)
        else:  # no reset: the pipeline's step_mdp and post-step_mdp hook only
            stepped, root = env.step_pipeline.advance(env.step(td))
            nxt = stepped.get("next")
        self._td = root
        return self._outputs(root, nxt.get(self._reward_key), nxt, infos)

    def _step_next(self, td: TensorDictBase, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        env = self.gpusim_env
        pending = self._pending
        if pending is not None and env.auto_reset_mode is AutoResetMode.SPARSE and not bool(pending.any()):
            pending = None  # nothing ended last step (a host read only where it is free)
        if pending is not None:
            td = env.maybe_reset(td)  # resets the rows whose done flag is set: the pending rows
        self._write_actions(td, actions)
        stepped, root = env.step_pipeline.advance(env.step(td))
        nxt = stepped.get("next")
        reward = nxt.get(self._reward_key)
        if pending is not None:
            # the reset rows are not stepped: their data is the reset data, their reward 0
            merge_rows(root, td, ~pending)
            reward = torch.where(pending.reshape(-1, *([1] * (reward.ndim - 1))), torch.zeros_like(reward), reward)
        self._pending = self._ended(root)
        self._td = root
        return self._outputs(root, reward, root, {})

    def _ended(self, data: TensorDictBase) -> torch.Tensor:
        done = data.get("done")
        truncated = data.get("truncated", None)
        if truncated is not None:
            done = done | truncated
        return done.reshape(self.num_envs)

    def _final_obs(self, nxt: TensorDictBase, ended: torch.Tensor, infos: dict) -> None:
        if self.as_torch:  # batched tensors and a mask: no host read
            infos["final_obs"] = self._observations(nxt)
            infos["_final_obs"] = ended
            return
        mask = ended.cpu().numpy()
        if not mask.any():
            return
        final = self._observations(nxt)
        rows = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(mask):
            rows[i] = final[i] if not isinstance(final, dict) else _index(final, i)
        infos["final_obs"], infos["_final_obs"] = rows, mask
        infos["final_info"], infos["_final_info"] = {}, mask.copy()

    def _outputs(self, obs_td: TensorDictBase, reward: torch.Tensor, flags: TensorDictBase, infos: dict) -> tuple:
        terminated_key, truncated_key = self._flag_keys
        terminated = flags.get(terminated_key)
        truncated = flags.get(truncated_key) if truncated_key else torch.zeros_like(terminated)
        return (
            self._observations(obs_td),
            self._vector(reward, np.float64),
            self._vector(terminated, np.bool_),
            self._vector(truncated, np.bool_),
            infos,
        )

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One frame per env (``render_mode="rgb_array"``) from the latest data, else ``None``.

        Examples:
            >>> import torch
            >>> import gpusim as gs
            >>> from gpusim.transforms import TransformedEnv, UnaryTransform
            >>> to_frame = lambda x: torch.zeros(*x.shape[:-1], 8, 8, 3, dtype=torch.uint8)
            >>> frames = UnaryTransform(in_keys=["observation"], out_keys=["frame"], fn=to_frame)
            >>> env = TransformedEnv(gs.make("CartPole-v1", num_envs=2), frames)
            >>> envs = GymnasiumVectorEnv(
            ...     env, observation_keys="observation", render_mode="rgb_array", render_key="frame"
            ... )
            >>> _ = envs.reset(seed=0)
            >>> [(f.shape, f.dtype.name) for f in envs.render()]
            [((8, 8, 3), 'uint8'), ((8, 8, 3), 'uint8')]

            A native env draws its frames from its state:

            >>> envs = GymnasiumVectorEnv(gs.make("Acrobot-v1", num_envs=2), render_mode="rgb_array")
            >>> _ = envs.reset(seed=0)
            >>> [f.shape for f in envs.render()]
            [(500, 500, 3), (500, 500, 3)]
        """
        if self._render_key is None or self._td is None:
            return None
        if self._render_key is _DRAWN:
            frames = _drawn_env(self.gpusim_env).render(self._td).cpu().numpy()
        else:
            frames = self._td.get(self._render_key).detach().cpu().numpy()
        return tuple(frames[i].copy() for i in range(self.num_envs))

    def state_dict(self) -> dict[str, Any]:
        """The gpusim env's state (``EnvBase.state_dict``): a ``VecNorm``'s statistics, the
        buffers of the other transforms. Through gymnasium wrappers: ``envs.unwrapped.state_dict()``.

        Examples:
            >>> import gpusim as gs
            >>> from gpusim.transforms import ObservationNorm, TransformedEnv
            >>> norm = ObservationNorm(loc=0.0, scale=2.0, in_keys=["observation"])
            >>> envs = GymnasiumVectorEnv(TransformedEnv(gs.make("CartPole-v1", num_envs=2), norm))
            >>> sorted(envs.state_dict())
            ['transform.transforms.1.loc', 'transform.transforms.1.scale']
        """
        return self.gpusim_env.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Any:
        """Loads ``state_dict`` (from :meth:`state_dict`) into the gpusim env, e.g. the ``VecNorm``
        statistics of a training env into an evaluation env.

        Args:
            state_dict: the state, as :meth:`state_dict` returns it.
            strict: as ``torch.nn.Module.load_state_dict``.

        Examples:
            >>> import gpusim as gs
            >>> from gpusim.transforms import ObservationNorm, TransformedEnv
            >>> def view(scale):
            ...     norm = ObservationNorm(loc=0.0, scale=scale, in_keys=["observation"])
            ...     return GymnasiumVectorEnv(TransformedEnv(gs.make("CartPole-v1", num_envs=2), norm))
            >>> train, evaluation = view(2.0), view(1.0)
            >>> _ = evaluation.load_state_dict(train.state_dict())
            >>> evaluation.state_dict()["transform.transforms.1.scale"].item()
            2.0
        """
        return self.gpusim_env.load_state_dict(state_dict, strict=strict)

    def close_extras(self, **kwargs: Any) -> None:
        """Closes the gpusim env (``close()`` calls it).

        Examples:
            >>> import gpusim as gs
            >>> envs = GymnasiumVectorEnv(gs.make("CartPole-v1", num_envs=2))
            >>> envs.close()
            >>> envs.gpusim_env.is_closed
            True
        """
        self.gpusim_env.close()


#: ``render_key`` of an env that draws its frames from its state (``render(td)``)
_DRAWN = ("<drawn by the env>",)


def _drawn_env(env: EnvBase) -> Any:
    """The base env of ``env`` when it has a registered drawing (see :mod:`gpusim.render`), else
    ``None``."""
    from gpusim.render import drawing_for

    while hasattr(env, "base_env"):
        env = env.base_env
    return env if drawing_for(env) is not None else None


def _index(tree: dict, i: int) -> dict:
    return {k: _index(v, i) if isinstance(v, dict) else v[i] for k, v in tree.items()}
