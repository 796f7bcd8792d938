"""``check_determinism``: what gpusim guarantees about reproducibility, checked on one env.

Every check drives the env with the same open-loop actions: a table ``[T, *B, ...]`` drawn from
a counter-based hash of ``(seed, step, row, lane)``, so row ``i``'s actions do not depend on the
batch size, and the policy reading the table is the same eager and compiled. Then:

=====================  ==========================================================  ==========
check                  compares                                                    guaranteed
=====================  ==========================================================  ==========
same seed twice        two envs built with the same seed, eager                    yes
same seed, compiled    two compiled rollouts of two envs built with the same seed  yes
batch size             row ``i`` of a batch of ``small`` and of ``large`` rows      yes
masked vs sparse       ``auto_reset_mode="masked"`` against ``"sparse"``            yes
serial vs parallel     ``SerialEnv`` and ``ParallelEnv`` of two workers            yes
eager vs compiled      the eager rollout and the compiled one                      no (1)
=====================  ==========================================================  ==========

(1) Inductor may fuse and reorder float arithmetic (``a * b + c`` as one fused multiply-add,
sums in another order), so a compiled step can differ from the eager one in the last bits of a
float (about ``1e-7`` relative for float32); the report gives the largest difference. Integer and
boolean data (discrete states, the counter-based random numbers, done flags) are the same
wherever the float data they derive from is.

``gpusim check --determinism ENV_ID`` prints the report.

Examples:
    >>> report = check_determinism("CartPole-v1", steps=20, compile=False, batched=False)
    >>> report.ok
    True
    >>> print(report)  # doctest: +ELLIPSIS
    determinism of CartPole-v1 (8 rows, 20 steps, seed 0)
      same seed twice        holds ...
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native.rng import hash32
from gpusim.specs import Binary, Bounded, Categorical, OneHot, Unbounded

__all__ = ["check_determinism", "DeterminismReport", "DeterminismResult", "DeterminismError"]

_GOLDEN = 0x61C88647
_MASK32 = 0xFFFFFFFF


class DeterminismError(AssertionError):
    """A guaranteed determinism check failed (raised by :meth:`DeterminismReport.raise_if_failed`).

    Examples:
        >>> issubclass(DeterminismError, AssertionError)
        True
    """


@dataclasses.dataclass(frozen=True)
class DeterminismResult:
    """One check: its name, whether it holds, whether gpusim guarantees it, and the detail.

    Examples:
        >>> DeterminismResult("same seed twice", True, True, "bit-identical").holds
        True
    """

    name: str
    holds: bool
    guaranteed: bool
    detail: str


@dataclasses.dataclass
class DeterminismReport:
    """The results of :func:`check_determinism`; ``ok`` when every guaranteed check holds.

    Examples:
        >>> r = DeterminismReport("X", 4, 10, 0, [DeterminismResult("a", False, False, "1e-7")])
        >>> r.ok, r.failed
        (True, [])
    """

    env_id: str
    num_envs: int
    steps: int
    seed: int
    results: list[DeterminismResult]

    @property
    def failed(self) -> list[DeterminismResult]:
        """The guaranteed checks that do not hold.

        Examples:
            >>> r = DeterminismReport("X", 4, 10, 0, [DeterminismResult("a", False, True, "differs")])
            >>> [x.name for x in r.failed]
            ['a']
        """
        return [r for r in self.results if r.guaranteed and not r.holds]

    @property
    def ok(self) -> bool:
        """Whether every guaranteed check holds.

        Examples:
            >>> DeterminismReport("X", 4, 10, 0, [DeterminismResult("a", True, True, "bit-identical")]).ok
            True
        """
        return not self.failed

    def raise_if_failed(self) -> None:
        """Raises :class:`DeterminismError` naming the guaranteed checks that do not hold.

        Examples:
            >>> bad = DeterminismReport("X", 4, 10, 0, [DeterminismResult("a", False, True, "differs at 'x'")])
            >>> bad.raise_if_failed()
            Traceback (most recent call last):
            ...
            gpusim.determinism.DeterminismError: X: a: differs at 'x'
        """
        if self.failed:
            raise DeterminismError("; ".join(f"{self.env_id}: {r.name}: {r.detail}" for r in self.failed))

    def __str__(self) -> str:
        lines = [f"determinism of {self.env_id} ({self.num_envs} rows, {self.steps} steps, seed {self.seed})"]
        for r in self.results:
            verdict = "holds" if r.holds else ("FAILS" if r.guaranteed else "differs (not guaranteed)")
            lines.append(f"  {r.name:<22} {verdict:<8} {r.detail}")
        return "\n".join(lines)


def _uniform(shape: torch.Size, batch_dims: int, t: int, seed: int, device: torch.device) -> torch.Tensor:
    """``[*shape]`` uniforms in ``[0, 1)`` keyed by ``(seed, t, row, lane)``: a row's numbers do not
    depend on how many rows there are."""
    batch, rest = shape[:batch_dims], shape[batch_dims:]
    rows = torch.arange(batch.numel(), dtype=torch.int64, device=device).reshape(*batch, *([1] * len(rest)))
    lanes = torch.arange(rest.numel(), dtype=torch.int64, device=device).reshape(*([1] * batch_dims), *rest)
    key = hash32(torch.tensor((seed * _GOLDEN + t) & _MASK32, dtype=torch.int64, device=device))
    x = (key + rows * 0x9E3779B1 + lanes * 0x85EBCA77) & _MASK32
    return hash32(hash32(x)).to(torch.float64).div_(2.0**32).to(torch.float32)


def _action(spec: Any, u: torch.Tensor) -> torch.Tensor:
    """An action of ``spec`` from uniforms ``u`` (one per element of a categorical index)."""
    if isinstance(spec, Categorical):
        return (u * spec.space.n).to(torch.int64).clamp_max_(spec.space.n - 1).to(spec.dtype)
    if isinstance(spec, OneHot):
        n = spec.shape[-1]
        index = (u[..., 0] * n).to(torch.int64).clamp_max_(n - 1)
        return torch.nn.functional.one_hot(index, n).to(spec.dtype)
    if isinstance(spec, Binary):
        return (u < 0.5).to(spec.dtype)
    if isinstance(spec, Bounded):
        low, high = spec.space.low.to(u.device), spec.space.high.to(u.device)
        return (low + u * (high - low)).to(spec.dtype)
    if isinstance(spec, Unbounded):
        return (u * 2.0 - 1.0).to(spec.dtype)
    raise NotImplementedError(
        f"check_determinism draws actions for Categorical, OneHot, Binary, Bounded and Unbounded specs, "
        f"got {type(spec).__name__}"
    )


class _TablePolicy:
    """Writes step ``t``'s actions from precomputed tables; ``t`` is a device tensor advanced in
    place, so the same code runs eager and compiled (no Python value changes between calls)."""

    def __init__(self, tables: dict) -> None:
        self.tables = tables
        device = next(iter(tables.values())).device
        self.t = torch.zeros(1, dtype=torch.int64, device=device)

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        for key, table in self.tables.items():
            td.set(key, table.index_select(0, self.t).squeeze(0))
        self.t.add_(1)
        return td


def _tables(env: Any, steps: int, seed: int) -> dict:
    batch_dims = len(env.batch_size)
    tables = {}
    for key in env.action_keys:
        spec = env.full_action_spec[key]
        shape = spec.shape if not isinstance(spec, OneHot) else torch.Size((*spec.shape[:-1], 1))
        tables[key] = torch.stack(
            [_action(spec, _uniform(shape, batch_dims, t, seed, env.device)) for t in range(steps)]
        )
    return tables


def _run(env: Any, steps: int, seed: int, compile: bool) -> TensorDictBase:
    env.set_seed(seed)
    policy = _TablePolicy(_tables(env, steps, seed))
    out = env.rollout(steps, policy, break_when_any_done=False, compile=compile)
    env.close()
    return out


def _compare(a: TensorDictBase, b: TensorDictBase) -> tuple[bool, str]:
    """``(bit-identical, detail)``: the first differing entry and the largest float difference."""
    keys_a = set(a.keys(include_nested=True, leaves_only=True))
    keys_b = set(b.keys(include_nested=True, leaves_only=True))
    if keys_a != keys_b:
        return False, f"different entries: {sorted(map(str, keys_a ^ keys_b))}"
    first, worst = None, 0.0
    for key in sorted(keys_a, key=str):
        x, y = a.get(key), b.get(key)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, f"{key!r}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
        if not torch.equal(x, y):
            first = first or key
            if x.is_floating_point():
                worst = max(worst, float((x.double() - y.double()).abs().nan_to_num(float("inf")).max()))
    if first is None:
        return True, "bit-identical"
    detail = f"first differs at {first!r}"
    return False, detail + (f"; max abs float diff {worst:.3g}" if worst else "")


def check_determinism(
    env_id: str | Callable[..., Any],
    *,
    num_envs: int = 8,
    large: int = 64,
    steps: int = 50,
    seed: int = 0,
    device: torch.device | str | None = None,
    compile: bool = True,
    batched: bool = True,
    **env_kwargs: Any,
) -> DeterminismReport:
    """Runs the determinism checks of the module's table on one env.

    Args:
        env_id: an id :func:`gpusim.make` knows, or a callable ``f(num_envs=, device=, seed=,
            **env_kwargs)`` building the env.
        num_envs: rows of the envs compared.
        large: rows of the larger batch of the batch-size check (its first ``num_envs`` rows
            are compared).
        steps: rollout length (episodes end and rows reset within it for most envs).
        seed: the seed of every env built.
        device: the envs' device.
        compile: also run the compiled checks (``torch.compile``: tens of seconds on a CPU).
        batched: also compare ``SerialEnv`` and ``ParallelEnv`` (two worker processes).
        **env_kwargs: forwarded to the env (its keyword arguments).

    Returns:
        A :class:`DeterminismReport`; ``report.raise_if_failed()`` raises when a guaranteed
        check fails.

    Raises:
        ValueError: ``num_envs`` or ``large`` below 1, or ``large < num_envs``.

    Examples:
        >>> r = check_determinism("Pendulum-v1", num_envs=4, large=16, steps=10, compile=False, batched=False)
        >>> [(x.name, x.holds) for x in r.results]
        [('same seed twice', True), ('batch size', True), ('masked vs sparse', True)]
    """
    if num_envs < 1 or large < num_envs:
        raise ValueError(f"need 1 <= num_envs <= large, got num_envs={num_envs!r} and large={large!r}")
    if isinstance(env_id, str):
        from gpusim.registry import make

        build = functools.partial(make, env_id)
        name = env_id
    else:
        build, name = env_id, getattr(env_id, "__name__", repr(env_id))

    def new(n: int = num_envs, **extra: Any) -> Any:
        return build(num_envs=n, device=device, seed=seed, **env_kwargs, **extra)

    results = []

    def add(check: str, guaranteed: bool, a: TensorDictBase, b: TensorDictBase) -> None:
        holds, detail = _compare(a, b)
        results.append(DeterminismResult(check, holds, guaranteed, detail))

    eager = _run(new(), steps, seed, compile=False)
    add("same seed twice", True, eager, _run(new(), steps, seed, compile=False))
    if compile:
        compiled = _run(new(), steps, seed, compile=True)
        add("same seed, compiled", True, compiled, _run(new(), steps, seed, compile=True))
        add("eager vs compiled", False, eager, compiled)
    add("batch size", True, eager, _run(new(large), steps, seed, compile=False)[:num_envs])
    masked = _run(new(auto_reset_mode="masked"), steps, seed, compile=False)
    add("masked vs sparse", True, masked, _run(new(auto_reset_mode="sparse"), steps, seed, compile=False))
    if batched:
        from gpusim.envs.batched import ParallelEnv, SerialEnv

        worker = functools.partial(build, num_envs=num_envs, device=device, **env_kwargs)
        serial = _run(SerialEnv(2, worker), steps, seed, compile=False)
        add("serial vs parallel", True, serial, _run(ParallelEnv(2, worker), steps, seed, compile=False))
    return DeterminismReport(name, num_envs, steps, seed, results)
