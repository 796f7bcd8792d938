"""ModuleTransform: a tensordict module as a forward or inverse transform."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from gpusim.envs.native import PendulumEnv
from gpusim.specs import Unbounded
from gpusim.transforms import Compose, ModuleTransform, TransformedEnv


def test_forward_on_env_outputs_and_spec_change():
    lin = torch.nn.Linear(3, 5)
    t = ModuleTransform(
        module=TensorDictModule(lin, ["observation"], ["feat"]),
        no_grad=True,
        observation_spec_transform=lambda s: s.set("feat", Unbounded((*s.shape, 5), device=s.device)),
    )
    env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), t)
    assert env.observation_spec["feat"].shape == torch.Size([2, 5])
    td = env.rollout(3)
    assert td["next", "feat"].shape == (2, 3, 5)
    torch.testing.assert_close(td["next", "feat"], lin(td["next", "observation"]))
    assert not td["next", "feat"].requires_grad
    env.check_env_specs()


def test_inverse_runs_on_actions_only():
    seen = []

    def halve(a):
        seen.append(a.clone())
        return a * 0.5

    t = ModuleTransform(module=TensorDictModule(halve, ["action"], ["action"]), inverse=True)
    assert t.in_keys == [] and t.in_keys_inv == ["action"]
    env = TransformedEnv(PendulumEnv(seed=0), t)
    action = torch.ones(1)
    td = env.step(env.reset().set("action", action))
    assert len(seen) == 1 and td["action"].item() == 1.0
    # offline forward is a no-op with inverse=True
    data = TensorDict(action=torch.ones(1))
    assert Compose(t.clone())(data)["action"].item() == 1.0


def test_module_factory_and_errors():
    t = ModuleTransform(module_factory=lambda: TensorDictModule(lambda x: x + 1, ["x"], ["y"]))
    assert t(TensorDict(x=torch.zeros(2), batch_size=[2]))["y"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="exactly one"):
        ModuleTransform()
    with pytest.raises(RuntimeError, match="cannot be set"):
        t.in_keys = ["z"]


def test_serial_env_copies_grad_requiring_outputs_as_values():
    from gpusim.envs.batched import SerialEnv

    def make():
        return TransformedEnv(
            PendulumEnv(seed=0),
            ModuleTransform(module=TensorDictModule(torch.nn.Linear(3, 3), ["observation"], ["observation"])),
        )

    env = SerialEnv(2, make)
    try:
        td = env.rollout(2)
        assert td["next", "observation"].shape == (2, 2, 3)
        assert not td["next", "observation"].requires_grad
    finally:
        env.close()
