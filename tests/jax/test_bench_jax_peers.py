"""Tiny runs of the peers of ``gpusim compare`` that load JAX (EnvPool imports it for its XLA
interface; gymnax and Brax are JAX programs): here, in the JAX tests' process, apart from the
tests that fork. The other peers run in tests/bench/test_bench_peers.py."""

from __future__ import annotations

import pytest

from gpusim.bench.peers import BRAX, ENVPOOL, GYMNAX
from tests.bench.test_bench_peers import run_peer

_RUNS = [
    (ENVPOOL, "CartPole-v1"),
    (ENVPOOL, "Pendulum-v1"),
    (GYMNAX, "Acrobot-v1"),
    (BRAX, "CartPole-v1"),
]


@pytest.mark.parametrize("contender,env_id", _RUNS, ids=[f"{c.peer}-{e}" for c, e in _RUNS])
def test_jax_peer_runs(contender, env_id) -> None:
    run_peer(contender, env_id)
