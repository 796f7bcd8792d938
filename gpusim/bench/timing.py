"""Timing: runners, rollout lengths and alternating measurements.

A :class:`Runner` runs ``steps`` steps of a batch of envs (random actions, auto-reset) and waits
for its device, so that wall-clock time covers the work. :func:`measure` warms every runner up
once (the first call: compilation, caches, allocation), then times them in turns, so that a
change of machine load hits every contender alike.

Examples:
    >>> import gpusim as gs
    >>> env = gs.make("CartPole-v1", num_envs=8, seed=0)
    >>> runner = Runner(lambda steps: env.rollout(steps, break_when_any_done=False), device="cpu")
    >>> results = measure({"eager": runner}, batch=8, steps=4, repeats=2)
    >>> len(results["eager"].samples), results["eager"].best > 0
    (2, True)
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

__all__ = ["Runner", "Measurement", "measure", "steps_for", "sync_device"]


def sync_device(device: torch.device | str | None) -> None:
    """Waits for the work queued on ``device`` (a no-op on the CPU).

    Examples:
        >>> sync_device("cpu")
    """
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _not_compiled() -> None:
    return None


def _nothing_to_close() -> None:
    return None


@dataclasses.dataclass
class Runner:
    """Runs ``steps`` steps of one contender.

    Args:
        run: ``run(steps)`` runs ``steps`` steps of every env of the batch.
        device: where the contender runs, as reported (``"cpu"``, ``"cuda:0"``, ``"jax:cpu"``).
        sync: waits for the device (called after each timed run; default: torch's CUDA sync when
            ``device`` is a CUDA device).
        compile_seconds: returns the seconds spent compiling so far (``None``: not compiled).
        close: releases the contender's resources.

    Examples:
        >>> r = Runner(lambda steps: None, device="cpu")
        >>> r.compile_seconds() is None
        True
    """

    run: Callable[[int], Any]
    device: str
    sync: Callable[[], None] | None = None
    # (factories, so that the class holds no default functions of its own)
    compile_seconds: Callable[[], float | None] = dataclasses.field(default_factory=lambda: _not_compiled)
    close: Callable[[], None] = dataclasses.field(default_factory=lambda: _nothing_to_close)

    def timed(self, steps: int) -> float:
        """Runs ``steps`` steps and returns the wall-clock seconds, device work included.

        Examples:
            >>> calls = []
            >>> r = Runner(calls.append, device="cpu")
            >>> r.timed(5) >= 0, calls
            (True, [5])
        """
        start = time.perf_counter()
        self.run(steps)
        if self.sync is not None:
            self.sync()
        elif self.device.startswith("cuda"):
            sync_device(self.device)
        return time.perf_counter() - start


@dataclasses.dataclass
class Measurement:
    """The timings of one contender at one batch size.

    Attributes:
        batch: the number of envs.
        steps: steps per timed run.
        warmup_s: seconds of the first (untimed) run, compilation included.
        compile_s: seconds spent compiling (``None`` for contenders that do not compile).
        samples: env-steps/s of each timed run.

    Examples:
        >>> m = Measurement(batch=4, steps=10, warmup_s=0.1, compile_s=None, samples=[10.0, 30.0, 20.0])
        >>> m.best, m.median
        (30.0, 20.0)
    """

    batch: int
    steps: int
    warmup_s: float
    compile_s: float | None
    samples: list[float]

    @property
    def best(self) -> float:
        """The highest env-steps/s of the timed runs.

        Examples:
            >>> m = Measurement(batch=4, steps=10, warmup_s=0.1, compile_s=None, samples=[1.0, 3.0])
            >>> m.best
            3.0
        """
        return max(self.samples)

    @property
    def median(self) -> float:
        """The median env-steps/s of the timed runs.

        Examples:
            >>> m = Measurement(batch=4, steps=10, warmup_s=0.1, compile_s=None, samples=[1.0, 3.0])
            >>> m.median
            2.0
        """
        return statistics.median(self.samples)


def steps_for(batch: int, seconds: float, low: int = 10, high: int = 1000, rate_guess: float = 2e6) -> int:
    """A rollout length so that one run at ``rate_guess`` env-steps/s lasts about ``seconds``.

    Every contender of a batch runs the same number of steps (so rollouts store the same amount
    of data), clamped to ``[low, high]``.

    Examples:
        >>> steps_for(16, 0.2), steps_for(4096, 0.2), steps_for(1 << 20, 0.2)
        (1000, 98, 10)
    """
    if batch < 1 or seconds <= 0:
        raise ValueError(f"steps_for needs batch >= 1 and seconds > 0, got batch={batch!r}, seconds={seconds!r}")
    return int(max(low, min(high, round(seconds * rate_guess / batch))))


def measure(
    runners: Mapping[str, Runner],
    batch: int,
    steps: int,
    repeats: int,
    tick: Callable[[str], None] | None = None,
    warmup: Mapping[str, float] | None = None,
) -> dict[str, Measurement]:
    """Warms every runner up once, then times ``repeats`` runs of each, in turns.

    Args:
        runners: contender name -> runner.
        batch: the number of envs of every runner (for env-steps/s).
        steps: steps per run.
        repeats: timed runs per contender.
        tick: called with the contender's name after every run (progress).
        warmup: the seconds of warm-up runs already made, by name (those runners are not
            warmed up again).

    Returns:
        contender name -> :class:`Measurement`.

    Examples:
        >>> out = measure({"noop": Runner(lambda steps: None, device="cpu")}, batch=1, steps=1, repeats=1)
        >>> out["noop"].steps
        1
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats!r}")
    first = dict(warmup or {})
    for name, runner in runners.items():
        if name not in first:
            first[name] = runner.timed(steps)
            if tick is not None:
                tick(name)
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(repeats):
        for name, runner in runners.items():
            samples[name].append(batch * steps / runner.timed(steps))
            if tick is not None:
                tick(name)
    return {
        name: Measurement(batch, steps, first[name], runner.compile_seconds(), samples[name])
        for name, runner in runners.items()
    }
