"""The ``gpusim`` command line: argument errors (exit status 2 and the message), ``list``,
``check``, ``bench``, and ``compare`` on a tiny sweep through ``python -m gpusim``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpusim.bench.compare import PEER_NAMES
from gpusim.cli import _LIBRARIES, main
from gpusim.registry import registered_ids

ROOT = Path(__file__).resolve().parents[1]

BAD_ARGUMENTS = [
    (["bench", "Pong-v0"], "argument ENV_ID: unknown env id 'Pong-v0'; known ids: ['CartPole-v1'"),
    (["bench", "CartPole-v1", "--num-envs", "0"], "argument --num-envs: must be a positive int, got '0'"),
    (["bench", "CartPole-v1", "--steps", "ten"], "argument --steps: must be a positive int, got 'ten'"),
    (["bench", "CartPole-v1", "--transforms", "StepCounter"], "unknown transform 'StepCounter' (make() already adds"),
    (["bench", "CartPole-v1", "--transforms", "Nope"], "unknown transform 'Nope'; known transforms: ['CatFrames'"),
    (["bench", "CartPole-v1", "--device", "gpu0"], "argument --device: invalid device 'gpu0'"),
    (["bench", "CartPole-v1", "--device", "meta"], "device 'meta': only cpu and cuda devices are benchmarked"),
    (["bench", "vmas:simple_spread", "--compile"], "--compile runs native envs only; 'vmas:simple_spread'"),
    (["bench", "gym:NoSuchEnv-v9", "--num-envs", "2"], "gpusim bench: error: cannot build 'gym:NoSuchEnv-v9'"),
    (["bench", "vmas:no_such_scenario", "--num-envs", "2"], "unknown VMAS scenario 'no_such_scenario'"),
    (["compare", "--peers", "pybullet"], "argument --peers: invalid choice: 'pybullet'"),
    (["compare", "--batches", "16", "-3"], "argument --batches: must be a positive int, got '-3'"),
    (["compare", "--envs", "CartPole"], "argument --envs: unknown env id 'CartPole'"),
    (["compare", "--seconds", "0"], "argument --seconds: must be a positive number, got '0'"),
    (["compare", "--repeats", "1.5"], "argument --repeats: must be a positive int, got '1.5'"),
    (["check", "vmas:"], "env id 'vmas:' names no vmas env after the colon"),
    (["check"], "the following arguments are required: ENV_ID"),
    ([], "the following arguments are required: COMMAND"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize("argv,message", BAD_ARGUMENTS, ids=[" ".join(a) or "<none>" for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_exit_2_with_the_reason(argv, message, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_cuda_request_without_the_device_exits_2(capsys) -> None:
    if torch.cuda.is_available():  # ask for one GPU more than there is
        device = f"cuda:{torch.cuda.device_count()}"
        message = f"device '{device}' requested but only {torch.cuda.device_count()} CUDA device(s) exist"
    else:
        device, message = "cuda", "device 'cuda' requested but CUDA is not available on this machine"
    assert main(["bench", "CartPole-v1", "--device", device]) == 2
    assert message in capsys.readouterr().err


def test_list_names_envs_transforms_libraries_and_accelerators(capsys) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in registered_ids():
        assert re.search(rf"^  {re.escape(env_id)} ", out, re.M), env_id
    assert "gym:<gymnasium id>" in out and "vmas:<scenario>" in out
    assert "CatFrames*" in out and "VecNorm*" in out and " StepCounter," in out
    for module, _, _ in _LIBRARIES:
        assert re.search(rf"^  {module} +(\S+)", out, re.M), module
    cuda = "CUDA: available" if torch.cuda.is_available() else "CUDA: not available"
    assert cuda in out and "Triton:" in out


def test_check_cartpole_reports_specs_and_ok(capsys) -> None:
    assert main(["check", "CartPole-v1", "--num-envs", "3"]) == 0
    out = capsys.readouterr().out
    assert "gpusim check CartPole-v1: TransformedEnv, batch_size [3], device cpu" in out
    assert re.search(r"observation +observation +float32 +\[3, 4\] +Bounded", out)
    assert re.search(r"action +action +int64 +\[3\] +Categorical", out)
    assert re.search(r"truncated +bool +\[3, 1\]", out)
    assert "check_env_specs: OK" in out


def test_check_vmas_shows_nested_keys(capsys) -> None:
    assert main(["check", "vmas:simple_spread", "--num-envs", "2", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"agents/observation +float32 +\[2, 3, \d+\] +Unbounded", out), out
    assert "check_env_specs: OK" in out


def test_bench_prints_a_summary_line(capsys) -> None:
    argv = [
        "bench",
        "CartPole-v1",
        "--num-envs",
        "8",
        "--steps",
        "5",
        "--repeats",
        "2",
        "--transforms",
        "RewardSum",
        "CatFrames",
        "VecNorm",
        "--threads",
        "1",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the default device
    assert (
        out[0]
        == f"gpusim bench: CartPole-v1, 8 envs, 5 steps, device {device}, eager, transforms: RewardSum, CatFrames, VecNorm"
    )
    m = re.fullmatch(
        rf"CartPole-v1 x 8 on {device}, eager, transforms: RewardSum, CatFrames, VecNorm: ([\d.]+) ?([kMG]?) env-steps/s "
        r"\(best of 2 runs of 5 steps; median [\d.]+ ?[kMG]?; warm-up [\d.]+ s\)",
        out[1],
    )
    assert m is not None, out[1]
    assert float(m.group(1)) > 0


def _run_module(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "gpusim", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_python_m_gpusim_version(tmp_path) -> None:
    import gpusim

    proc = _run_module("--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"gpusim {gpusim.__version__}"


def test_compare_tiny_sweep_writes_table_plot_and_json(tmp_path) -> None:
    out = tmp_path / "res"
    proc = _run_module(
        "compare",
        "--quick",
        "--batches",
        "4",
        "8",
        "--steps",
        "6",
        "--repeats",
        "1",
        "--no-compile",
        "--threads",
        "1",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    paths = {k: v.strip() for k, v in re.findall(r"^(table|plot|json): +(.+)$", proc.stdout, re.M)}
    assert paths == {
        "table": str(out / "compare.md"),
        "plot": str(out / "compare.png"),
        "json": str(out / "compare.json"),
    }
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "compare.md").read_text()
    assert "### CartPole-v1 on cpu" in table and table in proc.stdout
    result = json.loads((out / "compare.json").read_text())
    rows = result["rows"]
    assert {(r["contender"], r["batch"]) for r in rows if r["contender"] == "gpusim eager"} == {
        ("gpusim eager", 4),
        ("gpusim eager", 8),
    }
    assert all(r["steps"] == 6 and r["best"] > 0 and len(r["samples"]) == 1 for r in rows)
    # every peer either ran (a row per batch) or was skipped with exactly one line saying why
    from gpusim.bench.peers import PEERS

    for peer in PEERS:
        ran = [r for r in rows if r["contender"] == peer.name]
        lines = [s for s in result["skipped"] if s["contender"] == peer.name]
        assert (len(ran) == 2 and not lines) or (not ran and len(lines) == 1), (peer.name, ran, lines)
        for s in lines:
            assert proc.stderr.count(s["line"]) == 1 and f"- {s['line']}" in table
    assert {p.peer for p in PEERS} == set(PEER_NAMES)
    # gymnasium is a test dependency: it must have run
    assert any(r["contender"] == "gymnasium" for r in rows)


def test_check_reports_a_spec_mismatch_and_exits_1(monkeypatch, capsys) -> None:
    """An env whose step output breaks its specs: ``check`` names the key and exits with 1."""
    from tensordict import TensorDict

    import gpusim as gs
    import gpusim.cli as cli

    class WrongDtype(gs.EnvBase):
        def __init__(self, batch_size):
            super().__init__(batch_size=batch_size)
            B = self.batch_size
            self.observation_spec = gs.Composite(observation=gs.Unbounded((*B, 2)), shape=B)
            self.action_spec = gs.Categorical(2, shape=B)
            self.reward_spec = gs.Unbounded((*B, 1))

        def _reset(self, td):
            return TensorDict(
                {
                    "observation": torch.zeros(*self.batch_size, 2),
                    "done": torch.zeros(*self.batch_size, 1, dtype=torch.bool),
                },
                self.batch_size,
            )

        def _step(self, td):
            return TensorDict(
                {
                    "observation": torch.zeros(*self.batch_size, 2, dtype=torch.float64),
                    "reward": torch.zeros(*self.batch_size, 1),
                    "done": torch.zeros(*self.batch_size, 1, dtype=torch.bool),
                },
                self.batch_size,
            )

        def _set_seed(self, seed):
            return seed

    monkeypatch.setattr(cli, "_build", lambda env_id, num_envs, device, seed, transforms=(): WrongDtype([num_envs]))
    assert main(["check", "CartPole-v1", "--num-envs", "2"]) == 1
    out = capsys.readouterr().out
    assert "check_env_specs: FAILED after a 3-step rollout:" in out
    assert "Dtype mismatch for key ('next', 'observation') at step 0: data torch.float64, specs torch.float32" in out
