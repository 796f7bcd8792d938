"""benchmarks/bench_collection.py (the TorchRL paper's Table 5) and the SB3 contenders of
benchmarks/bench_training.py: argument parsing and tiny real runs (a few frames each; the
numbers themselves are not checked: no timing assertions)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # ParallelEnv workers pickle the module's functions by reference
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def collection():
    return _load("bench_collection")


@pytest.fixture(scope="module")
def training():
    pytest.importorskip("stable_baselines3")
    return _load("bench_training")


# ---------------------------------------------------------------------------- bench_collection
def test_collection_arguments(collection):
    args = collection.parse_args([])
    assert args.envs == ["breakout", "halfcheetah", "pendulum"] and args.workers == [2, 4]
    assert args.only.split(",") == list(collection.CONTENDERS)
    quick = collection.parse_args(["--quick"])
    assert (quick.envs, quick.workers, quick.rounds) == (["pendulum", "breakout"], [2], 1)
    with pytest.raises(SystemExit):
        collection.parse_args(["--only", "gs-parallel,nope"])
    with pytest.raises(SystemExit):
        collection.parse_args(["--workers", "0"])
    with pytest.raises(SystemExit):
        collection.parse_args(["--envs", "pong"])


def test_collection_says_when_torchrl_is_missing(collection, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchrl" else real(name, *a))
    lines = []
    names = collection.contenders("gs-parallel,torchrl,gymnasium,torchrl-async", lines.append)
    assert names == ["gs-parallel", "gymnasium"]
    assert len(lines) == 1 and "torchrl is not installed: skipping torchrl, torchrl-async" in lines[0]


def test_collection_unknown_contender_is_named(collection):
    with pytest.raises(ValueError, match="unknown contender 'nope'"):
        collection.build("nope", "Pendulum-v1", 2, 5)


def test_collection_tiny_run(collection, capsys):
    only = "gs-parallel,gs-pool,gs-vec,gs-vec-async,gymnasium"
    results = collection.main(
        ["--envs", "pendulum", "--workers", "2", "--frames", "20", "--steps", "5", "--rounds", "1", "--only", only]
    )
    rates = results[("pendulum", 2)]
    assert set(rates) == set(only.split(",")) and all(rate > 0 for rate in rates.values())
    out = capsys.readouterr().out
    assert "## Pendulum-v1 (frames/s)" in out and "| 2 |" in out


def test_collection_tiny_breakout_run(collection, capsys):
    pytest.importorskip("ale_py")
    results = collection.main(
        [
            "--envs",
            "breakout",
            "--workers",
            "2",
            "--frames",
            "10",
            "--steps",
            "5",
            "--rounds",
            "1",
            "--only",
            "gs-parallel,gs-vec,gymnasium",
        ]
    )
    assert all(rate > 0 for rate in results[("breakout", 2)].values())
    # gs-vec runs ale-py's vector env set to Breakout-v5's own frames (the other contenders' ones)
    source = collection.build("gs-vec", "ALE/Breakout-v5", 2, 5)
    try:
        spec = source.collector.env.observation_spec["observation"]
        assert (tuple(spec.shape), spec.dtype) == ((2, 1, 210, 160, 3), torch.uint8)
    finally:
        source.close()


# ---------------------------------------------------------------------------- bench_training (SB3)
def test_training_arguments(training):
    args = training.parse_args([])
    assert args.envs == [16, 64, 4096] and args.max_frames == 3_000_000
    assert {"sb3-gpusim", "sb3-dummy", "gpusim-compiled"} <= set(args.only.split(","))
    quick = training.parse_args(["--quick"])
    assert quick.envs == [16] and quick.max_frames == 60_000 and "gpusim-compiled" not in quick.only.split(",")
    assert "gpusim-compiled" in training.parse_args(["--quick", "--only", "gpusim-compiled"]).only
    with pytest.raises(SystemExit):
        training.parse_args(["--only", "sb3"])
    with pytest.raises(SystemExit):
        training.parse_args(["--envs", "0"])


@pytest.mark.parametrize("kind", ["gpusim", "dummy"])
def test_sb3_contender_runs_to_its_frame_limit(training, kind):
    result = training.train_sb3(kind, 4, 0, 256)  # 32 steps x 4 envs per rollout: two rollouts
    assert result.frames == 256 and not result.reached


@pytest.mark.parametrize("kind", ["gpusim", "dummy"])
def test_sb3_contender_stops_at_the_bar(training, kind, monkeypatch):
    # a random CartPole policy averages ~20: a bar of 10 is reached after the first rollouts
    monkeypatch.setattr(training, "BAR", 10.0)
    result = training.train_sb3(kind, 8, 0, 100_000)
    assert result.reached and result.final >= 10.0
    assert result.frames < 100_000 and result.frames % (8 * 32) == 0  # stopped at the end of a rollout
