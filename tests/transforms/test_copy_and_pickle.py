"""A deep copy or a pickle round trip of a ``TransformedEnv`` gives a working env whose transforms
belong to the copy (issue 29, defect 2: "deepcopy the training env into an eval env")."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNorm, VecNormV2

COPIES = {"deepcopy": copy.deepcopy, "pickle": lambda env: pickle.loads(pickle.dumps(env))}


def _members(transform):
    if isinstance(transform, Compose):
        for t in transform.transforms:
            yield from _members(t)
    yield transform


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize(
    "chain",
    [
        lambda: RewardSum(),
        lambda: Compose(StepCounter(7), RewardSum()),
        lambda: Compose(InitTracker(), Compose(StepCounter(7), RewardSum())),
    ],
    ids=["single", "compose", "nested"],
)
def test_copies_roll_out_and_own_their_transforms(how, chain):
    env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), chain())
    env.rollout(4, break_when_any_done=False)  # the original has been used (parents cached)
    twin = COPIES[how](env)
    for t in _members(twin.transform):
        assert t.container is twin
        assert t.parent is not None
    push = lambda td: td.set("action", torch.ones(3, dtype=torch.long))
    twin.set_seed(1)
    env.set_seed(1)
    a = twin.rollout(12, push, break_when_any_done=False)
    b = env.rollout(12, push, break_when_any_done=False)
    assert (a["next", "episode_reward"] == b["next", "episode_reward"]).all()
    # pushing right always ends CartPole episodes within 12 steps: the sum restarted after a reset
    assert (a["next", "episode_reward"][:, -1] < 12).all()
    for t in _members(env.transform):  # the original keeps its own links
        assert t.container is env


NORMS = {
    "VecNorm": (lambda: VecNorm(in_keys=["observation"]), lambda t: t.stats),
    "VecNormV2": (lambda: VecNormV2(in_keys=["observation"]), lambda t: t.count),
}


@pytest.mark.parametrize("norm", sorted(NORMS))
@pytest.mark.parametrize("how", sorted(COPIES))
def test_an_eval_copy_keeps_normalization_statistics_apart(how, norm):
    make, stats = NORMS[norm]
    env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), Compose(make(), RewardSum()))
    env.rollout(5)
    eval_env = COPIES[how](env)
    before = stats(env.transform[0]).clone()
    eval_env.rollout(5)
    assert (stats(env.transform[0]) == before).all()  # the copy's updates stay in the copy
    assert not (stats(eval_env.transform[0]) == before).all()  # and the copy's statistics move
    assert eval_env.transform[0].container is eval_env
