"""``JumanjiWrapper`` and ``JumanjiEnv``: `Jumanji <https://github.com/instadeepai/jumanji>`_ (JAX)
envs as batched, stateless gpusim envs.

Layout (TorchRL's documented one): the fields of the observation (a named tuple, e.g. Snake's
``grid``, ``step_count``, ``action_mask``) are root entries (an array observation is
``"observation"``); ``reward`` ``(*B, 1)``; ``done`` and ``terminated`` ``(*B, 1)`` (a ``LAST``
time step); the action follows Jumanji's action spec (``DiscreteArray`` -> ``Categorical`` with
the spec's dtype by default, ``MultiDiscreteArray`` -> ``MultiCategorical``, ``BoundedArray`` ->
``Bounded``); Jumanji's state pytree is the nested ``"state"`` entry, in the state spec (read by a
step) and in the observation spec (written by it).

Execution: one jitted, vmapped call per step (``env.step`` plus the ``LAST`` test) and per reset
over the flat batch; arrays cross between JAX and torch through DLPack without copies on a shared
device (:mod:`gpusim.envs.libs._jax`): state, observation, reward and done as one flat buffer per
dtype (:class:`~gpusim.envs.libs._jax.Frame`, packed inside the jitted functions). A reset draws a fresh key for every row; rows outside the
``"_reset"`` masks keep the previous data (the episode merge).

Examples:
    >>> env = JumanjiEnv("Snake-v1", batch_size=[2], seed=0)
    >>> td = env.rand_step(env.reset())
    >>> td["next", "grid"].shape, td["next", "action_mask"].dtype, td["action"].dtype
    (torch.Size([2, 12, 12, 5]), torch.bool, torch.int32)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs.episode import ResetMasks
from gpusim.envs.libs._jax import Frame, JaxWrapper, TreePlan, import_jax, nested_td, to_jax, to_torch
from gpusim.envs.libs._optional import import_optional
from gpusim.specs import Bounded, Categorical, Composite, MultiCategorical, MultiOneHot, OneHot, TensorSpec, Unbounded

__all__ = ["JumanjiWrapper", "JumanjiEnv"]


def _import_jumanji(what: str) -> Any:
    import_jax(what, "jumanji")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_optional("jumanji", "jumanji", extra="jumanji", what=what)


def _torch_dtype(np_dtype: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype


def jumanji_action_spec(
    spec: Any, batch_size: torch.Size, device: torch.device, categorical: bool = True
) -> TensorSpec:
    """Converts a Jumanji action spec to a gpusim spec with ``batch_size`` in front.

    Examples:
        >>> from jumanji import specs
        >>> spec = jumanji_action_spec(specs.DiscreteArray(4), torch.Size([2]), torch.device("cpu"))
        >>> type(spec).__name__, spec.space.n, spec.shape, spec.dtype
        ('Categorical', 4, torch.Size([2]), torch.int32)
    """
    jumanji = _import_jumanji("jumanji_action_spec")
    B = tuple(batch_size)
    dtype = _torch_dtype(spec.dtype)
    if isinstance(spec, jumanji.specs.DiscreteArray):
        n = int(spec.num_values)
        if categorical:
            return Categorical(n, shape=(*B, *spec.shape), dtype=dtype, device=device)
        return OneHot(n, shape=(*B, *spec.shape, n), dtype=torch.int64, device=device)
    if isinstance(spec, jumanji.specs.MultiDiscreteArray):
        nvec = np.asarray(spec.num_values).reshape(-1).tolist()
        if categorical:
            return MultiCategorical(nvec, shape=(*B, len(nvec)), dtype=dtype, device=device)
        return MultiOneHot(nvec, shape=(*B, int(sum(nvec))), dtype=torch.int64, device=device)
    if isinstance(spec, jumanji.specs.BoundedArray):
        shape = (*B, *spec.shape)
        low = torch.as_tensor(np.broadcast_to(np.asarray(spec.minimum), spec.shape).copy(), dtype=dtype)
        high = torch.as_tensor(np.broadcast_to(np.asarray(spec.maximum), spec.shape).copy(), dtype=dtype)
        return Bounded(low.expand(shape), high.expand(shape), shape=shape, dtype=dtype, device=device)
    if isinstance(spec, jumanji.specs.Array):
        return Unbounded((*B, *spec.shape), dtype=dtype, device=device)
    raise TypeError(f"unsupported Jumanji action spec {spec!r}")


class JumanjiWrapper(JaxWrapper):
    """Wraps a Jumanji env (``jumanji.Environment``) with ``batch_size`` vectorized copies.

    Args:
        env: the Jumanji env (``jumanji.make(name)``).
        categorical_action_encoding: discrete actions as indices (default, as in TorchRL's
            Jumanji wrapper) or one-hot.
        batch_size: the env batch dims (``[]``: one env).
        device: the torch device of the data.
        seed: the seed of the env key (``set_seed`` changes it).
        allow_done_after_reset: passed to ``EnvBase``.

    Raises:
        TypeError: ``env`` is not a Jumanji env, or an unknown keyword argument.

    Examples:
        >>> import jumanji
        >>> env = JumanjiWrapper(jumanji.make("Game2048-v1"), batch_size=[3], seed=0)
        >>> env.rollout(2)["next", "board"].shape
        torch.Size([3, 2, 4, 4])
    """

    library = "Jumanji"

    def __init__(
        self,
        env: Any = None,
        categorical_action_encoding: bool = True,
        *,
        batch_size: Any = None,
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        self._no_kwargs(kwargs, "__init__")
        jumanji = _import_jumanji(type(self).__name__)
        if not isinstance(env, jumanji.env.Environment):
            raise TypeError(f"{type(self).__name__} expects a jumanji.Environment, got {type(env).__name__}")
        super().__init__(device=device, batch_size=batch_size, allow_done_after_reset=allow_done_after_reset)
        jax = self._init_jax(env, seed)
        self.categorical_action_encoding = categorical_action_encoding
        last = jumanji.types.StepType.LAST

        def reset(key: Any) -> tuple:
            state, ts = env.reset(key)
            return state, ts.observation

        def step(state: Any, action: Any) -> tuple:
            state, ts = env.step(state, action)
            return state, ts.observation, ts.reward, ts.step_type == last

        self.__dict__["_reset_fn"] = self._batched(reset)
        self.__dict__["_step_fn"] = self._batched(step)
        n = self._n
        B = self.batch_size
        shapes = jax.eval_shape(self._reset_fn, jax.ShapeDtypeStruct((n, 2), np.uint32))
        state_ex, obs_ex = jax.tree_util.tree_map(lambda s: np.zeros((*B, *s.shape[1:]), s.dtype), shapes)
        self.__dict__["_state_plan"] = TreePlan(state_ex, B)
        obs_is_array = not jax.tree_util.tree_leaves_with_path(obs_ex)[0][0]
        self.__dict__["_obs_plan"] = TreePlan({"observation": obs_ex} if obs_is_array else obs_ex, B)
        self.__dict__["_obs_is_array"] = obs_is_array
        self._build_packed(reset, step, shapes)
        self._build_specs(env)

    def _build_packed(self, reset: Any, step: Any, reset_structs: Any) -> None:
        """The jitted reset and step of the packed transfer: state, observation, reward and done
        cross as one :class:`~gpusim.envs.libs._jax.Frame` (the state first; a step reads those
        slots back)."""
        jax = self._jax
        leaves = jax.tree_util.tree_leaves
        n = self._n
        state_structs, obs_structs = reset_structs
        spec = self._env.action_spec
        action = jax.ShapeDtypeStruct((n, *spec.shape), np.dtype(spec.dtype))
        _, _, reward, done = jax.eval_shape(self._step_fn, state_structs, action)
        structs = [*leaves(state_structs), *leaves(obs_structs), reward, done]
        frame = Frame.of(structs, self.batch_size)
        count = len(leaves(state_structs))
        treedef = self._state_plan.treedef
        zeros = [jax.numpy.zeros(reward.shape, reward.dtype), jax.numpy.zeros(done.shape, done.dtype)]

        def reset_packed(keys: Any) -> Any:
            state, obs = jax.vmap(reset)(keys)
            return frame.pack([*leaves(state), *leaves(obs), *zeros])

        def step_packed(buffers: Any, action: Any) -> Any:
            state = treedef.unflatten(frame.unpack(buffers, count))
            state, obs, reward, done = jax.vmap(step)(state, action)
            return frame.pack([*leaves(state), *leaves(obs), reward, done])

        self.__dict__["_frame"] = frame
        self.__dict__["_n_state"] = count
        self.__dict__["_reset_packed"] = jax.jit(reset_packed)
        self.__dict__["_step_packed"] = jax.jit(step_packed)

    def _build_specs(self, env: Any) -> None:
        B = self.batch_size
        device = self.device
        action = jumanji_action_spec(env.action_spec, B, device, self.categorical_action_encoding)
        self.__dict__["_action_np"] = np.dtype(env.action_spec.dtype)
        self.__dict__["_action_one_hot"] = isinstance(action, (OneHot, MultiOneHot))
        self.action_spec = action
        obs = self._obs_plan.spec(device)
        state = self._state_plan.spec(device)
        obs["state"] = state
        self.observation_spec = obs
        self.state_spec = Composite(state=state.clone(), shape=B, device=device)
        self.reward_spec = Unbounded((*B, 1), dtype=_torch_dtype(env.reward_spec.dtype), device=device)
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), shape=B, device=device)

    @property
    def lib(self) -> Any:
        """The jumanji module.

        Examples:
            >>> JumanjiEnv("Snake-v1", batch_size=[2], seed=0).lib.__name__
            'jumanji'
        """
        return _import_jumanji("lib")

    # ------------------------------------------------------------------ conversion
    def _output(self, state: Any, obs: Any, reward: Any = None, done: Any = None) -> TensorDictBase:
        obs_plan = self._obs_plan
        if self._obs_is_array:
            obs = {"observation": obs}
        obs_tensors = obs_plan.leaves_to_torch(self._jax.tree_util.tree_leaves(obs))
        plan = self._state_plan
        jleaves = self._jax.tree_util.tree_leaves(state)
        tensors = plan.leaves_to_torch(jleaves)
        self._last.put(tensors, jleaves)  # the next step reads these back without a conversion
        if done is not None:
            reward, done = to_torch(reward), to_torch(done)
        return self._build_output(tensors, obs_tensors, reward, done)

    def _output_packed(self, buffers: Any, stepped: bool) -> TensorDictBase:
        tensors = self._frame.to_torch(buffers)
        count = self._n_state
        state = tensors[:count]
        self._last.put(state, buffers)  # the next step reads these back without a conversion
        reward, done = tensors[-2:] if stepped else (None, None)
        return self._build_output(state, tensors[count:-2], reward, done)

    def _build_output(self, state: list, obs: list, reward: Any, done: Any) -> TensorDictBase:
        B = self.batch_size
        src = self._obs_plan.nest(obs)
        src["state"] = self._state_plan.nest(state)
        shape = (*B, 1)
        if done is None:
            flag = torch.zeros(shape, dtype=torch.bool)
        else:
            flag = done.reshape(shape)
            src["reward"] = reward.reshape(shape)
        src["done"] = flag
        src["terminated"] = flag.clone()
        td = nested_td(src, B, self._edge.host_device)
        return self._to_device(td)

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        self._no_kwargs(kwargs)
        if self._pack:
            return self._output_packed(self._reset_packed(self._row_keys()), stepped=False)
        state, obs = self._reset_fn(self._row_keys())
        return self._output(state, obs)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        plan = self._state_plan
        tensors = plan.leaves_from(tensordict.get("state"))
        cached = self._last.get(tensors)
        action = tensordict.get("action")
        if self._action_one_hot:
            action = action.argmax(-1)
        action = action.reshape(self._n, *action.shape[len(self.batch_size) :])
        jaction = to_jax(action)
        if jaction.dtype != self._action_np:
            jaction = jaction.astype(self._action_np)
        if self._pack:  # one buffer per dtype each way
            buffers = self._frame.from_torch(tensors) if cached is None else cached
            return self._output_packed(self._step_packed(buffers, jaction), stepped=True)
        state = plan.treedef.unflatten(plan.leaves_to_jax(tensors) if cached is None else cached)
        state, obs, reward, done = self._step_fn(state, jaction)
        return self._output(state, obs, reward, done)


class JumanjiEnv(JumanjiWrapper):
    """Builds a Jumanji env by id (``jumanji.make``) and wraps it.

    Args:
        env_name: the registered id (``"Snake-v1"``, ``"Game2048-v1"``).
        categorical_action_encoding, batch_size, device, seed, allow_done_after_reset: see
            :class:`JumanjiWrapper`.
        **kwargs: forwarded to ``jumanji.make``.

    Raises:
        ValueError: an unknown id (naming the known ones).
        ImportError: jumanji (or jax) is missing (saying what to ``pip install``).

    Examples:
        >>> env = JumanjiEnv("Snake-v1", batch_size=[4], seed=0)
        >>> env.rollout(3, break_when_any_done=False).shape
        torch.Size([4, 3])
    """

    def __init__(
        self,
        env_name: str,
        categorical_action_encoding: bool = True,
        *,
        batch_size: Any = None,
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        jumanji = _import_jumanji("JumanjiEnv")
        known = sorted(jumanji.registered_environments())
        if env_name not in known:
            raise ValueError(f"unknown Jumanji env {env_name!r}; known: {known}")
        try:
            env = jumanji.make(env_name, **kwargs)
        except TypeError as err:
            raise TypeError(f"JumanjiEnv({env_name!r}): jumanji.make rejected {sorted(kwargs)}: {err}") from err
        self.__dict__["env_name"] = env_name
        super().__init__(
            env,
            categorical_action_encoding,
            batch_size=batch_size,
            device=device,
            seed=seed,
            allow_done_after_reset=allow_done_after_reset,
        )

    def __repr__(self) -> str:
        return f"JumanjiEnv(env={self.env_name!r}, batch_size={list(self.batch_size)}, device={self.device})"
