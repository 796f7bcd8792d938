"""VecNormV2 / VecNorm(new_api=True): moving-average moments, reduce_batch_dims, denorm, state."""

import pickle
import warnings

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.batched import SerialEnv
from gpusim.envs.native import PendulumEnv
from gpusim.transforms import Compose, TransformedEnv, VecNorm, VecNormV2


def test_new_api_dispatch_and_errors():
    assert isinstance(VecNorm(in_keys=["observation"], new_api=True), VecNormV2)
    assert isinstance(VecNorm(in_keys=["observation"], stateful=True), VecNormV2)
    assert type(VecNorm(in_keys=["observation"])) is VecNorm
    with pytest.raises(NotImplementedError, match="stateful=False"):
        VecNormV2(in_keys=["obs"], stateful=False)
    with pytest.raises(ValueError, match="decay"):
        VecNormV2(in_keys=["obs"], decay=0.0)
    with pytest.raises(RuntimeError, match="initialized"):
        VecNormV2(in_keys=["obs"]).frozen_copy()


def test_decay1_reduce_batch_dims_matches_population_stats():
    env = TransformedEnv(
        SerialEnv(2, lambda: PendulumEnv(seed=0)),
        VecNormV2(in_keys=["reward"], out_keys=["reward_norm"], decay=1.0, reduce_batch_dims=True),
    )
    td = env.rollout(6)
    rewards = td["next", "reward"]
    vn = env.transform
    torch.testing.assert_close(vn.loc["reward"], rewards.mean().reshape(1))
    torch.testing.assert_close(vn.scale["reward"], rewards.std(unbiased=False).reshape(1))
    assert vn.count["reward"].item() == 12
    torch.testing.assert_close(td["next", "reward_norm"][:, -1], (rewards[:, -1] - vn.loc["reward"]) / vn.scale["reward"])


def test_elementwise_decay_bias_correction_and_denorm():
    vn = VecNormV2(in_keys=["x"], decay=0.5)
    data = [torch.tensor([1.0, 10.0]), torch.tensor([3.0, 30.0])]
    for x in data:
        vn(TensorDict(x=x.clone()))
    # weights of the corrected EMA: 1/3 for the first value, 2/3 for the second
    torch.testing.assert_close(vn.loc["x"], data[0] / 3 + 2 * data[1] / 3)
    td = vn(TensorDict(x=torch.tensor([2.0, 20.0])))
    torch.testing.assert_close(vn.denorm(td)["x"], torch.tensor([2.0, 20.0]))
    frozen = vn.frozen_copy()
    before = frozen.loc["x"].clone()
    frozen(TensorDict(x=torch.tensor([100.0, 100.0])))
    torch.testing.assert_close(frozen.loc["x"], before)
    norm = vn.to_observation_norm()
    x = torch.tensor([2.0, 20.0])
    torch.testing.assert_close(norm(TensorDict(x=x.clone()))["x"], (x - vn.loc["x"]) / vn.scale["x"])


def test_state_dict_round_trip_and_pickle():
    t0 = Compose(VecNormV2(in_keys=["a"], out_keys=["a_n"]))
    with pytest.warns(UserWarning, match="uninitialized"):
        empty = t0.state_dict()
    t0(TensorDict(a=torch.randn(3, 2), batch_size=[3]))
    with pytest.raises(RuntimeError, match="void state-dict"):
        t0.load_state_dict(empty)
    t1 = Compose(VecNormV2(in_keys=["a"], out_keys=["a_n"]))
    with pytest.warns(UserWarning, match="wasn't initialized"):
        t1.load_state_dict(t0.state_dict())
    torch.testing.assert_close(t1[0].loc["a"], t0[0].loc["a"])
    t2 = pickle.loads(pickle.dumps(t0[0]))
    torch.testing.assert_close(t2.loc["a"], t0[0].loc["a"])


def test_env_init_and_spec():
    vn = VecNorm(in_keys=["observation"], out_keys=["obs_n"], new_api=True)
    assert not vn.initialized
    env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), vn)
    assert vn.initialized and vn.loc["observation"].shape == (2, 3)
    assert env.observation_spec["obs_n"].dtype == torch.float32
    env.check_env_specs()


def test_v1_denorm_frozen_and_state_warnings():
    vn = VecNorm(in_keys=["obs"], out_keys=["obs_n"], decay=1.0)
    with pytest.raises(RuntimeError, match="initialized"):
        vn.frozen_copy()
    with pytest.warns(UserWarning, match="uninitialized"):
        empty = vn.state_dict()
    x = torch.tensor([[1.0], [5.0]])
    td = vn(TensorDict(obs=x.clone(), batch_size=[2]))
    torch.testing.assert_close(vn.denorm(td.exclude("obs"))["obs"], x)
    with pytest.raises(KeyError, match="Could not find a tensordict"):
        vn.load_state_dict(empty)
    other = VecNorm(in_keys=["obs"], out_keys=["obs_n"], decay=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other.load_state_dict(vn.state_dict())
    torch.testing.assert_close(other.loc["obs"], vn.loc["obs"])
