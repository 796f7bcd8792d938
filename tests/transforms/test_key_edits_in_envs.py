"""Key edits inside envs. Excluding or renaming done entries: allowed while every done level
keeps an end-of-episode entry; episodes then end (and auto-reset) on what is left. Excluding a
nested entry keeps the group it empties."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs.utils import check_env_specs
from gpusim.transforms import ExcludeTransform, RenameTransform, SelectTransform, TransformedEnv
from tests.envs.toy_envs import NestedCountingEnv, StatelessCounter


def _push(td):
    return td.set("action", torch.ones(*td.batch_size, dtype=torch.int64))


@pytest.mark.parametrize("sparse", [True, False])
def test_excluded_done_episodes_end_on_terminated(sparse):
    mode = "sparse" if sparse else "masked"
    env = TransformedEnv(StatelessCounter(batch_size=(2,), max_count=3, auto_reset_mode=mode), ExcludeTransform("done"))
    assert env.done_keys == ["terminated"]
    check_env_specs(env)
    td = env.rollout(7, _push, break_when_any_done=False)
    assert "done" not in td["next"].keys()
    # the counter ends at 3 and restarts from 0: 1, 2, 3, 1, 2, 3, 1
    assert td["next", "state"][0].flatten().tolist() == [1, 2, 3, 1, 2, 3, 1]
    assert td["next", "terminated"][0].flatten().tolist() == [False, False, True] * 2 + [False]
    assert env.rollout(7, _push).batch_size == (2, 3)  # stops at the first end


def test_renamed_done_moves_and_terminated_still_ends_episodes():
    env = TransformedEnv(
        StatelessCounter(batch_size=(2,), max_count=2), RenameTransform(["done"], [("flags", "finished")])
    )
    assert ("flags", "finished") in env.done_keys and "done" not in env.done_keys
    check_env_specs(env)
    td = env.rollout(4, _push, break_when_any_done=False)
    assert td["next", "state"][0].flatten().tolist() == [1, 2, 1, 2]
    assert torch.equal(td["next", "flags", "finished"], td["next", "terminated"])


def test_removing_every_end_signal_of_a_level_raises():
    with pytest.raises(ValueError, match="removing 'terminated' leaves the root done level without"):
        TransformedEnv(StatelessCounter(), ExcludeTransform("done", "terminated"))
    with pytest.raises(ValueError, match="leaves the 'agents' done level without"):
        TransformedEnv(NestedCountingEnv(), RenameTransform([("agents", "done"), ("agents", "terminated")], ["a", "b"]))
    env = TransformedEnv(NestedCountingEnv(), ExcludeTransform(("agents", "done")))  # terminated is left
    assert ("agents", "done") not in env.done_keys and ("agents", "terminated") in env.done_keys


def test_select_without_done_keeps_done_and_terminated():
    env = TransformedEnv(StatelessCounter(), SelectTransform("observation", keep_dones=False))
    assert sorted(env.done_keys) == ["done", "terminated"]


def test_exclude_keeps_the_group_it_empties():
    from tensordict import TensorDict

    from tests.transforms._stateless_envs import VectorEnv

    t = ExcludeTransform(("group", "x"))
    td = t(TensorDict({"group": {"x": torch.zeros(1)}, "y": torch.ones(1)}, []))
    assert "group" in td.keys() and td["group"].is_empty()  # exactly the named key went
    assert "group" not in ExcludeTransform("group")(td).keys()
    env = TransformedEnv(VectorEnv((2,)), ExcludeTransform(("nested", "obs")))
    assert "nested" in env.observation_spec.keys() and not list(env.observation_spec["nested"].keys())
    check_env_specs(env)
    roll = env.rollout(3, break_when_any_done=False)  # (3 steps whatever the random actions)
    assert roll["nested"].batch_size == (2, 3) and roll["next", "nested"].is_empty()
