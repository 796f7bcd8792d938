"""The direct buffer step of gym workers (``GymWrapper._buffer_stepper``): a batched env's worker
writes a gym step's outputs straight into its row of the buffers, and the data is the same, byte
for byte, as through the tensordict path."""

from __future__ import annotations

import functools

import pytest
import torch

from gpusim.envs.batched import ParallelEnv, SerialEnv
from gpusim.envs.batched._runner import WorkerRunner
from gpusim.envs.libs.gym import GymEnv, GymWrapper
from gpusim.transforms import StepCounter, TransformedEnv

pytest.importorskip("gymnasium")


def _no_direct(monkeypatch):
    monkeypatch.setattr(GymWrapper, "_buffer_stepper", lambda self, *args: None)


def _rollout(env_cls, make, steps, seed=0):
    env = env_cls(2, make)
    try:
        env.set_seed(seed)
        torch.manual_seed(seed)  # the random actions
        return env.rollout(steps, break_when_any_done=False)
    finally:
        env.close()


def _gym(name, **kwargs):
    return GymEnv(name, **kwargs)


CASES = [
    # float actions and observations, truncation every 7 steps (auto-resets in the rollout)
    functools.partial(_gym, "Pendulum-v1", max_episode_steps=7),
    # one-hot actions, terminations at random steps
    functools.partial(_gym, "CartPole-v1"),
    # index actions, frame skip summing rewards
    functools.partial(_gym, "CartPole-v1", categorical_action_encoding=True, frame_skip=2),
]


@pytest.mark.parametrize("env_cls", [SerialEnv, ParallelEnv])
@pytest.mark.parametrize("make", CASES)
def test_same_data_as_the_tensordict_path(env_cls, make, monkeypatch):
    direct = _rollout(env_cls, make, 40)
    with monkeypatch.context() as m:
        _no_direct(m)
        reference = _rollout(env_cls, make, 40)
    assert direct["next", "done"].any(), "the rollout crosses episode ends"
    assert set(direct.keys(True, True)) == set(reference.keys(True, True))
    for key in reference.keys(True, True):
        a, b = direct.get(key), reference.get(key)
        assert a.dtype == b.dtype and a.shape == b.shape, key
        assert torch.equal(a, b), key


def test_uint8_frames_written_once_and_equal(monkeypatch):
    """Atari frames (uint8 210x160x3) travel unchanged (ale-py when installed)."""
    pytest.importorskip("ale_py")
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    make = functools.partial(_gym, "ALE/Breakout-v5")
    direct = _rollout(SerialEnv, make, 12)
    with monkeypatch.context() as m:
        _no_direct(m)
        reference = _rollout(SerialEnv, make, 12)
    assert direct["next", "pixels"].dtype == torch.uint8
    for key in reference.keys(True, True):
        assert torch.equal(direct.get(key), reference.get(key)), key


def _runner(env):
    env_ = SerialEnv(1, lambda: env)
    env_.start()
    return env_, env_.__dict__["_runners"][0]


def test_direct_path_is_taken_for_plain_gym_envs():
    batched, runner = _runner(GymEnv("Pendulum-v1"))
    try:
        assert runner._direct is not None
    finally:
        batched.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda: TransformedEnv(GymEnv("Pendulum-v1"), StepCounter()),  # the transform must run
        lambda: GymEnv("CartPole-v1", num_envs=2),  # a vector env
    ],
)
def test_no_direct_path_for_wrapped_or_vector_envs(make):
    batched, runner = _runner(make())
    try:
        assert runner._direct is None
        td = batched.rollout(3)
        assert td["next", "reward"].shape[:-1] == (*batched.batch_size, 3)
    finally:
        batched.close()


def test_info_readers_added_later_take_the_tensordict_path():
    """An env whose info readers are set after the worker started: the direct step declines."""
    env = GymEnv("Pendulum-v1")
    batched, runner = _runner(env)
    try:
        assert runner._direct is not None
        batched.reset()
        seen = []
        env._info_readers.append(lambda info, td: seen.append(info))  # a reader without entries
        assert runner._direct() is False
        td = batched.reset()
        seen.clear()
        batched.rand_step(td)  # through the tensordict path: the reader runs
        assert seen == [{}]
    finally:
        batched.close()


def test_step_before_reset_raises_on_the_direct_path():
    env = GymEnv("Pendulum-v1")
    batched, runner = _runner(env)
    try:
        with pytest.raises(RuntimeError, match="before reset"):
            runner.step(None)
    finally:
        batched.close()


def test_runner_without_stepper_keeps_the_tensordict_path():
    """A worker env class without ``_buffer_stepper`` (native envs) keeps the generic path."""
    from gpusim.envs.native import PendulumEnv

    batched = SerialEnv(1, PendulumEnv)
    batched.start()
    try:
        runner = batched.__dict__["_runners"][0]
        assert isinstance(runner, WorkerRunner) and runner._direct is None
    finally:
        batched.close()


class _OwnStepGymEnv(GymEnv):
    """A gym env with its own ``_step`` (it may read anything in its input): no direct step."""

    def _step(self, tensordict):
        assert tensordict.get("observation").shape == (3,)  # the observation input was written
        return super()._step(tensordict)


@pytest.mark.parametrize("env_cls", [SerialEnv, ParallelEnv])
def test_observation_inputs_skipped_only_when_no_worker_reads_them(env_cls):
    plain = functools.partial(_gym, "Pendulum-v1")
    own = functools.partial(_OwnStepGymEnv, "Pendulum-v1")
    env = env_cls(2, plain)
    mixed = env_cls(2, [plain, own])
    try:
        env.set_seed(0)
        mixed.set_seed(0)
        a = env.rollout(5, break_when_any_done=False)
        b = mixed.rollout(5, break_when_any_done=False)
        assert env._observation_inputs_unread and not mixed._observation_inputs_unread
        # the input buffer's observation is never written when no worker reads it
        assert not env._exchange.inputs["observation"].any()
        assert torch.equal(mixed._exchange.inputs["observation"], b["observation"][:, -1])
        for key in a.keys(True, True):
            assert torch.equal(a.get(key), b.get(key)), key
    finally:
        env.close()
        mixed.close()
