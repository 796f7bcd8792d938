"""Rollouts of batch-unlocked envs on batched data, steps whose key sets differ, and empty
``Composite`` entries of the specs along a rollout."""

from __future__ import annotations

import torch
from tensordict import LazyStackedTensorDict, TensorDict

from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms import RemoveEmptySpecs, TransformedEnv


class Tally(EnvBase):
    """No batch dims of its own, batch-unlocked: ``total += action``; each row ends when its
    total reaches its ``goal`` (both read from the input data, so any batch works)."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, _batch_locked=False, **kwargs)

    def __init__(self, reward_at_reset: bool = False):
        super().__init__()
        self.reward_at_reset = reward_at_reset
        self.observation_spec = Composite(total=Unbounded(1, dtype=torch.int64), goal=Unbounded(1, dtype=torch.int64))
        self.action_spec = Unbounded(1, dtype=torch.int64)
        self.reward_spec = Unbounded(1)
        flag = Categorical(2, shape=(1,), dtype=torch.bool)
        self.done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone())

    def _reset(self, td):
        shape = () if td is None else td.batch_size
        goal = td.get("goal") if td is not None and "goal" in td.keys() else torch.full((*shape, 1), 3)
        out = TensorDict({"total": torch.zeros(*shape, 1, dtype=torch.int64), "goal": goal}, shape)
        if self.reward_at_reset:
            out["reward"] = torch.zeros(*shape, 1)
        return out

    def _step(self, td):
        total = td["total"] + td["action"]
        done = total >= td["goal"]
        return TensorDict(
            {
                "total": total,
                "goal": td["goal"],
                "reward": total.float(),
                "done": done,
                "terminated": done.clone(),
                "truncated": torch.zeros_like(done),
            },
            td.batch_size,
        )

    def _set_seed(self, seed):
        pass


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_unlocked_env_rolls_out_batched_data():
    env = Tally()
    start = env.reset(TensorDict({"goal": torch.tensor([[2], [3], [4], [5]])}, [4]))
    td = env.rollout(6, _ones, tensordict=start, auto_reset=False, break_when_any_done=False)
    assert td.batch_size == (4, 6)  # the steps stack after the data's batch dim
    # rows restart when they reach their goal: row 0 (goal 2) counts 1, 2, 1, 2, ...
    assert td["next", "total"][0].flatten().tolist() == [1, 2, 1, 2, 1, 2]
    assert td["next", "total"][3].flatten().tolist() == [1, 2, 3, 4, 5, 1]


def test_unlocked_env_maybe_reset_reads_the_data_batch():
    env = Tally()
    td = env.reset(TensorDict({"goal": torch.full((3, 1), 9)}, [3]))
    td["total"] = torch.tensor([[4], [5], [6]])
    td["done"] = torch.tensor([[False], [True], [False]])
    out = env.maybe_reset(td)
    assert out["total"].flatten().tolist() == [4, 0, 6]  # only the done row restarts


def test_unlocked_rollout_stops_at_the_first_done_row():
    env = Tally()
    start = env.reset(TensorDict({"goal": torch.tensor([[2], [5]])}, [2]))
    td = env.rollout(6, _ones, tensordict=start, auto_reset=False)
    assert td.batch_size == (2, 2)


def test_steps_with_different_keys_stack_lazily():
    # the reset output holds a reward that the next roots do not: every entry is kept, the
    # root reward is an entry of the first step only
    env = Tally(reward_at_reset=True)
    start = env.reset(TensorDict({"goal": torch.full((2, 1), 9)}, [2]))
    td = env.rollout(3, _ones, tensordict=start, auto_reset=False)
    assert isinstance(td, LazyStackedTensorDict) and td.batch_size == (2, 3)
    assert td["next", "total"][0].flatten().tolist() == [1, 2, 3]
    assert "reward" in td.tensordicts[0].keys() and "reward" not in td.tensordicts[1].keys()


class Hollow(EnvBase):
    """An env whose observation spec has an empty ``Composite`` (``"extras"``) and whose
    reward spec has an empty reward group (``"bonus"``)."""

    def __init__(self):
        super().__init__(batch_size=(2,))
        B = self.batch_size
        self.observation_spec = Composite(
            obs=Unbounded((*B, 2)), extras=Composite(inner=Composite(shape=B), shape=B), shape=B
        )
        self.action_spec = Unbounded((*B, 1))
        self.reward_spec = Composite(reward=Unbounded((*B, 1)), bonus=Composite(shape=B), shape=B)
        self.done_spec = Composite(done=Categorical(2, shape=(*B, 1), dtype=torch.bool), shape=B)

    def _reset(self, td):
        return self.observation_spec.zero().update(self.full_done_spec.zero())

    def _step(self, td):
        out = self.observation_spec.zero().update(self.full_done_spec.zero())
        out["obs"] = td["obs"] + td["action"]
        return out.update(self.full_reward_spec.zero())

    def _set_seed(self, seed):
        pass


def test_empty_observation_groups_are_kept_along_a_rollout():
    env = Hollow()
    td = env.rollout(3)
    assert td.batch_size == (2, 3) and not isinstance(td, LazyStackedTensorDict)
    assert ("extras", "inner") in td.keys(True) and ("next", "extras", "inner") in td.keys(True)
    assert td["extras", "inner"].batch_size == (2, 3)
    assert "bonus" not in td.keys()  # a reward group stays under "next"
    assert ("next", "bonus") in td.keys(True)
    nxt = env.step_mdp(env.rand_step(env.reset()))
    assert "extras" in nxt.keys() and "bonus" not in nxt.keys()


def test_remove_empty_specs_drops_the_empty_groups_from_rollouts():
    env = TransformedEnv(Hollow(), RemoveEmptySpecs())
    td = env.rollout(3)
    assert "extras" not in td.keys() and ("next", "extras") not in td.keys(True)
    assert ("next", "bonus") not in td.keys(True)
    assert td["next", "obs"].shape == (2, 3, 2)
