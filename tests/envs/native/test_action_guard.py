"""Out-of-range and NaN actions on the native envs (issue 29, defect 5).

Default mode (no host read): the physics see guarded actions (indices clamped into range, NaN as
0) while the tensordict keeps the action as given; before, CartPole's 7, -1 and 2 all acted as 0
and a NaN torque made Pendulum's state NaN for good. Debug mode: the step raises, naming the key,
the expected range and the received value."""

from __future__ import annotations

import pytest
import torch

import gpusim as gs
from gpusim.envs.native import AcrobotEnv, CartPoleEnv, MountainCarContinuousEnv, MountainCarEnv, PendulumEnv

B = 4
DISCRETE = {CartPoleEnv: 2, AcrobotEnv: 3, MountainCarEnv: 3}
CONTINUOUS = [PendulumEnv, MountainCarContinuousEnv]


def _next(env, td, action):
    return env.step(td.clone().set("action", action))["next"]


@pytest.mark.parametrize("cls", sorted(DISCRETE, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_out_of_range_indices_act_as_the_nearest_valid_one(cls):
    n = DISCRETE[cls]
    env = cls(batch_size=[B], seed=0)
    td = env.reset()
    given = torch.tensor([n + 5, -1, n, -100])
    clamped = given.clamp(0, n - 1)
    stepped = env.step(td.clone().set("action", given))
    assert torch.equal(stepped["action"], given)  # the record keeps what the policy chose
    expected = _next(env, td, clamped)
    for key in ("observation", "reward", "done"):
        assert torch.equal(stepped["next", key], expected[key]), key


def test_cartpole_out_of_range_actions_no_longer_act_as_zero():
    env = CartPoleEnv(batch_size=[3], seed=0)
    td = env.reset()
    pushed = _next(env, td, torch.tensor([7, 2, -1]))["observation"]
    right = _next(env, td, torch.ones(3, dtype=torch.long))["observation"]
    left = _next(env, td, torch.zeros(3, dtype=torch.long))["observation"]
    assert torch.equal(pushed[:2], right[:2])  # 7 and 2 push right (clamped to 1)
    assert torch.equal(pushed[2], left[2])  # -1 pushes left (clamped to 0)


@pytest.mark.parametrize("cls", CONTINUOUS, ids=lambda c: c.__name__)
def test_a_nan_action_acts_as_zero_and_the_state_stays_finite(cls):
    env = cls(batch_size=[B], seed=0)
    td = env.reset()
    nan = torch.full((B, 1), float("nan"))
    out = _next(env, td, nan)
    zero = _next(env, td, torch.zeros(B, 1))
    assert torch.equal(out["observation"], zero["observation"])
    assert torch.isfinite(out["observation"]).all()
    # the row goes on: NaN actions for 50 steps, the state stays finite
    td = env.reset()
    for _ in range(50):
        td = env._step_mdp(env.step(td.set("action", nan.clone())))
        assert torch.isfinite(td["observation"]).all()


def test_the_guard_runs_under_transforms_and_partial_steps():
    env = gs.make("CartPole-v1", num_envs=2, seed=0)  # TransformedEnv(CartPoleEnv, StepCounter...)
    td = env.reset()
    a = env.step(td.clone().set("action", torch.tensor([9, -3])))["next", "observation"]
    b = env.step(td.clone().set("action", torch.tensor([1, 0])))["next", "observation"]
    assert torch.equal(a, b)
    base = CartPoleEnv(batch_size=[2], seed=0)
    td = base.reset()
    partial = base.step(td.clone().set("action", torch.tensor([9, 9])).set("_step", torch.tensor([True, False])))
    full = base.step(td.clone().set("action", torch.tensor([1, 1])))
    assert torch.equal(partial["next", "observation"][0], full["next", "observation"][0])


@pytest.mark.parametrize(
    "make, action, match",
    [
        (
            lambda: CartPoleEnv(batch_size=[3]),
            torch.tensor([0, 7, 1]),
            r"CartPoleEnv.step: the action 'action' is outside its spec Categorical: expected integers in \[0, 1\], "
            r"received 7 at index \(1,\) \(1 of 3 values outside\)",
        ),
        (
            lambda: AcrobotEnv(batch_size=[3]),
            torch.tensor([-1, 0, 1]),
            r"the action 'action' is outside its spec Categorical: expected integers in \[0, 2\], received -1 at index \(0,\)",
        ),
        (
            lambda: PendulumEnv(batch_size=[2]),
            torch.tensor([[0.5], [float("nan")]]),
            r"PendulumEnv.step: the action 'action' is outside its spec Bounded: expected finite values in \[-2.0, 2.0\], "
            r"received nan at index \(1, 0\)",
        ),
        (
            lambda: PendulumEnv(batch_size=[2]),
            torch.tensor([[3.0], [0.0]]),
            r"expected finite values in \[-2.0, 2.0\], received 3.0 at index \(0, 0\)",
        ),
    ],
)
def test_the_debug_mode_names_key_range_and_value(make, action, match):
    env = make()
    env.run_type_checks = True
    with pytest.raises(ValueError, match=match):
        env.step(env.reset().set("action", action))


def test_library_wrappers_leave_action_values_to_the_library():
    env = gs.GymEnv("CartPole-v1", categorical_action_encoding=True)
    assert not env.guard_actions and CartPoleEnv.guard_actions
    env.reset()
    with pytest.raises(AssertionError):  # gymnasium's own check of the action
        env.step(env.reset().set("action", torch.tensor(7)))


def test_the_nan_guard_gives_the_same_values_eager_and_compiled():
    """Eager the guard is ``nan_to_num`` (one vectorized kernel), compiled the ``value != value``
    form Inductor vectorizes: NaN -> 0.0, ±inf and -0.0 as given, bit for bit the same."""
    from gpusim.envs._action_guard import ActionGuard

    guard = ActionGuard("action", "nan")
    value = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1.5, -2.0])
    eager = guard(value)
    compiled = torch.compile(guard, backend="eager", fullgraph=True)(value)
    assert eager.tolist() == [0.0, float("inf"), -float("inf"), 0.0, 1.5, -2.0]
    assert torch.equal(eager.view(torch.int32), compiled.view(torch.int32))  # -0.0 kept: same bits
    assert torch.signbit(eager[3])
