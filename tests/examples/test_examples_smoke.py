"""The training examples run (two tiny iterations each, ``--smoke``): each prints its progress
bar and its evaluation line. Whether they reach their bars in full runs is in the README."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "script, extra, final",
    [
        ("ppo_cartpole.py", [], "CartPole-v1 PPO (eager)"),
        ("ppo_cartpole.py", ["--compile"], "CartPole-v1 PPO (compiled)"),
        ("ppo_pendulum.py", [], "Pendulum-v1 PPO (eager)"),
        ("mappo_vmas.py", [], "VMAS navigation MAPPO (3 agents)"),
    ],
)
def test_example_runs_two_iterations(script, extra, final):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), "--smoke", "--threads", "1", *extra],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert final in proc.stdout and "evaluation mean" in proc.stdout
    bars = [line for line in proc.stderr.splitlines() if line.startswith("[") and "frames" in line]
    assert len(bars) == 2 and "100.0%" in bars[-1] and "return" in bars[-1]
    if "--compile" in extra:
        assert "gpusim: compiling" in proc.stderr and "gpusim: compiled in" in proc.stderr
