"""Contenders: what ``gpusim compare`` times, gpusim's own two and the peers' (``peers.py``).

A :class:`Contender` says which env ids it can run (:meth:`Contender.skip_reason`), which
modules it needs (a missing one skips it with one line saying what to install) and builds a
:class:`~gpusim.bench.timing.Runner` for one env id and batch size. gpusim's contenders:

* ``gpusim eager``: ``env.rollout(T, break_when_any_done=False)`` of :func:`build_env`'s env;
* ``gpusim compiled``: the same through ``env.compile()`` (``torch.compile(fullgraph=True)``,
  native envs only; compile time is reported apart).

Examples:
    >>> from gpusim.bench.envs import parse_env_id
    >>> opts = BenchOptions(device="cpu", seed=0)
    >>> runner = GPUSIM_EAGER.build(parse_env_id("CartPole-v1"), 8, opts)
    >>> runner.timed(4) > 0
    True
    >>> GPUSIM_COMPILED.skip_reason(parse_env_id("vmas:simple_spread"), 8, opts)
    'wrapped envs step their library on the host; only native envs compile'
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any

import torch

from gpusim.bench.envs import EnvRef, build_env
from gpusim.bench.timing import Runner

__all__ = ["BenchOptions", "Contender", "GPUSIM_EAGER", "GPUSIM_COMPILED", "CLASSIC_IDS"]

CLASSIC_IDS = ("CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1")
"""The native ids that gymnasium, EnvPool and gymnax implement with the same equations."""


@dataclasses.dataclass(frozen=True)
class BenchOptions:
    """Settings shared by every contender of a measurement.

    Args:
        device: the requested device (``"cpu"``, ``"cuda"``, ...); host-only peers run on the
            CPU whatever it is.
        seed: every env's seed.
        threads: CPU threads a peer may use (EnvPool's ``num_threads``).
        transforms: transform presets (:data:`~gpusim.bench.envs.TRANSFORM_PRESETS`) appended
            to gpusim's and TorchRL's envs; peers without transforms are skipped.
        compile_options: keyword arguments of ``env.compile`` (e.g. ``steps_per_call``).

    Examples:
        >>> BenchOptions(device="cpu").torch_device
        device(type='cpu')
    """

    device: str = "cpu"
    seed: int = 0
    threads: int = 1
    transforms: tuple[str, ...] = ()
    compile_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def torch_device(self) -> torch.device:
        """The requested device as a ``torch.device``.

        Examples:
            >>> BenchOptions(device="cuda:1").torch_device
            device(type='cuda', index=1)
        """
        return torch.device(self.device)


@dataclasses.dataclass(frozen=True)
class Contender:
    """One column of the comparison.

    Args:
        name: the column name (``"gpusim eager"``, ``"envpool"``, ...).
        peer: the name ``--peers`` selects it by (``None`` for gpusim's own contenders).
        modules: modules it imports; a missing one skips the contender.
        install: what to ``pip install`` for it.
        what: one line saying what is timed.
        build: ``build(ref, batch, options) -> Runner``.
        supports: ``supports(ref, batch, options) -> reason or None`` (``None``: it runs).
        host_only: runs on the CPU whatever device is requested (numpy/C++ peers).
        transforms: can run with ``options.transforms``.

    Examples:
        >>> GPUSIM_EAGER.name, GPUSIM_EAGER.peer
        ('gpusim eager', None)
    """

    name: str
    peer: str | None
    modules: tuple[str, ...]
    install: str
    what: str
    build: Callable[[EnvRef, int, BenchOptions], Runner]
    supports: Callable[[EnvRef, int, BenchOptions], str | None]
    host_only: bool = False
    transforms: bool = False

    def missing(self) -> str | None:
        """``None`` when every module is importable, else a line saying what to install.

        Examples:
            >>> import dataclasses
            >>> GPUSIM_EAGER.missing() is None
            True
            >>> absent = dataclasses.replace(GPUSIM_EAGER, modules=("no_such_mod",), install="nsm")
            >>> absent.missing()
            'not installed (no_such_mod missing: pip install nsm)'
        """
        absent = [m for m in self.modules if importlib.util.find_spec(m) is None]
        if not absent:
            return None
        return f"not installed ({', '.join(absent)} missing: pip install {self.install})"

    def skip_reason(self, ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
        """Why this contender does not run ``ref`` at ``batch`` (``None``: it runs).

        Examples:
            >>> from gpusim.bench.envs import parse_env_id
            >>> from gpusim.bench.peers import GYMNASIUM
            >>> ref = parse_env_id("CartPole-v1")
            >>> print(GPUSIM_EAGER.skip_reason(ref, 8, BenchOptions(device="cpu")))
            None
            >>> GYMNASIUM.skip_reason(ref, 8, BenchOptions(device="cpu", transforms=("RewardSum",)))
            'has no transforms (skipped with --transforms)'
        """
        if options.transforms and not self.transforms:
            return "has no transforms (skipped with --transforms)"
        return self.supports(ref, batch, options)

    def label(self, options: BenchOptions) -> str:
        """The column name; host-only peers say ``(cpu)`` when another device is requested.

        Examples:
            >>> from gpusim.bench.peers import GYMNASIUM
            >>> [GYMNASIUM.label(BenchOptions(device=d)) for d in ("cpu", "cuda")]
            ['gymnasium', 'gymnasium (cpu)']
        """
        if self.host_only and options.torch_device.type != "cpu":
            return f"{self.name} (cpu)"
        return self.name


def _build_eager(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    env = build_env(ref, batch, device=options.device, seed=options.seed, transforms=options.transforms)
    return Runner(lambda steps: env.rollout(steps, break_when_any_done=False), device=str(env.device), close=env.close)


def _build_compiled(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    env = build_env(ref, batch, device=options.device, seed=options.seed, transforms=options.transforms)
    runner = env.compile(**dict(options.compile_options))
    return Runner(
        lambda steps: runner(steps),
        device=str(env.device),
        compile_seconds=lambda: runner.compile_seconds,
        close=env.close,
    )


def _native_only(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if ref.kind != "native":
        return "wrapped envs step their library on the host; only native envs compile"
    return None


GPUSIM_EAGER = Contender(
    name="gpusim eager",
    peer=None,
    modules=(),
    install="gpusim",
    what="env.rollout(T, break_when_any_done=False): random actions, auto-reset, [B, T] output",
    build=_build_eager,
    supports=lambda ref, batch, options: None,
    transforms=True,
)

GPUSIM_COMPILED = Contender(
    name="gpusim compiled",
    peer=None,
    modules=(),
    install="gpusim",
    what="env.compile()(T): the same loop through torch.compile(fullgraph=True), [B, T] output",
    build=_build_compiled,
    supports=_native_only,
    transforms=True,
)
