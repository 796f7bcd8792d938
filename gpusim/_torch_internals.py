"""Every use of a private Dynamo/Inductor name in gpusim, in one module, with a public-API fallback.

Compiled rollouts (:mod:`gpusim.envs.compiled`) and the Inductor hints
(:mod:`gpusim.kernels._inductor`) go faster with a few torch internals:

* ``torch._inductor.compile_fx.compile_fx`` (and the ``_boxed_call`` flag of what it returns):
  Inductor called from a backend of gpusim's own, which records which compiled graph ran (for
  direct calls and CUDA-graph replays);
* ``torch._C._dynamo.eval_frame._debug_get_cache_entry_list`` and the ``__compiled_fn_*`` globals
  its entries' code reads: the code Dynamo runs once a cache entry's guards pass, called as a
  plain function (:func:`entry_function`);
* ``torch._dynamo.eval_frame._stance``: whether the caller set a ``torch.compiler.set_stance`` of
  their own, before gpusim skips guard evaluation for the repeated calls of a run;
* ``torch.ops.prims.inductor_force_stride_order``: asks Inductor to realize a value once;
* Inductor config names passed through ``torch.compile(options=...)`` (``size_asserts``,
  ``cpp.enable_tiling_heuristics``): public API, passed when ``torch._inductor.list_options()``
  lists them (:func:`inductor_options`), internals on or off;
* ``torch._dynamo.exc.Unsupported`` (:func:`untraceable_errors`): the error Dynamo raises for code
  it cannot trace, which gpusim turns into a message naming the env (public-API fallback: no
  class, the error passes unchanged);
* ``torch.utils._pytree`` (:data:`pytree`): flattening a tensordict root to the graph's leaves
  and back (torch 2.13-2.14 have no public pytree module; tensordict registers its containers
  there). It has no fallback: it is what ``torch.compile`` itself uses;
* ``torch._dynamo.utils.counters`` (:func:`compile_counters`): how many graphs Dynamo compiled
  and how many Inductor / AOTAutograd cache lookups hit, for the compile-time lines and the cache
  tests (fallback: an empty dict, every call that ran while nothing was counted is taken as no
  compilation but a run's first);
* ``torch._inductor.cpp_builder._get_optimization_cflags`` (:func:`gcc_loop_vectorizer`): the C++
  flags of Inductor's builds, whose ``-fno-tree-loop-vectorize`` a runner drops for envs that
  ask (fallback: the flags as they are);
* ``torch._inductor.runtime.cache_dir_utils.cache_dir`` (:func:`compile_cache_dir`): where the
  persistent Inductor caches live (fallback: ``TORCHINDUCTOR_CACHE_DIR`` or torch's documented
  default, ``<tmp>/torchinductor_<user>``);
* one behaviour, not a name: Dynamo caches graphs per code object, so a runner body gets a code
  object of its own (:func:`own_code`; plain Python, kept whatever the probe says).

At import, the installed torch's version is compared with the versions gpusim is tested on
(:data:`TESTED`, the same bounds as ``pyproject.toml``) and the names are probed. When either
check fails (or the environment variable ``GPUSIM_TORCH_INTERNALS=0`` is set), :data:`PRIVATE_API`
is ``False``, a warning says why once, and every function here takes the public way: compiled
rollouts run through ``torch.compile``'s Inductor backend with Dynamo's guards on every call (no
direct calls, no CUDA graphs of a whole run: ``mode="reduce-overhead"`` gives PyTorch's own), and
the hints do nothing. The data is the same (``tests/envs/test_compiled_internals.py`` checks it bit
for bit); the calls cost more.

Examples:
    >>> check_private_api("2.13.0")
    (True, '')
    >>> check_private_api("2.4.1")[0]
    False
    >>> import torch
    >>> x = torch.ones(2)
    >>> force_realize(x) is x  # eager: nothing to do
    True
"""

from __future__ import annotations

import contextlib
import os
import re
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

__all__ = [
    "PRIVATE_API",
    "TESTED",
    "check_private_api",
    "compile_cache_dir",
    "compile_counters",
    "compiled_graphs",
    "entry_function",
    "force_realize",
    "gcc_loop_vectorizer",
    "inductor_backend",
    "inductor_options",
    "own_code",
    "pytree",
    "skip_guards",
    "untraceable_errors",
]

TESTED = ((2, 13), (2, 15))
"""torch versions gpusim is tested with: ``>= 2.13, < 2.15`` (as in ``pyproject.toml``)."""

_COMPILED_FN_PREFIX = "__compiled_fn"  # Dynamo's name for a compiled graph in the frame's globals


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:2])


def _probe() -> str:
    """What of the private names is missing or changed (empty: all there)."""
    try:
        import torch._dynamo.eval_frame as eval_frame
        import torch._inductor.compile_fx as compile_fx
    except Exception as err:  # noqa: BLE001 - any failure means: do not use them
        return f"Dynamo/Inductor modules unusable ({type(err).__name__}: {err})"
    if not callable(getattr(compile_fx, "compile_fx", None)):
        return "torch._inductor.compile_fx.compile_fx is missing"
    if not callable(getattr(torch._C._dynamo.eval_frame, "_debug_get_cache_entry_list", None)):
        return "torch._C._dynamo.eval_frame._debug_get_cache_entry_list is missing"
    stance = getattr(eval_frame, "_stance", None)
    if not all(hasattr(stance, a) for a in ("stance", "skip_guard_eval_unsafe", "backend")):
        return "torch._dynamo.eval_frame._stance lacks stance/skip_guard_eval_unsafe/backend"
    return ""


def check_private_api(version: str | None = None) -> tuple[bool, str]:
    """Whether the torch internals gpusim uses are there and the torch version is a tested one.

    Args:
        version: a version string to check (default: the installed torch's; the names are
            probed only then).

    Returns:
        ``(ok, reason)``: ``reason`` says what failed (empty when ``ok``).

    Examples:
        >>> check_private_api("2.14.1+cu128")
        (True, '')
        >>> check_private_api("2.15.0")
        (False, 'torch 2.15.0 is outside the versions gpusim is tested with (>= 2.13, < 2.15)')
    """
    installed = version is None
    version = torch.__version__ if installed else version
    low, high = TESTED
    if not low <= _version_tuple(version) < high:
        return False, (
            f"torch {version} is outside the versions gpusim is tested with "
            f"(>= {'.'.join(map(str, low))}, < {'.'.join(map(str, high))})"
        )
    if installed:
        reason = _probe()
        if reason:
            return False, reason
    return True, ""


if os.environ.get("GPUSIM_TORCH_INTERNALS", "1").strip().lower() in ("0", "false", "no", "off"):
    PRIVATE_API, _REASON = False, "GPUSIM_TORCH_INTERNALS=0"
else:
    PRIVATE_API, _REASON = check_private_api()
"""Whether the torch internals are used (see the module docstring); read at each call, so a test
may switch it off."""
if not PRIVATE_API and _REASON != "GPUSIM_TORCH_INTERNALS=0":
    warnings.warn(
        f"gpusim: {_REASON}; compiled rollouts fall back to torch's public API (same data, slower calls)",
        RuntimeWarning,
        stacklevel=2,
    )


_NO_LOOP_VECTORIZE = "fno-tree-loop-vectorize"  # in Inductor's GCC flags (without the dash)


def gcc_loop_vectorizer() -> contextlib.AbstractContextManager:
    """A context in which Inductor builds its C++ with GCC's loop vectorizer on.

    Inductor compiles with ``-fno-tree-loop-vectorize`` (GCC), so the loops of a graph compiled
    with ``cpp.simdlen=0`` (scalar C++, which MinAtar's grids ask for) run one element per
    instruction, byte copies included. Inside this context the flag is left out of the flags
    ``torch._inductor.cpp_builder._get_optimization_cflags`` returns, and GCC vectorizes the loops
    it proves safe. Integer and bool code gives the same results either way; floating-point code
    too, since the other flags forbid reassociation. Inductor keys its C++ cache on the build
    command, so such builds never share a library with the others. Outside tracing the context
    costs a function swap. It does nothing without the private API, with another compiler, or
    when that function is missing.

    Examples:
        >>> with gcc_loop_vectorizer():
        ...     pass
    """
    if not PRIVATE_API:
        return contextlib.nullcontext()
    try:
        import torch._inductor.cpp_builder as builder
    except Exception:  # noqa: BLE001 - no builder: nothing to change
        return contextlib.nullcontext()
    original = getattr(builder, "_get_optimization_cflags", None)
    if not callable(original):
        return contextlib.nullcontext()
    return _cflags_without(builder, original, _NO_LOOP_VECTORIZE)


@contextlib.contextmanager
def _cflags_without(builder: types.ModuleType, original: Callable, flag: str):
    def flags(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], list):
            return [f for f in out[0] if f != flag], out[1]
        return out  # another shape than (cflags, ldflags): left as it is

    builder._get_optimization_cflags = flags
    try:
        yield
    finally:
        builder._get_optimization_cflags = original


def inductor_backend(
    options: dict, wrap: Callable[[Callable], Callable], *, loop_vectorize: bool = False
) -> Callable | None:
    """A ``torch.compile`` backend compiling with Inductor (``options`` as its config patches) and
    returning ``wrap(compiled_graph)``, or ``None`` without the private API (then compile with
    ``backend="inductor"`` and do without knowing which graph ran). With ``loop_vectorize``,
    each compilation runs inside :func:`gcc_loop_vectorizer`.

    Examples:
        >>> backend = inductor_backend({}, lambda graph: graph)
        >>> callable(backend) == PRIVATE_API
        True
    """
    if not PRIVATE_API:
        return None

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        from torch._inductor.compile_fx import compile_fx

        with gcc_loop_vectorizer() if loop_vectorize else contextlib.nullcontext():
            compiled = compile_fx(gm, example_inputs, config_patches=options)
        run = wrap(compiled)
        # Dynamo passes the inputs as one list to a compiled graph that says so
        run._boxed_call = getattr(compiled, "_boxed_call", False)  # type: ignore[attr-defined]
        return run

    return backend


def entry_function(fn: Callable, is_target: Callable[[Callable], bool]) -> Callable | None:
    """What Dynamo runs for ``fn`` once the guards of one of its cache entries pass, as a plain
    function of ``fn``'s arguments: the entry's transformed code with ``fn``'s globals and closure
    (it reads the graph's inputs, calls the compiled graph and replays Python side effects). The
    entry is the first whose compiled graph (or a graph it wraps) satisfies ``is_target``.
    ``None`` if there is none, or without the private API.

    Examples:
        >>> entry_function(lambda x: x, lambda graph: True) is None  # never compiled: no entry
        True
    """
    if not PRIVATE_API:
        return None
    try:
        entries = torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)
    except (AttributeError, RuntimeError, TypeError):
        return None
    for entry in entries:
        code = getattr(entry, "code", None)
        for name in getattr(code, "co_names", ()):
            if not name.startswith(_COMPILED_FN_PREFIX):
                continue
            graph = fn.__globals__.get(name)
            while graph is not None and not is_target(graph):
                graph = getattr(graph, "__wrapped__", None)
            if graph is not None:
                try:
                    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
                except (TypeError, ValueError):  # a closure that does not fit the entry's code
                    return None
    return None


def skip_guards() -> contextlib.AbstractContextManager:
    """Dynamo's ``skip_guard_eval_unsafe`` stance (public: ``torch.compiler.set_stance``), unless
    the caller set a stance of their own (kept as it is: that needs Dynamo's private current
    stance) or without the private API (guards evaluated at every call).

    Examples:
        >>> with skip_guards():
        ...     pass
    """
    if not PRIVATE_API:
        return contextlib.nullcontext()
    stance = getattr(getattr(torch._dynamo, "eval_frame", None), "_stance", None)
    if stance is None or stance.stance != "default" or stance.skip_guard_eval_unsafe or stance.backend is not None:
        return contextlib.nullcontext()
    return torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)


def force_realize(x: torch.Tensor) -> torch.Tensor:
    """``x``, computed once into a buffer of its own when traced by ``torch.compile``
    (``prims.inductor_force_stride_order``); ``x`` itself outside tracing or without the private
    API (Inductor then decides).

    Examples:
        >>> force_realize(torch.arange(3)).tolist()
        [0, 1, 2]
    """
    if not PRIVATE_API or not torch.compiler.is_compiling():
        return x
    op = getattr(torch.ops.prims, "inductor_force_stride_order", None)  # registered by Inductor
    return x if op is None else op.default(x, x.stride())


def inductor_options(*, skip_size_asserts: bool, cpu_strided_vectorize: bool) -> dict:
    """Inductor config patches for ``torch.compile(options=...)``: no size/stride asserts in the
    wrapper (``size_asserts``), and C++ loops vectorized with strided loads instead of left scalar
    (``cpp.enable_tiling_heuristics`` off). ``options`` is public API whose keys
    ``torch._inductor.list_options()`` lists (as ``torch.compile``'s documentation says): each is
    passed if listed there, with or without the other internals, since the second one changes
    which loops are vectorized and so the last bits of some results (vectorized and scalar
    ``sin`` differ).

    Examples:
        >>> sorted(inductor_options(skip_size_asserts=True, cpu_strided_vectorize=True))
        ['cpp.enable_tiling_heuristics', 'size_asserts']
    """
    try:
        from torch._inductor import list_options

        known = set(list_options())
    except Exception:  # noqa: BLE001 - no list: pass nothing
        return {}
    options: dict[str, Any] = {}
    if skip_size_asserts and "size_asserts" in known:
        options["size_asserts"] = False
    if cpu_strided_vectorize and "cpp.enable_tiling_heuristics" in known:
        options["cpp.enable_tiling_heuristics"] = False
    return options


_CODE_IDS = iter(range(1 << 62))


def own_code(fn: Callable) -> Callable:
    """``fn`` with a code object of its own. Dynamo caches compiled graphs per code object (at
    most ``recompile_limit`` of them): every runner body would otherwise share one cache across
    all envs, batch sizes and layouts, and the ninth would fail under ``fullgraph=True``. Plain
    Python (``CodeType.replace``): harmless whatever Dynamo does, so kept under the fallback.

    Examples:
        >>> def body(x):
        ...     return x + 1
        >>> copy = own_code(body)
        >>> copy(1), copy.__code__ is body.__code__
        (2, False)
    """
    code = fn.__code__.replace(co_name=f"{fn.__code__.co_name}_{next(_CODE_IDS)}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def untraceable_errors() -> tuple[type[BaseException], ...]:
    """Dynamo's "cannot trace this" exception classes (``torch._dynamo.exc.Unsupported``), or
    ``()`` where torch has none under that name.

    Examples:
        >>> all(issubclass(cls, Exception) for cls in untraceable_errors())
        True
    """
    exc = getattr(getattr(torch, "_dynamo", None), "exc", None)
    cls = getattr(exc, "Unsupported", None)
    return (cls,) if isinstance(cls, type) else ()


#: the counters :func:`compile_counters` reads: (group, name) in ``torch._dynamo.utils.counters``
_COUNTERS = {
    "graphs": ("stats", "unique_graphs"),
    "fxgraph_cache_hit": ("inductor", "fxgraph_cache_hit"),
    "fxgraph_cache_miss": ("inductor", "fxgraph_cache_miss"),
    "autograd_cache_hit": ("aot_autograd", "autograd_cache_hit"),
    "autograd_cache_miss": ("aot_autograd", "autograd_cache_miss"),
}


def compile_counters() -> dict[str, int]:
    """This process's compile counters so far: ``graphs`` (graphs Dynamo compiled), and Inductor's
    FX graph cache and AOTAutograd's cache hits and misses (``fxgraph_cache_hit``, ...). Empty
    where torch keeps no such counters.

    Examples:
        >>> sorted(compile_counters())  # doctest: +NORMALIZE_WHITESPACE
        ['autograd_cache_hit', 'autograd_cache_miss', 'fxgraph_cache_hit', 'fxgraph_cache_miss', 'graphs']
    """
    try:
        from torch._dynamo.utils import counters
    except Exception:  # noqa: BLE001 - no counters: nothing to report
        return {}
    return {name: int(counters[group][key]) for name, (group, key) in _COUNTERS.items()}


try:
    from torch._dynamo.utils import counters as _counters
except Exception:  # noqa: BLE001 - no counters: compiled_graphs() says None
    _counters = None


def compiled_graphs() -> int | None:
    """Graphs Dynamo compiled in this process so far (one counter lookup: cheap enough for the
    guarded calls of every run), or ``None`` where torch keeps no such counter.

    Examples:
        >>> isinstance(compiled_graphs(), int)
        True
    """
    if _counters is None:
        return None
    return _counters["stats"]["unique_graphs"]


def compile_cache_dir() -> str:
    """The directory of Inductor's persistent caches (the FX graph cache, AOTAutograd's cache, the
    compiled kernels), reused by later processes: ``TORCHINDUCTOR_CACHE_DIR`` if set, else
    ``<tmp>/torchinductor_<user>``.

    Examples:
        >>> import os
        >>> os.path.isabs(compile_cache_dir())
        True
    """
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        return cache_dir()
    except Exception:  # noqa: BLE001 - the documented default
        import getpass
        import tempfile

        default = os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
        return os.environ.get("TORCHINDUCTOR_CACHE_DIR", default)
