"""What ``step``/``reset`` say when given the wrong kind of input (issue 29, defect 6): not a
tensordict (a numpy array, a tensor, a dict), or an action on another device than the env's
(a metadata check: no data is read)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gpusim as gs
from gpusim.envs.native import CartPoleEnv
from tests.envs.toy_envs import NestedCountingEnv

ENVS = {
    "native": lambda: CartPoleEnv(batch_size=[2]),
    "transformed": lambda: gs.make("CartPole-v1", num_envs=2),
}


@pytest.mark.parametrize("env", sorted(ENVS))
@pytest.mark.parametrize(
    "value, got",
    [(np.zeros(2), "numpy.ndarray"), (torch.zeros(2), "torch.Tensor"), ({"action": torch.zeros(2)}, "dict")],
)
def test_step_of_a_non_tensordict_says_what_was_expected(env, value, got):
    env = ENVS[env]()
    name = type(env).__name__
    with pytest.raises(TypeError) as info:
        env.step(value)
    assert str(info.value) == (
        f"{name}.step expects a TensorDict of batch_size [2] holding the action entry 'action' (shape [2], "
        f"dtype torch.int64) and the state from reset(), got {got}: write the action into the reset output, "
        "e.g. td = env.reset(); td['action'] = torch.as_tensor(action); env.step(td)"
    )


def test_step_message_lists_every_action_entry():
    env = NestedCountingEnv(batch_size=(3,))
    with pytest.raises(TypeError, match="holding the action entry .*dtype"):
        env.step([1, 2, 3])
    keys = [k if isinstance(k, str) else tuple(k) for k in env.action_keys]
    with pytest.raises(TypeError) as info:
        env.step(np.ones(3))
    for k in keys:
        assert repr(k) in str(info.value)


def test_reset_of_a_non_tensordict_says_what_was_expected():
    env = CartPoleEnv(batch_size=[2])
    with pytest.raises(
        TypeError, match=r"CartPoleEnv.reset expects None or a TensorDict of batch_size \[2\] .*got numpy.ndarray"
    ):
        env.reset(np.zeros(2))


@pytest.mark.parametrize("env", sorted(ENVS))
def test_an_action_on_another_device_is_named(env):
    env = ENVS[env]()
    # a tensordict without a device keeps the action where it is (one with a device moves it)
    td = env.reset().clear_device_().set("action", torch.zeros(2, dtype=torch.long, device="meta"))
    with pytest.raises(ValueError) as info:
        env.step(td)
    assert str(info.value) == (
        f"{type(env).__name__}.step: the action 'action' is on device meta, expected cpu (the env's device): "
        "move it first, e.g. action.to('cpu')"
    )


def test_the_right_device_steps():
    env = CartPoleEnv(batch_size=[2], device="cpu")
    td = env.reset().clear_device_().set("action", torch.zeros(2, dtype=torch.long))
    assert env.step(td)["next", "observation"].shape == (2, 4)


def test_an_env_on_an_indexed_cpu_device_takes_cpu_actions():
    """``cpu:1`` is CPU memory like ``cpu`` (TorchRL's DeviceCastTransform tests build such envs):
    the device check of the step boundary lets the action through."""
    from gpusim.envs.native import CartPoleEnv

    env = CartPoleEnv(batch_size=[2], device="cpu:1", seed=0)
    td = env.reset()
    td["action"] = torch.ones(2, dtype=torch.long)  # on plain "cpu"
    assert env.step(td)["next", "reward"].shape == (2, 1)
