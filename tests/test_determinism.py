"""``gs.check_determinism`` / ``gpusim check --determinism``: the guaranteed checks hold on every
native env, and each check fails on an env that breaks it."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.cli import main
from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms import StepCounter, TransformedEnv
from tests.envs.toy_envs import CountingEnv


@pytest.mark.parametrize("env_id", gs.registered_ids())
def test_every_native_env_is_deterministic_eager(env_id):
    report = gs.check_determinism(env_id, num_envs=6, large=40, steps=60, compile=False, batched=False)
    report.raise_if_failed()
    assert [r.name for r in report.results] == ["same seed twice", "batch size", "masked vs sparse"]


def test_serial_and_parallel_workers_give_the_same_data():
    report = gs.check_determinism("CartPole-v1", num_envs=4, steps=40, compile=False, batched=True)
    (result,) = [r for r in report.results if r.name == "serial vs parallel"]
    assert result.holds, result.detail


class _GlobalNoiseEnv(EnvBase):
    """Draws its start states from torch's global generator: set_seed does not reach it."""

    def __init__(self, num_envs, device=None, seed=None, auto_reset_mode=None):
        super().__init__(batch_size=[num_envs], device=device, auto_reset_mode=auto_reset_mode)
        B = self.batch_size
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool)
        self.observation_spec = Composite(observation=Unbounded((*B, 1)), shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=flag, terminated=flag.clone(), shape=B)

    def _reset(self, td, **kwargs):
        false = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return TensorDict(
            {"observation": torch.rand(*self.batch_size, 1), "done": false, "terminated": false}, self.batch_size
        )

    def _step(self, td):
        obs = td["observation"] + td["action"].unsqueeze(-1)
        false = torch.zeros_like(obs, dtype=torch.bool)
        return TensorDict({"observation": obs, "reward": obs, "done": false, "terminated": false}, self.batch_size)

    def _set_seed(self, seed):
        pass


def _global_noise(num_envs, device=None, seed=None, **kwargs):
    return TransformedEnv(_GlobalNoiseEnv(num_envs, device, seed, **kwargs), StepCounter(7))


def _shared_stream(num_envs, device=None, seed=None, **kwargs):
    # one seeded generator drawing a number for every row at each reset: a row's draws depend on
    # how many rows there are once rows reset apart
    kwargs.pop("auto_reset_mode", None)
    env = CountingEnv(batch_size=[num_envs], max_count=4)
    return TransformedEnv(env, StepCounter(50))


def test_an_env_seeded_outside_set_seed_fails_same_seed_twice():
    report = gs.check_determinism(_global_noise, num_envs=4, steps=20, compile=False, batched=False)
    assert not report.ok
    assert report.failed[0].name == "same seed twice"
    assert "'observation'" in report.failed[0].detail
    with pytest.raises(gs.determinism.DeterminismError, match="same seed twice: first differs at"):
        report.raise_if_failed()


def test_an_env_whose_rows_share_one_stream_fails_the_batch_size_check():
    report = gs.check_determinism(_shared_stream, num_envs=4, large=32, steps=30, compile=False, batched=False)
    by_name = {r.name: r for r in report.results}
    assert by_name["same seed twice"].holds
    assert not by_name["batch size"].holds


def test_the_actions_of_a_row_do_not_depend_on_the_batch_size():
    from gpusim.determinism import _tables

    small, large = gs.make("Pendulum-v1", num_envs=3), gs.make("Pendulum-v1", num_envs=11)
    a, b = _tables(small, 5, seed=2)["action"], _tables(large, 5, seed=2)["action"]
    assert a.shape == (5, 3, 1) and torch.equal(a, b[:, :3])
    assert float(a.min()) >= -2.0 and float(a.max()) <= 2.0 and a.std() > 0.5


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="num_envs=8 and large=4"):
        gs.check_determinism("CartPole-v1", num_envs=8, large=4)


def test_cli_reports_and_exits_zero(capsys):
    assert main(["check", "--determinism", "MountainCar-v0", "--no-compile", "--steps", "20"]) == 0
    out = capsys.readouterr().out
    assert "determinism of MountainCar-v0 (8 rows, 20 steps, seed 0)" in out
    assert "serial vs parallel" in out and "determinism: OK" in out


def test_cli_refuses_ids_that_are_not_native(capsys):
    assert main(["check", "--determinism", "gym:CartPole-v1"]) == 2
    assert "--determinism checks the native ids" in capsys.readouterr().err


def test_compiled_runs_repeat_bit_for_bit():
    report = gs.check_determinism("CartPole-v1", num_envs=4, large=8, steps=30, batched=False)
    by_name = {r.name: r for r in report.results}
    assert by_name["same seed, compiled"].holds, by_name["same seed, compiled"].detail
