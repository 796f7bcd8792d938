"""Asterix against the ``minatar`` package: state injection (exact, spawns replayed) and
episode statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native.minatar import AsterixEnv
from tests.envs.native.minatar import _parity

pytest.importorskip("minatar")

_TIMERS = ("spawn_speed", "spawn_timer", "move_speed", "move_timer", "ramp_timer", "ramp_index")


def _inject(game, s: dict) -> None:
    game.player_x, game.player_y = s["player_x"], s["player_y"]
    for name in _TIMERS:
        setattr(game, name, s[name])
    game.entities = [
        [x, i + 1, right, gold] if alive else None
        for i, (alive, x, right, gold) in enumerate(zip(s["ent_alive"], s["ent_x"], s["ent_right"], s["ent_gold"]))
    ]


def _extract(game) -> dict:
    out = {"player_x": game.player_x, "player_y": game.player_y, **{k: getattr(game, k) for k in _TIMERS}}
    ents = game.entities
    assert all(e is None or e[1] == i + 1 for i, e in enumerate(ents))
    out["ent_alive"] = [e is not None for e in ents]
    out["ent_x"] = [e[0] if e is not None else 0 for e in ents]
    out["ent_right"] = [bool(e[2]) if e is not None else False for e in ents]
    out["ent_gold"] = [bool(e[3]) if e is not None else False for e in ents]
    return out


def _normalize(s: dict) -> dict:
    """Dead lanes hold nothing in the package."""
    s = dict(s)
    for key in ("ent_x", "ent_right", "ent_gold"):
        s[key] = [v if alive else type(v)(0) for v, alive in zip(s[key], s["ent_alive"])]
    return s


def _random_states(n: int, seed: int, ramp: bool = True) -> TensorDict:
    """States over the whole state space: lanes full or empty at random (a full board skips the
    spawn), any timers and speeds, ramp timers often at their edge."""
    g = torch.Generator().manual_seed(seed)
    rint = lambda lo, hi, *shape: torch.randint(lo, hi + 1, (n, *shape), generator=g)
    density = torch.rand(n, 1, generator=g)
    spawn_speed, move_speed = rint(1, 10), rint(1, 5)
    edge = rint(0, 1).bool()
    return TensorDict(
        {
            "player_x": rint(0, 9),
            "player_y": rint(1, 8),
            "ent_alive": torch.rand(n, 8, generator=g) < density,
            "ent_x": rint(0, 9, 8),
            "ent_right": rint(0, 1, 8).bool(),
            "ent_gold": rint(0, 1, 8).bool(),
            "spawn_speed": spawn_speed,
            "spawn_timer": (torch.rand(n, generator=g) * (spawn_speed + 1)).long() * rint(0, 1),
            "move_speed": move_speed,
            "move_timer": (torch.rand(n, generator=g) * (move_speed + 1)).long() * rint(0, 1),
            "ramp_timer": torch.where(edge, rint(-1, 0), rint(-1, 100)),
            "ramp_index": rint(0, 20),
            "last_action": rint(0, 5),
        },
        batch_size=[n],
    )


@pytest.mark.parametrize("minimal", [False, True], ids=["v0", "v1"])
@pytest.mark.parametrize("ramping", [True, False], ids=["ramp", "no-ramp"])
def test_state_injection_matches_minatar(minimal, ramping) -> None:
    rollout = _parity.rollout_states(AsterixEnv, 32, 60, seed=1)
    states = torch.cat([rollout, _random_states(1500, seed=2)])
    n, ok, errors = _parity.check_injection(
        AsterixEnv,
        states,
        _inject,
        _extract,
        seed=3,
        normalize=_normalize,
        use_minimal_action_set=minimal,
        difficulty_ramping=ramping,
    )
    assert ok == n, f"{n - ok} of {n} states differ: {errors}"


def test_episode_statistics_match_minatar() -> None:
    ours_r, ours_l = _parity.ours_episodes(AsterixEnv, 400, 2000, seed=0)
    ref_r, ref_l = _parity.package_episodes("asterix", 300, seed=0)
    _parity.compare("return", ours_r, ref_r)
    _parity.compare("length", ours_l, ref_l)


def test_render_matches_minatar_colours() -> None:
    from minatar.gym import BaseEnv

    states = _random_states(20, seed=5)
    env = AsterixEnv(batch_size=[20], sticky_action_prob=0.0)
    td = env._step(states.clone().set("action", torch.zeros(20, dtype=torch.int64)))
    frames = env.render(td)
    ref = BaseEnv("asterix", render_mode="rgb_array")
    ref.reset(seed=0)
    for i in range(20):
        _inject(ref.game.env, {k: td[k][i].tolist() for k in env.state_layout()})
        np.testing.assert_array_equal(frames[i].numpy(), np.round(ref.render() * 255).astype(np.uint8))
