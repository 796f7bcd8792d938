"""EnvMetaData / get_env_metadata, EnvCreator (pickling, shared state) and the factory pickler."""

from __future__ import annotations

import pickle

import pytest
import torch

from gpusim.envs.batched import EnvCreator, EnvMetaData, SerialEnv, _serialize, get_env_metadata
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.transforms import TransformedEnv, VecNorm
from tests.envs.batched._envs import SharedCounter, counting_env_with_shared_counter, counting_lambda
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv


class ClosingCounter(CountingEnv):
    closed_count = 0

    def close(self):
        type(self).closed_count += 1
        super().close()


# ---------------------------------------------------------------------------- metadata
def test_metadata_from_factory_closes_the_env():
    ClosingCounter.closed_count = 0
    meta = get_env_metadata(ClosingCounter, {"batch_size": [3]})
    assert ClosingCounter.closed_count == 1
    assert meta.batch_size == torch.Size([3])
    assert meta.specs["output_spec", "full_observation_spec", "count"].shape == torch.Size([3, 1])
    assert meta.tensordict["next", "reward"].shape == torch.Size([3, 1])
    assert meta.batch_locked and meta.device == torch.device("cpu")
    assert "ClosingCounter" in meta.env_str


def test_metadata_from_env_matches_env_specs():
    env = NestedCountingEnv(batch_size=[2])
    meta = get_env_metadata(env)
    assert meta.input_spec == env.input_spec
    assert meta.output_spec == env.output_spec
    assert not env.is_closed  # a live env is only read


def test_metadata_expand_to_and_errors():
    meta = get_env_metadata(CartPoleEnv, {"batch_size": [3]})
    big = meta.expand(2, 3)
    assert big.batch_size == torch.Size([2, 3])
    assert big.tensordict.batch_size == torch.Size([2, 3])
    assert big.specs["input_spec", "full_action_spec", "action"].shape == torch.Size([2, 3])
    assert meta.to("cpu") == meta and meta.clone() == meta
    assert big != meta
    with pytest.raises(ValueError, match="must end with the batch size"):
        meta.expand(2, 4)
    with pytest.raises(TypeError, match="EnvBase or a callable"):
        get_env_metadata(3)
    with pytest.raises(TypeError, match="not a gpusim EnvBase"):
        get_env_metadata(lambda: "not an env")
    with pytest.raises(ValueError, match="kwargs"):
        get_env_metadata(CartPoleEnv(), {"batch_size": [2]})
    pickled = pickle.loads(pickle.dumps(meta))
    assert pickled == meta


# ---------------------------------------------------------------------------- pickling
def test_fallback_pickler_round_trips_lambdas_and_closures():
    offset = 3

    def make(x, y=2):
        return x + y + offset

    fns = [lambda: CountingEnv(max_count=offset), make, counting_lambda]
    for fn in fns:
        for dumps in (_serialize.fallback_dumps, _serialize.dumps):
            clone = _serialize.loads(dumps(fn))
            assert clone is not fn
    assert _serialize.loads(_serialize.fallback_dumps(make))(1) == 6
    assert _serialize.loads(_serialize.fallback_dumps(fns[0]))().max_count == 3
    assert _serialize.loads(_serialize.fallback_dumps(counting_lambda))().max_count == 4
    # importable functions travel by reference
    assert (
        _serialize.loads(_serialize.fallback_dumps(counting_env_with_shared_counter))
        is counting_env_with_shared_counter
    )


def test_dumps_reports_unpicklable_objects():
    import threading

    lock = threading.Lock()
    with pytest.raises(TypeError, match="cannot pickle"):
        _serialize.dumps(lambda: lock)


def test_env_creator_pickles_lambdas_and_keeps_metadata():
    g = 4.5
    creator = EnvCreator(lambda **kw: PendulumEnv(g=g, **kw), {"batch_size": [2]})
    assert creator.meta_data.batch_size == torch.Size([2])
    clone = pickle.loads(pickle.dumps(creator))
    env = clone()
    assert env.g == 4.5 and env.batch_size == torch.Size([2])
    assert clone.meta_data == creator.meta_data
    assert clone(batch_size=[3]).batch_size == torch.Size([3])  # call kwargs override
    assert get_env_metadata(creator) == creator.meta_data  # no env built for the metadata
    assert "PendulumEnv" in repr(creator)


def test_env_creator_validation():
    with pytest.raises(TypeError, match="callable"):
        EnvCreator(3)
    with pytest.raises(TypeError, match="dict"):
        EnvCreator(CartPoleEnv, [1])
    with pytest.raises(TypeError, match="not a gpusim EnvBase"):
        EnvCreator(lambda: object())


def test_env_creator_keyword_kwargs_and_variants_share_state():
    def make(batch_size):
        return TransformedEnv(CountingEnv(batch_size=batch_size), SharedCounter())

    creator = EnvCreator(make, batch_size=[2])
    assert creator.create_env_kwargs == {"batch_size": [2]} and creator().batch_size == (2,)
    assert EnvCreator(PendulumEnv, {"g": 1.0}, g=2.0).create_env_kwargs == {"g": 1.0}  # the dict wins
    variant = creator.make_variant(batch_size=[3])
    assert creator.create_env_kwargs == {"batch_size": [2]}  # unchanged
    assert variant.meta_data.batch_size == (3,) and creator.meta_data.batch_size == (2,)
    (state,) = creator.shared_state.values()
    variant().rollout(2, break_when_any_done=False)
    creator().rollout(1, break_when_any_done=False)
    assert state["calls"].item() == 3  # one shared counter for both creators
    env = SerialEnv(2, [EnvCreator(PendulumEnv, g=1.0), EnvCreator(PendulumEnv, g=1.0).make_variant(g=5.0)])
    try:
        assert env.g == [1.0, 5.0]
    finally:
        env.close()
    restored = pickle.loads(pickle.dumps(EnvCreator(PendulumEnv, g=1.0).make_variant(g=5.0)))
    assert restored().g == 5.0


def test_batched_env_reads_the_creator_metadata_without_building_envs():
    ClosingCounter.closed_count = 0
    built = []
    creator = EnvCreator(lambda: built.append(1) or ClosingCounter())
    assert len(built) == 1 and ClosingCounter.closed_count == 1  # the shadow env, closed
    env = SerialEnv(3, creator)
    assert len(built) == 1  # specs from the creator's metadata
    env.reset()
    assert len(built) == 4  # one per worker, on first use


def test_env_creator_shares_opted_in_state_in_process():
    creator = EnvCreator(counting_env_with_shared_counter)
    ((name, state),) = creator.shared_state.items()
    shared = state["calls"]
    assert shared.is_shared()
    a, b = creator(), creator()
    a.rollout(3, break_when_any_done=False)
    b.rollout(2, break_when_any_done=False)
    assert shared.item() == 5  # both envs updated the same tensor
    unshared = EnvCreator(counting_env_with_shared_counter, share_memory=False)
    assert unshared.shared_state == {}
    unshared().rollout(2, break_when_any_done=False)


def test_env_creator_shares_vecnorm_statistics_through_serial_env():
    creator = EnvCreator(lambda: TransformedEnv(PendulumEnv(), VecNorm(in_keys=["observation"], decay=1.0)))
    (stats,) = [s["stats"] for s in creator.shared_state.values()]
    env = SerialEnv(2, creator)
    env.rollout(4, break_when_any_done=False)
    # 2 workers x (1 reset + 4 steps) rows, all counted in the creator's shared statistics
    assert stats["observation_count"].item() == pytest.approx(10.0)
    vecnorms = [w.transform for w in env._envs]
    assert all(v.stats["observation_count"].data_ptr() == stats["observation_count"].data_ptr() for v in vecnorms)


def test_shared_state_needs_the_same_module_structure():
    creator = EnvCreator(counting_env_with_shared_counter)
    creator.create_env_fn = CountingEnv  # the factory now builds another structure
    with pytest.raises(KeyError, match="no module"):
        creator()


def test_shared_counter_transform_is_a_plain_transform():
    env = TransformedEnv(CountingEnv(), SharedCounter())
    env.rollout(2, break_when_any_done=False)
    assert env.transform.calls.item() == 2


def test_metadata_constructor_validates_its_arguments():
    meta = get_env_metadata(CountingEnv)
    rebuilt = EnvMetaData(meta.tensordict, meta.specs, meta.batch_size, "env", "cpu")
    assert rebuilt == meta and rebuilt.device == torch.device("cpu") and rebuilt.batch_locked
    assert EnvMetaData(meta.tensordict, meta.specs, meta.batch_size, "env", None).device is None  # mixed devices
    with pytest.raises(TypeError, match="tensordict"):
        EnvMetaData({}, meta.specs, (), "env", None)
    with pytest.raises(TypeError, match="input_spec"):
        EnvMetaData(meta.tensordict, meta.input_spec, (), "env", None)


@pytest.mark.parametrize("cls", ["SerialEnv", "ParallelEnv"])
def test_workers_with_mixed_devices_make_a_batched_env_without_device(cls):
    from gpusim.envs import ParallelEnv, check_env_specs
    from gpusim.transforms import DeviceCastTransform

    def make():  # only the observation moves: the worker env has no single device
        return TransformedEnv(
            PendulumEnv(), DeviceCastTransform("cpu:1", in_keys=["observation"], in_keys_inv=["action"])
        )

    assert get_env_metadata(make).device is None
    env = {"SerialEnv": SerialEnv, "ParallelEnv": ParallelEnv}[cls](2, make)
    try:
        assert env.device is None
        check_env_specs(env, seed=0)
        assert env.rollout(2)["next", "observation"].shape == (2, 2, 3)
    finally:
        env.close()
