"""Dynamic specs (a ``-1`` dim whose extent changes from step to step): rollouts stack lazily,
check_env_specs accepts any extent on such dims, batched envs exchange data without buffers and
keep the shape of every row through partial resets."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from gpusim.envs import SerialEnv, check_env_specs
from gpusim.envs.batched import get_env_metadata
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import EpisodePlan, ResetMasks, merge_rows
from gpusim.specs import Bounded, Categorical, Composite, Unbounded
from gpusim.specs.utils import has_dynamic_dims


class GrowingEnv(EnvBase):
    """``observation`` has ``count + 1`` rows of 2 (all equal to ``count``); done at ``max_count``."""

    def __init__(self, max_count: int = 3):
        super().__init__()
        self.max_count = max_count
        self.count = 0
        self.observation_spec = Composite(observation=Unbounded((-1, 2)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded((1,))
        self.done_spec = Composite(
            done=Categorical(2, (1,), dtype=torch.bool), terminated=Categorical(2, (1,), dtype=torch.bool)
        )

    def _obs(self) -> torch.Tensor:
        return torch.full((self.count + 1, 2), float(self.count))

    def _reset(self, td):
        self.count = 0
        done = torch.zeros(1, dtype=torch.bool)
        return TensorDict({"observation": self._obs(), "done": done, "terminated": done.clone()}, [])

    def _step(self, td):
        self.count += 1
        done = torch.tensor([self.count >= self.max_count])
        return TensorDict(
            {"observation": self._obs(), "reward": torch.zeros(1), "done": done, "terminated": done.clone()}, []
        )

    def _set_seed(self, seed):
        pass


def test_has_dynamic_dims_looks_at_leaves_and_stack_parts():
    assert has_dynamic_dims(Composite(a=Composite(b=Unbounded((-1,)))))
    assert not has_dynamic_dims(None)
    hetero = torch.stack([Composite(a=Unbounded((1,))), Composite(a=Unbounded((2,)))], 0)
    assert not has_dynamic_dims(hetero)  # different but fixed shapes
    assert has_dynamic_dims(torch.stack([Unbounded((-1,)), Unbounded((-1,))], 0))


def test_rollout_of_dynamic_env_is_lazy_by_default_and_refuses_contiguous():
    env = GrowingEnv(max_count=10)
    assert env._has_dynamic_specs
    td = env.rollout(4)
    assert isinstance(td, LazyStackedTensorDict) and td.shape == (4,)
    assert [t["next", "observation"].shape[0] for t in td.tensordicts] == [2, 3, 4, 5]
    with pytest.raises(RuntimeError, match="specs are dynamic. Call rollout with return_contiguous=False"):
        env.rollout(4, return_contiguous=True)


def test_rollout_of_static_env_stays_contiguous_by_default():
    from gpusim.envs.native import CartPoleEnv

    env = CartPoleEnv(batch_size=[2])
    assert not env._has_dynamic_specs
    assert not isinstance(env.rollout(3), LazyStackedTensorDict)


@pytest.mark.parametrize("break_when_any_done", [True, False, "both"])
def test_check_env_specs_accepts_any_extent_of_a_dynamic_dim(break_when_any_done):
    check_env_specs(GrowingEnv(max_count=2), break_when_any_done=break_when_any_done)


def test_check_env_specs_still_checks_the_fixed_dims_of_a_dynamic_leaf():
    class WrongWidth(GrowingEnv):
        def _obs(self):
            return torch.zeros(self.count + 1, 3)  # the spec says (-1, 2)

    with pytest.raises(AssertionError, match=r"Shape mismatch for key 'observation'.*\[1, 3\].*\[1, 2\]"):
        check_env_specs(WrongWidth())


def test_metadata_and_batched_env_without_buffers():
    assert get_env_metadata(GrowingEnv).has_dynamic_specs
    env = SerialEnv(2, GrowingEnv)
    try:
        assert not env._use_buffers
    finally:
        env.close()
    # as TorchRL: use_buffers=True is turned off, with a warning
    with pytest.warns(UserWarning, match=r"use_buffers=True.*dynamic"):
        env = SerialEnv(2, GrowingEnv, use_buffers=True)
    try:
        assert not env._use_buffers
    finally:
        env.close()


def test_batched_dynamic_rows_keep_their_shapes_through_partial_resets():
    # workers end their episodes at different steps: after a partial reset the rows differ in shape
    env = SerialEnv(2, [lambda: GrowingEnv(2), lambda: GrowingEnv(3)])
    try:
        td = env.rollout(5, break_when_any_done=False)
    finally:
        env.close()
    singles = [GrowingEnv(m).rollout(5, break_when_any_done=False) for m in (2, 3)]
    for t in range(5):
        for row in range(2):
            for key in ("observation", ("next", "observation")):
                torch.testing.assert_close(td[row, t][key], singles[row][t][key])


def test_merge_keeps_rows_that_are_not_reset_when_shapes_differ():
    plan = EpisodePlan(None, torch.Size([2]))
    prev = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"x": torch.zeros(3)}, []), TensorDict({"x": torch.ones(5)}, [])], 0
    )
    new = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"x": torch.full((1,), 7.0)}, []), TensorDict({"x": torch.full((1,), 7.0)}, [])], 0
    )
    out = plan.merge(new, prev, ResetMasks([], [], torch.tensor([True, False]), torch.Size([2])))
    assert out[0]["x"].tolist() == [7.0] and out[1]["x"].tolist() == [1.0] * 5

    dense_prev = TensorDict({"x": torch.ones(2, 4)}, [2])
    out = plan.merge(new, dense_prev, ResetMasks([], [], torch.tensor([False, True]), torch.Size([2])))
    assert out[0]["x"].tolist() == [1.0] * 4 and out[1]["x"].tolist() == [7.0]


def test_merge_rows_row_by_row_on_lazy_stacks():
    new = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"x": torch.zeros(2, 3)}, [2]), TensorDict({"x": torch.zeros(2, 1)}, [2])], 0
    )
    old = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"x": torch.ones(2, 3)}, [2]), TensorDict({"x": torch.ones(2, 1)}, [2])], 0
    )
    merge_rows(new, old, torch.tensor([[True, False], [False, True]]))
    assert new[0]["x"][:, 0].tolist() == [0.0, 1.0] and new[1]["x"][:, 0].tolist() == [1.0, 0.0]
