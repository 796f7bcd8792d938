"""Macro-control primitives: MacroPrimitiveTransform (generic expansion), URScriptPrimitiveTransform
(UR arm commands, per-row primitives, Cartesian solvers) and SatelliteAttitudeTransform (CMG
steering law), with their bad inputs."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

import gpusim.transforms as gt
from gpusim.contrib.satellite import _cmg_jacobian, cmg_geometry
from gpusim.envs.native import PendulumEnv
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms import (
    CartesianSolver,
    Compose,
    HumanoidMacroAction,
    MacroPrimitive,
    MacroPrimitiveTransform,
    RobotMacroAction,
    RobotMacroActionMode,
    SatelliteAttitudeTransform,
    SatelliteMacroAction,
    TargetMacroAction,
    TransformedEnv,
    URScriptPrimitive,
    URScriptPrimitiveTransform,
)


# ---------------------------------------------------------------------------------------------- generic
def test_sequence_is_linear_from_zero_then_holds():
    t = MacroPrimitiveTransform(macro_steps=4, settle_steps=2)
    target = torch.tensor([[4.0, -8.0], [2.0, 0.0]])
    seq = t.inv(TensorDict(action=target, batch_size=[2]))["action"]
    assert seq.shape == (2, 6, 2)
    expected = torch.tensor([0.25, 0.5, 0.75, 1.0, 1.0, 1.0]).view(1, 6, 1) * target.unsqueeze(1)
    torch.testing.assert_close(seq, expected)


def test_structured_durations_override_the_defaults_and_wait_holds():
    t = MacroPrimitiveTransform(action_dim=3, macro_steps=9)
    target = torch.ones(2, 3)
    action = TargetMacroAction.move(target, steps=2, settle_steps=1)
    action.mode[1] = int(MacroPrimitive.WAIT)  # a WAIT row holds the start (zeros)
    seq = t.inv(TensorDict(action=action, batch_size=[2]))["action"]
    assert seq.shape == (2, 3, 3)
    torch.testing.assert_close(seq[0], torch.tensor([[0.5] * 3, [1.0] * 3, [1.0] * 3]))
    assert seq[1].eq(0).all()


def test_plain_tensordict_nested_key_and_humanoid_action():
    t = MacroPrimitiveTransform(action_key=("arm", "cmd"), macro_steps=2)
    td = TensorDict({("arm", "cmd"): TensorDict(target=torch.tensor([[2.0]]), batch_size=[1])}, batch_size=[1])
    assert t.inv(td)["arm", "cmd"].flatten().tolist() == [1.0, 2.0]
    assert "cmd" in td["arm"].keys() and isinstance(td["arm", "cmd"], TensorDict)  # inv never writes its input
    h = HumanoidMacroAction.reach_control(torch.tensor([3.0, 6.0]), steps=3)
    seq = MacroPrimitiveTransform().inv(TensorDict(action=h, batch_size=[1]))["action"]
    assert seq[0, :, 1].tolist() == [2.0, 4.0, 6.0]


def test_input_spec_on_a_real_env_and_mode_samples_every_primitive():
    env = TransformedEnv(PendulumEnv(batch_size=[2]), MacroPrimitiveTransform(macro_steps=3))
    spec = env.full_action_spec
    assert set(spec.keys(True, True)) == {("action", "mode"), ("action", "target")}
    assert spec["action", "target"].shape == (2, 1) and spec["action", "target"].dtype == torch.float32
    modes = {int(spec["action", "mode"].rand()[0, 0]) for _ in range(100)}
    assert modes == {0, 1}
    # without an action spec to read the dim from, action_dim is required
    with pytest.raises(RuntimeError, match="action_dim"):
        MacroPrimitiveTransform().transform_input_spec(Composite(shape=(1,)))


def test_execute_wraps_a_multi_action_when_available():
    if getattr(gt, "MultiAction", None) is None:
        with pytest.raises(NotImplementedError, match="MultiAction"):
            MacroPrimitiveTransform(execute=True)
    else:
        out = MacroPrimitiveTransform(execute=True, macro_steps=2)
        assert isinstance(out, Compose) and isinstance(out[1], MacroPrimitiveTransform)


def test_generic_bad_inputs_name_the_key():
    t = MacroPrimitiveTransform(action_dim=2, macro_steps=2)
    with pytest.raises(RuntimeError, match="no action under 'action'"):
        t.inv(TensorDict(batch_size=[1]))
    with pytest.raises(KeyError, match="no 'target' field"):
        t.inv(TensorDict(action=TensorDict(mode=torch.ones(1, 1), batch_size=[1]), batch_size=[1]))
    with pytest.raises(ValueError, match=r"'action' must have shape \[1, 2\].*got \[1, 3\]"):
        t.inv(TensorDict(action=torch.ones(1, 3), batch_size=[1]))
    mixed = TargetMacroAction.move(torch.ones(2, 2), steps=3)
    mixed.steps[1] = 5
    with pytest.raises(ValueError, match=r"\('action', 'steps'\).*same value.*from 3 to 5"):
        t.inv(TensorDict(action=mixed, batch_size=[2]))
    with pytest.raises(TypeError, match="got str"):
        t._resolve(TensorDict(batch_size=[1]), "move")
    for kwargs, match in (
        ({"macro_steps": 0}, "macro_steps"),
        ({"settle_steps": -1}, "settle_steps"),
        ({"action_dim": 0}, "action_dim"),
    ):
        with pytest.raises(ValueError, match=match):
            MacroPrimitiveTransform(**kwargs)
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        TargetMacroAction.move(torch.ones(2), steps=0)


# ---------------------------------------------------------------------------------------------- UR arm
def _arm_td(action, batch=1, qpos=0.0, grip=0.0):
    return TensorDict(
        action=action,
        robot_qpos=torch.full((batch, 6), qpos),
        gripper_qpos=torch.full((batch, 2), grip),
        batch_size=[batch],
    )


def _shift_solver(target_pose, start_action):
    """Puts the target position in the first three joints (a stand-in IK)."""
    return torch.cat([target_pose[..., :3], start_action[..., 3:]], dim=-1)


def test_enums_and_protocol():
    assert [int(m) for m in URScriptPrimitive] == [0, 1, 2, 3, 4]
    assert int(RobotMacroActionMode.RESET) == 5 and str(URScriptPrimitive.MOVEL) == "movel"
    assert isinstance(_shift_solver, CartesianSolver)


def test_reach_joints_keeps_the_observed_gripper():
    t = URScriptPrimitiveTransform(macro_steps=5)
    seq = t.inv(_arm_td(RobotMacroAction.reach_joints(joints=torch.full((1, 6), 2.0), steps=2), grip=7.0))["action"]
    assert seq.shape == (1, 2, 7)
    assert seq[0, :, 0].tolist() == [1.0, 2.0] and seq[0, :, -1].tolist() == [7.0, 7.0]


def test_every_row_may_ask_for_another_primitive():
    calls = []

    def solver(target_pose, start_action):
        calls.append(target_pose.shape)
        return _shift_solver(target_pose, start_action)

    t = URScriptPrimitiveTransform(cartesian_solver=solver)
    rows = [
        RobotMacroAction.reach_joints(joints=torch.full((1, 6), 4.0), gripper="closed", steps=2),
        RobotMacroAction.reach_pose(position=torch.tensor([[8.0, 8.0, 8.0]]), steps=2),
        RobotMacroAction.close_gripper(steps=2),
        RobotMacroAction.wait(steps=2, gripper="open"),
    ]
    td = _arm_td(torch.cat(rows), batch=4, qpos=2.0, grip=10.0)
    seq = t.inv(td)["action"]
    assert calls == [torch.Size([4, 7])]  # one batched solve for the whole batch
    assert seq[0, :, 0].tolist() == [3.0, 4.0] and seq[0, :, -1].tolist() == [255.0, 255.0]  # gripper at once
    assert seq[1, :, 0].tolist() == [5.0, 8.0] and seq[1, :, 5].tolist() == [2.0, 2.0]
    assert seq[2, :, 0].tolist() == [2.0, 2.0] and seq[2, :, -1].tolist() == [132.5, 255.0]  # interpolated
    assert seq[3, :, 0].tolist() == [2.0, 2.0] and seq[3, :, -1].tolist() == [0.0, 0.0]


def test_cartesian_path_follows_the_solver_waypoints_then_holds():
    def solver(target_pose, start_action, *, orientation_mask=None, waypoints=None):
        if waypoints is None:
            return _shift_solver(target_pose, start_action)
        out = start_action.unsqueeze(-2).repeat(1, waypoints, 1)
        out[..., 0] = 10.0 * torch.arange(1, waypoints + 1)
        return out

    t = URScriptPrimitiveTransform(cartesian_solver=solver)
    action = torch.cat(
        [
            RobotMacroAction.reach_pose(
                position=torch.tensor([[1.0, 1.0, 1.0]]), path="cartesian", steps=3, settle_steps=1
            ),
            RobotMacroAction.reach_pose(position=torch.tensor([[3.0, 3.0, 3.0]]), steps=3, settle_steps=1),
        ]
    )
    seq = t.inv(_arm_td(action, batch=2))["action"]
    assert seq[0, :, 0].tolist() == [10.0, 20.0, 30.0, 30.0]  # the Cartesian row: the waypoints
    assert seq[1, :, 0].tolist() == [1.0, 2.0, 3.0, 3.0]  # the joint-path row: interpolated


def test_orientation_mask_reaches_the_solver_and_home_comes_from_the_parent():
    seen = {}

    def solver(target_pose, start_action, *, orientation_mask=None):
        seen["mask"] = orientation_mask
        return start_action

    t = URScriptPrimitiveTransform(cartesian_solver=solver)
    t.inv(_arm_td(RobotMacroAction.reach_pose(position=torch.zeros(3), orientation_mask=(1.0, 0.0, 1.0))))
    assert seen["mask"].tolist() == [[1.0, 0.0, 1.0]]

    class Home(URScriptPrimitiveTransform):
        @property
        def parent(self):
            return type("Arm", (), {"robot_home_qpos": (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)})()

    seq = Home(macro_steps=2).inv(_arm_td(RobotMacroAction.RESET, grip=50.0))["action"]
    assert seq[0, -1].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0]  # home joints, gripper opened


def test_ur_action_spec_and_low_level_action():
    t = URScriptPrimitiveTransform()
    spec = t.transform_input_spec(Composite(shape=(3,)))["full_action_spec", "action"]
    assert spec["joints"].shape == (3, 6) and spec["mode"].space.n == 6 and spec["gripper"].space.n == 3
    action = t.low_level_action(torch.ones(2, 6), gripper=torch.tensor([1.0, 2.0]))
    assert action[:, -1].tolist() == [1.0, 2.0]


def test_ur_bad_inputs_raise_clear_errors():
    t = URScriptPrimitiveTransform()
    pose = RobotMacroAction.reach_pose(position=torch.zeros(1, 3))
    with pytest.raises(TypeError, match=r"reach_pose\(\.\.\.\) needs a Cartesian solver"):
        t.inv(_arm_td(pose))  # a pose without a solver is never silently held
    masked = RobotMacroAction.reach_pose(position=torch.zeros(1, 3), orientation_mask=(1.0, 1.0, 0.0))
    with pytest.raises(TypeError, match=r"orientation_mask.*does not declare"):
        URScriptPrimitiveTransform(cartesian_solver=_shift_solver).inv(_arm_td(masked))
    cart = RobotMacroAction.reach_pose(position=torch.zeros(1, 3), path="cartesian")
    with pytest.raises(TypeError, match=r"\['waypoints'\]"):
        URScriptPrimitiveTransform(cartesian_solver=_shift_solver).inv(_arm_td(cart))
    with pytest.raises(ValueError, match=r"returned shape \[1, 3\]; expected the start action's \[1, 7\]"):
        URScriptPrimitiveTransform(cartesian_solver=lambda p, s: p[..., :3]).inv(_arm_td(pose))
    bad = RobotMacroAction.wait()
    bad.mode[0] = 9
    with pytest.raises(ValueError, match=r"\('action', 'mode'\).*0\.\.5, got \[9\]"):
        t.inv(_arm_td(bad))
    with pytest.raises(RuntimeError, match="robot_home_qpos"):
        t.inv(_arm_td(RobotMacroAction.reset()))
    with pytest.raises(KeyError, match="no .mode. field"):
        t.inv(_arm_td(TensorDict(joints=torch.zeros(1, 6), batch_size=[1])))
    with pytest.raises(ValueError, match="path must be 'joint' or 'cartesian'"):
        RobotMacroAction.reach_pose(position=torch.zeros(3), path="linear")
    with pytest.raises(ValueError, match="gripper must be one of"):
        RobotMacroAction.reach_joints(joints=torch.zeros(6), gripper="half")
    with pytest.raises(ValueError, match="joints must have a trailing dim of 6"):
        RobotMacroAction.reach_joints(joints=torch.zeros(5))
    with pytest.raises(ValueError, match="action_dim must be >= 2"):
        URScriptPrimitiveTransform(action_dim=1)


# ---------------------------------------------------------------------------------------------- satellite
def _sat_td(action, bus=(1.0, 0.0, 0.0, 0.0), omega=(0.0, 0.0, 0.0), n=4, theta=None):
    theta = torch.zeros(n) if theta is None else theta
    return TensorDict(
        action=action,
        bus_quat=torch.tensor([bus]),
        bus_omega=torch.tensor([omega]),
        gimbal_angles=torch.cat([theta.sin(), theta.cos()]).unsqueeze(0),
        batch_size=[1],
    )


@pytest.mark.parametrize("n", [4, 6])
def test_cmg_geometry_is_orthonormal_and_full_rank(n):
    g, r = cmg_geometry(n)
    torch.testing.assert_close(g.norm(dim=0), torch.ones(n))
    torch.testing.assert_close(r.norm(dim=0), torch.ones(n))
    assert (g * r).sum(0).abs().max() < 1e-6
    assert torch.linalg.matrix_rank(_cmg_jacobian(torch.zeros(n), g, r, 1.0)) == 3


def test_steering_torque_matches_the_pd_law():
    # a 0.2 rad error about z, no rate: the bus torque -J @ (scale * command) is k_p * error
    half = 0.1
    target = torch.tensor([[math.cos(half), 0.0, 0.0, math.sin(half)]])
    t = SatelliteAttitudeTransform(num_cmgs=4, action_scale=100.0, attitude_gain=2.0, macro_steps=1, settle_steps=0)
    command = t.inv(_sat_td(target))["action"][0, -1]
    assert command.abs().max() < 1.0  # not clamped
    g, r = cmg_geometry(4)
    torque = -_cmg_jacobian(torch.zeros(4), g, r, 1.0) @ (command * 100.0)
    torch.testing.assert_close(torque, torch.tensor([0.0, 0.0, 2.0 * 0.2]), atol=1e-5, rtol=1e-4)


def test_satellite_rate_damping_wait_and_action_forms():
    t = SatelliteAttitudeTransform(num_cmgs=6, macro_steps=2, settle_steps=1)
    identity = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    # at the target, a spinning bus is damped: a non-zero command
    assert t.inv(_sat_td(identity, omega=(0.0, 0.0, 0.3), n=6))["action"].abs().sum() > 0
    for action in (
        identity,
        TensorDict(attitude=identity, batch_size=[1]),
        SatelliteMacroAction.slew_attitude(identity),
    ):
        out = t.inv(_sat_td(action, n=6))["action"]
        assert out.abs().sum() == 0
    wait = TensorDict(mode=torch.tensor([[0]]), target=torch.tensor([[0.0, 1.0, 0.0, 0.0]]), batch_size=[1])
    assert t.inv(_sat_td(wait, n=6))["action"].abs().sum() == 0
    slew = SatelliteMacroAction.slew_attitude(torch.tensor([[0.0, 1.0, 0.0, 0.0]]), steps=4, settle_steps=2)
    assert t.inv(_sat_td(slew, n=6))["action"].shape == (1, 6, 6)


def test_satellite_spec_and_bad_inputs():
    t = SatelliteAttitudeTransform()
    spec = Composite(
        full_action_spec=Composite(action=Bounded(-1.0, 1.0, shape=(2, 4)), shape=(2,)),
        full_observation_spec=Composite(bus_quat=Unbounded((2, 4), dtype=torch.float64), shape=(2,)),
        shape=(2,),
    )
    out = t.transform_input_spec(spec)["full_action_spec", "action"]
    assert out["target"].dtype == torch.float64 and out["target"].shape == (2, 4)
    with pytest.raises(KeyError, match=r"lacks \['bus_omega', 'gimbal_angles'\]"):
        t.inv(TensorDict(action=torch.ones(1, 4), bus_quat=torch.ones(1, 4), batch_size=[1]))
    with pytest.raises(ValueError, match=r"'action' must have shape \[1, 4\].*got \[1, 3\]"):
        t.inv(_sat_td(torch.ones(1, 3)))
    with pytest.raises(KeyError, match="no .target. or .attitude. or .target_quat. field"):
        t.inv(_sat_td(TensorDict(goal=torch.ones(1, 4), batch_size=[1])))
    with pytest.raises(ValueError, match="'gimbal_angles' must hold"):
        t.inv(_sat_td(torch.ones(1, 4), n=6))
    with pytest.raises(ValueError, match="num_cmgs must be 4"):
        SatelliteAttitudeTransform(num_cmgs=5)
    with pytest.raises(ValueError, match="trailing dim of 4"):
        SatelliteMacroAction.slew_attitude(torch.ones(3))
