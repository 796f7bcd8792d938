"""The strict step boundary: wrong inputs raise at the moment of the mistake, naming the key,
the expected and the received value; values are checked only by check_env_specs and the debug
mode (``run_type_checks`` / ``GPUSIM_VALIDATE=1``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.envs.common import EnvBase
from gpusim.specs import Bounded, Categorical, Composite, MultiCategorical, Unbounded


def test_cartpole_action_with_an_extra_dim_is_rejected_not_broadcast():
    env = gs.CartPoleEnv(batch_size=[8], seed=0)
    td = env.reset()
    with pytest.raises(ValueError, match=r"CartPoleEnv.step: the action 'action' has shape \[8, 1\], expected \[8\]"):
        env.step(td.set("action", torch.ones(8, 1, dtype=torch.long)))


def test_float64_action_is_rejected_naming_both_dtypes():
    env = gs.CartPoleEnv(batch_size=[8], seed=0)
    td = env.reset()
    with pytest.raises(TypeError, match="has dtype torch.float64, expected torch.int64"):
        env.step(td.set("action", torch.ones(8, dtype=torch.float64)))
    pend = gs.PendulumEnv(batch_size=[8], seed=0)
    with pytest.raises(TypeError, match="has dtype torch.float64, expected torch.float32"):
        pend.step(pend.reset().set("action", torch.zeros(8, 1, dtype=torch.float64)))


def test_pendulum_flat_action_is_rejected():
    env = gs.PendulumEnv(batch_size=[8], seed=0)
    with pytest.raises(ValueError, match=r"has shape \[8\], expected \[8, 1\]"):
        env.step(env.reset().set("action", torch.zeros(8)))
    # the right shape steps
    assert env.step(env.reset().set("action", torch.zeros(8, 1)))["next", "reward"].shape == (8, 1)


def test_missing_action_names_the_key_and_spec():
    env = gs.CartPoleEnv(batch_size=[4], seed=0)
    with pytest.raises(KeyError, match=r"no action entry 'action' \(expected shape \[4\], dtype torch.int64\)"):
        env.step(env.reset())


def test_nested_action_checked_with_its_full_key():
    env = gs.VmasEnv("simple_spread", num_envs=3, seed=0)
    td = env.rand_action(env.reset())
    td["agents", "action"] = td["agents", "action"][..., :1]
    with pytest.raises(
        ValueError, match=r"the action \('agents', 'action'\) has shape \[3, 3, 1\], expected \[3, 3, 2\]"
    ):
        env.step(td)


def test_step_before_reset_says_to_call_reset():
    env = gs.CartPoleEnv(batch_size=[4], seed=0)
    with pytest.raises(KeyError, match=r"call env.reset\(\) first"):
        env.step(env.rand_action())
    t = gs.make("CartPole-v1", num_envs=4)
    with pytest.raises(KeyError, match=r"call env.reset\(\) first"):
        t.step(t.rand_action())
    for gym_env in (gs.GymEnv("CartPole-v1"), gs.GymEnv("CartPole-v1", num_envs=3)):
        with pytest.raises(RuntimeError, match=r"step was called before reset\(\)"):
            gym_env.step(gym_env.rand_action())
        gym_env.step(gym_env.rand_action(gym_env.reset()))  # fine after a reset
        assert gym_env.rand_step()["next", "reward"].shape[-1] == 1  # rand_step() resets first
        gym_env.close()


def test_cuda_on_a_machine_without_it():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match=r"CUDA is not available on this machine.*use device='cpu'"):
        gs.CartPoleEnv(batch_size=[2], device="cuda")
    with pytest.raises(RuntimeError, match="use device='cpu'"):
        gs.make("Pendulum-v1", num_envs=2, device="cuda:0")


def test_non_bool_or_misshaped_reset_entry():
    env = gs.CartPoleEnv(batch_size=[6], seed=0)
    td = env.reset()
    with pytest.raises(
        TypeError,
        match=r"the '_reset' entry must be a bool tensor of shape \[6, 1\] \(or \[6\]\), got dtype torch.int64",
    ):
        env.reset(td.clone().set("_reset", torch.ones(6, 1, dtype=torch.long)))
    with pytest.raises(ValueError, match=r"got shape \[6, 2\]"):
        env.reset(td.clone().set("_reset", torch.ones(6, 2, dtype=torch.bool)))
    marl = gs.VmasEnv("simple_spread", num_envs=2, seed=0)
    td = marl.reset()
    # VMAS has a root done level only: a nested '_reset' is not one of its levels and is ignored,
    # a root one is checked against the root done shape
    with pytest.raises(TypeError, match="'_reset' entry must be a bool tensor"):
        marl.reset(td.set("_reset", torch.ones(2, 1)))


@pytest.mark.parametrize("batch", [[0], [3, 0], 0])
def test_empty_batch_is_rejected(batch):
    with pytest.raises(ValueError, match="batch_size must hold positive sizes"):
        gs.CartPoleEnv(batch_size=batch)


class _NaNEnv(EnvBase):
    """Outputs a NaN observation on its second step."""

    def __init__(self, batch_size=(2,), run_type_checks=False):
        super().__init__(batch_size=batch_size, run_type_checks=run_type_checks)
        B = self.batch_size
        self.observation_spec = Composite(obs=Unbounded((*B, 1)), shape=B)
        self.state_spec = Composite(t=Unbounded((*B, 1)), shape=B)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*B, 1))

    def _reset(self, td):
        z = torch.zeros(*self.batch_size, 1)
        return TensorDict({"obs": z, "t": z.clone(), "done": z.bool()}, self.batch_size)

    def _step(self, td):
        t = td["t"] + 1
        obs = torch.where(t >= 2, torch.full_like(t, float("nan")), t)
        return TensorDict({"obs": obs, "t": t, "reward": t.clone(), "done": t >= 9}, self.batch_size)

    def _set_seed(self, seed):
        pass


def test_out_of_range_and_nan_actions_pass_the_hot_path_but_not_the_debug_mode():
    cart = gs.CartPoleEnv(batch_size=[2], seed=0)
    td = cart.reset().set("action", torch.tensor([5, 0]))
    cart.step(td)  # shapes and dtypes are right: no value check on the hot path (no sync)
    debug = gs.CartPoleEnv(batch_size=[2], seed=0, auto_reset_mode=None)
    debug.run_type_checks = True
    with pytest.raises(
        ValueError,
        match=r"the action 'action' is outside its spec Categorical: expected integers in \[0, 1\], received 5 at index \(0,\)",
    ):
        debug.step(debug.reset().set("action", torch.tensor([5, 0])))
    env = _NaNEnv(run_type_checks=True)
    with pytest.raises(
        ValueError,
        match=r"the action 'action' is outside its spec Bounded: expected finite values in \[-1.0, 1.0\], received nan",
    ):
        env.step(env.reset().set("action", torch.full((2, 1), float("nan"))))
    td = env.step(env.reset().set("action", torch.zeros(2, 1)))
    with pytest.raises(ValueError, match="the step output 'obs' holds non-finite values"):
        env.step(env._step_mdp(td).set("action", torch.zeros(2, 1)))


def test_check_env_specs_reports_nan_outputs_by_key():
    with pytest.raises(AssertionError, match=r"key \('next', 'obs'\).*non-finite"):
        gs.check_env_specs(_NaNEnv())


def test_gpusim_validate_env_var_turns_the_debug_mode_on():
    code = (
        "import torch, gpusim as gs\n"
        "env = gs.CartPoleEnv(batch_size=[2], seed=0)\n"
        "assert env.run_type_checks\n"
        "try:\n"
        "    env.step(env.reset().set('action', torch.tensor([7, 0])))\n"
        "except ValueError as err:\n"
        "    print('raised:', err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**_env(), "GPUSIM_VALIDATE": "1"}
    )
    assert "raised: CartPoleEnv.step: the action 'action' is outside its spec" in out.stdout, out.stderr


def _env() -> dict:
    import os

    return dict(os.environ)


def test_categorical_spec_of_a_gym_env_is_checked_too():
    env = gs.GymEnv("CartPole-v1", num_envs=3, categorical_action_encoding=True)
    td = env.reset()
    with pytest.raises(ValueError, match=r"has shape \[3, 1\], expected \[3\]"):
        env.step(td.set("action", torch.zeros(3, 1, dtype=torch.long)))
    env.close()


def test_checks_follow_a_changed_action_spec():
    """The check plan is rebuilt when the spec changes (it is cached with the other key plans)."""
    env = gs.CartPoleEnv(batch_size=[2], seed=0)
    td = env.reset()
    env.step(td.clone().set("action", torch.zeros(2, dtype=torch.long)))
    env.action_spec = Categorical(2, shape=(2,), dtype=torch.int32)
    with pytest.raises(TypeError, match="expected torch.int32"):
        env.step(td.clone().set("action", torch.zeros(2, dtype=torch.long)))


class _SingletonMultiCategoricalEnv(EnvBase):
    """Unbatched, with a MultiCategorical action of shape [1] (whose samples drop the dim)."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(obs=Unbounded((1,)))
        self.action_spec = MultiCategorical([3])

    def _reset(self, td):
        return TensorDict({"obs": torch.zeros(1), "done": torch.zeros(1, dtype=torch.bool)}, [])

    def _step(self, td):
        obs = td["action"].reshape(1).float()
        return TensorDict({"obs": obs, "reward": obs.clone(), "done": torch.zeros(1, dtype=torch.bool)}, [])

    def _set_seed(self, seed):
        pass


def test_singleton_multicategorical_accepts_its_own_samples_and_nothing_else():
    env = _SingletonMultiCategoricalEnv()
    assert env.action_spec.rand().shape == ()  # TorchRL's remove_singleton
    td = env.rand_step(env.reset())  # the spec's own (squeezed) sample steps
    assert td["next", "obs"].shape == (1,)
    env.step(env.reset().set("action", torch.ones(1, dtype=torch.long)))  # the full shape too
    with pytest.raises(ValueError, match=r"'action' has shape \[1, 1\], expected \[1\]"):
        env.step(env.reset().set("action", torch.ones(1, 1, dtype=torch.long)))
