"""Seaquest against the ``minatar`` package: state injection (exact, spawns replayed; object
lists compared in order) and episode statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native.minatar import SeaquestEnv
from tests.envs.native.minatar import _parity

pytest.importorskip("minatar")

_SCALARS = (
    "oxygen", "diver_count", "sub_x", "sub_y", "e_spawn_speed", "e_spawn_timer", "d_spawn_timer",
    "move_speed", "ramp_index", "shot_timer",
)  # fmt: skip


def _slots(s: dict, prefix: str, fields: tuple[str, ...], keep=None) -> list[list]:
    """The alive slots of ``prefix`` as the package's list (oldest first)."""
    rows = []
    for i, alive in enumerate(s[f"{prefix}_alive"]):
        if alive and (keep is None or keep(i)):
            rows.append((s[f"{prefix}_birth"][i], [s[f"{prefix}_{f}"][i] for f in fields]))
    return [r for _, r in sorted(rows, key=lambda t: t[0])]


def _canonical(s: dict) -> dict:
    """Our state as the package holds it."""
    out = {k: s[k] for k in _SCALARS}
    out["sub_or"], out["surface"] = s["sub_right"], s["surface"]
    out["e_fish"] = _slots(s, "en", ("x", "y", "right", "timer"), keep=lambda i: not s["en_sub"][i])
    out["e_subs"] = _slots(s, "en", ("x", "y", "right", "timer", "shot"), keep=lambda i: s["en_sub"][i])
    out["divers"] = _slots(s, "dv", ("x", "y", "right", "timer"))
    out["f_bullets"] = _slots(s, "fb", ("x", "y", "right"))
    out["e_bullets"] = sorted(
        (x, y, right)
        for right, key in ((True, "eb_right"), (False, "eb_left"))
        for y, line in enumerate(s[key])
        for x, on in enumerate(line)
        if on
    )
    return out


def _inject(game, s: dict) -> None:
    c = _canonical(s)
    for k in (*_SCALARS, "sub_or", "surface", "e_fish", "e_subs", "divers", "f_bullets"):
        setattr(game, k, c[k])
    game.e_bullets = [list(b) for b in c["e_bullets"]]


def _extract(game) -> dict:
    out = {k: int(getattr(game, k)) for k in _SCALARS}
    out["sub_or"], out["surface"] = bool(game.sub_or), bool(game.surface)
    for k in ("e_fish", "e_subs", "divers", "f_bullets"):
        out[k] = [[int(v) if not isinstance(v, (bool, np.bool_)) else bool(v) for v in obj] for obj in getattr(game, k)]
    out["e_bullets"] = sorted({(int(x), int(y), bool(r)) for x, y, r in game.e_bullets})
    return out


def _uniforms(s: dict, u: list) -> list:
    """The package draws an enemy's three numbers only when one spawns, then a diver's two."""
    return u[:5] if s["e_spawn_timer"] == 0 else u[3:5]


def _random_states(n: int, seed: int) -> TensorDict:
    """States over the state space, crowded around the sub so that objects meet: enemies,
    divers and bullets (several on one cell, in any list order), spawns due, oxygen near its
    end, surfacing with 0 to 6 divers (or the package's -1 after a full crew), ramping."""
    g = torch.Generator().manual_seed(seed)
    rint = lambda lo, hi, *shape: torch.randint(lo, hi + 1, (n, *shape), generator=g)
    td = SeaquestEnv(batch_size=[n], seed=seed)._start(None)
    sub_x, sub_y = rint(0, 9), rint(0, 8)
    td.update(sub_x=sub_x, sub_y=sub_y, sub_right=(rint(0, 1) == 1) | (sub_x == 9))
    td["oxygen"] = torch.where(rint(0, 1) == 1, rint(0, 3), rint(0, 200))
    td["diver_count"] = rint(-1, 6)
    td["surface"] = rint(0, 1) == 1
    td["shot_timer"] = rint(0, 5) * rint(0, 1)
    td["e_spawn_speed"] = rint(1, 20)
    td["e_spawn_timer"] = rint(0, 20) * rint(0, 1)
    td["d_spawn_timer"] = rint(0, 30) * rint(0, 1)
    td["move_speed"] = rint(2, 5)
    td["ramp_index"] = rint(0, 10)
    td["frame"] = torch.full((n,), 1000)
    crowd = (rint(0, 1) == 1).unsqueeze(-1)

    def place(k: int):
        near_x = (sub_x.unsqueeze(-1) + rint(-2, 2, k)).clamp(0, 9)
        near_y = (sub_y.unsqueeze(-1) + rint(-1, 1, k)).clamp(1, 8)
        return torch.where(crowd, near_x, rint(0, 9, k)), torch.where(crowd, near_y, rint(1, 8, k))

    for prefix, k, most in (("en", 32, 12), ("dv", 4, 3), ("fb", 4, 3)):
        count = rint(0, most)
        td[f"{prefix}_alive"] = torch.rand(n, k, generator=g).argsort(-1) < count.unsqueeze(-1)
        td[f"{prefix}_x"], td[f"{prefix}_y"] = place(k)
        td[f"{prefix}_right"] = rint(0, 1, k) == 1
        td[f"{prefix}_birth"] = torch.rand(n, k, generator=g).argsort(-1)
    td["en_sub"] = rint(0, 1, 32) == 1
    td["en_timer"] = (torch.rand(n, 32, generator=g) * (td["move_speed"].unsqueeze(-1) + 1)).long()
    td["en_shot"] = rint(0, 10, 32) * rint(0, 1, 32)
    td["dv_timer"] = rint(0, 5, 4)
    td["eb_right"] = torch.rand(n, 10, 10, generator=g) < 0.03
    td["eb_left"] = torch.rand(n, 10, 10, generator=g) < 0.03
    td["last_action"] = rint(0, 5)
    return TensorDict(td, batch_size=[n])


@pytest.mark.parametrize("ramping", [True, False], ids=["ramp", "no-ramp"])
def test_state_injection_matches_minatar(ramping) -> None:
    rollout = _parity.rollout_states(SeaquestEnv, 32, 60, seed=1)
    states = torch.cat([rollout, _random_states(2500, seed=2)])
    n, ok, errors = _parity.check_injection(
        SeaquestEnv,
        states,
        _inject,
        _extract,
        seed=3,
        normalize=_canonical,
        uniforms=_uniforms,
        difficulty_ramping=ramping,
    )
    assert ok == n, f"{n - ok} of {n} states differ: {errors}"


def test_episode_statistics_match_minatar() -> None:
    ours_r, ours_l = _parity.ours_episodes(SeaquestEnv, 250, 2000, seed=0)
    ref_r, ref_l = _parity.package_episodes("seaquest", 250, seed=0)
    _parity.compare("return", ours_r, ref_r)
    _parity.compare("length", ours_l, ref_l)


def test_render_matches_minatar_colours() -> None:
    from minatar.gym import BaseEnv

    states = _random_states(20, seed=5)
    env = SeaquestEnv(batch_size=[20], sticky_action_prob=0.0)
    td = env._step(states.clone().set("action", torch.zeros(20, dtype=torch.int64)))
    frames = env.render(td)
    ref = BaseEnv("seaquest", render_mode="rgb_array")
    ref.reset(seed=0)
    for i in range(20):
        _inject(ref.game.env, {k: td[k][i].tolist() for k in env.state_layout()})
        np.testing.assert_array_equal(frames[i].numpy(), np.round(ref.render() * 255).astype(np.uint8))
