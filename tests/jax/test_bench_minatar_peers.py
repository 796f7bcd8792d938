"""``gpusim compare`` on the MinAtar ids with its two MinAtar peers, gymnax (JAX, hence here in
tests/jax) and the ``minatar`` package's SyncVectorEnv: a tiny run of gymnax on every game and a
tiny sweep of the three contenders."""

from __future__ import annotations

import pytest

from gpusim.bench.compare import CompareConfig, run_compare
from gpusim.bench.peers import GYMNAX, MINATAR
from tests.bench.test_bench_peers import run_peer

GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")


@pytest.mark.parametrize("game", GAMES)
def test_gymnax_minatar_runs(game) -> None:
    run_peer(GYMNAX, f"MinAtar/{game}-v1")


def test_minatar_sweep_smoke() -> None:
    for peer in (GYMNAX, MINATAR):
        if peer.missing() is not None:
            pytest.skip(f"{peer.peer} is not installed here ({peer.missing()})")
    lines: list[str] = []
    cfg = CompareConfig(
        envs=("MinAtar/Breakout-v1", "MinAtar/Freeway-v0"),
        batches=(4,),
        steps=3,
        repeats=1,
        devices=("cpu",),
        gpusim=("eager",),
        peers=("gymnax", "minatar"),
        threads=1,
    )
    result = run_compare(cfg, log=lines.append)
    ran = {(r["env"], r["contender"]) for r in result["rows"]}
    assert ran == {
        ("MinAtar/Breakout-v1", "gpusim eager"),
        ("MinAtar/Breakout-v1", "gymnax"),
        ("MinAtar/Breakout-v1", "minatar"),
        ("MinAtar/Freeway-v0", "gpusim eager"),
        ("MinAtar/Freeway-v0", "minatar"),
    }
    assert all(r["best"] > 0 and r["steps"] == 3 and r["batch"] == 4 for r in result["rows"])
    # gymnax has no full action set: one line says so for the -v0 id
    (skip,) = result["skipped"]
    assert skip["contender"] == "gymnax" and skip["env"] == "MinAtar/Freeway-v0" and skip["line"] in lines
