"""Start states follow gymnasium's reset distributions.

For every state dimension: the native reset samples stay inside gymnasium's range and reach
close to both ends, their mean and variance match the uniform law, and a two-sample
Kolmogorov-Smirnov test against gymnasium's own resets does not reject (alpha = 0.001; fixed
seeds, so the test is deterministic). Constant dimensions (Mountain Car's velocity) must equal
gymnasium's constant.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.envs.native._gym_cases import CASES, GymCase

N_NATIVE = 20000
N_GYM = 2000
KS_C = 1.95  # alpha = 0.001


def _gym_resets(case: GymCase) -> np.ndarray:
    genv = case.make_gym()
    out = []
    for seed in range(N_GYM):
        genv.reset(seed=seed)
        out.append(np.asarray(genv.state, dtype=np.float64))
    return np.stack(out)


def _ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.abs(fa - fb).max())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reset_matches_gymnasium(case: GymCase) -> None:
    native = case.env_cls(batch_size=[N_NATIVE], seed=0).reset()["state"].double().numpy()
    gym_states = _gym_resets(case)
    assert native.shape[1] == gym_states.shape[1]
    threshold = KS_C * np.sqrt((N_NATIVE + N_GYM) / (N_NATIVE * N_GYM))
    for dim, (low, high) in enumerate(zip(case.reset_low, case.reset_high)):
        x = native[:, dim]
        if low == high:
            assert np.all(x == low) and np.all(gym_states[:, dim] == low)
            continue
        span = high - low
        assert x.min() >= low - 1e-6 and x.max() <= high + 1e-6, f"dim {dim} leaves [{low}, {high}]"
        assert x.min() < low + 0.01 * span and x.max() > high - 0.01 * span, f"dim {dim} misses an end"
        assert abs(x.mean() - (low + high) / 2) < 0.02 * span
        assert abs(x.var() - span**2 / 12) < 0.03 * span**2 / 12
        d = _ks_statistic(x, gym_states[:, dim])
        assert d < threshold, f"dim {dim}: KS distance {d:.4f} >= {threshold:.4f}"


def test_ks_check_detects_a_wrong_range() -> None:
    """The KS statistic used above does reject a distribution of the wrong width."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-0.05, 0.05, N_NATIVE)
    b = rng.uniform(-0.06, 0.06, N_GYM)
    threshold = KS_C * np.sqrt((N_NATIVE + N_GYM) / (N_NATIVE * N_GYM))
    assert _ks_statistic(a, b) > threshold
    assert _ks_statistic(a, rng.uniform(-0.05, 0.05, N_GYM)) < threshold


def test_consecutive_resets_are_fresh_and_independent() -> None:
    env = CASES[0].env_cls(batch_size=[N_NATIVE], seed=1)
    a, b = env.reset()["state"], env.reset()["state"]
    corr = torch.corrcoef(torch.stack([a[:, 0], b[:, 0], a[:, 1]]))
    assert float((corr - torch.eye(3)).abs().max()) < 0.03
