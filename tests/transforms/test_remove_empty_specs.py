"""RemoveEmptySpecs: empty Composite entries leave the specs and the data; empty inputs the base
env declares are written back on the inverse path."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from gpusim.envs import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms import RemoveEmptySpecs, TransformedEnv


class _WithEmpties(EnvBase):
    def __init__(self):
        super().__init__(batch_size=(2,))
        B = self.batch_size
        self.observation_spec = Composite(
            observation=Unbounded((*B, 3)), extra=Composite(deep=Composite(shape=B), shape=B), shape=B
        )
        self.state_spec = Composite(memory=Composite(shape=B), shape=B)
        self.action_spec = Unbounded((*B, 3))
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Categorical(2, (*B, 1), dtype=torch.bool)
        self.seen_memory = []

    def _reset(self, td):
        out = self.full_observation_spec.zero()
        return out.update(self.full_done_spec.zero())

    def _step(self, td):
        self.seen_memory.append("memory" in td.keys())
        out = TensorDict({"observation": td["action"]}, self.batch_size)
        out.update(self.full_done_spec.zero())
        return out.update(self.full_reward_spec.zero())

    def _set_seed(self, seed):
        return seed


def test_offline_drops_nested_empty_entries():
    td = TensorDict({"a": {"b": {"c": {}}}, "x": torch.zeros(())}, [])
    assert list(RemoveEmptySpecs()(td).keys()) == ["x"]


def test_env_specs_and_data_lose_empty_entries_and_inputs_get_them_back():
    base = _WithEmpties()
    env = TransformedEnv(base, RemoveEmptySpecs())
    assert list(env.observation_spec.keys()) == ["observation"]
    assert "memory" not in env.state_spec.keys()
    td = env.reset()
    assert "extra" not in td.keys()
    td = env.rand_step(td)
    assert "extra" not in td["next"].keys()
    assert base.seen_memory == [True]  # the base env received its declared (empty) state entry
    assert "memory" in env.transform.inv(TensorDict()).keys()


def test_batched_env_refuses_workers_with_empty_specs():
    import pytest

    from gpusim.envs.batched import SerialEnv

    with pytest.raises(RuntimeError, match="SerialEnv has empty specs at .*RemoveEmptySpecs"):
        SerialEnv(2, _WithEmpties)
    env = SerialEnv(2, lambda: TransformedEnv(_WithEmpties(), RemoveEmptySpecs()))
    try:
        assert env.rollout(2).shape == (2, 2, 2)
    finally:
        env.close()
