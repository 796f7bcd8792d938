"""``reset(td, set_state=...)``: a deterministic reset to the state carried by the input, for envs
that declare they can honour it (``_supports_set_state``), through transforms and batched envs;
and the debug-mode dtype check of the outputs (``run_type_checks``)."""

from __future__ import annotations

import warnings

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import SerialEnv
from gpusim.envs.episode import resolve_set_state
from gpusim.transforms import StepCounter, TransformedEnv
from tests.envs.toy_envs import CountingEnv, StatelessCounter


class StartAnywhere(StatelessCounter):
    """A counter whose reset starts from the ``"state"`` of the input when asked to."""

    _supports_set_state = True

    def __init__(self, batch_size=()):
        super().__init__(batch_size=batch_size)
        self.seen = []

    def _reset(self, td, **kwargs):
        self.seen.append(kwargs.get("set_state", "absent"))
        out = super()._reset(td)
        if kwargs.get("set_state") and td is not None and "state" in td.keys():
            out["state"] = td["state"].clone()
            out["observation"] = td["state"] * 2
        return out


def _with_state(env, value):
    return TensorDict({"state": torch.full((*env.batch_size, 1), value)}, env.batch_size)


def test_set_state_true_resets_to_the_given_state():
    env = StartAnywhere(batch_size=[2])
    out = env.reset(_with_state(env, 3.0), set_state=True)
    assert out["state"].eq(3.0).all() and out["observation"].eq(6.0).all()
    assert env.seen == [True]


def test_set_state_false_ignores_the_state():
    env = StartAnywhere(batch_size=[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = env.reset(_with_state(env, 3.0), set_state=False)
    assert out["state"].eq(0.0).all()
    assert env.seen == [False]


def test_unspecified_set_state_honours_a_present_state_with_a_future_warning():
    env = StartAnywhere(batch_size=[2])
    with pytest.warns(FutureWarning, match="set_state"):
        out = env.reset(_with_state(env, 2.0))
    assert out["state"].eq(2.0).all()
    with warnings.catch_warnings():  # no state in the input: no warning, a fresh start
        warnings.simplefilter("error")
        out = env.reset(TensorDict({}, [2]))
    assert out["state"].eq(0.0).all()
    assert env.seen == [True, False]


def test_unsupported_env_raises_on_set_state_true_and_never_gets_the_kwarg():
    env = StatelessCounter(batch_size=[2])
    td = env.reset()
    with pytest.raises(NotImplementedError, match="StatelessCounter does not support reset\\(td, set_state=True\\)"):
        env.reset(td.clone(), set_state=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(td.clone())  # its state entries are there, but it cannot honour them: no warning
        env.reset(td.clone(), set_state=False)


def test_set_state_must_be_bool_or_none():
    with pytest.raises(TypeError, match="set_state must be a bool or None, got str 'yes'"):
        resolve_set_state("yes", supported=True, has_state=False)


def test_transformed_env_resets_its_base_env_to_the_state():
    env = TransformedEnv(StartAnywhere(batch_size=[2]), StepCounter())
    out = env.reset(_with_state(env, 4.0), set_state=True)
    assert out["state"].eq(4.0).all() and out["step_count"].eq(0).all()
    with pytest.raises(NotImplementedError, match="set_state"):
        TransformedEnv(StatelessCounter(batch_size=[2]), StepCounter()).reset(set_state=True)


def test_auto_reset_does_not_honour_a_state():
    env = StartAnywhere(batch_size=[2])
    td = env.reset()
    td["action"] = torch.ones(2, dtype=torch.long)
    for _ in range(env.max_count):
        _, td = env.step_and_maybe_reset(td)
        td["action"] = torch.ones(2, dtype=torch.long)
    assert td["state"].eq(0.0).all()  # the finished rows restarted from scratch
    assert True not in env.seen[1:]


def test_serial_env_forwards_set_state_to_its_workers():
    env = SerialEnv(2, lambda: StartAnywhere(batch_size=[]))
    try:
        assert env._supports_set_state
        td = env.reset()
        td["state"] = torch.tensor([[5.0], [7.0]])
        out = env.reset(td.clone(), set_state=True)
        assert out["state"].flatten().tolist() == [5.0, 7.0]
    finally:
        env.close()
    env = SerialEnv(2, lambda: StatelessCounter(batch_size=[]))
    try:
        assert not env._supports_set_state
        with pytest.raises(NotImplementedError, match="SerialEnv does not support"):
            env.reset(set_state=True)
    finally:
        env.close()


def test_run_type_checks_refuses_an_output_of_another_dtype():
    env = CountingEnv(batch_size=[2])
    env.run_type_checks = True
    env.output_spec.unlock_()
    env.output_spec["full_done_spec", "done"].dtype = torch.int32
    with pytest.raises(
        TypeError, match=r"'done': expected done.dtype to be torch.int32 \(its spec's\) but got torch.bool"
    ):
        env.reset()


def test_private_run_type_checks_name_is_the_same_flag():
    env = CountingEnv(batch_size=[2])
    env._run_type_checks = True
    assert env.run_type_checks is True and env._run_type_checks is True
    env.run_type_checks = False
    assert env._run_type_checks is False
