"""Column ops of the native envs: one call in the env, the backend chosen here.

A native env is written once, in plain torch (no branch on ``torch.compiler.is_compiling()`` or on
the device in an env file). The few ops whose fastest form differs between eager CPU and
everything else (compiled graphs, GPUs) live here, each with two implementations giving the
same numbers, chosen by the dispatcher (:func:`~gpusim.kernels._dispatch.takes_cpu_path`, the
fast form of :func:`~gpusim.kernels.select`; table row ``"env_columns"``):

* ``"cpu"`` (eager CPU): write each column through a strided ``out=`` view of a fresh
  ``[*B, k]`` tensor (a ``torch.stack`` along a small last dim costs about ten elementwise ops on
  CPU; a column copy about one), take transcendental functions of contiguous copies;
* ``"reference"`` (``torch.compile`` traces it, GPUs run it): ``torch.stack`` and plain ops,
  which Inductor fuses into the step's loop.

``with gpusim.kernels.force_backend("reference", "env_columns"):`` runs the reference on CPU
(tests compare both).

Examples:
    >>> import torch
    >>> state = torch.tensor([[1.0, 2.0]])
    >>> advance(state, [torch.tensor([10.0]), torch.tensor([20.0])], 0.5).tolist()
    [[6.0, 12.0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpusim.kernels._dispatch import takes_cpu_path

__all__ = ["advance", "cos_sin", "fma", "plus_minus", "stack_last"]


_PLUS_MINUS_ROWS = 1 << 11  # plus_minus: the arithmetic form from this many elements on (eager CPU)


def _cpu(x: torch.Tensor) -> bool:
    return takes_cpu_path("env_columns", x, x.numel())


def stack_last(columns: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(columns, -1)``: ``k`` tensors ``[*B]`` to one ``[*B, k]``.

    Examples:
        >>> stack_last([torch.zeros(2), torch.ones(2)]).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
    """
    first = columns[0]
    if not _cpu(first):
        return torch.stack(tuple(columns), -1)
    out = torch.empty((*first.shape, len(columns)), dtype=first.dtype, device=first.device)
    for i, column in enumerate(columns):
        out[..., i] = column
    return out


def fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, value: float | torch.Tensor) -> torch.Tensor:
    """``a + value * b * c``: ``torch.addcmul`` when ``value`` is a Python number (one fused op),
    plain ops when it is a per-env ``[*B]`` tensor (``addcmul`` takes a number only).

    Examples:
        >>> fma(torch.ones(2), torch.ones(2), torch.full((2,), 2.0), 3.0).tolist()
        [7.0, 7.0]
        >>> fma(torch.ones(2), torch.ones(2), torch.full((2,), 2.0), torch.tensor([3.0, 1.0])).tolist()
        [7.0, 3.0]
    """
    if isinstance(value, torch.Tensor):
        return a + value * b * c
    return torch.addcmul(a, b, c, value=value)


def advance(state: torch.Tensor, rates: Sequence[torch.Tensor], tau: float | torch.Tensor) -> torch.Tensor:
    """One explicit Euler step, column by column: ``state[..., i] + tau * rates[i]``, stacked.

    Args:
        state: ``[*B, k]``.
        rates: ``k`` tensors ``[*B]``, the time derivative of each column.
        tau: the time step (a Python number, or a per-env ``[*B]`` tensor).

    Returns:
        A new ``[*B, k]`` tensor (``torch.add(column, rate, alpha=tau)`` per column: the same
        numbers on every backend).

    Examples:
        >>> advance(torch.zeros(3, 2), [torch.ones(3), -torch.ones(3)], 0.1)[0].tolist()
        [0.10000000149011612, -0.10000000149011612]
    """
    if len(rates) != state.shape[-1]:
        raise ValueError(f"advance: {len(rates)} rates for a state of {state.shape[-1]} columns")
    if isinstance(tau, torch.Tensor):  # per-env time steps (alpha= takes a number only)
        return stack_last([state[..., i] + tau * rate for i, rate in enumerate(rates)])
    if not _cpu(state):
        # compiled: the new columns stacked once (a stack of the rates is a [B, k] buffer of its
        # own in Inductor's code, one column copied by a scalar loop); A/B in one process,
        # 2 threads, CartPole-v1 at 65536 compiled: 114.9 -> 129.2 M env-steps/s
        return torch.stack([torch.add(state[..., i], rate, alpha=tau) for i, rate in enumerate(rates)], -1)
    out = torch.empty_like(state)
    for i, rate in enumerate(rates):
        torch.add(state[..., i], rate, alpha=tau, out=out[..., i])
    return out


def cos_sin(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(torch.cos(x), torch.sin(x))``; on eager CPU of a contiguous copy of ``x`` (a column of
    a ``[*B, k]`` state is strided, and the vectorised kernels want contiguous input).

    Examples:
        >>> [round(v, 4) for v in torch.stack(cos_sin(torch.tensor([0.0, 1.0]))).flatten().tolist()]
        [1.0, 0.5403, 0.0, 0.8415]
    """
    if _cpu(x):
        x = x.contiguous()
    return torch.cos(x), torch.sin(x)


def plus_minus(cond: torch.Tensor, value: float | torch.Tensor) -> torch.Tensor:
    """``torch.where(cond, value, -value)`` as float32 (a push left or right, a torque sign).

    On eager CPU with a Python number and at least 2048 rows, ``cond * 2 value - value`` (the
    same numbers: ``2 value`` is exact and so is ``2 value - value``): ``torch.where`` with scalar
    operands runs a scalar loop, ~6x slower at 65536 rows on this project's CPU (198 vs 31 us,
    one thread); in CartPole's eager loop the arithmetic form saves ~10-20 us per step at 4096
    rows, and neither form is ahead at 64 or 1024 (quiet A/B, 2026-11-29).

    Examples:
        >>> plus_minus(torch.tensor([True, False]), 10.0).tolist()
        [10.0, -10.0]
        >>> plus_minus(torch.tensor([True, False]), torch.tensor([1.0, 2.0])).tolist()
        [1.0, -2.0]
    """
    if isinstance(value, torch.Tensor):
        return torch.where(cond, value, -value)
    if cond.numel() >= _PLUS_MINUS_ROWS and _cpu(cond):
        return cond.to(torch.float32).mul_(2.0 * value).sub_(value)
    return torch.where(cond, value, -value)
