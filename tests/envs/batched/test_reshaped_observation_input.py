"""A transform above a batched env that reshapes an observation (CatFrames on "observation"):
the reshaped observation is not a worker input (only actions and states are), so steps work."""

from __future__ import annotations

from gpusim.envs.batched import SerialEnv
from gpusim.envs.native import PendulumEnv
from gpusim.transforms import CatFrames, TransformedEnv


def test_cat_frames_over_a_serial_env_steps():
    env = TransformedEnv(SerialEnv(2, lambda: PendulumEnv(seed=0)), CatFrames(N=3, dim=-1, in_keys=["observation"]))
    env.check_env_specs()
    td = env.rollout(4)
    assert td["next", "observation"].shape == (2, 4, 9)
    obs = td["next", "observation"]
    # the windows slide by one frame per step: the older frames are the previous newer ones
    assert (obs[:, 1:, :6] == obs[:, :-1, 3:]).all()
    env.close()
