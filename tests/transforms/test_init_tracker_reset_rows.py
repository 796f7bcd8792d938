"""InitTracker on a reset that selects rows: ``is_init`` is True exactly on the rows reset, also
when the reset input carries nothing but the ``"_reset"`` entries (no previous flags to keep)."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import InitTracker, TransformedEnv


def test_is_init_is_the_reset_mask_without_previous_data():
    env = TransformedEnv(CartPoleEnv(batch_size=[4], seed=0), InitTracker())
    env.reset()
    mask = torch.tensor([True, False, True, False])
    out = env.reset(TensorDict({"_reset": mask.unsqueeze(-1)}, [4]))
    assert out["is_init"].squeeze(-1).tolist() == mask.tolist()


def test_full_reset_and_steps():
    env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), InitTracker())
    td = env.reset()
    assert td["is_init"].all()
    td = env.step(env.rand_action(td))
    assert not td["next", "is_init"].any()
    # a partial reset of a stepped batch: the other rows keep False
    root = env.step_mdp(td).set("_reset", torch.tensor([[False], [True], [False]]))
    assert env.reset(root)["is_init"].squeeze(-1).tolist() == [False, True, False]
