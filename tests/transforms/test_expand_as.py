"""ExpandAs: an entry expanded to the right to a reference entry's shape, offline and in envs
(specs, reset and step outputs)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import ExpandAs, TransformedEnv
from tests.envs.toy_envs import NestedCountingEnv


def test_offline_expand_and_errors():
    td = TensorDict({"d": torch.tensor([[True], [False]]), ("a", "r"): torch.zeros(2, 1, 3)}, [2])
    out = ExpandAs("d", ("a", "r"), "d3")(td)["d3"]
    assert out.shape == (2, 1, 3) and out[0].all() and not out[1].any()
    with pytest.raises(KeyError, match="missing"):
        ExpandAs("missing", ("a", "r"))(td)
    with pytest.raises(ValueError, match="cannot be expanded"):
        ExpandAs(("a", "r"), "d", "x")(TensorDict({"d": torch.zeros(2, 5), ("a", "r"): torch.zeros(2, 3)}, [2]))


def test_in_an_env_the_spec_and_outputs_follow_the_reference():
    env = TransformedEnv(NestedCountingEnv(batch_size=(2,)), ExpandAs("done", ("agents", "reward"), "done_agents"))
    ref = env.full_reward_spec["agents", "reward"]
    assert env.observation_spec["done_agents"].shape == ref.shape
    assert "done" in env.done_keys and "done_agents" not in env.done_keys
    td = env.reset()
    assert td["done_agents"].shape == ref.shape  # the reward is not in the reset data: its spec shape
    td = env.rand_step(td)
    assert td["next", "done_agents"].shape == td["next", "agents", "reward"].shape
    env.check_env_specs()


def test_unknown_keys_raise_when_the_specs_are_built():
    with pytest.raises(KeyError, match="not an output entry"):
        TransformedEnv(CartPoleEnv(), ExpandAs("done", "nope"))
