"""Rollouts of :class:`~gpusim.envs.common.EnvBase`: ``rollout`` (through the env's one eager
loop, :meth:`StepPipeline.run <gpusim.envs.pipeline.StepPipeline.run>`), the compiled loops
(``compile``, ``compile_step_and_maybe_reset``) and stacking steps into ``[*B, T]`` data.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[3], seed=0)
    >>> env.rollout(4, break_when_any_done=False).names
    [None, 'time']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase

from gpusim.envs import _keys, _policy
from gpusim.envs._args import positive_int
from gpusim.envs._keys import NestedKey
from gpusim.envs._rollout_stack import stack_steps
from gpusim.envs.pipeline import PolicyExhausted

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase
    from gpusim.envs.compiled import CompiledRollout

__all__ = ["RolloutMixin", "stack_rollout"]


class _Warmup:
    """Runs ``eager`` for the first ``warmup`` calls, then ``compiled`` (the data layout of the
    first calls, right after a reset, differs from the steady state's)."""

    def __init__(self, eager: Callable, compiled: Callable, warmup: int) -> None:
        self.eager, self.compiled, self.left = eager, compiled, warmup

    def __call__(self, *args: Any) -> Any:
        if self.left > 0:
            self.left -= 1
            return self.eager(*args)
        return self.compiled(*args)


class _ActionReplay:
    """The policy of ``rollout(actions=...)``: writes the next item under ``key``."""

    def __init__(self, actions: Iterable[Any], key: NestedKey) -> None:
        self.iterator = iter(actions)
        self.key = key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        try:
            action = next(self.iterator)
        except StopIteration:
            raise PolicyExhausted from None
        return tensordict.set(self.key, action)


def _frozen(value: Any) -> Any:
    """A hashable copy of compile options (``options={...}`` holds a dict) for a cache key."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


def _cast_to(device: torch.device, policy: Callable) -> Callable:
    """``policy`` whose output is moved to ``device`` (``rollout(auto_cast_to_device=True)``)."""

    def cast(tensordict: TensorDictBase) -> TensorDictBase:
        tensordict = policy(tensordict)
        return tensordict if tensordict.device == device else tensordict.to(device)

    return cast


def stack_rollout(env: EnvBase, steps: list[TensorDictBase], return_contiguous: bool) -> TensorDictBase:
    """The steps of a run stacked on a new last dim named ``"time"`` (contiguous, or a lazy
    stack); steps whose entries differ (a reward written by ``_reset`` in the first root) are
    kept as a lazy stack with those entries exclusive.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0)
        >>> steps, _ = env.step_pipeline.run(env.reset(), env.rand_action, 3)
        >>> stack_rollout(env, steps, True).shape
        torch.Size([2, 3])
    """
    # the data's batch dims: a batch-unlocked env may run on data with more than its own
    dim = steps[0].batch_dims if steps else len(env.batch_size)
    if return_contiguous:
        try:
            out = stack_steps(steps, dim)
        except RuntimeError as err:
            if "are exclusive" not in str(err):
                raise
            # some steps hold entries that others lack (e.g. a reward written by ``_reset``
            # in the first root): kept, as a lazy stack with those entries exclusive
            try:
                out = LazyStackedTensorDict.maybe_dense_stack(steps, dim)
            except RuntimeError:
                raise err from None  # (steps a lazy stack cannot hold either: the key error)
    else:
        out = LazyStackedTensorDict.lazy_stack(steps, dim)
    try:
        out.names = [None] * dim + ["time"]
    except Exception:  # lazy stacks of heterogeneous data may not support names
        pass
    return out


class RolloutMixin:
    """Mixin of :class:`~gpusim.envs.common.EnvBase`: ``rollout`` and the compiled loops.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> CartPoleEnv(batch_size=[2], seed=0).rollout(3, break_when_any_done=False).shape
        torch.Size([2, 3])
    """

    def compile_step_and_maybe_reset(self, *, warmup: int | None = None, **kwargs: Any) -> EnvBase:
        """Compiles :meth:`step_and_maybe_reset` in place with ``torch.compile``; returns the env.

        TorchRL's ``env.compile(**options)`` and ``compile=`` construction option (the latter is
        accepted by every env: ``CartPoleEnv(compile=True)``, ``compile={"warmup": 2, ...}``).
        gpusim's own :meth:`compile` builds a compiled policy-and-step loop instead
        (:class:`~gpusim.envs.compiled.CompiledRollout`). :meth:`eager` undoes it.

        Args:
            warmup: the first ``warmup`` calls run eagerly (the data layout right after a reset
                differs from the steady state's, which would compile twice); ``None``: compile
                from the first call.
            **kwargs: ``torch.compile`` options (``backend``, ``mode``, ``fullgraph``,
                ``dynamic``, ...).

        Returns:
            The env itself.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(compile={"backend": "eager", "warmup": 1})
            >>> data, root = env.step_and_maybe_reset(env.rand_action(env.reset()))  # eager (warmup)
            >>> env.eager() is env
            True
        """
        if warmup is not None and (isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0):
            raise ValueError(f"warmup must be a non-negative int or None, got {warmup!r}")
        compiled = torch.compile(self._step_and_maybe_reset, **kwargs)
        if warmup:
            compiled = _Warmup(self._step_and_maybe_reset, compiled, warmup)
        self.__dict__["_compiled_step_and_maybe_reset"] = compiled  # nn.Module slot (see gpusim.envs.common)
        self._cache.pop("step_pipeline", None)
        return self

    def eager(self) -> EnvBase:
        """Undoes :meth:`compile_step_and_maybe_reset`: ``step_and_maybe_reset`` runs eagerly
        again. Returns the env.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv().compile_step_and_maybe_reset(backend="eager")
            >>> env.eager().step_and_maybe_reset(env.rand_action(env.reset()))[1].batch_size
            torch.Size([])
        """
        self.__dict__.pop("_compiled_step_and_maybe_reset", None)  # nn.Module slot (see gpusim.envs.common)
        self._cache.pop("step_pipeline", None)
        return self

    # ------------------------------------------------------------------ rollout
    def rollout(
        self,
        max_steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        callback: Callable[[EnvBase, TensorDictBase], Any] | None = None,
        *,
        actions: Iterable[Any] | None = None,
        auto_reset: bool = True,
        auto_cast_to_device: bool = False,
        break_when_any_done: bool | None = None,
        break_when_all_done: bool | None = None,
        return_contiguous: bool | None = None,
        tensordict: TensorDictBase | None = None,
        set_truncated: bool = False,
        storing_device: torch.device | str | None = None,
        compile: bool | dict = False,
    ) -> TensorDictBase:
        """Runs ``max_steps`` steps with ``policy`` (random actions when ``None``).

        Args:
            max_steps: number of steps.
            policy: callable reading and writing a tensordict (a new tensordict it returns is
                merged into its input), or a ``torch.nn.Module`` that is not a tensordict
                module: it is called on the observation tensors and returns the action.
            callback: called as ``callback(env, tensordict)`` after each step.
            actions: pre-computed actions driving the rollout instead of ``policy`` (open-loop
                replay): each item is written under the env's top-level action key before its
                step. A sized iterable caps ``max_steps`` to its length; an iterator that runs
                out ends the rollout. Mutually exclusive with ``policy``.
            auto_reset: reset (``tensordict`` is passed to ``reset``) before the first step.
            auto_cast_to_device: move the policy output to the env device.
            break_when_any_done: stop after the step on which any env finished (default
                ``True`` unless ``break_when_all_done`` is set). Otherwise the envs that finish are
                reset, except after the last step (so that a rollout with ``auto_reset=False``
                can continue the run from ``env.step_mdp(out[..., -1])``).
            break_when_all_done: stop once every env has finished at least once; envs that are
                done are reset in between (non-stop mode is used).
            return_contiguous: stack into a contiguous tensordict (else a lazy stack). Default
                ``None``: contiguous unless a spec has a dynamic (``-1``) dim, whose steps may
                differ in shape; ``True`` with such specs raises.
            tensordict: initial data (required when ``auto_reset=False``; its rows that are
                done are reset first).
            set_truncated: mark the last step as truncated (requires a ``truncated`` entry).
            storing_device: the device of the returned data (default: the env's).
            compile: run ``policy + step_and_maybe_reset`` through ``torch.compile(fullgraph=True)``
                (a dict is forwarded to :meth:`compile`); non-stop rollouts only
                (``break_when_any_done=False``), without callback or ``set_truncated``. The
                compiled function is cached on the env for this policy. To continue where a
                compiled rollout ended, pass ``auto_reset=False,
                tensordict=env.compile(policy).last_root()`` (same options as ``compile``): the
                episodes go on, nothing is recompiled.

        Returns:
            A tensordict of shape ``[*batch_size, T]`` whose last dim is named ``"time"``.

        Raises:
            ValueError: a non-positive ``max_steps``, both break modes, ``auto_reset=False``
                without a tensordict, or ``compile`` with a stopping rollout.
            RuntimeError: ``set_truncated`` on an env without a ``truncated`` entry, or
                ``return_contiguous=True`` with dynamic specs.

        Examples:
            >>> import torch
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4], seed=0)
            >>> td = env.rollout(1000)  # stops after the step on which any env finished
            >>> td.names, td.shape[1] < 1000, td["next", "done"][:, -1].any().item()
            ([None, 'time'], True, True)
            >>> push_right = lambda td: td.set("action", torch.ones(4, dtype=torch.long))
            >>> env.rollout(20, push_right, break_when_any_done=False).shape  # resets finished rows
            torch.Size([4, 20])

            Compiled (``torch.compile`` takes tens of seconds on a CPU, hence skipped here):

            >>> env.rollout(20, break_when_any_done=False, compile=True).shape  # doctest: +SKIP
            torch.Size([4, 20])
        """
        max_steps = positive_int(max_steps, "max_steps")
        if return_contiguous is None:
            return_contiguous = not self._has_dynamic_specs
        elif return_contiguous and self._has_dynamic_specs:
            raise RuntimeError(
                "The environment specs are dynamic. Call rollout with return_contiguous=False "
                "(or None, the default): a spec has a -1 dim, so the steps may differ in shape."
            )
        if actions is not None:
            if policy is not None:
                raise ValueError("rollout got both `policy` and `actions`: pass one of them")
            if hasattr(actions, "__len__"):
                if len(actions) == 0:
                    raise ValueError("rollout(actions=...) got an empty sequence of actions")
                max_steps = min(max_steps, len(actions))
            policy = _ActionReplay(actions, next(iter(self.full_action_spec.keys())))
        if break_when_any_done is None:
            break_when_any_done = not break_when_all_done
        if break_when_any_done and break_when_all_done:
            raise ValueError("break_when_any_done and break_when_all_done cannot both be True")
        if compile:
            bad = {
                "break_when_any_done=True": break_when_any_done,
                "break_when_all_done=True": bool(break_when_all_done),
                "callback": callback is not None,
                "set_truncated": set_truncated,
                "actions": actions is not None,
                "storing_device": storing_device is not None,
            }
            bad = [name for name, value in bad.items() if value]
            if bad:
                raise ValueError(
                    "rollout(compile=True) runs non-stop rollouts only (finished episodes are reset "
                    f"inside the compiled loop), so it cannot take {', '.join(bad)}: call "
                    f"env.rollout({max_steps}, policy, compile=True, break_when_any_done=False)"
                )
            runner = self.compile(policy, **(compile if isinstance(compile, dict) else {}))
            out = runner(max_steps, tensordict=tensordict, auto_reset=auto_reset)
            self._note_root(runner.last_root)  # built on demand by get_state()
            return out
        if set_truncated and not any(_keys.as_tuple(k)[-1] == "truncated" for k in self.done_keys):
            raise RuntimeError(
                "rollout: set_truncated was set to True but the done spec has no 'truncated' entry "
                f"(done keys {self.done_keys}); add them with env.add_truncated_keys()"
            )
        if auto_reset:
            tensordict = self.reset(tensordict)
        elif tensordict is None:
            raise ValueError("rollout(auto_reset=False) needs an initial tensordict")
        else:  # continuing from earlier data: rows that ended start a new episode first
            tensordict = self.maybe_reset(tensordict)
        if policy is None:  # random actions from the env's own stream, keyed by its seed
            from gpusim.envs.random_actions import rollout_actions

            policy = rollout_actions(self, max_steps)
        else:
            policy = _policy.rollout_policy(self, policy)
        if auto_cast_to_device:
            policy = _cast_to(self.device, policy)
        steps, root = self.step_pipeline.run(
            tensordict,
            policy,
            max_steps,
            reset_last=False,
            break_when_any_done=break_when_any_done,
            break_when_all_done=bool(break_when_all_done),
            callback=callback,
            set_truncated=set_truncated,
        )
        self._note_root(root)
        out = stack_rollout(self, steps, return_contiguous)
        if storing_device is not None and out.device != torch.device(storing_device):
            out = out.to(storing_device)
        return out

    def add_truncated_keys(self) -> EnvBase:
        """Adds a ``truncated`` entry beside every ``done`` entry of the done spec (``False``
        unless the env or a transform writes it); returns the env.

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv().add_truncated_keys()
            >>> env.rollout(3, set_truncated=True, break_when_any_done=False)["next", "truncated"][-1].item()
            True
        """
        done = self.full_done_spec.clone()
        done.unlock_()
        for key in self.done_keys:
            tkey = _keys.as_tuple(key)
            if tkey[-1] == "done":
                done[_keys.join(tkey[:-1], "truncated")] = done[key].clone()
        self.full_done_spec = done
        return self

    def compile(
        self, policy: Callable[[TensorDictBase], TensorDictBase] | None = None, **kwargs: Any
    ) -> CompiledRollout:
        """A compiled ``policy + step_and_maybe_reset`` loop, cached per policy and options.

        The returned :class:`~gpusim.envs.compiled.CompiledRollout` is called as
        ``runner(max_steps)`` for a ``[*B, T]`` rollout, ``runner.run(max_steps, root)`` for
        ``(data, next_root)`` (continue by passing ``next_root`` back), or ``runner.step(td)``
        for one compiled step. Keyword arguments are those of ``CompiledRollout``
        (``steps_per_call``, ``mode``, ``verbose``, ``torch.compile`` options). Nothing is
        compiled until the runner is first called.

        Args:
            policy: callable reading and writing a tensordict (``None``: random actions).
            **kwargs: ``CompiledRollout`` options.

        Returns:
            The cached :class:`~gpusim.envs.compiled.CompiledRollout` for this policy and options.

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4], seed=0)
            >>> runner = env.compile(verbose=False)
            >>> env.compile(verbose=False) is runner
            True
        """
        from gpusim.envs.compiled import CompiledRollout

        cache = self.__dict__.setdefault("_compiled_rollouts", {})  # nn.Module slot (see gpusim.envs.common)
        key = (id(policy), _frozen(kwargs))
        runner = cache.get(key)
        if runner is None or (policy is not None and runner.policy is not policy):
            runner = CompiledRollout(self, policy, **kwargs)
            cache[key] = runner
        return runner
