"""Freeway against the ``minatar`` package: state injection (exact, speed redraws replayed) and
episode statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native.minatar import FreewayEnv
from tests.envs.native.minatar import _parity

pytest.importorskip("minatar")


def _inject(game, s: dict) -> None:
    game.pos, game.move_timer, game.terminate_timer = s["pos"], s["move_timer"], s["terminate_timer"]
    game.cars = [[x, i + 1, t, v] for i, (x, t, v) in enumerate(zip(s["car_x"], s["car_timer"], s["car_speed"]))]


def _extract(game) -> dict:
    assert [car[1] for car in game.cars] == list(range(1, 9))
    return {
        "pos": game.pos,
        "move_timer": game.move_timer,
        "terminate_timer": game.terminate_timer,
        "car_x": [car[0] for car in game.cars],
        "car_timer": [car[2] for car in game.cars],
        "car_speed": [int(car[3]) for car in game.cars],
    }


def _random_states(n: int, seed: int) -> TensorDict:
    """States over the whole state space: the chicken on any row below the top (row 1 makes
    crossings, which redraw the speeds), any timers, cars anywhere at any speed; the episode
    timer often near its end."""
    g = torch.Generator().manual_seed(seed)
    speed = torch.randint(1, 6, (n, 8), generator=g) * (torch.randint(0, 2, (n, 8), generator=g) * 2 - 1)
    near_end = torch.randint(0, 2, (n,), generator=g).bool()
    timer = torch.where(near_end, torch.randint(0, 3, (n,), generator=g), torch.randint(0, 2501, (n,), generator=g))
    return TensorDict(
        {
            "pos": torch.randint(1, 10, (n,), generator=g),
            "move_timer": torch.randint(0, 4, (n,), generator=g),
            "terminate_timer": timer,
            "car_x": torch.randint(0, 10, (n, 8), generator=g),
            "car_timer": (torch.rand(n, 8, generator=g) * (speed.abs() + 1)).long(),
            "car_speed": speed,
            "last_action": torch.randint(0, 6, (n,), generator=g),
        },
        batch_size=[n],
    )


@pytest.mark.parametrize("minimal", [False, True], ids=["v0", "v1"])
def test_state_injection_matches_minatar(minimal) -> None:
    states = torch.cat([_parity.rollout_states(FreewayEnv, 16, 100, seed=1), _random_states(1500, seed=2)])
    n, ok, errors = _parity.check_injection(
        FreewayEnv, states, _inject, _extract, seed=3, use_minimal_action_set=minimal
    )
    assert ok == n, f"{n - ok} of {n} states differ: {errors}"


def test_episode_statistics_match_minatar() -> None:
    """Episodes last 2501 frames: the first episode of each side (both start with no previous
    action); the minimal action set (up a third of the time) makes crossings common enough for
    the return to be informative."""
    ours_r, ours_l = _parity.ours_episodes(FreewayEnv, 150, 2600, seed=0, episode=0, use_minimal_action_set=True)
    ref_r, ref_l = _parity.package_episodes("freeway", 60, seed=0, actions=3, skip_first=False)
    _parity.compare("return", ours_r, ref_r)
    _parity.compare("length", ours_l, ref_l)
    assert set(ours_l) == set(ref_l) == {2501.0}


def test_render_matches_minatar_colours() -> None:
    from minatar.gym import BaseEnv

    states = _random_states(20, seed=5)
    env = FreewayEnv(batch_size=[20], sticky_action_prob=0.0)
    table = torch.rand(20, 17, generator=torch.Generator().manual_seed(0))
    env.rng.uniform = lambda low, high, n: table
    td = env._step(states.clone().set("action", torch.zeros(20, dtype=torch.int64)))
    frames = env.render(td)
    ref = BaseEnv("freeway", render_mode="rgb_array")
    ref.reset(seed=0)
    for i in range(20):
        _inject(ref.game.env, {k: td[k][i].tolist() for k in env.state_layout()})
        np.testing.assert_array_equal(frames[i].numpy(), np.round(ref.render() * 255).astype(np.uint8))
