"""Clear errors for envs that ``torch.compile`` cannot trace (``rollout(..., compile=True)``).

Dynamo reports code it cannot put in a ``fullgraph=True`` graph with a long internal message
(``torch._dynamo.exc.Unsupported``). The compiled runner's entry points are wrapped in
:func:`explain_compile_errors`, which re-raises it as an :class:`EnvCompileError` that names the
env and the usual cause: random numbers drawn from a ``torch.Generator`` (not traceable) instead
of the counter-based generator (:class:`~gpusim.envs.native.rng.CounterRNG`, ``rows.uniform`` in
a :class:`~gpusim.envs.native.NativeEnv`), or host reads of tensor values. Dynamo's own message
stays attached as the cause.

Examples:
    >>> import torch
    >>> class Env:  # stands for an env whose _reset draws from a torch.Generator
    ...     gen = torch.Generator()
    >>> err = explain(Env(), RuntimeError("UserDefinedObjectVariable(Generator)"))
    >>> "torch.Generator" in str(err) and "rows.uniform" in str(err)
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

__all__ = ["EnvCompileError", "explain", "explain_compile_errors"]

F = TypeVar("F", bound=Callable[..., Any])

_GUIDE = "docs/writing_an_env.md"


class EnvCompileError(RuntimeError):
    """An env's ``_step``/``_reset`` (or a transform, or the policy) could not be compiled with
    ``torch.compile(fullgraph=True)``; the message says what to change, the cause is Dynamo's.

    Examples:
        >>> issubclass(EnvCompileError, RuntimeError)
        True
    """


def _unsupported_types() -> tuple[type[BaseException], ...]:
    """Dynamo's "cannot trace this" exception class (through :mod:`gpusim._torch_internals`)."""
    from gpusim._torch_internals import untraceable_errors

    return untraceable_errors()


def _chain_text(err: BaseException) -> str:
    parts, seen = [], set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        parts.append(f"{type(err).__name__}: {err}")
        err = err.__cause__ or err.__context__
    return "\n".join(parts)


def _holds_generator(env: Any) -> bool:
    """Whether ``env`` (or a module or base env inside it) keeps a ``torch.Generator``."""
    stack, seen = [env], set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for value in getattr(obj, "__dict__", {}).values():
            if isinstance(value, torch.Generator):
                return True
            if isinstance(value, torch.nn.Module) or (hasattr(value, "_step") and hasattr(value, "_reset")):
                stack.append(value)
            elif isinstance(value, dict):  # nn.Module's _modules
                stack.extend(v for v in value.values() if isinstance(v, torch.nn.Module))
    return False


def explain(env: Any, err: BaseException) -> EnvCompileError:
    """The :class:`EnvCompileError` for Dynamo's error ``err`` raised while compiling ``env``.

    Args:
        env: the env being compiled.
        err: the exception Dynamo raised.
    """
    name = type(env).__name__
    text = _chain_text(err)
    head = (
        f"{name} could not be compiled: rollout(..., compile=True) traces the env's _step and "
        f"_reset (with the transforms and the policy) as one torch.compile(fullgraph=True) graph"
    )
    if "Generator" in text or _holds_generator(env):
        return EnvCompileError(
            f"{head}, and a torch.Generator (torch.rand(..., generator=...)) cannot be traced. Draw "
            "random numbers from the counter-based generator instead, which works eager, compiled "
            "and on CUDA with the same numbers: subclass gpusim.NativeEnv and use "
            "rows.uniform/randint/bernoulli(...) in _reset(tensordict, rows) and "
            f"self.rng.uniform(...) in _step, or keep a gpusim.CounterRNG (see {_GUIDE})."
        )
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return EnvCompileError(
        f"{head}, and torch.compile cannot trace part of it: {first}. Env code must be plain torch "
        "on tensors: no host reads of tensor values (.item(), .tolist(), bool(tensor), if on a "
        "tensor), no numpy, no torch.Generator (use gpusim.CounterRNG); see the traceback's 'from "
        f"user code' lines (in the cause) for the place, and {_GUIDE}. Run it eagerly without compile=True."
    )


def explain_compile_errors(method: F) -> F:
    """Wraps a compiled runner's method (its ``self.env`` is the env): Dynamo's "cannot trace"
    errors become an :class:`EnvCompileError` (see :func:`explain`); nothing else changes.

    Examples:
        >>> class Runner:
        ...     env = object()
        ...     @explain_compile_errors
        ...     def run(self):
        ...         return 1
        >>> Runner().run()
        1
    """
    unsupported = _unsupported_types()

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except unsupported as err:
            raise explain(self.env, err) from err

    return wrapper  # type: ignore[return-value]
