"""Generic checks run over every native env: specs, construction, seeding, resets, purity, compile."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import check_env_specs
from gpusim.envs.native import (
    AcrobotEnv,
    CartPoleEnv,
    MountainCarContinuousEnv,
    MountainCarEnv,
    PendulumEnv,
    ResetRows,
    TicTacToeEnv,
)
from gpusim.specs import Bounded, Categorical

CLASSIC = {
    CartPoleEnv: "CartPole-v1",
    PendulumEnv: "Pendulum-v1",
    MountainCarEnv: "MountainCar-v0",
    MountainCarContinuousEnv: "MountainCarContinuous-v0",
    AcrobotEnv: "Acrobot-v1",
}
ALL_ENVS = [*CLASSIC, TicTacToeEnv]
_ids = [cls.__name__ for cls in ALL_ENVS]


def _classic_ids():
    return [cls.__name__ for cls in CLASSIC]


@pytest.mark.parametrize("batch_size", [[1], [1000], [], [2, 3]], ids=str)
@pytest.mark.parametrize("env_cls", ALL_ENVS, ids=_ids)
def test_check_env_specs(env_cls, batch_size) -> None:
    env = env_cls(batch_size=batch_size, seed=0)
    check_env_specs(env, seed=1)
    check_env_specs(env, break_when_any_done="both")


@pytest.mark.parametrize("env_cls", list(CLASSIC), ids=_classic_ids())
def test_specs_follow_gymnasium_spaces(env_cls) -> None:
    genv = gym.make(CLASSIC[env_cls]).unwrapped
    genv.reset(seed=0)
    B = torch.Size([5])
    env = env_cls(batch_size=B, seed=0)
    obs_spec = env.observation_spec["observation"]
    assert isinstance(obs_spec, Bounded) and obs_spec.dtype == torch.float32
    assert obs_spec.shape == (*B, *genv.observation_space.shape)
    torch.testing.assert_close(obs_spec.low[0], torch.as_tensor(genv.observation_space.low))
    torch.testing.assert_close(obs_spec.high[0], torch.as_tensor(genv.observation_space.high))
    space = genv.action_space
    if isinstance(space, gym.spaces.Discrete):
        assert isinstance(env.action_spec, Categorical) and env.action_spec.n == space.n
        assert env.action_spec.shape == B and env.action_spec.dtype == torch.int64
    else:
        assert isinstance(env.action_spec, Bounded) and env.action_spec.shape == (*B, *space.shape)
        torch.testing.assert_close(env.action_spec.low[0], torch.as_tensor(space.low))
        torch.testing.assert_close(env.action_spec.high[0], torch.as_tensor(space.high))
    assert env.reward_spec.shape == (*B, 1)
    for key in ("done", "terminated"):
        assert env.full_done_spec[key].shape == (*B, 1) and env.full_done_spec[key].dtype == torch.bool
    assert env.state_spec["state"].shape == (*B, len(genv.state))
    assert env.state_spec["state"].dtype == torch.float32


@pytest.mark.parametrize("env_cls", ALL_ENVS, ids=_ids)
def test_unknown_kwarg_raises_type_error(env_cls) -> None:
    with pytest.raises(TypeError, match="not_a_param"):
        env_cls(batch_size=[2], not_a_param=1.0)


@pytest.mark.parametrize(
    "env_cls, kwargs, match",
    [
        (CartPoleEnv, {"masscart": 0.0}, "masscart must be a finite number > 0, got 0.0"),
        (CartPoleEnv, {"tau": -0.02}, "tau must be a finite number > 0, got -0.02"),
        (CartPoleEnv, {"kinematics_integrator": "rk4"}, "kinematics_integrator must be one of .* got 'rk4'"),
        (PendulumEnv, {"g": float("nan")}, "g must be a finite number > 0, got nan"),
        (MountainCarEnv, {"min_position": 1.0}, r"min_position \(1.0\) must be smaller than max_position \(0.6\)"),
        (MountainCarContinuousEnv, {"min_action": 2.0}, r"min_action \(2.0\) must be smaller than max_action"),
        (AcrobotEnv, {"book_or_nips": "paper"}, "book_or_nips must be one of .* got 'paper'"),
        (AcrobotEnv, {"avail_torque": (-1.0, 1.0)}, "avail_torque must be a sequence of 3 numbers"),
    ],
)
def test_bad_constants_raise_value_error(env_cls, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        env_cls(batch_size=[2], **kwargs)


@pytest.mark.parametrize(
    "env_cls, kwargs, match",
    [
        (CartPoleEnv, {"gravity": "9.8"}, "gravity must be a real number, got '9.8'"),
        (CartPoleEnv, {"sutton_barto_reward": 1}, "sutton_barto_reward must be a bool, got 1"),
        (TicTacToeEnv, {"single_player": "yes"}, "single_player must be a bool, got 'yes'"),
    ],
)
def test_bad_types_raise_type_error(env_cls, kwargs, match) -> None:
    with pytest.raises(TypeError, match=match):
        env_cls(batch_size=[2], **kwargs)


def test_derived_constants_are_computed() -> None:
    env = CartPoleEnv(batch_size=[1], masspole=0.2, masscart=2.0, length=0.25)
    assert env.total_mass == pytest.approx(2.2)
    assert env.polemass_length == pytest.approx(0.05)
    env.masspole = 0.3
    assert env.total_mass == pytest.approx(2.3)


@pytest.mark.parametrize("env_cls", ALL_ENVS, ids=_ids)
def test_same_seed_same_rollout(env_cls) -> None:
    def run(seed: int) -> TensorDict:
        env = env_cls(batch_size=[64], seed=seed)
        torch.manual_seed(0)  # the random actions
        return env.rollout(60, break_when_any_done=False)

    a, b, c = run(3), run(3), run(4)
    assert (a == b).all()
    key = "board" if env_cls is TicTacToeEnv else "state"
    if env_cls is TicTacToeEnv:  # deterministic start: the seed drives the random moves
        assert not torch.equal(a["action"], c["action"])
    else:
        assert not torch.equal(a[key][..., 0, :], c[key][..., 0, :])


@pytest.mark.parametrize("env_cls", list(CLASSIC), ids=_classic_ids())
def test_set_seed_restarts_the_stream_and_returns_next_seed(env_cls) -> None:
    env = env_cls(batch_size=[16], seed=11)
    first = env.reset()["state"]
    second = env.reset()["state"]
    assert not torch.equal(first, second)
    nxt = env.set_seed(11)
    assert isinstance(nxt, int) and nxt != 11 and nxt == env.set_seed(11)
    torch.testing.assert_close(env.reset()["state"], first, rtol=0, atol=0)
    torch.testing.assert_close(env.reset()["state"], second, rtol=0, atol=0)


@pytest.mark.parametrize("env_cls", list(CLASSIC), ids=_classic_ids())
def test_partial_reset_touches_only_masked_rows(env_cls) -> None:
    env = env_cls(batch_size=[6], seed=0)
    td = env.rollout(3, break_when_any_done=False)[..., -1]["next"].clone()
    before = td.clone()
    mask = torch.tensor([True, False, True, False, False, True]).unsqueeze(-1)
    td.set("_reset", mask)
    out = env.reset(td)
    assert "_reset" not in out.keys()
    rows = mask.squeeze(-1)
    for key in ("state", "observation"):
        assert torch.equal(out[key][~rows], before[key][~rows])
        assert not torch.equal(out[key][rows], before[key][rows])


@pytest.mark.parametrize("env_cls", list(CLASSIC), ids=_classic_ids())
def test_auto_reset_restarts_done_rows_from_start_distribution(env_cls) -> None:
    # with a tight threshold/goal, episodes end quickly and every row resets several times
    kwargs = {
        CartPoleEnv: {"x_threshold": 0.01},
        PendulumEnv: {},
        MountainCarEnv: {"goal_position": -0.55},
        MountainCarContinuousEnv: {"goal_position": -0.55},
        AcrobotEnv: {},
    }[env_cls]
    env = env_cls(batch_size=[256], seed=0, **kwargs)
    td = env.rollout(20, break_when_any_done=False)
    done = td["next", "done"][..., :-1, 0]
    following = td["state"][..., 1:, :][done]
    if env_cls in (PendulumEnv, AcrobotEnv):
        assert done.sum() == 0  # these never end early with random play
        return
    assert done.sum() > 50
    if env_cls is CartPoleEnv:
        assert float(following.abs().max()) <= 0.05
    else:
        assert bool(((following[:, 0] >= -0.6) & (following[:, 0] <= -0.4)).all())
        assert bool((following[:, 1] == 0).all())


@pytest.mark.parametrize("env_cls", ALL_ENVS, ids=_ids)
def test_step_is_pure(env_cls) -> None:
    """``_step`` reads the input without writing it, and the same input gives the same output."""
    env = env_cls(batch_size=[32], seed=0)
    td = env.rand_action(env.reset())
    snapshot = td.clone()
    if env_cls is TicTacToeEnv:
        env.set_seed(5)
    out1 = env._step(td)
    assert (td == snapshot).all()
    if env_cls is TicTacToeEnv:
        env.set_seed(5)
    out2 = env._step(td)
    assert (out1 == out2).all()
    assert out1 is not td


@pytest.mark.parametrize("env_cls", ALL_ENVS, ids=_ids)
def test_step_and_reset_trace_without_graph_breaks(env_cls) -> None:
    """``fullgraph=True`` tracing (no syncs, no Python branching on tensor values), the
    ``ResetRows`` of a reset built inside the graph."""
    env = env_cls(batch_size=[8], seed=0, **({"single_player": True} if env_cls is TicTacToeEnv else {}))
    td = env.rand_action(env.reset())
    mask = torch.tensor([True, False] * 4)
    env.set_seed(1)
    expected_step = env._step(td)
    expected_reset = env._reset(None, ResetRows.start(env.rng, mask))
    env.set_seed(1)
    step = torch.compile(env._step, fullgraph=True, backend="eager")
    reset = torch.compile(lambda m: env._reset(None, ResetRows.start(env.rng, m)), fullgraph=True, backend="eager")
    assert (step(td) == expected_step).all()
    assert (reset(mask) == expected_reset).all()
    assert env.rng.episodes.tolist() == [1, 0] * 4


def test_pendulum_reward_uses_clipped_torque_and_wrapped_angle() -> None:
    env = PendulumEnv(batch_size=[2])
    td = TensorDict(
        {
            "state": torch.tensor([[2 * math.pi, 0.0], [0.0, 0.0]]),
            "action": torch.tensor([[5.0], [-2.0]]),
        },
        [2],
    )
    reward = env.step(td)["next", "reward"]
    torch.testing.assert_close(reward, torch.tensor([[-0.004], [-0.004]]), atol=1e-5, rtol=0)


def test_mountain_car_left_wall_is_inelastic() -> None:
    env = MountainCarEnv(batch_size=[1])
    td = TensorDict({"state": torch.tensor([[-1.19, -0.07]]), "action": torch.tensor([0])}, [1])
    state = env.step(td)["next", "state"]
    assert state.tolist() == [[pytest.approx(-1.2), 0.0]]


def test_acrobot_angles_wrap_and_velocities_clip() -> None:
    env = AcrobotEnv(batch_size=[1])
    td = TensorDict({"state": torch.tensor([[3.1, -3.1, 12.5, -28.0]]), "action": torch.tensor([2])}, [1])
    state = env.step(td)["next", "state"][0]
    assert -math.pi <= float(state[0]) <= math.pi and -math.pi <= float(state[1]) <= math.pi
    assert abs(float(state[2])) <= 4 * math.pi + 1e-6 and abs(float(state[3])) <= 9 * math.pi + 1e-6


def test_reset_distributions_ignore_torch_global_rng() -> None:
    env = CartPoleEnv(batch_size=[4], seed=9)
    torch.manual_seed(0)
    a = env.reset()["state"]
    env.set_seed(9)
    torch.manual_seed(1)
    b = env.reset()["state"]
    assert torch.equal(a, b)
    assert np.all(np.abs(a.numpy()) <= 0.05)


@pytest.mark.parametrize(
    "env_cls, name, value",
    [
        (CartPoleEnv, "gravity", 12.0),
        (CartPoleEnv, "x_threshold", 0.01),
        (PendulumEnv, "max_torque", 0.5),
        (MountainCarEnv, "goal_position", -1.0),
        (AcrobotEnv, "avail_torque", (-2.0, 0.5, 2.0)),
    ],
)
def test_constants_changed_after_construction_take_effect(env_cls, name, value) -> None:
    """Nothing derived from a constant is cached: the next step uses the new value."""
    changed = env_cls(batch_size=[64], seed=0)
    setattr(changed, name, value)
    fresh = env_cls(batch_size=[64], seed=0, **{name: value})
    default = env_cls(batch_size=[64], seed=0)
    td = fresh.reset()
    torch.manual_seed(0)
    default.rand_action(td)  # the default bounds (wider than a reduced max_torque)
    out_changed = changed.step(td.clone())["next"]
    out_fresh = fresh.step(td.clone())["next"]
    out_default = default.step(td.clone())["next"]
    assert (out_changed == out_fresh).all()
    assert not (out_default == out_fresh).all()


@pytest.mark.parametrize("env_cls", ALL_ENVS, ids=_ids)
def test_one_path_eager_cpu_ops_and_reference_ops_give_the_same_data(env_cls) -> None:
    """An env file has one path; the shared column ops choose their eager-CPU form or the
    reference (what compiled graphs and GPUs run): both give the same rollout, masked and sparse."""
    from gpusim.kernels import force_backend
    from gpusim.transforms import StepCounter, TransformedEnv

    def run(mode: str):
        torch.manual_seed(0)  # rollout()'s random actions
        kwargs = {"single_player": True} if env_cls is TicTacToeEnv else {}
        env = TransformedEnv(
            env_cls(batch_size=[300], seed=2, auto_reset_mode=mode, **kwargs), StepCounter(max_steps=5)
        )
        return env.rollout(12, break_when_any_done=False)

    for mode in ("masked", "sparse"):
        fast = run(mode)
        with force_backend("reference", "env_columns"):
            reference = run(mode)
        assert fast["next", "truncated"].any()
        assert (fast == reference).all(), mode


def test_plus_minus_arithmetic_form_gives_where_s_numbers() -> None:
    """``_ops.plus_minus`` takes ``cond * 2v - v`` from 2048 rows on eager CPU (where's scalar
    loop is slow there): the same float32 numbers as ``torch.where(cond, v, -v)``, and CartPole at
    20000 rows gives the reference path's data."""
    from gpusim.envs.native._ops import plus_minus
    from gpusim.kernels import force_backend

    cond = torch.rand(20000, generator=torch.Generator().manual_seed(0)) > 0.5
    for value in (10.0, 0.1, 3.3, 1e-3, 7.77, 123456.789):
        assert torch.equal(plus_minus(cond, value), torch.where(cond, value, -value)), value

    def run():
        return CartPoleEnv(batch_size=[20000], seed=1).rollout(6, break_when_any_done=False)

    fast = run()
    with force_backend("reference", "env_columns"):
        reference = run()
    assert (fast == reference).all()
