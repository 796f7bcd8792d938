"""Compiled rollouts: ``policy + step_and_maybe_reset (+ transforms)`` through
``torch.compile(fullgraph=True)``, writing into a preallocated time-major buffer.

The tensordicts live only at the edges: the compiled function takes and returns flat tuples of
tensors (the root leaves, in a key order fixed once) and writes each step's data into views of
a ``[T, *B, ...]`` buffer, so the per-call work outside the graph is a handful of pointer
copies. Several steps can be fused in one call (``steps_per_call``) to amortize the call cost at
small batch. On CUDA, ``mode="reduce-overhead"`` adds CUDA graphs on top.

Examples:
    ``torch.compile`` takes tens of seconds on a CPU, so the compiled calls below are skipped in
    the doctest run (``tests/envs/test_compiled_rollout.py`` runs them):

    >>> import gpusim as gs
    >>> env = gs.CartPoleEnv(batch_size=[16], seed=0)
    >>> data = env.rollout(8, compile=True, break_when_any_done=False)   # doctest: +SKIP
    >>> data.shape                                                       # doctest: +SKIP
    torch.Size([16, 8])
"""

from __future__ import annotations

import itertools
import types
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.utils._pytree as pytree
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._rollout_cache import rollout_empty

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["CompiledRollout"]


_CODE_IDS = itertools.count()


def _own_code(fn: Callable) -> Callable:
    """``fn`` with a code object of its own. Dynamo caches compiled graphs per code object (at
    most ``recompile_limit`` of them): every runner body would otherwise share one cache across
    all envs, batch sizes and layouts, and the ninth would fail under ``fullgraph=True``."""
    code = fn.__code__.replace(co_name=f"{fn.__code__.co_name}_{next(_CODE_IDS)}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def _unaliased(leaves: tuple) -> tuple:
    """Clones leaves that are the same tensor as an earlier one: aliasing between inputs is
    guarded by the compiler, and whether a reset happened would otherwise pick the graph."""
    seen: set[int] = set()
    out = []
    for leaf in leaves:
        out.append(leaf.clone() if id(leaf) in seen else leaf)
        seen.add(id(leaf))
    return tuple(out)


def _output_buffer(shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """A time-major output buffer: from the rollout buffer cache on CPU (reused memory across
    rollouts), ``torch.empty`` on other devices."""
    if like.device.type == "cpu":
        return rollout_empty(shape, like.dtype)
    return torch.empty(shape, dtype=like.dtype, device=like.device)


def _tensor_items(td: TensorDictBase) -> list[tuple]:
    return [(k, v) for k, v in td.items(True, True) if isinstance(v, torch.Tensor)]


class CompiledRollout:
    """A compiled ``policy + step_and_maybe_reset`` loop for one env and one policy.

    Args:
        env: the env (a tensor program: native env, TransformedEnv of one, ...).
        policy: callable reading and writing a tensordict; ``None`` draws uniform random actions
            from a counter-based stream (:class:`~gpusim.envs.random_actions.HashRandomPolicy`,
            seeded from torch's global generator) that fuses into the compiled step, or uses
            ``env.rand_action`` for action specs it cannot draw.
        steps_per_call: steps fused in one compiled call (``None``: 16 for batches of at most
            64 envs, else 1).
        mode: ``torch.compile`` mode (``None`` on CPU; e.g. ``"reduce-overhead"`` on CUDA).
        **compile_kwargs: forwarded to ``torch.compile`` (``fullgraph=True`` is always set).

    Raises:
        ValueError: a non-positive ``steps_per_call`` or ``fullgraph=False``.

    Examples:
        Building the runner compiles nothing; the first call does (tens of seconds on a CPU,
        hence skipped in the doctest run):

        >>> import gpusim as gs
        >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
        >>> runner = CompiledRollout(env, steps_per_call=2)
        >>> type(runner.policy).__name__, runner.compile_seconds  # random actions that fuse
        ('HashRandomPolicy', 0.0)
        >>> runner(10).shape                              # doctest: +SKIP
        torch.Size([4, 10])
        >>> runner.last_root()["observation"].shape       # doctest: +SKIP
        torch.Size([4, 4])
    """

    def __init__(
        self,
        env: "EnvBase",
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        steps_per_call: int | None = None,
        mode: str | None = None,
        **compile_kwargs: Any,
    ) -> None:
        if steps_per_call is not None and (not isinstance(steps_per_call, int) or steps_per_call < 1):
            raise ValueError(f"steps_per_call must be a positive int, got {steps_per_call!r}")
        if compile_kwargs.pop("fullgraph", True) is not True:
            raise ValueError("compiled rollouts always use fullgraph=True")
        self.env = env
        if policy is None:
            from gpusim.envs.random_actions import HashRandomPolicy

            spec = env.full_action_spec
            policy = HashRandomPolicy(spec, env.batch_size) if HashRandomPolicy.supports(spec) else env.rand_action
        self.policy = policy
        numel = max(1, env.batch_size.numel())
        self.steps_per_call = steps_per_call or (16 if numel <= 64 else 1)
        self.mode = mode
        self.compile_kwargs = compile_kwargs
        self._compiled: dict[int, Callable] = {}
        self._root_spec = None
        self._root_keys: list | None = None
        self._out_keys: list | None = None
        self.compile_seconds = 0.0

    # ---------------------------------------------------------------- traced body
    def _body(self, k: int) -> Callable:
        # everything the body reads is bound here, once per data layout: attributes read from
        # ``self`` at call time would be guarded (and recompiled) on every new rollout
        env, policy = self.env, self.policy
        root_spec, out_keys, root_keys = self._root_spec, tuple(self._out_keys), tuple(self._root_keys)

        def body(root_leaves: tuple, views: tuple) -> tuple:
            td = pytree.tree_unflatten(list(root_leaves), root_spec)
            for i in range(k):
                stepped, td = env.step_and_maybe_reset(policy(td))
                for key, view in zip(out_keys, views):
                    view[i].copy_(stepped.get(key))
            return tuple(td.get(key) for key in root_keys)

        return body

    def _fn(self, k: int) -> Callable:
        fn = self._compiled.get(k)
        if fn is None:
            fn = torch.compile(_own_code(self._body(k)), fullgraph=True, mode=self.mode, **self.compile_kwargs)
            self._compiled[k] = fn
        return fn

    def step(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """One compiled ``policy + step_and_maybe_reset`` (tensordict in, tensordicts out).

        Args:
            tensordict: the root data.

        Returns:
            ``(stepped, next_root)`` as :meth:`EnvBase.step_and_maybe_reset
            <gpusim.envs.common.EnvBase.step_and_maybe_reset>`.

        Examples:
            Compiling takes tens of seconds on a CPU (skipped in the doctest run):

            >>> import gpusim as gs
            >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
            >>> runner = env.compile()
            >>> stepped, td = runner.step(env.reset())   # doctest: +SKIP
            >>> stepped["next", "reward"].shape           # doctest: +SKIP
            torch.Size([4, 1])
        """
        fn = self._compiled.get("step")
        if fn is None:
            env, policy = self.env, self.policy

            def one(td):
                return env.step_and_maybe_reset(policy(td))

            fn = torch.compile(one, fullgraph=True, mode=self.mode, **self.compile_kwargs)
            self._compiled["step"] = fn
        return fn(tensordict)

    # ---------------------------------------------------------------- rollout
    def __call__(self, max_steps: int, tensordict: TensorDictBase | None = None, auto_reset: bool = True) -> TensorDictBase:
        """Runs ``max_steps`` steps (non-stop, with auto-reset) and returns ``[*B, T]`` data.

        Args:
            max_steps: the number of steps ``T``.
            tensordict: initial data (passed to ``reset``, or the first root without
                ``auto_reset``).
            auto_reset: reset before the first step.

        Returns:
            A ``[*B, T]`` tensordict (last dim named ``"time"``) of views of a time-major buffer.

        Raises:
            ValueError: a non-positive ``max_steps``, or ``auto_reset=False`` without data.
        """
        import time

        env = self.env
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if auto_reset:
            tensordict = env.reset(tensordict)
        elif tensordict is None:
            raise ValueError("a compiled rollout with auto_reset=False needs an initial tensordict")
        # step 0 runs eagerly: it fixes the structure of the data and the output buffer
        stepped, td = env.step_and_maybe_reset(self.policy(tensordict))
        items = _tensor_items(stepped)
        out_keys = [k for k, _ in items]
        buffers = [_output_buffer((max_steps, *v.shape), v) for _, v in items]
        for buf, (_, v) in zip(buffers, items):
            buf[0].copy_(v)
        root_keys = [k for k, _ in _tensor_items(td)]
        if self._out_keys is not None and (out_keys != self._out_keys or root_keys != self._root_keys):
            self._compiled.clear()  # the data layout changed (new transforms, other policy outputs)
        root_spec = pytree.tree_flatten(td.select(*root_keys))[1]
        if self._root_spec is not None and root_spec != self._root_spec:
            self._compiled.clear()
        self._out_keys, self._root_keys, self._root_spec = out_keys, root_keys, root_spec
        leaves = _unaliased(tuple(td.get(k) for k in root_keys))
        t, k = 1, self.steps_per_call
        while t < max_steps:
            n = k if max_steps - t >= k else 1
            fresh = n not in self._compiled
            start = time.perf_counter()
            leaves = self._fn(n)(leaves, tuple(buf[t : t + n] for buf in buffers))
            if fresh:
                self.compile_seconds += time.perf_counter() - start
            t += n
        self._last_root = (leaves, root_keys)
        return self._assemble(stepped, out_keys, buffers)

    def last_root(self) -> TensorDictBase:
        """The root tensordict that would feed the step after the last rollout.

        Examples:
            Continuing a compiled rollout where it stopped (compiling is skipped in the doctest
            run):

            >>> import gpusim as gs
            >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
            >>> runner = env.compile()
            >>> first = runner(16)                                          # doctest: +SKIP
            >>> more = runner(16, tensordict=runner.last_root(), auto_reset=False)  # doctest: +SKIP
            >>> more.shape                                                  # doctest: +SKIP
            torch.Size([4, 16])
        """
        leaves, keys = self._last_root
        return pytree.tree_unflatten(list(leaves), self._root_spec)

    def _assemble(self, template: TensorDictBase, keys: list, buffers: list) -> TensorDictBase:
        nb = len(self.env.batch_size)
        T = buffers[0].shape[0] if buffers else 0
        result = TensorDict({}, batch_size=(*template.batch_size, T), device=template.device)
        for key, buf in zip(keys, buffers):
            result.set(key, buf.movedim(0, nb))
        for key, sub in template.items(True):
            if isinstance(sub, TensorDictBase):
                bs = list(sub.batch_size)
                result.get(key).batch_size = torch.Size([*bs[:nb], T, *bs[nb:]])
        result.names = [None] * nb + ["time"]
        return result
