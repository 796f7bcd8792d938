"""DoubleToFloat, DTypeCastTransform, DeviceCastTransform, PinMemoryTransform."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.specs import Categorical
from gpusim.transforms import (
    DeviceCastTransform,
    DoubleToFloat,
    DTypeCastTransform,
    PinMemoryTransform,
    TransformedEnv,
)
from tests.transforms._stateless_envs import PixelEnv, VectorEnv

BATCHES = [(), (1,), (7,), (3, 4)]


def _float_leaves(td):
    return {k: v.dtype for k, v in td.items(True, True) if v.is_floating_point()}


@pytest.mark.parametrize("batch", BATCHES)
def test_double_to_float_auto_keys(batch):
    env = TransformedEnv(VectorEnv(batch, dtype=torch.float64), DoubleToFloat())
    t = env.transform
    assert set(t.in_keys) == {"observation", "bounded", ("nested", "obs"), "reward", "state"}
    assert set(t.in_keys_inv) == {"action", "state"}
    # every float spec the outside sees is float32, bounds included
    for spec in (env.full_observation_spec, env.full_reward_spec, env.full_action_spec, env.full_state_spec):
        for key, leaf in spec.items(True, True):
            assert leaf.dtype == torch.float32, key
    assert env.action_spec.low.dtype == torch.float32
    td = env.rollout(4)
    assert set(_float_leaves(td).values()) == {torch.float32}
    # ... while the base env receives float64 actions and state
    assert env.base_env.last_input["action"].dtype == torch.float64
    assert env.base_env.last_input["state"].dtype == torch.float64


@pytest.mark.parametrize("batch", BATCHES)
def test_double_to_float_explicit_keys(batch):
    env = TransformedEnv(
        VectorEnv(batch, dtype=torch.float64), DoubleToFloat(in_keys=["observation"], in_keys_inv=["action"])
    )
    td = env.rollout(3)
    assert td["next", "observation"].dtype == torch.float32
    assert td["next", "bounded"].dtype == torch.float64
    assert td["action"].dtype == torch.float32 and env.action_spec.dtype == torch.float32
    assert env.base_env.last_input["action"].dtype == torch.float64
    # same numbers, other dtype: the observation is (state, 2 state, -state)
    state = td["next", "state"]
    assert torch.equal(td["next", "observation"], torch.cat([state, 2 * state, -state], -1).float())


def test_double_to_float_state_entry_is_cast_both_ways():
    env = TransformedEnv(VectorEnv((2,), dtype=torch.float64), DoubleToFloat(in_keys=["state"]))
    assert env.state_spec["state"].dtype == torch.float32
    td = env.rollout(2)
    assert td["state"].dtype == torch.float32 and td["next", "state"].dtype == torch.float32
    assert env.base_env.last_input["state"].dtype == torch.float64


@pytest.mark.parametrize("batch", BATCHES)
def test_dtype_cast_discrete_specs_keep_their_values(batch):
    env = TransformedEnv(
        PixelEnv(batch), DTypeCastTransform(torch.int64, torch.int32, in_keys=["t"], in_keys_inv=["action", "t"])
    )
    spec = env.action_spec
    assert isinstance(spec, Categorical) and spec.dtype == torch.int32 and spec.n == 2
    assert env.state_spec["t"].dtype == torch.int32
    td = env.rollout(3)
    assert td["action"].dtype == torch.int32 and td["next", "t"].dtype == torch.int32
    assert env.base_env.last_input["action"].dtype == torch.int64
    assert env.base_env.last_input["t"].dtype == torch.int64


def test_dtype_cast_standalone_scans_the_data():
    t = DTypeCastTransform(torch.float64, torch.float16)
    td = TensorDict(
        {
            "a": torch.zeros(2, dtype=torch.float64),
            "b": {"c": torch.zeros(2, dtype=torch.float64)},
            "i": torch.zeros(2, dtype=torch.int64),
        },
        [2],
    )
    out = t(td.clone())
    assert out["a"].dtype == out["b", "c"].dtype == torch.float16 and out["i"].dtype == torch.int64
    back = t.inv(out)
    assert back["a"].dtype == torch.float64


@pytest.mark.parametrize(
    "make, exc, match",
    [
        (
            lambda: DTypeCastTransform("float64", torch.float32),
            TypeError,
            "dtype_in must be a torch.dtype, got 'float64'",
        ),
        (lambda: DoubleToFloat(out_keys=["x"]), ValueError, "out_keys"),
        (lambda: DoubleToFloat(in_keys=["a", "b"], out_keys=["c"]), ValueError, "same length"),
        (lambda: DeviceCastTransform("notadevice"), ValueError, "'notadevice'"),
    ],
)
def test_bad_arguments(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_cast_of_a_key_with_another_dtype_raises_when_attached():
    with pytest.raises(TypeError, match="'observation' has dtype torch.float32"):
        TransformedEnv(VectorEnv((2,)), DoubleToFloat(in_keys=["observation"]))
    with pytest.raises(KeyError, match="'nope'"):
        TransformedEnv(VectorEnv((2,), dtype=torch.float64), DoubleToFloat(in_keys=["nope"]))


@pytest.mark.parametrize("batch", BATCHES)
def test_device_cast_cpu_roundtrip(batch):
    env = TransformedEnv(VectorEnv(batch), DeviceCastTransform("cpu"))
    assert env.device == torch.device("cpu") and env.transform.orig_device == torch.device("cpu")
    td = env.rollout(3)
    assert td.device == torch.device("cpu")


def test_device_cast_keys_mode_moves_only_keys_and_leaves_the_env_without_a_device():
    t = DeviceCastTransform("cpu", in_keys=["observation"], in_keys_inv=["action"])
    env = TransformedEnv(VectorEnv((2,)), t)
    assert env.device is None  # mixed devices (TorchRL's behaviour)
    assert env.observation_spec["observation"].device == torch.device("cpu")
    td = env.rollout(2)
    assert td["next", "observation"].device == torch.device("cpu")
    from gpusim.envs.checks import check_env_specs

    check_env_specs(env)
    out = DeviceCastTransform("cpu:1", "cpu:0", in_keys=["a"], out_keys=["b"])._call(
        TensorDict({"a": torch.zeros(())}, [], device="cpu:0")
    )
    assert out.device is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("batch", [(), (7,)])
def test_device_cast_to_cuda(batch):
    env = TransformedEnv(VectorEnv(batch), DeviceCastTransform("cuda"))
    assert env.device.type == "cuda"
    for spec in (env.full_observation_spec, env.full_action_spec):
        for _, leaf in spec.items(True, True):
            assert leaf.device.type == "cuda"
    td = env.rollout(3)
    assert td.device.type == "cuda" and td["next", "observation"].is_cuda
    assert env.base_env.last_input["action"].device.type == "cpu"
    from gpusim.envs.checks import check_env_specs

    check_env_specs(env)


def test_pin_memory_transform():
    env = TransformedEnv(VectorEnv((3,)), PinMemoryTransform())
    td = env.rollout(2)
    out = PinMemoryTransform()(TensorDict({"x": torch.ones(2)}, []))
    assert out["x"].is_pinned() == torch.cuda.is_available()
    assert td["next", "observation"].shape == (3, 2, 3)
