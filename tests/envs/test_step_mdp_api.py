"""step_mdp: new containers at every level (never the input's sub-tensordicts), empty containers
dropped, locked inputs, lazy stacks with heterogeneous "next" entries, ``keep_other=False``,
and ``StepMDP`` (the env-bound plan) equal to the function."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

import gpusim as gs
from gpusim.envs.utils import StepMDP, step_mdp
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv


def _nested_td():
    return TensorDict(
        {
            "obs": torch.zeros(4, 1),
            "action": torch.zeros(4, 1),
            "group": TensorDict({"other": torch.zeros(4, 3, 1), "action": torch.zeros(4, 3, 1)}, [4, 3]),
            "next": {
                "obs": torch.ones(4, 1),
                "reward": torch.ones(4, 1),
                "group": TensorDict({"obs": torch.ones(4, 3, 1), "reward": torch.ones(4, 3, 1)}, [4, 3]),
            },
        },
        [4],
    )


@pytest.mark.parametrize("lock", [False, True])
def test_never_returns_or_aliases_sub_tensordicts(lock):
    td = _nested_td()
    if lock:
        td.lock_()
    out = step_mdp(td, action_keys=["action", ("group", "action")], reward_keys=["reward", ("group", "reward")])
    assert not out.is_locked
    assert out["group"] is not td["group"] and out["group"] is not td["next", "group"]
    assert out["group"].batch_size == (4, 3)
    assert sorted(out["group"].keys()) == ["obs", "other"]
    assert out["group", "obs"] is td["next", "group", "obs"]  # tensors are shared, not copied
    out["group", "new"] = torch.zeros(4, 3)  # writing into the result leaves the input alone
    assert "new" not in td["group"].keys() and "new" not in td["next", "group"].keys()


def test_empty_containers_are_dropped():
    td = TensorDict(
        {"state": torch.zeros(2, 1), "data": TensorDict({}, [2, 3]), "next": {"state": torch.ones(2, 1)}},
        [2],
    )
    td["data", "action"] = torch.zeros(2, 3, 1)
    out = step_mdp(td, action_keys=("data", "action"))
    assert list(out.keys()) == ["state"]  # "data" held only an excluded action
    td["next", "data"] = TensorDict({}, [2, 3])
    assert "data" not in step_mdp(td, action_keys=("data", "action")).keys()


def test_keep_other_false_keeps_root_actions_only():
    td = _nested_td()
    out = step_mdp(td, keep_other=False, exclude_action=False, action_keys=["action", ("group", "action")])
    assert set(out.keys(True, True)) == {"action", ("group", "action"), "obs", ("group", "obs"), ("group", "reward")}
    assert "other" not in out["group"].keys()


@pytest.mark.parametrize("has_out", [False, True])
def test_lazy_stack_with_heterogeneous_next(has_out):
    tds = [
        TensorDict({"obs": torch.zeros(2), "next": {"obs": torch.ones(2), "a": torch.ones(1)}}, []),
        TensorDict({"obs": torch.zeros(2), "b": torch.zeros(3), "next": {"obs": torch.ones(2)}}, []),
    ]
    stacked = LazyStackedTensorDict.lazy_stack(tds, 0).lock_()
    dest = LazyStackedTensorDict.lazy_stack([TensorDict({}, []), TensorDict({}, [])], 0) if has_out else None
    out = step_mdp(stacked, next_tensordict=dest)
    assert isinstance(out, LazyStackedTensorDict)
    assert out is dest if has_out else True
    assert (out[0]["a"] == 1).all() and "a" not in out[1].keys()
    assert (out[1]["b"] == 0).all() and (out["obs"] == 1).all()


def test_step_mdp_class_matches_the_function():
    env = NestedCountingEnv(batch_size=(2,))
    td = env.rand_step(env.reset()).lock_()
    for keep_other in (True, False):
        for exclude in ({}, {"exclude_reward": False}, {"exclude_done": True}, {"exclude_action": False}):
            expected = step_mdp(
                td,
                keep_other=keep_other,
                action_keys=env.action_keys,
                reward_keys=env.reward_keys,
                done_keys=env.done_keys,
                **exclude,
            )
            got = StepMDP(env, keep_other=keep_other, **exclude)(td)
            assert (got == expected).all()
    assert gs.StepMDP is StepMDP


def test_reward_that_is_a_state_is_kept():
    env = CountingEnv(batch_size=(2,))
    env.state_spec = env.full_reward_spec.clone()  # the env reads its last reward back
    td = env.rand_step(env.reset().set("reward", torch.zeros(2, 1)))
    assert "reward" in StepMDP(env)(td).keys()
    assert "reward" in env._step_mdp(td).keys()
