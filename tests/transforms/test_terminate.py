"""TerminateTransform: a predicate on the step output ends episodes (terminated, and done unless
write_done=False); truncated entries are untouched."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.transforms import Compose, StepCounter, TerminateTransform, TransformedEnv
from tests.envs.toy_envs import StatelessCounter


def _ones(td):
    return td.set("action", torch.ones(td.batch_size, dtype=torch.int64))


def test_rollout_stops_when_the_predicate_holds_per_row():
    env = TransformedEnv(
        StatelessCounter(batch_size=(2,), max_count=100),
        TerminateTransform(lambda td: td["observation"] >= torch.tensor([[6.0], [100.0]])),
    )
    td = env.rollout(10, _ones)
    assert td.shape == (2, 3)  # row 0 reaches 6 at its third step
    assert td["next", "terminated"][:, -1, 0].tolist() == [True, False]
    assert td["next", "done"][:, -1, 0].tolist() == [True, False]


def test_write_done_false_and_truncated_untouched():
    env = TransformedEnv(
        StatelessCounter(max_count=100), Compose(StepCounter(50), TerminateTransform(lambda td: True, write_done=False))
    )
    out = env.step(_ones(env.reset()))
    assert out["next", "terminated"].all() and not out["next", "done"].any()
    assert not out["next", "truncated"].any()


def test_arguments_and_forward():
    with pytest.raises(ValueError, match="callable"):
        TerminateTransform(3)
    with pytest.raises(RuntimeError, match="without a parent environment"):
        TerminateTransform(lambda td: True)(TensorDict())
