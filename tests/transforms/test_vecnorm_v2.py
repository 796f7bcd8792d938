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
    with pytest.raises(
        ValueError,
        match="stateful=False keeps per-row statistics in the data, which cannot take reduce_batch_dims=True",
    ):
        VecNormV2(in_keys=["obs"], stateful=False, reduce_batch_dims=True)
    with pytest.raises(ValueError, match="cannot take shared_data"):
        VecNormV2(in_keys=["obs"], stateful=False, shared_data=TensorDict(loc={}, var={}, count={}))
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
    torch.testing.assert_close(
        td["next", "reward_norm"][:, -1], (rewards[:, -1] - vn.loc["reward"]) / vn.scale["reward"]
    )


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


# ------------------------------------------------------------------ stateless: statistics in the data
def _stateless_env(*transforms, batch=2):
    return TransformedEnv(PendulumEnv(batch_size=[batch], seed=0), Compose(*transforms))


def test_stateless_matches_stateful_over_an_episode():
    push = lambda td: td.set("action", torch.ones(2, 1))  # noqa: E731
    outs = {}
    for stateful in (True, False):
        env = _stateless_env(VecNormV2(in_keys=["observation"], out_keys=["obs_norm"], stateful=stateful))
        outs[stateful] = (env, env.rollout(6, push))
    (env, ref), (_, data) = outs[True], outs[False]
    torch.testing.assert_close(data["next", "obs_norm"], ref["next", "obs_norm"])
    torch.testing.assert_close(data["next", "_vecnorm_loc", "observation"][:, -1], env.transform[0]._loc["observation"])
    assert (data["next", "_vecnorm_count", "observation"][:, -1] == 7).all()  # the reset + 6 steps
    assert data["_vecnorm_count", "observation"][:, 0].eq(1).all()  # the reset's update


def test_stateless_statistics_survive_resets_and_partial_resets_update_their_rows():
    from gpusim.transforms import StepCounter

    env = _stateless_env(VecNormV2(in_keys=["observation"], stateful=False, decay=0.9), StepCounter(2))
    data = env.rollout(5, break_when_any_done=False)
    counts = data["next", "_vecnorm_count", "observation"][0, :, 0].tolist()
    assert counts == [2, 3, 5, 6, 8]  # every step, and the resets after steps 2 and 4
    td = env.reset()
    td = env.step_mdp(env.step(env.rand_action(td)))
    before = td["_vecnorm_count", "observation"].clone()
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    assert out["_vecnorm_count", "observation"][:, 0].tolist() == [before[0, 0].item() + 1, before[1, 0].item()]


def test_stateless_two_transforms_get_their_own_prefix_and_check_specs():
    from gpusim.envs import check_env_specs

    env = _stateless_env(
        VecNormV2(in_keys=["observation"], stateful=False), VecNormV2(in_keys=["reward"], stateful=False)
    )
    assert [t.prefix for t in env.transform] == ["_vecnorm", "_vecnorm1"]
    assert env.observation_spec["_vecnorm1_count", "reward"].dtype == torch.int64
    check_env_specs(env, seed=0, break_when_any_done="both")


def test_stateless_offline_reads_and_writes_the_data_statistics():
    vn = VecNormV2(in_keys=["obs"], stateful=False, decay=1.0)
    td = vn(TensorDict(obs=torch.tensor([[1.0], [3.0]]), batch_size=[2]))
    assert td["_vecnorm_count", "obs"].flatten().tolist() == [1, 1]
    td = vn(td.set("obs", torch.tensor([[3.0], [5.0]])))  # the second update of each row
    assert td["_vecnorm_loc", "obs"].flatten().tolist() == [2.0, 4.0]
    frozen = vn.frozen_copy()
    again = frozen(td.clone().set("obs", torch.tensor([[9.0], [9.0]])))
    assert again["_vecnorm_count", "obs"].flatten().tolist() == [2, 2]


def test_stateless_has_no_statistics_of_its_own():
    vn = VecNormV2(in_keys=["obs"], stateful=False)
    with pytest.raises(RuntimeError, match="stateless .* under '_vecnorm_loc'"):
        vn.loc
    with pytest.raises(NotImplementedError, match="has no statistics of its own"):
        vn.denorm(TensorDict(obs=torch.zeros(2, 1), batch_size=[2]))
    assert vn.state_dict() == {"_extra_state": {}}
