"""``set_exploration_type`` is tensordict's interaction-type switch: probabilistic modules sample
under RANDOM and take the deterministic value otherwise (as with TorchRL)."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, ProbabilisticTensorDictModule, TensorDictModule, TensorDictSequential
from torch.distributions import Normal

import gpusim as gs


def _policy():
    loc_scale = TensorDictModule(lambda obs: (obs, torch.ones_like(obs)), in_keys=["obs"], out_keys=["loc", "scale"])
    sampler = ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=Normal)
    return TensorDictSequential(loc_scale, sampler)


def test_switch_is_tensordicts():
    assert gs.ExplorationType is InteractionType
    assert gs.exploration_type() is None
    with gs.set_exploration_type(gs.ExplorationType.RANDOM):
        from tensordict.nn import interaction_type

        assert interaction_type() is InteractionType.RANDOM


def test_probabilistic_module_follows_the_switch():
    policy = _policy()
    obs = torch.zeros(1000, 1)
    with gs.set_exploration_type(gs.ExplorationType.DETERMINISTIC):
        det = policy(TensorDict({"obs": obs}, [1000]))["action"]
    with gs.set_exploration_type(gs.ExplorationType.RANDOM):
        rnd = policy(TensorDict({"obs": obs}, [1000]))["action"]
    assert det.eq(0).all()
    assert rnd.std() > 0.5  # sampled from N(0, 1)
