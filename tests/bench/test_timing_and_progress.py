"""Timing (steps_for, measure, Runner) and the progress bar."""

from __future__ import annotations

import io

import pytest

import gpusim as gs
from gpusim.bench.progress import Progress
from gpusim.bench.timing import Measurement, Runner, measure, steps_for


def test_steps_for_clamps() -> None:
    assert steps_for(1, 10.0) == 1000
    assert steps_for(1 << 22, 0.1) == 10
    assert steps_for(2000, 1.0) == 1000 and steps_for(4000, 1.0) == 500
    assert steps_for(4000, 1.0, low=1, high=100) == 100
    with pytest.raises(ValueError, match="batch >= 1 and seconds > 0, got batch=0"):
        steps_for(0, 1.0)


def test_measure_alternates_and_ticks() -> None:
    calls: list[tuple[str, int]] = []

    def runner(name: str) -> Runner:
        return Runner(lambda steps: calls.append((name, steps)), device="cpu")

    ticks: list[str] = []
    out = measure({"a": runner("a"), "b": runner("b")}, batch=3, steps=7, repeats=2, tick=ticks.append)
    # one warm-up each, then the timed runs in turns
    assert calls == [("a", 7), ("b", 7), ("a", 7), ("b", 7), ("a", 7), ("b", 7)]
    assert ticks == ["a", "b", "a", "b", "a", "b"]
    assert set(out) == {"a", "b"} and all(len(m.samples) == 2 and m.steps == 7 for m in out.values())


def test_measure_skips_given_warmups() -> None:
    calls: list[int] = []
    out = measure({"a": Runner(calls.append, device="cpu")}, batch=1, steps=2, repeats=1, warmup={"a": 1.5})
    assert calls == [2] and out["a"].warmup_s == 1.5
    with pytest.raises(ValueError, match="repeats must be >= 1, got 0"):
        measure({}, batch=1, steps=1, repeats=0)


def test_measure_real_env_reports_env_steps_per_second() -> None:
    env = gs.make("CartPole-v1", num_envs=16, seed=0)
    runner = Runner(lambda steps: env.rollout(steps, break_when_any_done=False), device="cpu")
    m = measure({"eager": runner}, batch=16, steps=5, repeats=3)["eager"]
    assert isinstance(m, Measurement) and len(m.samples) == 3
    assert min(m.samples) <= m.median <= m.best and m.warmup_s > 0 and m.compile_s is None


def test_progress_draws_on_a_terminal_only() -> None:
    out = io.StringIO()
    bar = Progress(4, stream=out, enabled=True, width=8)
    bar.tick("first")
    assert out.getvalue().startswith("[##------] 1/4 0:00 first")
    bar.log("a line")
    bar.tick("second")
    assert "a line\n" in out.getvalue() and "2/4" in out.getvalue()
    bar.close()
    quiet = io.StringIO()
    bar = Progress(2, stream=quiet, enabled=False)
    bar.tick("x")
    bar.log("only this")
    bar.close()
    assert quiet.getvalue() == "only this\n" and bar.done == 1
    assert Progress(1, stream=io.StringIO()).enabled is False  # not a terminal
