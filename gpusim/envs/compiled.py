"""Compiled rollouts: ``policy + step_and_maybe_reset (+ transforms)`` through
``torch.compile(fullgraph=True)``, writing into a preallocated time-major buffer.

The tensordicts live only at the edges: the compiled function takes and returns flat tuples of
tensors (the root leaves, in a key order fixed once per set of keys) and writes each step's data
into views of a ``[T, *B, ...]`` buffer, so the per-call work outside the graph is a handful of
pointer copies. Several steps can be fused in one call (``steps_per_call``) to amortize the call
cost at small batch. A run's first calls go through Dynamo (its guards checked); the rest run the
code Dynamo chose for them as a plain function (:data:`DIRECT_CALLS`). On CUDA, the compiled calls of a run after its first are captured in one
CUDA graph and replayed by later runs of the same length (``cuda_graphs``; a step at 65536 envs
is otherwise bound by the host launching kernels); ``mode="reduce-overhead"`` uses PyTorch's own
CUDA graphs per call instead (the graph then returns each call's steps and the runner copies
them into the buffer).

Rollouts continue: a runner remembers the data layout of each set of root keys it has seen
(which keys, in which order, does not matter), so ``runner(T, tensordict=root,
auto_reset=False)`` from ``runner.last_root()`` (or from :meth:`CompiledRollout.run`'s returned
root) runs its steps compiled, with no recompilation. The layout of a root never seen (the
output of ``env.reset()`` on the first call) is learnt from an eager step of deep copies of the
env, the policy and the root, thrown away (:data:`DRY_LAYOUT`): every step of a run is compiled,
so runs from the same seed repeat bit for bit (``docs/determinism.md``). A rollout whose length
is not a multiple of ``steps_per_call`` runs the steps left over eagerly, first.

A line is printed on stderr (or through ``log=``, e.g. a progress bar) when a compilation starts
and one when it ends, with its duration and Inductor's cache hits; every compilation of a
runner, a recompilation too, is timed into ``runner.compile_seconds`` and counted in
``runner.compiles``. ``verbose=False`` or the environment variable ``GPUSIM_COMPILE_VERBOSE=0``
silences the lines. A later process compiling the same env, batch size and policy reuses
Inductor's persistent caches (``docs/compile.md``: where they live, how to move them).

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

import contextlib
import dataclasses
import gc
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim import _torch_internals as internals
from gpusim._torch_internals import pytree
from gpusim.envs import _edits
from gpusim.envs._args import positive_int
from gpusim.envs._compile_errors import explain_compile_errors
from gpusim.envs._rollout_cache import rollout_empty
from gpusim.envs.env_specs import warm_plans
from gpusim.kernels._inductor import pack_bool, unpack_bool

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["CompiledRollout", "compile_cache_dir", "default_steps_per_call"]

#: where Inductor's persistent caches live (``TORCHINDUCTOR_CACHE_DIR``; ``docs/compile.md``)
compile_cache_dir = internals.compile_cache_dir


#: batch size (number of env rows) up to which several steps are fused per compiled call
FUSE_UP_TO = 64
#: steps fused per call at small batch: compile time grows with it (the steps are unrolled).
#: Measured cold (no inductor cache), CartPole + StepCounter + a 2x64 MLP categorical policy, CPU
#: seconds of the first batch on this 2-core machine: 15 s for 1 step per call, 25-27 s for 4
#: (batch 1 and 64); 2 keeps a cold compile well inside 30 s
FUSED_STEPS = 2


def default_steps_per_call(numel: int, with_policy: bool = False) -> int:
    """Steps fused in one compiled call for a batch of ``numel`` env rows.

    Fusing amortizes the per-call cost (argument packing, the graph's wrapper) where a step is
    cheap: at small batch and without a policy network (random actions). The fused steps are
    unrolled in the graph, so the compile grows with them. With a policy (``with_policy``) a step
    costs more and the graph is bigger: one step per call. Measured cold, one thread, CartPole-v1
    with the PPO example's 2x64 MLP actor in a compiled ``Collector``, 2 steps per call against
    1: another batch size compiled in 7.5-7.7 s against 4.1-4.2 s, for 7-9 % more env-steps/s at
    16 and 64 envs; without a policy, 2 steps per call run 25-38 % faster there.

    Examples:
        >>> default_steps_per_call(8), default_steps_per_call(4096), default_steps_per_call(8, with_policy=True)
        (2, 1, 1)
    """
    return FUSED_STEPS if numel <= FUSE_UP_TO and not with_policy else 1


#: calls of each :meth:`CompiledRollout.run` that evaluate Dynamo's guards; the calls after them
#: skip the guards. The first call checks the caller's root (its leaves, the env's and policy's
#: attributes read while tracing, grad mode); the second the graph's own output leaves, which
#: every later call of the run takes again. Nothing outside the loop runs between its calls.
#: Runners with direct calls (:data:`DIRECT_CALLS`) check one call more.
GUARDED_CALLS = 2
#: CPU/in-graph runners write the next root's leaves in place, alternately into two sets of
#: buffers made once per run, instead of letting the graph allocate them at each call: fresh
#: allocations of that size are fresh pages (a page fault per 4 KiB, ~15 % of a CartPole step at
#: 65536 envs). A/B in one process, 2 threads, CartPole-v1 at 65536: 100.5 -> 105.2 M env-steps/s;
#: with the 5-transform stack 46.4 -> 55.3 M; at 4096 34.8 -> 38.4 M.
PINGPONG = True
#: Inductor's wrapper checks the size and strides of every graph input at every call (~9 us of
#: a CPU call at 16 envs, 73 -> 82 us per step at 4096). The runner's graphs skip them unless the
#: caller's ``options`` set ``size_asserts``: the first calls of each run are checked by Dynamo's
#: guards, which compare the same sizes and strides, and the later calls take the same tensors
#: (the two root sets made once per run from the same leaves, views of one buffer per key).
SKIP_SIZE_ASSERTS = True
#: CPU runners compile with Inductor's tiling heuristics off (``cpp.enable_tiling_heuristics``):
#: the heuristics leave a loop scalar when many of its loads and stores are strided, which every
#: native env step is (state columns ``[B, 4]``, the reset hash's ``[B, 2]`` lanes); without them
#: the loop is vectorized with strided loads. A/B in one process, 2 threads, env-steps/s at
#: 4096 / 65536 envs: CartPole-v1 59 / 141 M -> 71 / 187 M, with the 5-transform stack 26 / 65 M ->
#: 31 / 75 M, Pendulum-v1 54 / 101 M -> 58 / 133 M, MountainCar-v0 51 / 86 M -> 80 / 264 M,
#: Acrobot-v1 12 / 13 M -> 27 / 44 M (``benchmarks/bench_compiled_paths.py --flag vectorize``).
VECTORIZE_STRIDED = True
#: CUDA runners capture the compiled calls of a run (after its first, guarded one) in one CUDA
#: graph, replayed by later runs of the same length: a compiled step at 65536 envs is bound by
#: kernel launches and the Python around them, not by the GPU. Up to this many env rows (the
#: graph keeps a second copy of the run's data: beyond it the GPU, not the launches, bounds the
#: step).
CUDA_GRAPHS_UP_TO = 1 << 18
#: After the guarded calls of a run (:data:`GUARDED_CALLS`, and one more), its remaining calls
#: run the code Dynamo runs once its guards pass (the cache entry's bytecode: it reads the graph's
#: inputs from their sources, calls the compiled graph and replays the Python side effects),
#: called as a plain function: no frame evaluation, no guard checks. Dynamo's own call costs
#: ~15 us more per call on this CPU (guards of every tensor input even under
#: ``skip_guard_eval_unsafe``; CartPole-v1, 1 thread: 28 -> 13 us per call at 128 envs, 77 -> 58 us
#: at 4096). Taken only if the last two guarded calls ran the same compiled graph (so the Python
#: state the graph's guards read is at a fixed point: the calls in between see what they saw), under
#: the default mode and backend, on CPU (CUDA runners replay CUDA graphs up to
#: :data:`CUDA_GRAPHS_UP_TO` rows, and beyond it the device, not the host, bounds a step).
DIRECT_CALLS = True


class _TaggedInductor:
    """Inductor as a ``torch.compile`` backend whose compiled graphs say, when called, which of
    them ran (and, on request, the addresses of their inputs).

    A CUDA graph replays the kernels of one compiled graph on the memory it was captured with;
    it may replay only after a guarded call ran that same compiled graph on inputs at the same
    addresses (tensors the graph reads from the env or the policy, not from the root). Dynamo
    gives no public handle on which cache entry a call used, so the backend records it. Needs
    the torch internals (:func:`gpusim._torch_internals.inductor_backend`): :meth:`available`.
    """

    def __init__(self, options: dict | None = None, *, loop_vectorize: bool = False) -> None:
        self.options = dict(options or {})
        self.loop_vectorize = loop_vectorize  # builds with GCC's loop vectorizer (CPU envs that ask)
        self.last: int | None = None  # tag of the compiled graph that ran last
        self.record = False  # record the next call's input addresses
        self.addresses: tuple = ()
        self._tags = itertools.count()
        self._compile = internals.inductor_backend(self.options, self._tagged, loop_vectorize=loop_vectorize)

    @staticmethod
    def available() -> bool:
        """Whether the backend can be built (the torch internals are on).

        Examples:
            >>> _TaggedInductor.available() == internals.PRIVATE_API
            True
        """
        return internals.PRIVATE_API

    def _tagged(self, compiled: Callable) -> Callable:
        tag = next(self._tags)

        def run(*args: Any) -> Any:
            self.last = tag
            if self.record:  # boxed calls pass one list of the inputs
                flat = args[0] if len(args) == 1 and isinstance(args[0], list) else args
                self.addresses = tuple(a.data_ptr() if isinstance(a, torch.Tensor) else None for a in flat)
            return compiled(*args)

        run._gpusim_tag = tag  # type: ignore[attr-defined]  (see _direct_code)
        return run

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        if self._compile is None:
            raise RuntimeError(
                "gpusim's tagged Inductor backend needs the torch internals (see gpusim._torch_internals)"
            )
        return self._compile(gm, example_inputs)


def _recapture_reason(captured: _Captured, tag: int | None, addresses: tuple) -> str:
    """Why a run's first call does not allow a replay of ``captured`` (for ``recaptures``)."""
    if tag != captured.tag:
        return f"compiled graph {captured.tag} -> {tag} (guards failed: recompiled or another cache entry)"
    moved = [i for i, (a, b) in enumerate(zip(addresses, captured.addresses)) if a != b]
    return f"graph inputs {moved} of {len(addresses)} at other addresses (tensors replaced, not updated in place)"


def _direct_code(body: Callable, tag: int) -> Callable | None:
    """What Dynamo runs for ``body`` once the guards of the cache entry whose compiled graph is
    ``tag`` pass, as a plain function of ``body``'s arguments, or ``None`` if no entry of ``body``'s
    code calls that graph (or the torch internals are off): see
    :func:`gpusim._torch_internals.entry_function`."""
    return internals.entry_function(body, lambda graph: getattr(graph, "_gpusim_tag", None) == tag)


@dataclasses.dataclass
class _Captured:
    """One CUDA graph of a run's compiled calls after its first. Every call of it, and each run's
    first call, reads and writes static tensors only: the run's root is copied into ``sets[1]``,
    the first call steps it into ``sets[0]``, the captured calls alternate between the two sets,
    and the step data of all calls land in ``outs`` (``[calls * k, ...]`` per output key), copied
    into the run's own buffers after the replay."""

    key: tuple  # (root keys, steps per call, calls per run)
    graph: Any  # torch.cuda.CUDAGraph
    sets: tuple  # two tuples of root leaves
    outs: tuple  # one [calls * k, ...] tensor per output key
    chunks: tuple  # the [k, ...] views of ``outs`` per call
    tag: int | None  # the compiled graph that the first call ran at capture
    addresses: tuple  # the first call's input addresses at capture

    def fits(self, leaves: tuple) -> bool:
        """Whether a root's leaves have the shapes and dtypes of the static root sets."""
        return all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(leaves, self.sets[1]))


def _without_guards() -> contextlib.AbstractContextManager:
    """Dynamo's ``skip_guard_eval_unsafe`` stance for the repeated calls of one rollout (the
    guards cost ~20 us per call, a third of a compiled step at 64 envs), unless the caller set a
    stance of their own (:func:`gpusim._torch_internals.skip_guards`)."""
    return internals.skip_guards()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (if it was on) for the compiled calls of a run.

    A run keeps ``T / k`` views per output key alive (its calls' outputs, :func:`_per_call`):
    their allocation triggers collections, and once they are promoted, full collections of the
    whole heap (~460 thousand objects after a compilation). Measured on CartPole-v1 at 128 envs, 1
    thread: 30.6 / 38.0 / 42.0 us per step with the GC on for runs of 100 / 1000 / 5000 steps, 21.0
    / 18.2 / 22.4 us with it off. The calls make no cyclic garbage of their own (views, tuples and
    the graph's outputs are freed by reference counting); a collection may run after the run.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _per_call(buf: torch.Tensor, k: int) -> tuple:
    """The ``[k, ...]`` views of a ``[calls * k, ...]`` buffer, one per compiled call, made at once.

    ``unbind`` of the ``[calls, k, ...]`` view makes them ~9x faster than ``split(k)`` (0.37 vs
    3.4 us per view, measured; a rollout makes one per output key per call: ~16 us of the ~42 us
    that a compiled call cost at 16 envs).

    Examples:
        >>> [v.shape for v in _per_call(torch.zeros(6, 2), 3)]
        [torch.Size([3, 2]), torch.Size([3, 2])]
    """
    return buf.unflatten(0, (buf.shape[0] // k, k)).unbind(0)


def _root_set(leaves: tuple) -> tuple:
    """Buffers shaped like the root leaves, for a graph to write a next root into: with the
    leaves' memory order (:func:`dim_order`), so the graph's inputs keep the layout the env chose
    (and the first call's root, the env's own tensors, has the same strides as the later ones)."""
    return tuple(torch.empty_like(v) for v in leaves)  # v's strides if v is dense, else contiguous


def dim_order(v: torch.Tensor) -> tuple[int, ...]:
    """``v``'s dims from the outermost in memory to the innermost (``torch.empty_like``'s
    preserved order; dims in order for a contiguous tensor, and for one that is not dense).

    Native envs may keep a state with the batch innermost in memory (strided ``[*B, n, d]`` views
    of ``[n, d, B]`` columns: :class:`~gpusim.envs.native.mpe._world.ParticleWorld`). Buffers made
    in that order take the graph's results without a transpose.

    Examples:
        >>> dim_order(torch.zeros(4, 3)), dim_order(torch.zeros(3, 2, 4).permute(2, 0, 1))
        ((0, 1), (1, 2, 0))
        >>> dim_order(torch.zeros(4, 1).expand(4, 3))  # not dense: row-major
        (0, 1)
    """
    strides = torch.empty_like(v).stride()  # v's strides if v is dense, else contiguous ones
    return tuple(sorted(range(v.dim()), key=lambda d: (-strides[d], d)))


def _ordered_empty(
    shape: tuple, dtype: torch.dtype, device: torch.device, order: tuple[int, ...], empty: Callable
) -> torch.Tensor:
    """``empty(dense shape in memory order)`` viewed back as ``shape`` (``order``: the dims from
    the outermost in memory, as :func:`dim_order`)."""
    lead = len(shape) - len(order)  # leading dims (time) kept outermost
    perm = tuple(range(lead)) + tuple(lead + d for d in order)
    dense = empty(tuple(shape[p] for p in perm), dtype=dtype, device=device)
    return dense.permute(*sorted(range(len(perm)), key=perm.__getitem__))


def _on_cpu(env: EnvBase) -> bool:
    """Whether the env's tensors live on the CPU (an env without a device: on the CPU)."""
    return env.device is None or env.device.type == "cpu"


def _default_options(env: EnvBase) -> dict:
    """The Inductor options a runner adds under the default mode and backend (the caller's
    ``options`` prevail): :data:`SKIP_SIZE_ASSERTS`, :data:`VECTORIZE_STRIDED` (CPU envs), and
    on CPU the base env class's ``cpu_inductor_options``.

    Examples:
        >>> import gpusim as gs
        >>> sorted(_default_options(gs.CartPoleEnv(batch_size=[4])))
        ['cpp.enable_tiling_heuristics', 'size_asserts']
    """
    options = internals.inductor_options(
        skip_size_asserts=SKIP_SIZE_ASSERTS, cpu_strided_vectorize=VECTORIZE_STRIDED and _on_cpu(env)
    )
    if _on_cpu(env):
        options.update(_cpu_options_of(env))
    return options


def _cpu_options_of(env: EnvBase) -> dict:
    """The Inductor options the base env's class asks for on CPU (``cpu_inductor_options``, e.g.
    MinAtar's scalar C++ loops), those ``torch._inductor.list_options()`` knows.

    Examples:
        >>> import gpusim as gs
        >>> _cpu_options_of(gs.make("MinAtar/Breakout-v1", num_envs=2))
        {'cpp.simdlen': 0}
        >>> _cpu_options_of(gs.CartPoleEnv(batch_size=[2]))
        {}
    """
    wanted = dict(getattr(_base_env_class(env), "cpu_inductor_options", None) or {})
    if not wanted:
        return {}
    try:
        from torch._inductor import list_options

        known = set(list_options())
    except Exception:  # noqa: BLE001 - no list: pass nothing
        return {}
    return {k: v for k, v in wanted.items() if k in known}


def _base_env_class(env: EnvBase) -> type:
    """The class of the env under every transform layer (``base_env`` chain)."""
    while hasattr(env, "base_env"):
        env = env.base_env
    return type(env)


def _cpu_loop_vectorize(env: EnvBase) -> bool:
    """Whether CPU graphs of this env build with GCC's loop vectorizer on (the base env class's
    ``cpu_loop_vectorize``; see :func:`gpusim._torch_internals.gcc_loop_vectorizer`).

    Examples:
        >>> import gpusim as gs
        >>> _cpu_loop_vectorize(gs.make("MinAtar/Breakout-v1", num_envs=2)), _cpu_loop_vectorize(gs.CartPoleEnv())
        (True, False)
    """
    return _on_cpu(env) and bool(getattr(_base_env_class(env), "cpu_loop_vectorize", False))


def _unaliased(leaves: tuple) -> tuple:
    """Clones leaves that are the same tensor as an earlier one: aliasing between inputs is
    guarded by the compiler, and whether a reset happened would otherwise pick the graph."""
    seen: set[int] = set()
    out = []
    for leaf in leaves:
        out.append(leaf.clone() if id(leaf) in seen else leaf)
        seen.add(id(leaf))
    return tuple(out)


def _unaliased_root(td: TensorDictBase) -> TensorDictBase:
    """``td``, or a shallow copy of it whose leaves that are the same tensor as an earlier leaf
    are clones (:func:`_unaliased` for a tensordict).

    Examples:
        >>> from tensordict import TensorDict
        >>> x = torch.zeros(2)
        >>> td = TensorDict({"a": x, "b": x}, [2])
        >>> out = _unaliased_root(td)
        >>> out["a"] is x, out["b"] is x, td["b"] is x
        (True, False, True)
    """
    leaves, spec = pytree.tree_flatten(td)
    if len({id(leaf) for leaf in leaves}) == len(leaves):
        return td
    return pytree.tree_unflatten(list(_unaliased(tuple(leaves))), spec)  # the caller's td untouched


def _cached_empty(size: tuple, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return rollout_empty(size, dtype)


# Layout note (issue #16): holding the [*B, k] root leaves and their output buffers
# feature-major (strides (1, B)) through the graph was measured slower on CPU (1 thread, CartPole
# at 65536 envs: 27-29 M vs 34 M env-steps/s; with the 5-transform stack 6.7 M vs 14.8 M; both
# before bool leaves crossed as uint8, when bool stores took most of the graph's time).
# Inductor lays out its intermediates (stack/cat results, the reset-noise hash, CatFrames'
# window) row-major whatever the inputs' strides, so the mix adds transposes and per-feature
# passes; column-wise env math that keeps them all [B]-vectorized still reached only 30 M.
def _output_buffer(
    shape: tuple, dtype: torch.dtype, device: torch.device, order: tuple[int, ...] | None = None
) -> torch.Tensor:
    """A time-major output buffer: from the rollout buffer cache on CPU (reused memory across
    rollouts), ``torch.empty`` on other devices. ``order`` (the step value's :func:`dim_order`;
    ``None``: row-major) lays each step out in the step value's memory order, so writing a
    step is a plain copy, not a transpose (the data's values and shapes are the same).

    Examples:
        >>> buf = _output_buffer((5, 3, 2), torch.float32, torch.device("cpu"), order=(1, 0))
        >>> buf.shape, buf.stride()
        (torch.Size([5, 3, 2]), (6, 1, 3))
    """
    empty = _cached_empty if device.type == "cpu" else torch.empty
    return _ordered_empty(shape, dtype, device, tuple(range(len(shape) - 1)) if order is None else order, empty)


#: A run from a root of unknown layout learns it from an eager step of deep copies of the env and
#: the policy (:meth:`CompiledRollout._dry_learn`), not from its own first step: every step of a
#: run then goes through the compiled graph, so two runs from the same state give the same bits
#: (an eager first step differs from the compiled one in the last bits of ``sin``/``cos`` and
#: fused multiply-adds, enough to flip a later action: docs/determinism.md).
DRY_LAYOUT = True


def _copies(env: EnvBase, policy: Callable, root: TensorDictBase) -> tuple:
    """Deep copies of ``(env, policy, root)`` (one memo: a policy that holds the env holds the
    copy), without the env's compiled runners and compiled step (the copy steps eagerly)."""
    import copy

    memo: dict = {}
    for module in env.modules():  # an env and the envs it wraps are modules
        cache = vars(module).get("_compiled_rollouts")  # this runner among them
        if cache is not None:
            memo[id(cache)] = {}
        step = vars(module).get("_compiled_step_and_maybe_reset")
        if step is not None:
            memo[id(step)] = None
    return copy.deepcopy((env, policy, root), memo)


def _leaves(td: TensorDictBase) -> list:
    return [v for _, v in _tensor_items(td)]


def _tensor_items(td: TensorDictBase) -> list[tuple]:
    return [(k, v) for k, v in td.items(True, True) if isinstance(v, torch.Tensor)]


def _key_set(td: TensorDictBase) -> frozenset:
    return frozenset(k for k, _ in _tensor_items(td))


def _sort_key(key) -> tuple:
    return (key,) if isinstance(key, str) else tuple(key)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _cache_note(before: dict, after: dict) -> str:
    """What Inductor's and AOTAutograd's persistent caches gave between two counter readings."""
    if not before or not after:
        return ""
    hits = after["fxgraph_cache_hit"] - before["fxgraph_cache_hit"]
    misses = after["fxgraph_cache_miss"] - before["fxgraph_cache_miss"]
    if not hits and not misses:
        return ""
    return f" (Inductor cache: {hits} hit{'s' * (hits != 1)}, {misses} miss{'es' * (misses != 1)})"


def _verbose_default() -> bool:
    return os.environ.get("GPUSIM_COMPILE_VERBOSE", "1").strip().lower() not in ("0", "false", "no", "off")


@dataclasses.dataclass
class _Layout:
    """What a root with one set of keys gives: the canonical flat order of the root leaves and
    the pytree spec to rebuild the root in the graph, and the step data's keys/shapes/dtypes (the
    next root has the same keys)."""

    keys: tuple
    spec: pytree.TreeSpec
    out_keys: tuple
    out_meta: tuple  # (shape, dtype, device, dim_order) per out key
    template: TensorDictBase  # one step's data (structure and sub-tensordict batch sizes)
    bools: tuple = ()  # per root leaf (in ``keys`` order): whether it is a bool tensor


def _canonical(root: TensorDictBase) -> tuple[tuple, pytree.TreeSpec]:
    """The root's tensor leaves in a key order that depends only on the set of keys (sorted), and
    the pytree spec of a tensordict holding them in that order."""
    keys = sorted((k for k, _ in _tensor_items(root)), key=_sort_key)
    canon = TensorDict({}, batch_size=root.batch_size, device=root.device)
    prefixes = sorted({k[:i] for k in keys if isinstance(k, tuple) for i in range(1, len(k))}, key=len)
    for prefix in prefixes:
        sub = root.get(prefix)
        canon.set(prefix, TensorDict({}, batch_size=sub.batch_size, device=sub.device))
    for key in keys:
        value = root.get(key)
        canon.set(key, value.view(value.shape))  # a tensor object of its own even where leaves alias
    leaves, spec = pytree.tree_flatten(canon)
    by_id = {id(canon.get(k)): k for k in keys}
    order = tuple(by_id[id(leaf)] for leaf in leaves)
    return order, spec


class CompiledRollout:
    """A compiled ``policy + step_and_maybe_reset`` loop for one env and one policy.

    Args:
        env: the env (a tensor program: native env, TransformedEnv of one, ...).
        policy: callable reading and writing a tensordict; ``None`` draws uniform random actions
            from the env's own counter-based stream, keyed by the env's seed, as ``env.rollout()``
            without a policy does (:func:`~gpusim.envs.random_actions.rollout_actions`: it fuses
            into the compiled step), or uses ``env.rand_action`` for action specs it cannot draw. The policy's parameters are
            inputs of the graph: weights updated in place (by an optimizer) are read at each call.
        steps_per_call: steps fused in one compiled call (``None``:
            :func:`default_steps_per_call`: 2 for batches of at most 64 envs without a policy,
            else 1). A rollout
            of ``T`` steps makes calls of this many steps; the ``T % steps_per_call`` steps left
            over run eagerly first, so one graph is compiled per layout.
        mode: ``torch.compile`` mode (``None``: Inductor's default; ``"reduce-overhead"`` adds
            PyTorch's own CUDA graphs per call, which ``cuda_graphs`` replaces by one per run).
        cuda_graphs: capture a CUDA run's compiled calls after its first (guarded) one in one CUDA
            graph, replayed by later runs of the same length (``None``: on for CUDA envs of at
            most :data:`CUDA_GRAPHS_UP_TO` rows under the default mode and backend). Each run's
            first call still checks Dynamo's guards: a changed env attribute, grad mode or a
            tensor the graph reads that was replaced (not updated in place) captures anew.
        verbose: print a line when a compilation starts and one when it ends, with its duration
            and the Inductor cache hits (``None``: unless the environment variable
            ``GPUSIM_COMPILE_VERBOSE`` is ``0``).
        log: where those lines go: a callable taking one line, e.g. a progress bar's
            :meth:`~gpusim.bench.progress.Progress.log` (``None``: standard error).
        **compile_kwargs: forwarded to ``torch.compile`` (``fullgraph=True`` is always set).

    Attributes:
        compile_seconds: seconds spent compiling so far, every compilation and recompilation of
            the runner's graphs (wall clock of the calls that compiled: Dynamo's trace,
            Inductor's code generation or its persistent cache, the C++ or Triton build).
            ``Collector.compile_seconds`` is its collector's runner's.
        compiles: the number of those compilations (one per data layout when nothing
            recompiles); each printed one line with its duration.

    Raises:
        ValueError: a non-positive ``steps_per_call``, ``fullgraph=False``, or
            ``cuda_graphs=True`` for an env not on CUDA, with a ``mode``, or with a ``backend``.
    Each run's first calls go through Dynamo with its guards; once two of them ran the same
    compiled graph, the run's other calls run that graph's code directly on CPU (:data:`DIRECT_CALLS`;
    ``direct_calls`` counts them). Python's cyclic GC is paused during a run's compiled calls.

    The data of a rollout is ``[*B, T]`` like ``env.rollout``'s. To continue a rollout, pass the
    root it ended on: ``runner(T, tensordict=runner.last_root(), auto_reset=False)``, or use
    :meth:`run`, which returns it. Neither recompiles.

    Examples:
        Building the runner compiles nothing; the first call does (tens of seconds on a CPU,
        hence skipped in the doctest run):

        >>> import gpusim as gs
        >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
        >>> runner = CompiledRollout(env, steps_per_call=2, verbose=False)
        >>> type(runner.policy).__name__, runner.compile_seconds  # random actions that fuse
        ('HashRandomPolicy', 0.0)
        >>> runner(10).shape                                        # doctest: +SKIP
        torch.Size([4, 10])
        >>> runner.compiles, runner.compile_seconds > 0             # doctest: +SKIP
        (1, True)
        >>> more = runner(10, tensordict=runner.last_root(), auto_reset=False)  # doctest: +SKIP
    """

    def __init__(
        self,
        env: EnvBase,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        steps_per_call: int | None = None,
        mode: str | None = None,
        cuda_graphs: bool | None = None,
        verbose: bool | None = None,
        log: Callable[[str], Any] | None = None,
        **compile_kwargs: Any,
    ) -> None:
        if steps_per_call is not None and (
            isinstance(steps_per_call, bool) or not isinstance(steps_per_call, int) or steps_per_call < 1
        ):
            raise ValueError(f"steps_per_call must be a positive int, got {steps_per_call!r}")
        if compile_kwargs.pop("fullgraph", True) is not True:
            raise ValueError("compiled rollouts always use fullgraph=True")
        self.env = env
        self.steps_per_call = steps_per_call or default_steps_per_call(
            max(1, env.batch_size.numel()), with_policy=policy is not None
        )
        if policy is None:  # the env's own action stream, as env.rollout() without a policy
            from gpusim.envs.random_actions import rollout_actions

            policy = rollout_actions(env)
        self.policy = policy
        self.mode = mode
        self.verbose = _verbose_default() if verbose is None else bool(verbose)
        self._print = _stderr_line if log is None else log
        default = mode is None and "backend" not in compile_kwargs  # Inductor under the default mode
        if default:
            compile_kwargs["options"] = {**_default_options(env), **(compile_kwargs.get("options") or {})}
        self.compile_kwargs = compile_kwargs
        # graphs write each step into views of the output buffer; CUDA graphs cannot take
        # mutated inputs, so under "reduce-overhead" the graph returns the steps instead
        self._write_in_graph = mode not in ("reduce-overhead", "max-autotune")
        self._pingpong = PINGPONG and self._write_in_graph
        self._cuda_graphs = self._wants_cuda_graphs(cuda_graphs, compile_kwargs)
        # direct calls (DIRECT_CALLS) need the same backend as CUDA graphs: it says which compiled
        # graph ran
        self._direct = DIRECT_CALLS and default and _on_cpu(env) and self._pingpong and _TaggedInductor.available()
        self._backend = (
            _TaggedInductor(compile_kwargs.get("options"), loop_vectorize=default and _cpu_loop_vectorize(env))
            if self._cuda_graphs or self._direct
            else None
        )
        self._direct_fns: dict[int, Callable] = {}  # compiled graph tag -> its entry's code as a function
        #: calls of this runner's rollouts and trusted steps that ran directly (see :data:`DIRECT_CALLS`)
        self.direct_calls = 0
        self._captured: _Captured | None = None
        #: why CUDA graphs of a known run length were captured anew (one line each, the last 32)
        self.recaptures: list[str] = []
        self._compiled: dict = {}
        self._step_root: TensorDictBase | None = None  # the root the last step() returned
        self._step_direct: Callable | None = None  # step()'s graph past the guards (trusted calls)
        self._step_runs: list[tuple] = []  # (graph tag, edits, grad mode) after the last two guarded steps
        self._layouts: dict[frozenset, _Layout] = {}
        self._last_root: tuple | None = None
        #: seconds this runner spent compiling so far (every compilation and recompilation of its
        #: graphs: Dynamo's trace, Inductor's code generation or cache lookups, the C++ build)
        self.compile_seconds = 0.0
        #: compilations of this runner so far (each printed once, with its duration)
        self.compiles = 0

    # ---------------------------------------------------------------- messages
    def _say(self, text: str) -> None:
        if self.verbose:
            self._print(f"gpusim: {text}")

    def _wants_cuda_graphs(self, cuda_graphs: bool | None, compile_kwargs: dict) -> bool:
        """Whether runs replay CUDA graphs (``cuda_graphs=None``: CUDA envs of at most
        :data:`CUDA_GRAPHS_UP_TO` rows under the default mode and backend)."""
        device = self.env.device
        on_cuda = device is not None and device.type == "cuda"
        if cuda_graphs is None:
            rows = max(1, self.env.batch_size.numel())
            cuda_graphs = (
                on_cuda
                and self.mode is None
                and "backend" not in compile_kwargs
                and rows <= CUDA_GRAPHS_UP_TO
                and _TaggedInductor.available()
            )
        elif cuda_graphs:
            why = (
                f"the env's device is {device}, not CUDA"
                if not on_cuda
                else f"mode={self.mode!r} (PyTorch's own CUDA graphs)"
                if self.mode is not None
                else "a backend= of its own"
                if "backend" in compile_kwargs
                else "gpusim's torch internals are off (gpusim._torch_internals.PRIVATE_API; "
                "mode='reduce-overhead' gives PyTorch's own CUDA graphs)"
                if not _TaggedInductor.available()
                else None
            )
            if why is not None:
                raise ValueError(f"cuda_graphs=True needs a CUDA env under the default mode and backend: {why}")
        return bool(cuda_graphs)

    def _describe(self) -> str:
        policy = getattr(self.policy, "__name__", type(self.policy).__name__)
        return f"{type(self.env).__name__} + {policy}, batch {list(self.env.batch_size)}"

    # ---------------------------------------------------------------- traced body
    def _body(self, layout: _Layout, k: int) -> Callable:
        # everything the body reads is bound here, once per data layout: attributes read from
        # ``self`` at call time would be guarded (and recompiled) on every new rollout
        env, policy = self.env, self.policy
        spec, out_keys, next_keys = layout.spec, layout.out_keys, layout.keys
        in_graph = self._write_in_graph
        packed = self._packs_bools()
        in_bools = layout.bools if packed else (False,) * len(next_keys)
        out_bools = tuple(packed and dtype == torch.bool for _, dtype, _, _ in layout.out_meta)
        # uint8 leaves (frames) of a CPU graph are written once per call, stacked: written step by
        # step, the k slices of the call's view became one select over the whole view per step
        # (Inductor's C++ blends uint8 lanes under a float mask, converted per vector): a
        # from_pixels CartPole at 8 envs of 600x400 frames, 2 steps per call, spent 93 % of its
        # 72 ms step there
        stacked = tuple(
            packed and not b and dtype == torch.uint8 for (_, dtype, _, _), b in zip(layout.out_meta, out_bools)
        )

        def body(root_leaves: tuple, views: tuple, next_bufs: tuple = ()) -> tuple:
            leaves = [unpack_bool(v) if b else v for v, b in zip(root_leaves, in_bools)]
            td = pytree.tree_unflatten(leaves, spec)
            steps = []
            later: list[list] = [[] for _ in out_keys]
            for i in range(k):
                stepped, td = env.step_and_maybe_reset(policy(td))
                if in_graph:
                    for key, view, b, s, values in zip(out_keys, views, out_bools, stacked, later):
                        value = stepped.get(key)
                        if s:
                            values.append(value)
                        else:
                            view[i].copy_(pack_bool(value) if b else value)
                else:
                    steps.append(tuple(stepped.get(key) for key in out_keys))
            for view, values in zip(views, later):
                if values:
                    view.copy_(torch.stack(values))
            nxt = tuple(pack_bool(v) if b else v for v, b in zip((td.get(key) for key in next_keys), in_bools))
            if next_bufs:
                for buf, value in zip(next_bufs, nxt):
                    buf.copy_(value)
                return ()
            if in_graph:
                return nxt
            return nxt, tuple(torch.stack(vals) for vals in zip(*steps))

        return body

    def _packs_bools(self) -> bool:
        """Whether bool leaves cross the graph boundary as ``uint8`` (CPU graphs that write in
        place): see :func:`gpusim.kernels._inductor.pack_bool`."""
        return self._write_in_graph and _on_cpu(self.env)

    def _compile(self, fn: Callable) -> Callable:
        """``torch.compile`` of one of this runner's functions (a code object of its own: Dynamo's
        cache and its recompile limit are per code object), through the runner's backend when it
        has one (which also carries the env's ``cpu_loop_vectorize``), else Inductor with the
        runner's mode and options."""
        if self._backend is not None:
            kwargs = {k: v for k, v in self.compile_kwargs.items() if k != "options"}  # the backend's
            return torch.compile(fn, fullgraph=True, backend=self._backend, **kwargs)
        return torch.compile(fn, fullgraph=True, mode=self.mode, **self.compile_kwargs)

    def _fn(self, layout: _Layout, k: int) -> tuple[Callable, bool]:
        key = (layout.keys, k)
        fn = self._compiled.get(key)
        if fn is None:
            warm_plans(self.env)  # plans first read while tracing would make the next call recompile
            body = internals.own_code(self._body(layout, k))
            fn = self._compile(body)
            fn._gpusim_body = body  # type: ignore[attr-defined]  (for _direct_code)
            self._compiled[key] = fn
            return fn, True
        return fn, False

    @explain_compile_errors
    def step(self, tensordict: TensorDictBase, *, trusted: bool = False) -> tuple[TensorDictBase, TensorDictBase]:
        """One compiled ``policy + step_and_maybe_reset`` (tensordict in, tensordicts out).

        Args:
            tensordict: the root data.

        Keyword Args:
            trusted: the caller's promise that ``tensordict`` is the root the last call returned
                with at most its action entries rewritten by the action spec's ``encode``
                (contiguous, same shapes, dtypes and devices). Then, on CPU runners, once two
                guarded calls in a row ran the same compiled graph, the calls run that graph's
                code directly, past Dynamo's guards (about 500 Python checks for CartPole, a third
                of a step at 16 envs), while no env or transform was edited since
                (:mod:`gpusim.envs._edits`) and the grad mode is the same; anything else goes
                through the guards. The gymnasium and SB3 views pass it. ``direct_calls`` counts
                these calls.

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
        own = tensordict is self._step_root
        direct = self._step_direct  # set only when the last two guarded steps ran one graph in one state
        if (
            trusted
            and own
            and direct is not None
            and self._step_runs[-1][1:] == (_edits.edits(), torch.is_grad_enabled())
        ):
            out = direct(tensordict)
            self.direct_calls += 1
            self._step_root = out[1]
            return out
        fn = self._compiled.get("step")
        fresh = fn is None
        if fresh:
            env, policy = self.env, self.policy

            def one(td):
                return env.step_and_maybe_reset(policy(td))

            body = internals.own_code(one)
            fn = self._compile(body)
            fn._gpusim_body = body  # type: ignore[attr-defined]  (for _direct_code)
            self._compiled["step"] = fn
            warm_plans(self.env)
            self._say(f"compiling one step ({self._describe()})...")
        if not own:
            # data from elsewhere (an eager reset): its aliased leaves (a native env's state that
            # is its observation) would fail the graph's guards once the graph's own outputs come
            # back, and compile a second graph
            tensordict = _unaliased_root(tensordict)
        before = self._before_call(fresh)
        if self._direct:
            self._backend.last = None  # set again by the graph this call runs
        start = time.perf_counter()
        out = fn(tensordict)
        self._timed_call(time.perf_counter() - start, before, fresh)
        self._step_root = out[1]
        self._step_direct = None
        if self._direct and trusted:
            runs = self._step_runs
            runs.append((self._backend.last, _edits.edits(), torch.is_grad_enabled()))
            del runs[:-2]
            if len(runs) == 2 and runs[0] == runs[1]:
                self._step_direct = self._direct_fn(fn, [tag for tag, *_ in runs])
        return out

    @staticmethod
    def _before_call(fresh: bool) -> tuple:
        """What :meth:`_timed_call` compares after a guarded call: the number of graphs Dynamo
        compiled so far (one counter lookup), and the cache counters before a first call."""
        return internals.compiled_graphs(), internals.compile_counters() if fresh else {}

    def _timed_call(self, seconds: float, before: tuple, fresh: bool) -> None:
        """Accounts a guarded call that took ``seconds``: a compilation if it was the first call of
        a fresh graph or if Dynamo compiled a graph meanwhile (a recompilation: timed and printed,
        without the cache counts)."""
        graphs, counts = before
        if fresh:
            self._compiled_in(seconds, _cache_note(counts, internals.compile_counters()))
        elif graphs is not None and internals.compiled_graphs() != graphs:
            self._compiled_in(seconds, recompiled=True)

    def _compiled_in(self, seconds: float, note: str = "", recompiled: bool = False) -> None:
        self.compile_seconds += seconds
        self.compiles += 1
        what = f"recompiled ({self._describe()})" if recompiled else "compiled"
        self._say(f"{what} in {seconds:.1f} s{note}")

    # ---------------------------------------------------------------- layouts
    def _learn(self, stepped: TensorDictBase, next_root: TensorDictBase) -> None:
        """Records, from one eager step, the layout of the next root's key set: the steady state
        of the loop (the same policy and env from a root with these keys give a root with the
        same keys)."""
        key_set = _key_set(next_root)
        if key_set in self._layouts:
            return
        items = sorted(_tensor_items(stepped), key=lambda kv: _sort_key(kv[0]))
        keys, spec = _canonical(next_root)
        self._layouts[key_set] = _Layout(
            keys=keys,
            spec=spec,
            out_keys=tuple(k for k, _ in items),
            out_meta=tuple((tuple(v.shape), v.dtype, v.device, dim_order(v)) for _, v in items),
            template=stepped,
            bools=tuple(next_root.get(key).dtype == torch.bool for key in keys),
        )

    def _dry_learn(self, root: TensorDictBase) -> bool:
        """Learns the layout of ``root``'s steady state from one eager step of deep copies of the
        env, the policy and ``root`` (:data:`DRY_LAYOUT`), under a forked torch generator: the
        originals, their counters and the global generator are untouched, so the run's first step
        is compiled like every other. ``False`` (learn from the run's first step) if a copy fails,
        or the copies fail to step, or give a next root of other keys than ``root``'s."""
        if not DRY_LAYOUT:
            return False
        devices = [d for d in {v.device for v in _leaves(root)} if d.type == "cuda"]
        try:
            env, policy, copied = _copies(self.env, self.policy, root)
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                stepped, nxt = env.step_and_maybe_reset(policy(copied))
        except Exception:  # noqa: BLE001 - not copyable, or a copy that does not step (a
            # transform that loses its parent in the copy): learn from the run's first step
            return False
        if _key_set(nxt) != _key_set(root):
            return False
        self._learn(stepped, nxt)
        return True

    def _steady(self, root: TensorDictBase) -> _Layout | None:
        """The layout of ``root``'s keys (any order) if a step from such a root was seen."""
        return self._layouts.get(_key_set(root))

    # ---------------------------------------------------------------- rollout
    def __call__(
        self, max_steps: int, tensordict: TensorDictBase | None = None, auto_reset: bool = True
    ) -> TensorDictBase:
        """Runs ``max_steps`` steps (non-stop, with auto-reset) and returns ``[*B, T]`` data.

        Args:
            max_steps: number of steps ``T``.
            tensordict: the root to start from (passed to ``env.reset`` when ``auto_reset``).
            auto_reset: reset before the first step. ``False`` continues from ``tensordict``
                (e.g. :meth:`last_root`).

        Returns:
            The data, ``[*B, T]`` (last dim named ``"time"``) of views of a time-major buffer
            (each step laid out like the env's value of that key: :func:`dim_order`).
            The root that would feed the next step is :meth:`last_root`.

        Raises:
            ValueError: a non-positive ``max_steps``, or ``auto_reset=False`` without data.
        """
        if auto_reset:
            tensordict = self.env.reset(tensordict)
        elif tensordict is None:
            raise ValueError(
                "a compiled rollout with auto_reset=False continues from a root: pass tensordict= "
                "(e.g. runner.last_root() after a rollout, or env.reset())"
            )
        data, _ = self.run(max_steps, tensordict)
        return data

    @explain_compile_errors
    def run(self, max_steps: int, root: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """Runs ``max_steps`` steps from ``root`` and returns ``(data, next_root)``.

        ``next_root`` is the root of the step after the last one (finished rows already reset):
        pass it back to continue the episodes. Its steps run compiled (but ``max_steps %
        steps_per_call`` eager ones first); the layout of a root of unknown keys is learnt from a
        step of copies (:data:`DRY_LAYOUT`), or, if the env or the policy cannot be deep-copied,
        from an eager first step.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
            >>> runner = env.compile(verbose=False)                    # doctest: +SKIP
            >>> data, root = runner.run(5, env.reset())                 # doctest: +SKIP
            >>> data, root = runner.run(5, root)                        # doctest: +SKIP
        """
        max_steps = positive_int(max_steps, "max_steps")
        if not isinstance(root, TensorDictBase):
            raise TypeError(f"root must be a TensorDict (e.g. env.reset()), got {type(root).__name__}")
        if tuple(root.batch_size[: len(self.env.batch_size)]) != tuple(self.env.batch_size):
            raise ValueError(
                f"the root has batch_size {list(root.batch_size)}, expected the env's {list(self.env.batch_size)}"
            )
        k = self.steps_per_call
        layout = self._steady(root)
        learn = layout is None
        if learn and self._dry_learn(root):  # the layout, from a step of copies (DRY_LAYOUT)
            layout, learn = self._steady(root), False
        # steps that run eagerly, first: one to learn an unknown layout if the dry step could not,
        # and as many as make the rest a whole number of k-step calls (one graph per layout)
        head = 1 + (max_steps - 1) % k if learn else max_steps % k
        eager, root = self.env.step_pipeline.run(root, self.policy, head)
        if learn:
            self._learn(eager[0], root)
            layout = self._steady(root)
        buffers = [_output_buffer((max_steps, *shape), *meta) for shape, *meta in layout.out_meta]
        for t, stepped in enumerate(eager):
            for buf, key in zip(buffers, layout.out_keys):
                buf[t].copy_(stepped.get(key))
        leaves = _unaliased(tuple(root.get(key) for key in layout.keys))
        packed = self._packs_bools()
        if packed:  # bool leaves and buffers cross the boundary as uint8 views (same memory)
            leaves = tuple(v.view(torch.uint8) if b else v for v, b in zip(leaves, layout.bools))
        graph_buffers = [buf.view(torch.uint8) if packed and buf.dtype == torch.bool else buf for buf in buffers]
        calls = (max_steps - head) // k
        fn, compiling = self._fn(layout, k) if calls else (None, False)
        if compiling:
            self._say(f"compiling {k} step{'s' if k > 1 else ''} per call ({self._describe()})...")
        if self._cuda_graphs and calls > 1:
            leaves = self._graphed(fn, (layout.keys, k, calls), leaves, graph_buffers, head, compiling)
            self._last_root = (leaves, layout)
            return self._assemble(layout, buffers), self.last_root()
        scope = contextlib.ExitStack()  # closed on errors too: the stance and the GC are restored
        if not compiling:  # (a compilation makes cyclic garbage: the GC stays on for it)
            scope.enter_context(_gc_paused())
        chunks = [_per_call(buf[head:], k) for buf in graph_buffers]
        pingpong = self._pingpong
        if pingpong:
            # the next root's leaves are written in place into two sets of buffers made once per
            # run, alternately: no allocation (and no page faults on fresh memory) per call
            sets = [_root_set(leaves) for _ in range(min(2, calls))]
        # direct calls (DIRECT_CALLS) after one more guarded call, if the last two ran one graph
        guarded = GUARDED_CALLS + 1 if self._direct else GUARDED_CALLS  # (direct implies pingpong)
        tags: list = []  # the compiled graph each guarded call ran (direct runners)
        call = fn
        with scope:
            for j, views in enumerate(zip(*chunks)):
                if j == guarded:
                    call = self._direct_fn(fn, tags[-2:]) if self._direct else None
                    if call is None:
                        call = fn
                        scope.enter_context(_without_guards())
                    else:
                        self.direct_calls += calls - j
                if j < guarded:  # a call that may compile (the first) or recompile (guards failed)
                    before = self._before_call(compiling)
                    start = time.perf_counter()
                if pingpong:
                    out = sets[j % 2]
                    record = self._direct and j < guarded
                    if record:
                        self._backend.last = None  # set again by the graph this call runs
                    call(leaves, views, out)
                    leaves = out
                    if record:
                        tags.append(self._backend.last)
                elif self._write_in_graph:
                    out = fn(leaves, views)
                    if j < GUARDED_CALLS:  # the graph may return one tensor twice: always or never
                        aliased = len({id(v) for v in out}) < len(out)
                    leaves = _unaliased(out) if aliased else out
                else:
                    if self.env.device.type == "cuda":
                        torch.compiler.cudagraph_mark_step_begin()
                    leaves, outs = fn(leaves, views)
                    for view, out in zip(views, outs):
                        view.copy_(out)
                    leaves = tuple(leaf.clone() for leaf in leaves)  # graph-owned memory is reused
                if j < guarded:
                    self._timed_call(time.perf_counter() - start, before, compiling)
                if compiling:  # the first call compiled the graph
                    compiling = False
                    scope.enter_context(_gc_paused())
            chunks = views = None  # freed while the GC is paused: never scanned, never promoted
        if packed:
            leaves = tuple(v.view(torch.bool) if b else v for v, b in zip(leaves, layout.bools))
        self._last_root = (leaves, layout)
        return self._assemble(layout, buffers), self.last_root()

    def _direct_fn(self, fn: Callable, tags: list) -> Callable | None:
        """The compiled graph the last two guarded calls ran (``tags``), as a plain function of the
        body's arguments (:func:`_direct_code`), or ``None`` if they ran different graphs."""
        if len(tags) != 2 or tags[0] != tags[1] or tags[0] is None:
            return None
        direct = self._direct_fns.get(tags[0])
        if direct is None:
            direct = _direct_code(fn._gpusim_body, tags[0])
            if direct is not None:
                self._direct_fns[tags[0]] = direct
        return direct

    def _graphed(self, fn: Callable, key: tuple, leaves: tuple, buffers: list, head: int, compiling: bool) -> tuple:
        """A run's compiled calls on CUDA: the root is copied into the static root set, the first
        call runs (guarded) into the other set, and the rest replay the CUDA graph captured for
        this ``key`` if that call ran the same compiled graph on the same memory (captured anew
        otherwise). Returns the next root (tensors of its own)."""
        _, k, calls = key
        backend = self._backend
        captured = self._captured
        if captured is None or captured.key != key or not captured.fits(leaves):
            self._captured = captured = None  # its memory is freed before a new one is made
            sets = (_root_set(leaves), _root_set(leaves))
            outs = tuple(torch.empty_like(buf[head:]) for buf in buffers)
            chunks = tuple(zip(*(_per_call(out, k) for out in outs)))
        else:
            sets, outs, chunks = captured.sets, captured.outs, captured.chunks
        torch._foreach_copy_(list(sets[1]), list(leaves))
        before = self._before_call(compiling)
        start = time.perf_counter()
        backend.record = True
        try:
            fn(sets[1], chunks[0], sets[0])
        finally:
            backend.record = False
        self._timed_call(time.perf_counter() - start, before, compiling)
        tag, addresses = backend.last, backend.addresses
        if captured is None or captured.tag != tag or captured.addresses != addresses:
            if captured is not None:
                self.recaptures.append(_recapture_reason(captured, tag, addresses))
                del self.recaptures[:-32]  # the latest reasons only
            self._captured = None
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for c in range(1, calls):
                    fn(sets[(c - 1) % 2], chunks[c], sets[c % 2])
            if backend.last != tag:
                raise RuntimeError(
                    "a compiled rollout's calls ran different compiled graphs within one run while "
                    "capturing its CUDA graph; pass cuda_graphs=False to env.compile() (and report it)"
                )
            captured = _Captured(key, graph, sets, outs, chunks, tag, addresses)
            self._captured = captured
        captured.graph.replay()
        for buf, out in zip(buffers, outs):
            buf[head:].copy_(out)
        return tuple(v.clone() for v in sets[(calls - 1) % 2])

    def last_root(self) -> TensorDictBase:
        """The root tensordict that would feed the step after the last rollout (finished rows
        already reset): pass it as ``tensordict=`` with ``auto_reset=False`` to continue.

        Examples:
            Continuing a compiled rollout where it stopped (compiling is skipped in the doctest
            run):

            >>> import gpusim as gs
            >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
            >>> runner = env.compile(verbose=False)
            >>> first = runner(16)                                          # doctest: +SKIP
            >>> more = runner(16, tensordict=runner.last_root(), auto_reset=False)  # doctest: +SKIP
            >>> more.shape                                                  # doctest: +SKIP
            torch.Size([4, 16])

        Raises:
            RuntimeError: before any rollout.
        """
        if self._last_root is None:
            raise RuntimeError("last_root() is only known after a rollout of this runner")
        leaves, layout = self._last_root
        return pytree.tree_unflatten(list(leaves), layout.spec)

    def _assemble(self, layout: _Layout, buffers: list) -> TensorDictBase:
        template = layout.template
        nb = len(self.env.batch_size)
        T = buffers[0].shape[0] if buffers else 0
        result = TensorDict({}, batch_size=(*template.batch_size, T), device=template.device)
        for key, buf in zip(layout.out_keys, buffers):
            result.set(key, buf.movedim(0, nb))
        for key, sub in template.items(True):
            if isinstance(sub, TensorDictBase):
                bs = list(sub.batch_size)
                result.get(key).batch_size = torch.Size([*bs[:nb], T, *bs[nb:]])
        result.names = [None] * nb + ["time"]
        return result
