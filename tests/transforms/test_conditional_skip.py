"""ConditionalSkip: the rows where the condition holds skip the base env's step (partial steps),
and when no row steps the parent's output transforms do not run either."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.transforms import Compose, ConditionalSkip, StepCounter, TransformedEnv
from tests.envs.toy_envs import CountingEnv, StatelessCounter


def _ones(td):
    return td.set("action", torch.ones(td.batch_size, dtype=torch.int64))


def test_skip_every_other_step_of_a_single_env():
    inner = TransformedEnv(
        CountingEnv(max_count=100),
        Compose(StepCounter(step_count_key="inner"), ConditionalSkip(lambda td: td["outer"] % 2 == 1)),
    )
    env = TransformedEnv(inner, StepCounter(step_count_key="outer"), auto_unwrap=False)
    td = env.rollout(6, _ones)
    assert td["outer"].flatten().tolist() == [0, 1, 2, 3, 4, 5]
    assert td["inner"].flatten().tolist() == [0, 1, 1, 2, 2, 3]  # skipped steps: not counted
    count = td["next", "count"].flatten()
    assert torch.equal(count[1::2], count[0::2])  # a skipped step repeats the current observation
    assert td["next", "reward"].flatten()[1::2].eq(0).all()


@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_skip_some_rows_of_a_functional_env(mode):
    env = TransformedEnv(
        StatelessCounter(batch_size=(3,), max_count=100, auto_reset_mode=mode),
        ConditionalSkip(lambda td: torch.tensor([False, True, False])),
    )
    td = env.rollout(3, _ones)
    assert td["next", "observation"][:, :, 0].tolist() == [[2.0, 4.0, 6.0], [0.0, 0.0, 0.0], [2.0, 4.0, 6.0]]


def test_condition_shapes_and_forward():
    t = ConditionalSkip(lambda td: torch.arange(td.numel()).view(*td.shape, 1) % 2 == 0)
    assert t.inv(TensorDict(batch_size=[2, 2]))["_step"].tolist() == [[False, True], [False, True]]
    both = t.inv(TensorDict({"_step": torch.tensor([False, True])}, [2]))["_step"]
    assert both.tolist() == [False, True]  # combined with an existing "_step"
    with pytest.raises(ValueError, match="one bool per row"):
        ConditionalSkip(lambda td: torch.ones(3, dtype=torch.bool)).inv(TensorDict(batch_size=[2]))
    with pytest.raises(TypeError, match="callable"):
        ConditionalSkip(3)
    with pytest.raises(NotImplementedError, match="TransformedEnv"):
        t(TensorDict())
