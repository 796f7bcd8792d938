"""Every wrapper, without its library, raises an ImportError that names what to ``pip install`` and
the gpusim extra (whether or not the library is installed here: its import is blocked). JAX stays
blocked in the JAX cases: this process also runs tests that fork, which JAX's threads must not meet."""

from __future__ import annotations

import sys

import pytest

from gpusim.envs.custom import ChessEnv
from gpusim.envs.libs import (
    BraxEnv,
    DMControlEnv,
    JumanjiEnv,
    MOGymEnv,
    MultiThreadedEnv,
    OpenMLEnv,
    OpenSpielEnv,
    PettingZooEnv,
)

CASES = [
    (lambda: PettingZooEnv("rps_v2", parallel=True), ["pettingzoo"], r"pip install pettingzoo.*gpusim\[pettingzoo\]"),
    (lambda: DMControlEnv("cartpole", "balance"), ["dm_control"], r"pip install dm_control.*gpusim\[dm_control\]"),
    (lambda: MultiThreadedEnv(2, "CartPole-v1"), ["envpool"], r"pip install envpool.*gpusim\[envpool\]"),
    (lambda: BraxEnv("fast"), ["jax", "brax"], r"pip install jax.*gpusim\[brax\]"),
    (lambda: JumanjiEnv("Snake-v1"), ["jax", "jumanji"], r"pip install jax.*gpusim\[jumanji\]"),
    (lambda: MOGymEnv("deep-sea-treasure-v0"), ["mo_gymnasium"], r"pip install mo-gymnasium.*gpusim\[mo_gymnasium\]"),
    (lambda: OpenSpielEnv("tic_tac_toe"), ["pyspiel"], r"pip install open_spiel.*gpusim\[open_spiel\]"),
    (lambda: OpenMLEnv("adult_num"), ["sklearn", "sklearn.datasets"], r"pip install scikit-learn.*gpusim\[openml\]"),
    (lambda: ChessEnv(), ["chess"], r"pip install chess.*gpusim\[chess\]"),
]


@pytest.mark.parametrize("build, blocked, message", CASES, ids=[f"{c[1][-1]}" for c in CASES])
def test_missing_library_says_what_to_install(monkeypatch, build, blocked, message):
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=message):
        build()
