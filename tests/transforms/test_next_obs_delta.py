"""NextObservationDelta: the recorded "next" observation as a low-precision difference."""

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import SerialEnv, check_env_specs
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms import Compose, NextObservationDelta, RewardSum, StepCounter, TransformedEnv


def _env(*transforms, batch=(3,)):
    return TransformedEnv(PendulumEnv(batch_size=list(batch), seed=0), Compose(*transforms))


@pytest.mark.parametrize("break_when_any_done", [True, False])
def test_rollout_records_delta_and_round_trips(break_when_any_done):
    env = _env(NextObservationDelta(), StepCounter(3))
    plain = _env(StepCounter(3))
    push = lambda td: td.set("action", torch.full((3, 1), 0.5))  # noqa: E731 (same actions in both)
    data = env.rollout(6, push, break_when_any_done=break_when_any_done)
    ref = plain.rollout(6, push, break_when_any_done=break_when_any_done)
    assert ("next", "observation") not in data.keys(True)
    assert ("delta", "observation") not in data.keys(True)  # the next root never inherits the delta
    delta = data["next", "delta", "observation"]
    assert delta.dtype == torch.float16 and data["observation"].dtype == torch.float32
    torch.testing.assert_close(data["observation"], ref["observation"])
    rebuilt = env.transform[0](data.clone())
    assert ("next", "delta", "observation") not in rebuilt.keys(True)
    torch.testing.assert_close(rebuilt["next", "observation"], ref["next", "observation"], atol=2e-2, rtol=2e-3)


def test_step_and_maybe_reset_next_root_is_full_precision():
    env = _env(NextObservationDelta(["observation"]))
    td = env.reset()
    stepped, root = env.step_and_maybe_reset(env.rand_action(td))
    assert ("next", "observation") not in stepped.keys(True)
    assert root["observation"].dtype == torch.float32
    expected = (root["observation"] - td["observation"]).to(torch.float16)
    torch.testing.assert_close(stepped["next", "delta", "observation"], expected)


def test_plain_step_keeps_both_entries():
    env = _env(NextObservationDelta())
    out = env.step(env.rand_action(env.reset()))
    assert ("next", "observation") in out.keys(True) and ("next", "delta", "observation") in out.keys(True)


def test_check_env_specs_and_fake_tensordict():
    env = _env(NextObservationDelta(delta_dtype=torch.bfloat16), RewardSum())
    check_env_specs(env, seed=0, break_when_any_done="both")
    assert env.fake_tensordict()["next", "delta", "observation"].dtype == torch.bfloat16


def test_keys_found_from_spec_skip_integer_observations():
    base = PendulumEnv()
    base.observation_spec = Composite(
        observation=Unbounded((3,)),
        pixels=Bounded(0, 255, (2, 2), dtype=torch.uint8),
        shape=(),
    )
    env = TransformedEnv(base, Compose(StepCounter(), NextObservationDelta()))
    assert env.transform[1].in_keys == ["observation"]


def test_outside_batched_env_works_inside_refused():
    env = TransformedEnv(SerialEnv(2, CartPoleEnv), NextObservationDelta())
    try:
        data = env.rollout(3, break_when_any_done=False)
        assert ("next", "observation") not in data.keys(True)
        assert data["next", "delta", "observation"].shape == (2, 3, 4)
    finally:
        env.close()
    with pytest.raises(RuntimeError, match="cannot live inside a SerialEnv/ParallelEnv worker"):
        SerialEnv(2, lambda: TransformedEnv(CartPoleEnv(), NextObservationDelta()))


def test_offline_forward_options():
    data = TensorDict(
        {
            "obs": torch.zeros(4, 2, dtype=torch.float64),
            ("next", "delta", "obs"): torch.ones(4, 2, dtype=torch.float16),
        },
        [4],
    )
    out = NextObservationDelta("obs", restore_dtype=torch.float32, drop_delta=False)(data.clone())
    assert out["next", "obs"].dtype == torch.float32 and ("next", "delta", "obs") in out.keys(True)
    out = NextObservationDelta("obs")(data.clone())
    assert out["next", "obs"].dtype == torch.float64
    missing = NextObservationDelta("other")(data.clone())  # absent keys are left alone
    assert ("next", "other") not in missing.keys(True)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"delta_dtype": torch.int8}, "delta_dtype must be a floating dtype, got torch.int8"),
        ({"restore_dtype": torch.int64}, "restore_dtype must be a floating dtype or 'root', got torch.int64"),
        ({"restore_dtype": "leaf"}, "restore_dtype must be a floating dtype or 'root', got 'leaf'"),
    ],
)
def test_bad_dtypes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NextObservationDelta(**kwargs)


def test_bad_keys_name_key_expected_received():
    with pytest.raises(
        ValueError, match=r"in_key 'obs' is not an observation of the env \(expected one of \['observation'\]\)"
    ):
        _env(NextObservationDelta(["obs"]))
    base = PendulumEnv()
    base.observation_spec = Composite(observation=Unbounded((3,)), flag=Bounded(0, 1, (1,), dtype=torch.bool), shape=())
    with pytest.raises(ValueError, match="in_key 'flag' has dtype torch.bool"):
        TransformedEnv(base, NextObservationDelta(["flag"]))
