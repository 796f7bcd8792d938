"""Breakout against the ``minatar`` package: state injection (exact) and episode statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native.minatar import BreakoutEnv
from tests.envs.native.minatar import _parity

pytest.importorskip("minatar")


def _inject(game, s: dict) -> None:
    game.ball_x, game.ball_y, game.ball_dir = s["ball_x"], s["ball_y"], s["ball_dir"]
    game.pos, game.last_x, game.last_y = s["pos"], s["last_x"], s["last_y"]
    game.strike = s["strike"]
    game.brick_map = np.array(s["bricks"], dtype=np.float64)


def _extract(game) -> dict:
    return {
        "ball_x": game.ball_x,
        "ball_y": game.ball_y,
        "ball_dir": game.ball_dir,
        "pos": game.pos,
        "last_x": game.last_x,
        "last_y": game.last_y,
        "strike": game.strike,
        "bricks": (game.brick_map == 1).tolist(),
    }


def _random_states(n: int, seed: int) -> TensorDict:
    """States drawn over the whole state space: any ball cell above the bottom row, any
    direction, sparse or empty brick walls on rows 1-8 (refills, pass-through strikes)."""
    g = torch.Generator().manual_seed(seed)
    rint = lambda hi: torch.randint(0, hi, (n,), generator=g)
    density = torch.rand(n, 1, 1, generator=g) * torch.randint(0, 2, (n, 1, 1), generator=g)
    bricks = torch.rand(n, 10, 10, generator=g) < density
    bricks[:, 0] = False
    bricks[:, 9] = False
    return TensorDict(
        {
            "ball_x": rint(10),
            "ball_y": rint(9),
            "ball_dir": rint(4),
            "pos": rint(10),
            "last_x": rint(10),
            "last_y": rint(10),
            "strike": rint(2).bool(),
            "bricks": bricks,
            "last_action": rint(6),
        },
        batch_size=[n],
    )


TABLE: dict[str, str] = {}


@pytest.mark.parametrize("minimal", [False, True], ids=["v0", "v1"])
def test_state_injection_matches_minatar(minimal) -> None:
    states = torch.cat([_parity.rollout_states(BreakoutEnv, 32, 60, seed=1), _random_states(1500, seed=2)])
    n, ok, errors = _parity.check_injection(
        BreakoutEnv, states, _inject, _extract, seed=3, use_minimal_action_set=minimal
    )
    assert ok == n, f"{n - ok} of {n} states differ: {errors}"


def test_episode_statistics_match_minatar() -> None:
    ours_r, ours_l = _parity.ours_episodes(BreakoutEnv, 400, 400, seed=0)
    ref_r, ref_l = _parity.package_episodes("breakout", 300, seed=0)
    _parity.compare("return", ours_r, ref_r)
    _parity.compare("length", ours_l, ref_l)


def test_render_matches_minatar_colours() -> None:
    from minatar.gym import BaseEnv

    states = _random_states(20, seed=5)
    env = BreakoutEnv(batch_size=[20], sticky_action_prob=0.0)
    td = env._step(states.clone().set("action", torch.zeros(20, dtype=torch.int64)))
    frames = env.render(td)
    ref = BaseEnv("breakout", render_mode="rgb_array")
    ref.reset(seed=0)
    for i in range(20):
        _inject(ref.game.env, {k: td[k][i].tolist() for k in env.state_layout()})
        expected = np.round(ref.render() * 255).astype(np.uint8)
        np.testing.assert_array_equal(frames[i].numpy(), expected)
