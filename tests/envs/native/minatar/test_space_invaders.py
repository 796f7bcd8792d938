"""SpaceInvaders against the ``minatar`` package: state injection (exact; the game has no
randomness besides sticky actions) and episode statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native.minatar import SpaceInvadersEnv
from tests.envs.native.minatar import _parity

pytest.importorskip("minatar")

_SCALARS = (
    "pos",
    "alien_dir",
    "enemy_move_interval",
    "alien_move_timer",
    "alien_shot_timer",
    "shot_timer",
    "ramp_index",
)
_GRIDS = {"aliens": "alien_map", "f_bullets": "f_bullet_map", "e_bullets": "e_bullet_map"}


def _inject(game, s: dict) -> None:
    for name in _SCALARS:
        setattr(game, name, s[name])
    for ours, theirs in _GRIDS.items():
        setattr(game, theirs, np.array(s[ours], dtype=np.float64))


def _extract(game) -> dict:
    out = {name: int(getattr(game, name)) for name in _SCALARS}
    for ours, theirs in _GRIDS.items():
        out[ours] = (getattr(game, theirs) == 1).tolist()
    return out


def _random_states(n: int, seed: int) -> TensorDict:
    """States over the whole state space: alien blocks of any shape (at least one alien, often
    a single one, sometimes on the bottom row), bullets anywhere, any timers and direction."""
    g = torch.Generator().manual_seed(seed)
    rint = lambda lo, hi, *shape: torch.randint(lo, hi + 1, (n, *shape), generator=g)
    density = torch.rand(n, 1, 1, generator=g) * rint(0, 1, 1, 1)
    aliens = torch.rand(n, 10, 10, generator=g) < density
    aliens.view(n, 100)[torch.arange(n), rint(0, 99)] = True
    interval = rint(6, 12)
    return TensorDict(
        {
            "pos": rint(0, 9),
            "aliens": aliens,
            "f_bullets": torch.rand(n, 10, 10, generator=g) < 0.05,
            "e_bullets": torch.rand(n, 10, 10, generator=g) < 0.05,
            "alien_dir": rint(0, 1) * 2 - 1,
            "enemy_move_interval": interval,
            "alien_move_timer": (torch.rand(n, generator=g) * (interval + 1)).long() * rint(0, 1),
            "alien_shot_timer": rint(0, 10) * rint(0, 1),
            "shot_timer": rint(0, 5) * rint(0, 1),
            "ramp_index": rint(0, 10),
            "last_action": rint(0, 5),
        },
        batch_size=[n],
    )


@pytest.mark.parametrize("minimal", [False, True], ids=["v0", "v1"])
@pytest.mark.parametrize("ramping", [True, False], ids=["ramp", "no-ramp"])
def test_state_injection_matches_minatar(minimal, ramping) -> None:
    rollout = _parity.rollout_states(SpaceInvadersEnv, 16, 120, seed=1)
    states = torch.cat([rollout, _random_states(1000, seed=2)])
    n, ok, errors = _parity.check_injection(
        SpaceInvadersEnv, states, _inject, _extract, seed=3, use_minimal_action_set=minimal, difficulty_ramping=ramping
    )
    assert ok == n, f"{n - ok} of {n} states differ: {errors}"


def test_episode_statistics_match_minatar() -> None:
    ours_r, ours_l = _parity.ours_episodes(SpaceInvadersEnv, 300, 3000, seed=0)
    ref_r, ref_l = _parity.package_episodes("space_invaders", 200, seed=0)
    _parity.compare("return", ours_r, ref_r)
    _parity.compare("length", ours_l, ref_l)


def test_render_matches_minatar_colours() -> None:
    from minatar.gym import BaseEnv

    states = _random_states(20, seed=5)
    env = SpaceInvadersEnv(batch_size=[20], sticky_action_prob=0.0)
    td = env._step(states.clone().set("action", torch.zeros(20, dtype=torch.int64)))
    frames = env.render(td)
    ref = BaseEnv("space_invaders", render_mode="rgb_array")
    ref.reset(seed=0)
    for i in range(20):
        _inject(ref.game.env, {k: td[k][i].tolist() for k in env.state_layout()})
        np.testing.assert_array_equal(frames[i].numpy(), np.round(ref.render() * 255).astype(np.uint8))
