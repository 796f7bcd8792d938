"""Parity with VMAS 1.5 (the real library): state injection step by step, and random-policy
reward statistics. See ``_parity.py`` for the procedure."""

from __future__ import annotations

import pytest

from tests.envs.native.mpe._parity import assert_stats_match, reward_stats, step_parity

# float32 tolerance of one step (different summation orders of the same forces)
ATOL = {"pos": 1e-5, "vel": 1e-4, "obs": 1e-5, "reward": 1e-4}

CASES = [
    ("simple", {}, None),
    ("simple_spread", {}, None),
    ("simple_spread", {"n_agents": 4, "obs_agents": False}, None),
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
