"""SignTransform, LineariseRewards and SuccessReward: values, specs, envs (batched, nested) and
errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.checks import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.envs.utils import step_mdp
from gpusim.specs import Bounded, Categorical, Composite, Unbounded
from gpusim.transforms import Compose, LineariseRewards, RenameTransform, SignTransform, SuccessReward, TransformedEnv
from tests.transforms._stateless_envs import VectorEnv

BATCHES = [(), (3,), (2, 2)]


class MultiRewardEnv(EnvBase):
    """A ``k``-objective reward ``(*B, k)`` (Bounded [-1, 2] when ``bounded``), reward ``t * [1, 2, ...]``."""

    def __init__(self, batch_size=(), k=3, bounded=True):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        self.k = k
        self.observation_spec = Composite(t=Unbounded((*B, 1)), shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.reward_spec = Bounded(-1.0, 2.0, shape=(*B, k)) if bounded else Unbounded((*B, k))
        self.done_spec = Composite(done=Categorical(2, shape=(*B, 1), dtype=torch.bool), shape=B)

    def _reset(self, td):
        B = self.batch_size
        return TensorDict({"t": torch.zeros(*B, 1), "done": torch.zeros(*B, 1, dtype=torch.bool)}, B)

    def _step(self, td):
        B = self.batch_size
        t = td["t"] + 1
        reward = (t * torch.arange(1, self.k + 1)).clamp(-1, 2)
        return TensorDict({"t": t, "reward": reward, "done": torch.zeros(*B, 1, dtype=torch.bool)}, B)

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("batch", BATCHES)
def test_sign_transform_env_and_specs(batch):
    env = TransformedEnv(
        VectorEnv(batch), SignTransform(in_keys=["observation", "reward"], out_keys=["obs_sign", "reward_sign"])
    )
    assert isinstance(env.observation_spec["obs_sign"], Bounded) and isinstance(
        env.full_reward_spec["reward_sign"], Bounded
    )
    check_env_specs(env)
    td = env.reset()
    td["action"] = torch.full((*batch, 1), 0.5)
    td = env.step(td)
    assert torch.equal(td["next", "obs_sign"], td["next", "observation"].sign())
    assert torch.equal(td["next", "reward_sign"], td["next", "reward"].sign())
    inv = SignTransform(in_keys_inv=["inner"], out_keys_inv=["outer"]).inv(
        TensorDict({"outer": torch.tensor([-4.0, 3.0])}, [])
    )
    assert torch.equal(inv["inner"], torch.tensor([-1.0, 1.0])) and torch.equal(inv["outer"], torch.tensor([-4.0, 3.0]))


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("weights", [None, [1.0, -2.0, 0.5]])
@pytest.mark.parametrize("bounded", [True, False])
def test_linearise_rewards_env(batch, weights, bounded):
    env = TransformedEnv(MultiRewardEnv(batch, 3, bounded), LineariseRewards(in_keys=["reward"], weights=weights))
    spec = env.reward_spec
    assert spec.shape == (*batch, 1) and isinstance(spec, Bounded if bounded else Unbounded)
    if bounded:
        w = torch.ones(3) if weights is None else torch.tensor(weights)
        expected_low = (w.clamp(min=0) * -1 + w.clamp(max=0) * 2).sum()
        expected_high = (w.clamp(min=0) * 2 + w.clamp(max=0) * -1).sum()
        assert torch.allclose(spec.space.low, expected_low) and torch.allclose(spec.space.high, expected_high)
    check_env_specs(env)
    r = env.rollout(3)
    raw = MultiRewardEnv(batch, 3, bounded).rollout(3)["next", "reward"]
    w = torch.ones(3) if weights is None else torch.tensor(weights)
    torch.testing.assert_close(r["next", "reward"], (raw * w).sum(-1, keepdim=True))


def test_linearise_rewards_offline_leaf_specs_and_errors():
    t = LineariseRewards(in_keys=["r"], out_keys=["s"], weights=torch.tensor([2.0, 1.0]))
    assert torch.equal(t(TensorDict({"r": torch.tensor([[1.0, 3.0]])}, [1]))["s"], torch.tensor([[5.0]]))
    assert t.transform_reward_spec(Unbounded((4, 2))).shape == (4, 1)
    with pytest.raises(NotImplementedError, match="discrete"):
        LineariseRewards(in_keys=["reward"]).transform_reward_spec(Categorical(2, shape=(1,)))
    with pytest.raises(ValueError, match="unidimensional"):
        LineariseRewards(in_keys=["reward"], weights=[[1.0]])
    with pytest.raises(ValueError, match="match"):
        TransformedEnv(MultiRewardEnv((2,), 3), LineariseRewards(in_keys=["reward"], weights=[1.0, 2.0]))
    with pytest.raises(ValueError, match="match"):
        t(TensorDict({"r": torch.ones(1, 3)}, [1]))


@pytest.mark.parametrize("batch", BATCHES)
def test_success_reward_env(batch):
    env = TransformedEnv(
        VectorEnv(batch),
        Compose(RenameTransform(in_keys=["done"], out_keys=["success"], create_copy=True), SuccessReward(scale=2.0)),
    )
    assert env.reward_spec.shape == (*batch, 1)
    assert env.reward_spec.space.low.max() == 0.0 and env.reward_spec.space.high.min() == 2.0
    check_env_specs(env)
    td = env.reset()
    assert "reward" not in td.keys()  # nothing written at reset
    for _ in range(2):
        td["action"] = torch.full((*batch, 1), 2.0)
        td = env.step(td)
        torch.testing.assert_close(td["next", "reward"], 2.0 * td["next", "success"].float())
        td = step_mdp(td)
    assert td["done"].all()  # |state| = 4 > 3


def test_success_reward_offline_and_spec_fallback():
    t = SuccessReward(("next", "success"), ("next", "reward"), scale=-1.0)
    out = t(TensorDict({"next": {"success": torch.tensor([True, False])}}, [2]))
    assert out["next", "reward"].tolist() == [-1.0, 0.0]
    spec = SuccessReward(scale=3.0).transform_reward_spec(Composite(reward=Unbounded((4, 1)), shape=(4,)))
    assert spec["reward"].shape == (4, 1) and spec["reward"].space.high.min() == 3.0
    with pytest.raises(RuntimeError, match="could not infer"):
        SuccessReward().transform_reward_spec(Composite(shape=()))
