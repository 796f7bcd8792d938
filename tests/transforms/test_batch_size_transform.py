"""BatchSizeTransform: a reshaped batch size (reshape_fn) and a fixed one for batch-unlocked envs."""

import pytest
import torch

from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.transforms import BatchSizeTransform, Compose, StepCounter, TransformedEnv


def test_reshape_outputs_specs_and_partial_reset():
    def make():
        return TransformedEnv(
            CartPoleEnv(batch_size=[6], seed=0),
            Compose(BatchSizeTransform(reshape_fn=lambda x: x.reshape(2, 3)), StepCounter()),
        )

    # the same rows as the inner env, in the new layout
    ref = CartPoleEnv(batch_size=[6], seed=0).reset()["observation"]
    torch.testing.assert_close(make().reset()["observation"].reshape(6, 4), ref)
    env = make()
    assert env.batch_size == (2, 3)
    assert env.observation_spec["observation"].shape == (2, 3, 4)
    td = env.rollout(4, break_when_any_done=False)
    assert td.batch_size == (2, 3, 4)
    assert td["next", "step_count"][..., -1, 0].eq(4).all()
    # a partial reset in the outer layout resets only the chosen row of the inner env
    state = env.rand_step(env.reset())
    state = state["next"]
    mask = torch.zeros(2, 3, 1, dtype=torch.bool)
    mask[1, 2] = True
    out = env.reset(state.set("_reset", mask))
    assert out["step_count"].squeeze(-1).tolist() == [[1, 1, 1], [1, 1, 0]]
    env.check_env_specs()


def test_fixed_batch_size_and_errors():
    seen = []

    def reset_func(td, td_reset):
        seen.append(td_reset.batch_size)
        return td_reset

    t = BatchSizeTransform(batch_size=[3], reset_func=reset_func)
    assert t.transform_env_batch_size(torch.Size([])) == (3,)
    env = TransformedEnv(PendulumEnv(batch_size=[3], seed=0), t)
    assert env.reset().batch_size == (3,) and seen
    with pytest.raises(ValueError, match="exactly one"):
        BatchSizeTransform()
    with pytest.raises(ValueError, match="exactly one"):
        BatchSizeTransform(batch_size=[2], reshape_fn=lambda x: x)
