"""The training examples run (two tiny iterations each, ``--smoke``): each prints its progress
bar and its evaluation line. Whether they reach their bars in full runs: benchmarks/results/2026-11-24-log.md."""

from __future__ import annotations

import os
import signal
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
        ("ppo_cartpole_dr.py", [], "CartPole-v1 PPO, randomized pole (eager)"),
        ("ppo_cartpole_dr.py", ["--compile"], "CartPole-v1 PPO, randomized pole (compiled)"),
        ("mappo_vmas.py", [], "VMAS navigation MAPPO (3 agents)"),
        ("ppo_minatar.py", ["--compile"], "MinAtar/Breakout-v1 PPO (compiled)"),
        ("mappo_vmas.py", ["--native"], "native MPE simple_spread MAPPO (3 agents)"),
    ],
)
def test_example_runs_two_iterations(script, extra, final):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), "--smoke", "--threads", "1", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert final in proc.stdout and "evaluation mean" in proc.stdout
    bars = [line for line in proc.stderr.splitlines() if line.startswith("[") and "frames" in line]
    assert len(bars) == 2 and "100.0%" in bars[-1] and "return" in bars[-1]
    if "--compile" in extra:
        assert "gpusim: compiling" in proc.stderr and "gpusim: compiled in" in proc.stderr


def test_distributed_example_runs_two_iterations_on_two_ranks():
    """``torchrun --standalone --nproc-per-node 2`` (a free port; gloo on CPU); the launch runs in
    its own session so that a timeout kills torchrun and both workers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(ROOT / "examples" / "ppo_cartpole_distributed.py"),
        "--smoke",
        "--threads",
        "1",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=540)  # (a hang guard: three interpreters import torch)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    assert out.count("CartPole-v1 PPO, data-parallel over 2 ranks (eager)") == 1 and "evaluation mean" in out
    bars = [line for line in err.splitlines() if line.startswith("[") and "frames" in line]
    assert len(bars) == 2 and "100.0%" in bars[-1] and "return" in bars[-1]
