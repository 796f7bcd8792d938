"""``BraxWrapper`` and ``BraxEnv``: `Brax <https://github.com/google/brax>`_ (JAX) envs as batched,
stateless gpusim envs.

Layout (TorchRL's documented one): ``observation`` ``(*B, obs_size)``, ``reward`` ``(*B, 1)``,
``done`` and ``terminated`` ``(*B, 1)`` (Brax's ``done`` is a termination: no time limit is added),
the action ``Bounded(-1, 1)`` ``(*B, action_size)``, and the whole Brax ``State`` (pipeline state,
obs, reward, done, metrics, info) as a nested ``"state"`` entry, both in the state spec (the
input of a step) and in the observation spec (its output). The env is a pure function of its
input: a step reads ``"state"`` and ``"action"`` and writes the next ones, like the native envs.

Execution: one ``jax.jit(jax.vmap(env.step))`` call per step over the flat batch and one jitted
vmapped reset; arrays cross between JAX and torch through DLPack (:mod:`gpusim.envs.libs._jax`),
without copies when both live on the same device: the whole state as one flat buffer per dtype
(:class:`~gpusim.envs.libs._jax.Frame`, packed and unpacked inside the jitted functions), the
action as one array; ``requires_grad`` steps convert leaf by leaf. A reset draws fresh keys for every row (split
from the env key) and the episode core keeps the previous data in rows that are not reset
(partial resets through ``"_reset"``, and ``step_and_maybe_reset``).

Gradients: with ``requires_grad=True`` a step is a ``torch.autograd.Function`` whose backward is
JAX's VJP of the batched step, so a loss on a rollout back-propagates to the actions and the
floating-point leaves of the initial state.

Examples:
    >>> env = BraxEnv("fast", batch_size=[4], seed=0)
    >>> td = env.rand_step(env.reset())
    >>> td["next", "observation"].shape, td["next", "state", "pipeline_state", "q"].shape
    (torch.Size([4, 2]), torch.Size([4, 1]))
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.episode import ResetMasks
from gpusim.envs.libs._jax import Frame, JaxWrapper, TreePlan, import_jax, nested_td, to_jax, to_torch
from gpusim.envs.libs._optional import import_optional
from gpusim.specs import Bounded, Categorical, Composite, Unbounded

__all__ = ["BraxWrapper", "BraxEnv"]


def _import_brax(what: str) -> Any:
    import_jax(what, "brax")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        brax = import_optional("brax", "brax", extra="brax", what=what)
        import_optional("brax.envs", "brax", extra="brax", what=what)
    return brax


class BraxWrapper(JaxWrapper):
    """Wraps a Brax env (``brax.envs.Env``) with ``batch_size`` vectorized copies.

    Args:
        env: the Brax env (``brax.envs.get_environment(name)``).
        categorical_action_encoding: kept for TorchRL compatibility (Brax actions are continuous).
        requires_grad: steps record gradients through JAX's VJP (see the module docstring).
        batch_size: the env batch dims (``[]``: one env).
        device: the torch device of the data (default CPU).
        seed: the seed of the env key (``set_seed`` changes it).
        allow_done_after_reset: passed to ``EnvBase``.

    Raises:
        TypeError: ``env`` is not a Brax env, or an unknown keyword argument (``from_pixels`` is
            not supported, as in TorchRL).

    Examples:
        >>> import brax.envs
        >>> env = BraxWrapper(brax.envs.get_environment("fast"), batch_size=[2], seed=0)
        >>> spec = env.action_spec
        >>> type(spec).__name__, spec.shape, spec.dtype
        ('Bounded', torch.Size([2, 1]), torch.float32)
        >>> spec.space.low.min().item(), spec.space.high.max().item()
        (-1.0, 1.0)
    """

    library = "Brax"

    def __init__(
        self,
        env: Any = None,
        categorical_action_encoding: bool = False,
        *,
        requires_grad: bool = False,
        batch_size: Any = None,
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        self._no_kwargs(kwargs, "__init__")
        brax = _import_brax(type(self).__name__)
        if not isinstance(env, brax.envs.Env):
            raise TypeError(f"{type(self).__name__} expects a brax.envs.Env, got {type(env).__name__}")
        super().__init__(device=device, batch_size=batch_size, allow_done_after_reset=allow_done_after_reset)
        jax = self._init_jax(env, seed)
        self.categorical_action_encoding = categorical_action_encoding
        self.requires_grad = bool(requires_grad)
        self.__dict__["_reset_fn"] = self._batched(env.reset)
        self.__dict__["_step_fn"] = self._batched(env.step)
        n = self._n
        structs = jax.eval_shape(self._reset_fn, jax.ShapeDtypeStruct((n, 2), np.uint32))
        example = jax.tree_util.tree_map(
            lambda s: np.zeros(s.shape, s.dtype).reshape(*self.batch_size, *s.shape[1:]), structs
        )
        self.__dict__["_plan"] = TreePlan(example, self.batch_size)
        self._build_packed(env, jax.tree_util.tree_leaves(structs))
        self._set_packed(not self.requires_grad)
        self._build_specs(env)

    def _build_packed(self, env: Any, structs: list) -> None:
        """The jitted reset and step of the packed transfer: the whole state crosses as one
        :class:`~gpusim.envs.libs._jax.Frame` each way."""
        jax = self._jax
        frame = Frame.of(structs, self.batch_size)
        treedef = self._plan.treedef
        leaves = jax.tree_util.tree_leaves

        def reset(keys: Any) -> Any:
            return frame.pack(leaves(jax.vmap(env.reset)(keys)))

        def step(buffer: Any, action: Any) -> Any:
            return frame.pack(leaves(jax.vmap(env.step)(treedef.unflatten(frame.unpack(buffer)), action)))

        self.__dict__["_frame"] = frame
        self.__dict__["_reset_packed"] = jax.jit(reset)
        self.__dict__["_step_packed"] = jax.jit(step)

    def _build_specs(self, env: Any) -> None:
        B = self.batch_size
        device = self.device
        state = self._plan.spec(device)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*B, env.action_size), device=device)
        self.observation_spec = Composite(
            observation=Unbounded((*B, env.observation_size), device=device),
            state=state,
            shape=B,
            device=device,
        )
        self.state_spec = Composite(state=state.clone(), shape=B, device=device)
        self.reward_spec = Unbounded((*B, 1), device=device)
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), shape=B, device=device)

    @property
    def lib(self) -> Any:
        """The brax module.

        Examples:
            >>> BraxEnv("fast", batch_size=[2], seed=0).lib.__name__
            'brax'
        """
        return _import_brax("lib")

    # ------------------------------------------------------------------ conversion
    def _output(self, leaves: list[torch.Tensor], reward: bool) -> TensorDictBase:
        plan = self._plan
        state = plan.nest(leaves)
        shape = (*self.batch_size, 1)
        done = state["done"].reshape(shape).bool()
        src = {
            "observation": state["obs"],
            "done": done,
            "terminated": done.clone(),
            "state": nested_td(state, self.batch_size, self._edge.host_device),
        }
        if reward:
            src["reward"] = state["reward"].reshape(shape)
        td = new_td(src, self.batch_size, self._edge.host_device)
        return self._to_device(td)

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        self._no_kwargs(kwargs)
        jax = self._jax
        # every row gets a fresh key and is reset in one jitted call; rows outside the masks keep
        # the previous data in the episode merge
        if self._pack:
            buffer = self._reset_packed(self._row_keys())
            leaves = self._frame.to_torch(buffer)
            self._last.put(leaves, buffer)
            return self._output(leaves, reward=False)
        state = self._reset_fn(self._row_keys())
        jleaves = jax.tree_util.tree_leaves(state)
        leaves = self._plan.leaves_to_torch(jleaves)
        self._last.put(leaves, jleaves)
        return self._output(leaves, reward=False)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        plan = self._plan
        action = tensordict.get("action")
        state = tensordict.get("state")
        tensors = plan.leaves_from(state)
        if self.requires_grad:
            leaves = list(_BraxStep.apply(self, action, *tensors))
        elif self._pack:  # one buffer each way (the state the last step handed out: reused)
            buffer = self._last.get(tensors)
            if buffer is None:
                buffer = self._frame.from_torch(tensors)
            out = self._step_packed(buffer, to_jax(action.reshape(self._n, -1)))
            leaves = self._frame.to_torch(out)
            self._last.put(leaves, out)
        else:
            jax = self._jax
            jleaves = self._last.get(tensors)  # the state the last step handed out: no conversion
            if jleaves is None:
                jleaves = plan.leaves_to_jax(tensors)
            jaction = to_jax(action.reshape(self._n, -1))
            out = jax.tree_util.tree_leaves(self._step_fn(plan.treedef.unflatten(jleaves), jaction))
            leaves = plan.leaves_to_torch(out)
            self._last.put(leaves, out)
        return self._output(leaves, reward=True)


class _BraxStep(torch.autograd.Function):
    """One batched Brax step whose backward is JAX's VJP with respect to the floating-point leaves
    of the state and the action (the state's structure, hence which leaves are floats, is the same
    before and after a step)."""

    @staticmethod
    def forward(ctx: Any, env: BraxWrapper, action: torch.Tensor, *tensors: torch.Tensor) -> tuple:
        jax = env._jax
        plan = env._plan
        jleaves = plan.leaves_to_jax(list(tensors))
        is_float = [bool(np.issubdtype(leaf.dtype, np.floating)) for leaf in jleaves]
        fixed = [leaf for leaf, flt in zip(jleaves, is_float) if not flt]

        def step(float_leaves: list, jaction: Any) -> tuple:
            it_f, it_x = iter(float_leaves), iter(fixed)
            leaves = [next(it_f) if flt else next(it_x) for flt in is_float]
            out = jax.tree_util.tree_leaves(env._step_fn(plan.treedef.unflatten(leaves), jaction))
            return [o for o, flt in zip(out, is_float) if flt], [o for o, flt in zip(out, is_float) if not flt]

        floats_in = [leaf for leaf, flt in zip(jleaves, is_float) if flt]
        jaction = to_jax(action.reshape(env._n, -1))
        floats_out, vjp_fn, others_out = jax.vjp(step, floats_in, jaction, has_aux=True)
        ctx.vjp_fn = vjp_fn
        ctx.env = env
        ctx.is_float = is_float
        ctx.action_shape = action.shape
        ctx.float_structs = [(o.shape, o.dtype) for o in floats_out]
        it_f, it_o = iter(floats_out), iter(others_out)
        result = plan.leaves_to_torch([next(it_f) if flt else next(it_o) for flt in is_float])
        ctx.mark_non_differentiable(*[t for t, flt in zip(result, is_float) if not flt])
        return tuple(result)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple:
        env = ctx.env
        plan = env._plan
        jnp = env._jax.numpy
        cotangents = []
        floats = iter(ctx.float_structs)
        for g, flt in zip(grads, ctx.is_float):
            if not flt:
                continue
            shape, dtype = next(floats)
            cotangents.append(jnp.zeros(shape, dtype) if g is None else to_jax(g.reshape(shape).to(torch.float32)))
        d_floats, d_action = ctx.vjp_fn(cotangents)
        it = iter(d_floats)
        grads_in = [
            to_torch(next(it)).reshape(*env.batch_size, *shape) if flt else None
            for flt, shape in zip(ctx.is_float, plan.shapes)
        ]
        return (None, to_torch(d_action).reshape(ctx.action_shape), *grads_in)


class BraxEnv(BraxWrapper):
    """Builds a Brax env by name (``brax.envs.get_environment``) and wraps it.

    Args:
        env_name: the Brax env (``"ant"``, ``"fast"``, ``"inverted_pendulum"``, ...).
        categorical_action_encoding, requires_grad, batch_size, device, seed,
            allow_done_after_reset: see :class:`BraxWrapper`.
        **kwargs: forwarded to the env constructor (``backend="positional"``).

    Raises:
        ValueError: an unknown env name (naming the known ones).
        ImportError: brax (or jax) is missing (saying what to ``pip install``).

    Examples:
        >>> env = BraxEnv("fast", batch_size=[3], seed=1)
        >>> env.rollout(4).shape
        torch.Size([3, 4])
    """

    def __init__(
        self,
        env_name: str,
        categorical_action_encoding: bool = False,
        *,
        requires_grad: bool = False,
        batch_size: Any = None,
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        brax = _import_brax("BraxEnv")
        known = sorted(brax.envs._envs)
        if env_name not in known:
            raise ValueError(f"unknown Brax env {env_name!r}; known: {known}")
        try:
            env = brax.envs.get_environment(env_name, **kwargs)
        except TypeError as err:
            raise TypeError(f"BraxEnv({env_name!r}): the env rejected {sorted(kwargs)}: {err}") from err
        self.__dict__["env_name"] = env_name
        super().__init__(
            env,
            categorical_action_encoding,
            requires_grad=requires_grad,
            batch_size=batch_size,
            device=device,
            seed=seed,
            allow_done_after_reset=allow_done_after_reset,
        )

    def __repr__(self) -> str:
        return f"BraxEnv(env={self.env_name!r}, batch_size={list(self.batch_size)}, device={self.device})"
