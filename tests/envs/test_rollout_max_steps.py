"""``rollout``'s ``max_steps`` takes integral NumPy and torch scalars (issue 29, defect 1) and
refuses anything else with a message naming the argument and the value."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.envs.toy_envs import CountingEnv


@pytest.mark.parametrize(
    "steps", [5, np.int64(5), np.int32(5), np.uint8(5), torch.tensor(5), torch.tensor(5, dtype=torch.int32)]
)
def test_integral_scalars_are_accepted(steps):
    env = CountingEnv(batch_size=(3,))
    td = env.rollout(steps, break_when_any_done=False)
    assert td.shape == (3, 5)
    assert (td["next", "reward"] == 1).all()


@pytest.mark.parametrize(
    "steps, match",
    [
        (0, "max_steps must be a positive integer, got 0"),
        (np.int64(-2), "max_steps must be a positive integer, got -2"),
        (torch.tensor(0), "max_steps must be a positive integer, got 0"),
        (2.0, r"max_steps must be a positive integer \(an int, or an integral NumPy/torch scalar\), got 2.0 \(float\)"),
        (np.float32(2.0), r"got np.float32\(2.0\) \(float32\)"),
        (torch.tensor(2.0), r"got tensor\(2.\) \(Tensor\)"),
        (torch.tensor([2, 3]), r"got tensor\(\[2, 3\]\) \(Tensor\)"),
        (torch.tensor([2]), r"got tensor\(\[2\]\) \(Tensor\)"),
        (True, r"got True \(bool\)"),
        ("5", r"got '5' \(str\)"),
    ],
)
def test_bad_values_are_refused_clearly(steps, match):
    env = CountingEnv(batch_size=(3,))
    with pytest.raises(ValueError, match=match):
        env.rollout(steps)


def test_compiled_runner_checks_max_steps_the_same_way():
    env = CountingEnv(batch_size=(3,))
    runner = env.compile(verbose=False)  # nothing compiles before the first run
    with pytest.raises(ValueError, match=r"max_steps must be a positive integer .*got 2.5 \(float\)"):
        runner.run(2.5, env.reset())
    with pytest.raises(ValueError, match="max_steps must be a positive integer, got 0"):
        runner.run(np.int64(0), env.reset())
