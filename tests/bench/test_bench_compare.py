"""``run_compare`` and its reports: configuration errors, one line per skipped peer, the
compiled contender's compile time, the markdown table and the plot."""

from __future__ import annotations

import importlib.util
import json

import pytest

from gpusim.bench.compare import PEER_NAMES, CompareConfig, check_device, quick_config, run_compare, write_reports
from gpusim.bench.report import describe_machine, fmt_rate, machine_info, markdown_report, plot_results


@pytest.mark.parametrize(
    "fields,message",
    [
        (dict(envs=()), "envs must be at least one env id, got ()"),
        (dict(envs=("Nope-v0",)), "unknown env id 'Nope-v0'"),
        (dict(batches=(16, 0)), "batches must be positive ints, got (16, 0)"),
        (dict(devices=("gpu",)), "invalid device 'gpu'"),
        (dict(peers=("torchrl", "mujoco")), "unknown peer(s) ['mujoco']; known peers: ['torchrl'"),
        (dict(gpusim=("jit",)), "gpusim must be modes among ['eager', 'compiled'], got ('jit',)"),
        (dict(steps=0), "steps must be a positive int or None, got 0"),
        (dict(seconds=0.0), "seconds must be > 0, got 0.0"),
        (dict(repeats=0), "repeats must be a positive int, got 0"),
        (dict(threads=0), "threads must be a positive int or None, got 0"),
        (dict(transforms=("StepCounter",)), "unknown transform 'StepCounter'"),
    ],
)
def test_config_errors_name_the_field(fields, message) -> None:
    with pytest.raises(ValueError) as info:
        CompareConfig(**fields)
    assert message in str(info.value)


def test_quick_config_and_devices() -> None:
    cfg = quick_config(batches=(8,))
    assert cfg.batches == (8,) and cfg.envs == ("CartPole-v1",) and cfg.compile_options == {"steps_per_call": 1}
    assert cfg.peers == PEER_NAMES and cfg.gpusim == ("eager", "compiled") and cfg.threads == 1
    assert check_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="only cpu and cuda devices are benchmarked"):
        check_device("meta")


def test_one_line_per_skipped_peer_across_envs() -> None:
    lines: list[str] = []
    # the peers that do not load JAX (EnvPool, gymnax and Brax would start JAX's threads in this
    # process, which also runs the tests that fork; they run in tests/jax)
    cfg = CompareConfig(
        envs=("TicTacToe-v0", "Pendulum-v1"),
        batches=(2, 4),
        steps=2,
        repeats=1,
        gpusim=("eager",),
        devices=("cpu",),
        peers=("torchrl", "gymnasium", "vmas"),
    )
    result = run_compare(cfg, log=lines.append)
    rows = result["rows"]
    assert {(r["env"], r["batch"]) for r in rows if r["contender"] == "gpusim eager"} == {
        ("TicTacToe-v0", 2),
        ("TicTacToe-v0", 4),
        ("Pendulum-v1", 2),
        ("Pendulum-v1", 4),
    }
    skipped = result["skipped"]
    keys = [(s["contender"], s["reason"]) for s in skipped]
    assert len(keys) == len(set(keys))  # never the same line twice
    for s in skipped:
        assert lines.count(s["line"]) == 1
    # TicTacToe has no peer at all: each installed peer says so once
    tictactoe = {s["contender"] for s in skipped if s["env"] == "TicTacToe-v0"}
    installed = {c.name for c in cfg.contenders() if c.missing() is None and c.peer}
    assert tictactoe == installed
    assert any(r["contender"] == "gymnasium" and r["env"] == "Pendulum-v1" for r in rows)
    summaries = [line for line in lines if line.startswith("Pendulum-v1 on cpu, batch ")]
    assert len(summaries) == 2


def test_compiled_contender_reports_compile_time_apart() -> None:
    cfg = CompareConfig(
        batches=(4,),
        steps=3,
        repeats=1,
        gpusim=("compiled",),
        peers=(),
        compile_options={"steps_per_call": 1},
        threads=1,
    )
    lines: list[str] = []
    (row,) = run_compare(cfg, log=lines.append)["rows"]
    assert row["contender"] == "gpusim compiled" and row["compile_s"] > 0
    assert row["warmup_s"] >= row["compile_s"] and row["best"] > 0
    # the compile lines go through the run's log (above the progress bar), once per compile
    compiled = [line for line in lines if line.startswith("gpusim: compiled in ")]
    assert len(compiled) == 1 and f"{row['compile_s']:.1f} s" in compiled[0]


def test_reports_from_a_real_run(tmp_path) -> None:
    cfg = CompareConfig(batches=(2, 8), steps=3, repeats=2, gpusim=("eager",), peers=("gymnasium",), threads=1)
    result = run_compare(cfg, log=lambda line: None)
    md = markdown_report(result)
    assert "### CartPole-v1 on cpu" in md
    assert "| batch | T | gpusim eager | gymnasium |" in md
    assert "| batch | gymnasium |" in md  # the ratio table
    for r in result["rows"]:
        assert fmt_rate(r["best"]) in md
    assert f"Machine: {describe_machine(result['machine'])}" in md
    load = result["load_average"]
    if load["start"] is not None:  # the report says how busy the machine was
        assert f"Load average {load['start']:.2f} at the start, {load['end']:.2f} at the end" in md
    assert "- gymnasium: gymnasium.make_vec" in md
    has_plot = importlib.util.find_spec("matplotlib") is not None
    paths = write_reports(result, tmp_path / "out", plot=has_plot)
    assert json.loads(paths["json"].read_text())["rows"] == result["rows"]
    assert paths["markdown"].read_text() == md
    if has_plot:
        assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        with pytest.raises(ImportError, match="pip install matplotlib"):
            plot_results(result, tmp_path / "p.png")


def test_machine_info_names_the_machine() -> None:
    info = machine_info()
    assert info["cpus"] >= 1 and info["cpu"]
    assert set(info["packages"]) >= {"torchrl", "gymnasium", "envpool", "jax"}
    line = describe_machine(info)
    assert line.startswith(info["cpu"]) and f"{info['cpus']} CPUs" in line


def test_busy_warning_only_with_several_threads_on_a_busy_machine() -> None:
    from gpusim.bench.compare import busy_warning
    from gpusim.bench.report import available_cpus

    cpus = available_cpus()
    line = busy_warning(2, load=cpus + 5.0)
    assert line.startswith(f"warning: load average {cpus + 5.0:.1f} on {cpus} CPUs") and "--threads 1" in line
    assert busy_warning(1, load=cpus + 5.0) is None and busy_warning(2, load=cpus - 0.5) is None
