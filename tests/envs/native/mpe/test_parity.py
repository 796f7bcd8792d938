"""Parity with VMAS 1.5 (the real library): state injection step by step, and random-policy
reward statistics. See ``_parity.py`` for the procedure."""

from __future__ import annotations

import pytest

from tests.envs.native.mpe import _parity as P
from tests.envs.native.mpe._parity import assert_stats_match, reward_stats, step_parity

# float32 tolerance of one step (different summation orders of the same forces)
ATOL = {"pos": 1e-5, "vel": 1e-4, "obs": 1e-5, "reward": 1e-4}

CASES = [
    ("simple", {}, None),
    ("simple_spread", {}, None),
    ("simple_spread", {"n_agents": 4, "obs_agents": False}, None),
    ("simple_tag", {}, None),
    (
        "simple_tag",
        {
            "num_good_agents": 2,
            "num_adversaries": 2,
            "num_landmarks": 3,
            "shape_agent_rew": True,
            "shape_adversary_rew": True,
            "agents_share_rew": True,
            "adversaries_share_rew": False,
        },
        None,
    ),
    ("simple_tag", {"observe_same_team": False, "observe_pos": False, "num_good_agents": 3, "bound": 0.6}, None),
    ("simple_adversary", {}, P.goal_adversary),
    ("simple_adversary", {"n_agents": 5, "n_adversaries": 2}, P.goal_adversary),
    ("simple_push", {}, P.goal_push),
    ("simple_reference", {}, P.goal_reference),
    ("simple_speaker_listener", {}, P.goal_speaker_listener),
    ("simple_crypto", {}, P.key_crypto),
    ("simple_crypto", {"dim_c": 2}, P.key_crypto),
    ("simple_world_comm", {}, None),
    (
        "simple_world_comm",
        {"num_good_agents": 1, "num_adversaries": 2, "num_landmarks": 2, "num_food": 3, "num_forests": 1},
        None,
    ),
    ("simple_world_comm", {"num_adversaries": 1}, None),
]
_ids = [f"{s}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for s, kw, _ in CASES]


@pytest.mark.parametrize("continuous", [True, False], ids=["continuous", "discrete"])
@pytest.mark.parametrize(("scenario", "kwargs", "extra"), CASES, ids=_ids)
def test_state_injection_matches_vmas(scenario, kwargs, extra, continuous) -> None:
    err = step_parity(scenario, num_envs=64, steps=50, continuous=continuous, extra=extra, **kwargs)
    for key, tol in ATOL.items():
        assert err[key] <= tol, (key, err)
    if err["may_contact"]:  # the contact forces were exercised
        assert err["contacts"] > 20, err


@pytest.mark.parametrize(("scenario", "kwargs", "extra"), CASES, ids=_ids)
def test_random_policy_rewards_match_vmas(scenario, kwargs, extra) -> None:
    assert_stats_match(reward_stats(scenario, num_envs=512, steps=25, **kwargs))
