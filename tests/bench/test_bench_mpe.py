"""``gpusim compare`` on the native MPE ids: raw VMAS and gpusim's ``VmasEnv`` of the same
scenario run as peers (a tiny sweep; the real libraries)."""

from __future__ import annotations

from gpusim.bench.compare import CompareConfig, run_compare
from gpusim.bench.contenders import BenchOptions
from gpusim.bench.envs import parse_env_id
from gpusim.bench.peers import VMAS, VMASENV, vmas_scenario


def test_mpe_ids_map_to_vmas_scenarios() -> None:
    assert vmas_scenario(parse_env_id("MPE/simple_spread-v0")) == "simple_spread"
    assert vmas_scenario(parse_env_id("vmas:navigation")) == "navigation"
    assert vmas_scenario(parse_env_id("Pendulum-v1")) is None
    assert VMASENV.skip_reason(parse_env_id("vmas:simple_spread"), 2, BenchOptions()) is not None
    assert VMASENV.skip_reason(parse_env_id("MPE/simple_push-v0"), 2, BenchOptions()) is None


def test_tiny_sweep_of_mpe_ids_with_vmas_peers() -> None:
    lines: list[str] = []
    cfg = CompareConfig(
        envs=("MPE/simple_spread-v0", "MPE/simple_tag-v0"),
        batches=(2, 4),
        steps=2,
        repeats=1,
        gpusim=("eager",),
        devices=("cpu",),
        peers=("vmas", "vmasenv", "gymnasium"),
        threads=1,
    )
    result = run_compare(cfg, log=lines.append)
    ran = {(r["contender"], r["env"], r["batch"]) for r in result["rows"]}
    for env in cfg.envs:
        for batch in cfg.batches:
            for name in ("gpusim eager", VMAS.name, VMASENV.name):
                assert (name, env, batch) in ran, (name, env, batch, sorted(ran))
    assert all(r["best"] > 0 for r in result["rows"])
    # gymnasium has no MPE: one line per env, saying so
    gym = [s for s in result["skipped"] if s["contender"] == "gymnasium"]
    assert {s["env"] for s in gym} == set(cfg.envs)
