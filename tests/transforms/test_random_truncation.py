"""RandomTruncationTransform: spread horizons at the first reset, later draws per reset row,
truncation at the horizon, argument checks and the StepCounter requirement."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs.native import PendulumEnv
from gpusim.transforms import Compose, RandomTruncationTransform, StepCounter, TransformedEnv


def _env(n, **kw):
    t = RandomTruncationTransform(**kw)
    return TransformedEnv(PendulumEnv(batch_size=[n], seed=0), Compose(StepCounter(), t)), t


def test_first_reset_spreads_and_steps_truncate_at_the_horizon():
    torch.manual_seed(0)
    env, t = _env(16, min_horizon=3, max_horizon=6)
    env.reset()
    h = t._horizons.clone()
    assert h.shape == (16, 1) and h.min() >= 1 and h.max() <= 6 and h.unique().numel() > 1
    td = env.rollout(12, break_when_any_done=False)
    count, trunc = td["next", "step_count"], td["next", "truncated"]
    assert trunc.any()
    assert (count[:, 1:][trunc[:, :-1]] == 1).all()  # a truncated episode restarts at the next step
    assert (count[:, 0] <= h).all() and count.max() <= 6
    # prob=0: after the first episode every horizon is max_horizon
    assert (t._horizons[~t._first_episode] == 6).all()


def test_prob_one_draws_within_bounds_after_the_first_episode():
    torch.manual_seed(1)
    env, t = _env(32, min_horizon=4, max_horizon=5, prob=1.0)
    env.rollout(20, break_when_any_done=False)
    later = t._horizons[~t._first_episode]
    assert later.numel() > 0 and later.min() >= 4 and later.max() <= 5


def test_arguments_and_step_counter_requirement():
    for kw, match in [
        ({"prob": 1.5}, "prob must be in"),
        ({"first_episode_prob": -0.1}, "first_episode_prob"),
        ({"min_horizon": 0}, "min_horizon must be >= 1"),
        ({"min_horizon": 9}, "must be <= max_horizon"),
    ]:
        args = {"min_horizon": 1, "max_horizon": 5, **kw}
        with pytest.raises(ValueError, match=match):
            RandomTruncationTransform(**args)
    with pytest.raises(RuntimeError, match="requires a StepCounter"):
        TransformedEnv(PendulumEnv(), RandomTruncationTransform(1, 5))
