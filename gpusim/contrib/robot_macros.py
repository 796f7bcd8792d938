"""UR-style arm macros: :class:`RobotMacroAction` commands expanded by
:class:`URScriptPrimitiveTransform` into joint-position + gripper action sequences.

The low-level action is ``action_dim - 1`` arm joint targets followed by one gripper command
(a six-joint UR arm: 7). A :class:`RobotMacroAction` row asks for one of:

* ``WAIT``: hold the arm where it is;
* ``REACH_JOINTS``: interpolate the arm to ``joints``;
* ``REACH_POSE``: solve a Cartesian pose (``position`` + ``(w, x, y, z)`` ``quaternion``, a zero
  quaternion meaning "position only") to joints with a :class:`CartesianSolver`, then interpolate
  (``path="cartesian"``: the solver gives every waypoint of the straight Cartesian path);
* ``OPEN_GRIPPER`` / ``CLOSE_GRIPPER``: interpolate the gripper command, the arm held;
* ``RESET``: ``REACH_JOINTS`` to the parent env's ``robot_home_qpos``.

The start of every row is the observed state: ``robot_qpos_key`` (arm joints) and the first
entry of ``gripper_qpos_key``. The ``gripper`` field of arm moves (``"open"`` / ``"closed"`` /
``"keep"``, or a raw ``gripper_command``) is applied from the first action of the sequence;
the gripper primitives interpolate it. Every row of a batch may ask for a different primitive;
the transform resolves all of them with tensor selects. What needs the host (the durations, which
primitives are present, whether a constraint is asked for) is read in one transfer per expansion.

This is TorchRL's ``torchrl.envs.URScriptPrimitiveTransform`` (its cube-to-bowl manipulation
preset); gpusim ships no MuJoCo arm, so a Cartesian solver comes from the user or from a parent
env's ``_cartesian_pose_to_joint_target``.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(action=RobotMacroAction.reach_joints(joints=torch.ones(1, 6), steps=2),
    ...                 robot_qpos=torch.zeros(1, 6), gripper_qpos=torch.zeros(1, 2), batch_size=[1])
    >>> URScriptPrimitiveTransform().inv(td)["action"][0, :, 0].tolist()
    [0.5, 1.0]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import torch
from tensordict import NonTensorData, TensorDictBase
from tensordict.utils import NestedKey

from gpusim.specs import Categorical, Unbounded
from gpusim.transforms._spec_utils import fmt_key
from gpusim.transforms.macro import (
    MacroAction,
    MacroPrimitive,
    MacroPrimitiveTransform,
    _as_tuple,
    _batched_target,
)

__all__ = [
    "CartesianSolver",
    "URScriptPrimitive",
    "RobotMacroActionMode",
    "RobotMacroAction",
    "URScriptPrimitiveTransform",
]

GripperCommand = Literal["keep", "open", "closed"]


@runtime_checkable
class CartesianSolver(Protocol):
    """The Cartesian inverse-kinematics hook of :class:`URScriptPrimitiveTransform`.

    ``solver(target_pose, start_action, *, orientation_mask=None, waypoints=None)``:

    * ``target_pose``: ``[*batch, 7]``, a world-frame position then a ``(w, x, y, z)``
      quaternion (all zeros: the orientation is free);
    * ``start_action``: ``[*batch, action_dim]``, the current joints (to seed the solve) and the
      gripper command (to copy through);
    * ``orientation_mask`` (optional keyword): ``[*batch, 3]`` weights of the world-frame rotation
      error per axis (0 frees rotation about that axis; non-finite: no mask for that row);
    * ``waypoints`` (optional keyword): solve every one of ``waypoints`` points of the straight
      Cartesian path and return ``[*batch, waypoints, action_dim]``.

    It returns ``[*batch, action_dim]`` (``[*batch, waypoints, action_dim]`` with ``waypoints``).
    A plain two-argument callable is a valid solver: the transform passes a keyword only when
    the solver declares it, and raises ``TypeError`` when a macro action needs one it lacks.

    Examples:
        >>> def solver(target_pose, start_action):
        ...     return start_action
        >>> isinstance(solver, CartesianSolver)
        True
    """

    def __call__(
        self,
        target_pose: torch.Tensor,
        start_action: torch.Tensor,
        *,
        orientation_mask: torch.Tensor | None = None,
        waypoints: int | None = None,
    ) -> torch.Tensor:
        """Solves ``target_pose`` from ``start_action`` (see the class doc)."""
        ...  # pragma: no cover


class URScriptPrimitive(IntEnum):
    """URScript-style primitive ids (``WAIT`` / ``MOVEJ`` share the generic ``WAIT`` / ``MOVE``).

    Examples:
        >>> int(URScriptPrimitive.MOVEL), str(URScriptPrimitive.CLOSE_GRIPPER)
        (2, 'close_gripper')
    """

    WAIT = int(MacroPrimitive.WAIT)
    MOVEJ = int(MacroPrimitive.MOVE)
    MOVEL = 2
    OPEN_GRIPPER = 3
    CLOSE_GRIPPER = 4

    def __str__(self) -> str:
        return self.name.lower()


class RobotMacroActionMode(IntEnum):
    """The ``mode`` values of :class:`RobotMacroAction`: the URScript primitives plus ``RESET``.

    Examples:
        >>> int(RobotMacroActionMode.REACH_POSE), int(RobotMacroActionMode.RESET)
        (2, 5)
    """

    WAIT = int(URScriptPrimitive.WAIT)
    REACH_JOINTS = int(URScriptPrimitive.MOVEJ)
    REACH_POSE = int(URScriptPrimitive.MOVEL)
    OPEN_GRIPPER = int(URScriptPrimitive.OPEN_GRIPPER)
    CLOSE_GRIPPER = int(URScriptPrimitive.CLOSE_GRIPPER)
    RESET = len(URScriptPrimitive)


class _ResetSentinel:
    """``RobotMacroAction.RESET``: a whole-batch reset command with the transform's durations."""

    def __repr__(self) -> str:
        return "RobotMacroAction.RESET"


_GRIPPER_CODES = {"keep": -1, "open": 0, "closed": 1}


def _rows(value: Any, dim: int, name: str, like: torch.Tensor | None = None) -> torch.Tensor:
    value = torch.as_tensor(value) if like is None else torch.as_tensor(value, dtype=like.dtype, device=like.device)
    value = _batched_target(value, name)
    if value.shape[-1] != dim:
        raise ValueError(f"{name} must have a trailing dim of {dim}, got shape {list(value.shape)}")
    return value


def _gripper_code(gripper: str) -> int:
    if gripper not in _GRIPPER_CODES:
        raise ValueError(f"gripper must be one of 'keep', 'open', 'closed', got {gripper!r}")
    return _GRIPPER_CODES[gripper]


class RobotMacroAction(MacroAction):
    """A readable UR-arm macro command (build it with the class methods).

    Fields (``[*batch, k]``): ``position`` (3), ``quaternion`` (4, ``(w, x, y, z)``), ``joints``
    (6), ``gripper`` (int64: 0 open, 1 closed, -1 keep), ``gripper_command`` (a raw gripper
    command overriding ``gripper``; NaN: none), ``orientation_mask`` (3; NaN: none) and ``path``
    (int64: :attr:`PATH_JOINT` or :attr:`PATH_CARTESIAN`), plus ``mode`` / ``steps`` /
    ``settle_steps``. ``RobotMacroAction.RESET`` stored as the action asks the transform for
    ``reset()`` with its default durations.

    Examples:
        >>> import torch
        >>> a = RobotMacroAction.reach_pose(position=torch.zeros(2, 3), gripper="closed", steps=8)
        >>> a.batch_size, a.gripper[:, 0].tolist(), int(a.mode[0])
        (torch.Size([2]), [1, 1], 2)
    """

    position: torch.Tensor
    quaternion: torch.Tensor
    joints: torch.Tensor
    gripper: torch.Tensor
    gripper_command: torch.Tensor
    orientation_mask: torch.Tensor | None = None
    path: torch.Tensor | None = None

    GRIPPER_KEEP: ClassVar[int] = -1
    GRIPPER_OPEN: ClassVar[int] = 0
    GRIPPER_CLOSED: ClassVar[int] = 1
    PATH_JOINT: ClassVar[int] = 0
    PATH_CARTESIAN: ClassVar[int] = 1
    RESET: ClassVar[_ResetSentinel]

    @classmethod
    def reach_pose(
        cls,
        *,
        position: torch.Tensor,
        quaternion: torch.Tensor | None = None,
        orientation_mask: torch.Tensor | Sequence[float] | None = None,
        path: Literal["joint", "cartesian"] = "joint",
        gripper: GripperCommand = "keep",
        gripper_command: float | torch.Tensor | None = None,
        steps: int = 16,
        settle_steps: int = 0,
    ) -> RobotMacroAction:
        """Reach a Cartesian end-effector pose.

        Args:
            position: ``[*batch, 3]`` (or ``[3]``), world frame.
            quaternion: ``[*batch, 4]`` ``(w, x, y, z)``; omitted: the orientation is free.
            orientation_mask: ``[*batch, 3]`` (or 3 floats) per-axis weights of the rotation
                error (needs a solver declaring ``orientation_mask``).
            path: ``"joint"`` (interpolate joints to the endpoint solution) or ``"cartesian"``
                (solve every waypoint; needs a solver declaring ``waypoints``).
            gripper: ``"keep"``, ``"open"`` or ``"closed"``.
            gripper_command: a raw gripper command instead of the open/closed presets.
            steps: interpolated low-level actions.
            settle_steps: held repeats of the final action.

        Returns:
            The command.

        Raises:
            ValueError: a bad ``path`` / ``gripper`` or trailing dim.

        Examples:
            >>> import torch
            >>> RobotMacroAction.reach_pose(position=torch.zeros(3)).quaternion.tolist()  # free
            [[0.0, 0.0, 0.0, 0.0]]
        """
        if path not in ("joint", "cartesian"):
            raise ValueError(f"path must be 'joint' or 'cartesian', got {path!r}")
        position = _rows(position, 3, "position")
        if not position.is_floating_point():
            position = position.to(torch.get_default_dtype())
        if quaternion is None:
            quaternion = position.new_zeros((*position.shape[:-1], 4))
        if orientation_mask is not None:
            orientation_mask = _rows(orientation_mask, 3, "orientation_mask", like=position)
        return cls._build(
            RobotMacroActionMode.REACH_POSE,
            position=position,
            quaternion=quaternion,
            orientation_mask=orientation_mask,
            path=cls.PATH_CARTESIAN if path == "cartesian" else cls.PATH_JOINT,
            gripper=gripper,
            gripper_command=gripper_command,
            steps=steps,
            settle_steps=settle_steps,
        )

    @classmethod
    def reach_joints(
        cls,
        *,
        joints: torch.Tensor,
        gripper: GripperCommand = "keep",
        gripper_command: float | torch.Tensor | None = None,
        steps: int = 16,
        settle_steps: int = 0,
    ) -> RobotMacroAction:
        """Reach the six arm joint targets ``joints`` (``[*batch, 6]`` or ``[6]``).

        Args:
            joints: the joint targets.
            gripper: ``"keep"``, ``"open"`` or ``"closed"``.
            gripper_command: a raw gripper command instead of the presets.
            steps: interpolated low-level actions.
            settle_steps: held repeats of the final action.

        Returns:
            The command.

        Examples:
            >>> import torch
            >>> RobotMacroAction.reach_joints(joints=torch.ones(6)).joints.shape
            torch.Size([1, 6])
        """
        joints = _rows(joints, 6, "joints")
        if not joints.is_floating_point():
            joints = joints.to(torch.get_default_dtype())
        return cls._build(
            RobotMacroActionMode.REACH_JOINTS,
            joints=joints,
            gripper=gripper,
            gripper_command=gripper_command,
            steps=steps,
            settle_steps=settle_steps,
        )

    @classmethod
    def home(
        cls,
        *,
        joints: torch.Tensor,
        gripper: GripperCommand = "open",
        gripper_command: float | torch.Tensor | None = None,
        steps: int = 16,
        settle_steps: int = 0,
    ) -> RobotMacroAction:
        """Return to an explicit home configuration (``reach_joints`` with an open gripper).

        Args:
            joints: the home joints, ``[*batch, 6]``.
            gripper: the gripper preset (default ``"open"``).
            gripper_command: a raw gripper command instead.
            steps: interpolated low-level actions.
            settle_steps: held repeats.

        Returns:
            The command.

        Examples:
            >>> import torch
            >>> RobotMacroAction.home(joints=torch.zeros(1, 6)).gripper.tolist()
            [[0]]
        """
        return cls.reach_joints(
            joints=joints, gripper=gripper, gripper_command=gripper_command, steps=steps, settle_steps=settle_steps
        )

    @classmethod
    def reset(
        cls,
        *,
        gripper: GripperCommand = "open",
        gripper_command: float | torch.Tensor | None = None,
        steps: int = 16,
        settle_steps: int = 0,
        batch_size: Sequence[int] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> RobotMacroAction:
        """Go to the parent env's home posture (its ``robot_home_qpos``).

        Args:
            gripper: the gripper preset (default ``"open"``).
            gripper_command: a raw gripper command instead.
            steps: interpolated low-level actions.
            settle_steps: held repeats.
            batch_size: the rows (default ``[1]``).
            dtype: float dtype of the pose fields.
            device: their device.

        Returns:
            The command.

        Examples:
            >>> int(RobotMacroAction.reset(batch_size=[2]).mode[1])
            5
        """
        return cls._empty(
            RobotMacroActionMode.RESET, gripper, gripper_command, steps, settle_steps, batch_size, dtype, device
        )

    @classmethod
    def open_gripper(
        cls,
        *,
        steps: int = 16,
        settle_steps: int = 0,
        batch_size: Sequence[int] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> RobotMacroAction:
        """Open the gripper, the arm held.

        Args:
            steps: interpolated low-level actions.
            settle_steps: held repeats.
            batch_size: the rows (default ``[1]``).
            dtype: float dtype of the pose fields.
            device: their device.

        Returns:
            The command.

        Examples:
            >>> int(RobotMacroAction.open_gripper().mode[0])
            3
        """
        return cls._empty(
            RobotMacroActionMode.OPEN_GRIPPER, "open", None, steps, settle_steps, batch_size, dtype, device
        )

    @classmethod
    def close_gripper(
        cls,
        *,
        command: float | torch.Tensor | None = None,
        steps: int = 16,
        settle_steps: int = 0,
        batch_size: Sequence[int] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> RobotMacroAction:
        """Close the gripper (to ``command`` when given), the arm held.

        Args:
            command: a raw gripper command instead of the transform's ``close_gripper_ctrl``.
            steps: interpolated low-level actions.
            settle_steps: held repeats.
            batch_size: the rows (default ``[1]``).
            dtype: float dtype of the pose fields.
            device: their device.

        Returns:
            The command.

        Examples:
            >>> RobotMacroAction.close_gripper(command=100.0).gripper_command.tolist()
            [[100.0]]
        """
        return cls._empty(
            RobotMacroActionMode.CLOSE_GRIPPER, "closed", command, steps, settle_steps, batch_size, dtype, device
        )

    @classmethod
    def wait(
        cls,
        *,
        gripper: GripperCommand = "keep",
        gripper_command: float | torch.Tensor | None = None,
        steps: int = 1,
        settle_steps: int = 0,
        batch_size: Sequence[int] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> RobotMacroAction:
        """Hold the arm for ``steps`` low-level steps.

        Args:
            gripper: the gripper preset (default ``"keep"``).
            gripper_command: a raw gripper command instead.
            steps: held low-level actions.
            settle_steps: more held actions.
            batch_size: the rows (default ``[1]``).
            dtype: float dtype of the pose fields.
            device: their device.

        Returns:
            The command.

        Examples:
            >>> int(RobotMacroAction.wait(steps=3).steps[0])
            3
        """
        return cls._empty(
            RobotMacroActionMode.WAIT, gripper, gripper_command, steps, settle_steps, batch_size, dtype, device
        )

    @classmethod
    def _empty(cls, mode, gripper, gripper_command, steps, settle_steps, batch_size, dtype, device) -> RobotMacroAction:
        batch = torch.Size([1] if batch_size is None else batch_size)
        position = torch.zeros((*batch, 3), dtype=dtype or torch.get_default_dtype(), device=device or "cpu")
        return cls._build(
            mode,
            position=position,
            gripper=gripper,
            gripper_command=gripper_command,
            steps=steps,
            settle_steps=settle_steps,
        )

    @classmethod
    def _build(
        cls,
        mode: int,
        *,
        position: torch.Tensor | None = None,
        quaternion: torch.Tensor | None = None,
        joints: torch.Tensor | None = None,
        orientation_mask: torch.Tensor | None = None,
        path: int = 0,
        gripper: str = "keep",
        gripper_command: float | torch.Tensor | None = None,
        steps: int = 16,
        settle_steps: int = 0,
    ) -> RobotMacroAction:
        ref = position if position is not None else joints
        batch, dtype, device = ref.shape[:-1], ref.dtype, ref.device
        rows = (*batch,)
        if position is None:
            position = torch.zeros((*rows, 3), dtype=dtype, device=device)
        if quaternion is None:
            quaternion = torch.zeros((*rows, 4), dtype=dtype, device=device)
            quaternion[..., 0] = 1.0
        else:
            quaternion = _rows(quaternion, 4, "quaternion", like=position)
        if tuple(quaternion.shape[:-1]) != rows:
            raise ValueError(
                f"quaternion must have the rows {list(rows)} of position, got shape {list(quaternion.shape)}"
            )
        if joints is None:
            joints = torch.zeros((*rows, 6), dtype=dtype, device=device)
        mask = torch.full((*rows, 3), float("nan"), dtype=dtype, device=device)
        if orientation_mask is not None:
            mask = orientation_mask.expand_as(mask).clone()
        command = torch.full((*rows, 1), float("nan"), dtype=dtype, device=device)
        if gripper_command is not None:
            value = torch.as_tensor(gripper_command, dtype=dtype, device=device)
            command = (value.reshape(*rows, 1) if value.numel() > 1 else value.reshape(1)).expand_as(command).clone()
        code = _gripper_code(gripper)
        return cls(
            position=position,
            quaternion=quaternion,
            joints=joints,
            gripper=torch.full((*rows, 1), code, dtype=torch.long, device=device),
            gripper_command=command,
            orientation_mask=mask,
            path=torch.full((*rows, 1), int(path), dtype=torch.long, device=device),
            batch_size=batch,
            **cls._durations(mode, steps, settle_steps, batch, device),
        )


RobotMacroAction.RESET = _ResetSentinel()


def _undeclared_keywords(solver: Callable, names: Sequence[str]) -> list[str]:
    """The ``names`` that ``solver``'s signature cannot take as keywords."""
    try:
        params = inspect.signature(solver).parameters.values()
    except (TypeError, ValueError):  # no introspectable signature: trust it
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return []
    accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return [n for n in names if n not in accepted]


_FEATURES = {
    "orientation_mask": "RobotMacroAction.reach_pose(orientation_mask=...)",
    "waypoints": "RobotMacroAction.reach_pose(path='cartesian')",
}


class URScriptPrimitiveTransform(MacroPrimitiveTransform):
    """Expands :class:`RobotMacroAction` commands into arm-joint + gripper action sequences.

    See the module doc for the primitives. A raw ``[*batch, action_dim]`` tensor under
    ``action_key`` is a direct low-level target. The policy-facing action spec
    (``transform_input_spec``) is ``(action_key, f)`` for ``f`` in ``mode`` (``Categorical``
    over :class:`RobotMacroActionMode`), ``position``, ``quaternion``, ``joints`` and ``gripper``
    (``Categorical(3)``: 0 open, 1 closed, 2 keep).

    Args:
        execute: return ``Compose(MultiAction(...), transform)`` (see
            :class:`~gpusim.transforms.macro.MacroPrimitiveTransform`).
        multi_action_dim: the stack dim for ``MultiAction``.
        stack_rewards: ``MultiAction`` returns every low-level reward.
        stack_observations: ``MultiAction`` returns every low-level observation.
        action_key: the key of the command and of the sequence.
        robot_qpos_key: the observed arm joints (the start of the arm).
        gripper_qpos_key: the observed gripper joints (entry 0 is the start of the gripper).
        macro_steps: default interpolated actions.
        settle_steps: default held repeats.
        action_dim: arm joints + 1 gripper command (default 7).
        cartesian_solver: a :class:`CartesianSolver` for ``REACH_POSE``; default: the parent
            env's ``_cartesian_pose_to_joint_target``.
        open_gripper_ctrl: the gripper command of ``"open"``.
        close_gripper_ctrl: the gripper command of ``"closed"``.

    Raises:
        ValueError: ``action_dim < 2``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(action=RobotMacroAction.close_gripper(steps=2), robot_qpos=torch.zeros(1, 6),
        ...                 gripper_qpos=torch.zeros(1, 2), batch_size=[1])
        >>> URScriptPrimitiveTransform().inv(td)["action"][0, :, -1].tolist()
        [127.5, 255.0]
    """

    primitive_enum = URScriptPrimitive

    WAIT = URScriptPrimitive.WAIT
    MOVEJ = URScriptPrimitive.MOVEJ
    MOVEL = URScriptPrimitive.MOVEL
    OPEN_GRIPPER = URScriptPrimitive.OPEN_GRIPPER
    CLOSE_GRIPPER = URScriptPrimitive.CLOSE_GRIPPER

    def __init__(
        self,
        *,
        execute: bool = False,
        multi_action_dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        action_key: NestedKey = "action",
        robot_qpos_key: NestedKey = "robot_qpos",
        gripper_qpos_key: NestedKey = "gripper_qpos",
        macro_steps: int = 16,
        settle_steps: int = 0,
        action_dim: int = 7,
        cartesian_solver: CartesianSolver | Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
        open_gripper_ctrl: float = 0.0,
        close_gripper_ctrl: float = 255.0,
    ) -> None:
        if int(action_dim) < 2:
            raise ValueError(f"action_dim must be >= 2 (arm joints + 1 gripper command), got {action_dim!r}")
        if cartesian_solver is not None and not callable(cartesian_solver):
            raise TypeError(f"cartesian_solver must be callable, got {type(cartesian_solver).__name__}")
        super().__init__(
            action_key=action_key, macro_steps=macro_steps, settle_steps=settle_steps, action_dim=action_dim
        )
        self.robot_qpos_key = robot_qpos_key
        self.gripper_qpos_key = gripper_qpos_key
        self.cartesian_solver = cartesian_solver
        self.open_gripper_ctrl = float(open_gripper_ctrl)
        self.close_gripper_ctrl = float(close_gripper_ctrl)

    @property
    def joint_dim(self) -> int:
        """The number of arm joints (``action_dim - 1``).

        Examples:
            >>> URScriptPrimitiveTransform().joint_dim
            6
        """
        return self.action_dim - 1

    def low_level_action(self, robot_qpos: torch.Tensor, gripper: float | torch.Tensor | None = None) -> torch.Tensor:
        """A ``[*batch, action_dim]`` action: the arm joints then the gripper command.

        Args:
            robot_qpos: ``[*batch, n]`` joints (the first ``action_dim - 1`` are used; missing
                ones are zero).
            gripper: the gripper command (a float, or a ``[*batch]`` / ``[*batch, 1]`` tensor);
                default ``open_gripper_ctrl``.

        Returns:
            The action.

        Examples:
            >>> import torch
            >>> URScriptPrimitiveTransform().low_level_action(torch.ones(2, 6), gripper=3.0)[:, -1].tolist()
            [3.0, 3.0]
        """
        batch = robot_qpos.shape[:-1]
        n = min(robot_qpos.shape[-1], self.joint_dim)
        arm = robot_qpos.new_zeros((*batch, self.joint_dim))
        arm[..., :n] = robot_qpos[..., :n]
        value = self.open_gripper_ctrl if gripper is None else gripper
        value = torch.as_tensor(value, dtype=robot_qpos.dtype, device=robot_qpos.device)
        if value.numel() == 1:
            value = value.reshape(1).expand(*batch, 1)
        else:
            value = value.reshape(*batch, 1)
        return torch.cat([arm, value], dim=-1)

    def current_action(
        self,
        tensordict: TensorDictBase,
        batch_shape: torch.Size,
        device: torch.device,
        dtype: torch.dtype,
        action_dim: int,
    ) -> torch.Tensor:
        """The observed state as an action: ``robot_qpos_key`` joints and gripper joint 0.

        Entries that are not observed are zero.

        Args:
            tensordict: the step input.
            batch_shape: the rows.
            device: the device of the start.
            dtype: its dtype.
            action_dim: ignored (``self.action_dim``).

        Returns:
            ``[*batch_shape, action_dim]``.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> td = TensorDict(robot_qpos=torch.ones(1, 6), gripper_qpos=torch.full((1, 2), 9.0), batch_size=[1])
            >>> URScriptPrimitiveTransform().current_action(td, td.batch_size, "cpu", torch.float32, 7).tolist()
            [[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0]]
        """
        start = torch.zeros((*batch_shape, self.action_dim), dtype=dtype, device=device)
        arm = tensordict.get(self.robot_qpos_key, None)
        if arm is not None:
            n = min(arm.shape[-1], self.joint_dim)
            start[..., :n] = arm[..., :n].to(dtype=dtype, device=device)
        grip = tensordict.get(self.gripper_qpos_key, None)
        if grip is not None:
            start[..., -1] = grip[..., 0].to(dtype=dtype, device=device)
        return start

    # ------------------------------------------------------------------ resolve
    def _obs_dtype(self, tensordict: TensorDictBase) -> torch.dtype:
        for key in (self.robot_qpos_key, self.gripper_qpos_key):
            value = tensordict.get(key, None)
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                return value.dtype
        return torch.get_default_dtype()

    def _field(
        self, tensordict: TensorDictBase, action: Any, name: str, dim: int, default: torch.Tensor
    ) -> torch.Tensor:
        if name not in set(action.keys(True, True)):
            return default
        value = action.get(name)
        if value is None:
            return default
        value = self._row_shape(tensordict, value, (*_as_tuple(self.action_key), name), dim)
        return value.to(dtype=default.dtype, device=default.device)

    def _resolve(self, tensordict: TensorDictBase, action: Any) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        steps, settle, start, target, _ = self._resolve_all(tensordict, action)
        return start, target, steps, settle

    def _resolve_all(self, tensordict: TensorDictBase, action: Any):
        """``(steps, settle, start, target, waypoint_plan)``; the plan is ``None`` or
        ``(rows [*batch, 1] bool, waypoints [*batch, steps, action_dim])``."""
        if isinstance(action, NonTensorData):
            action = action.data
        batch = tensordict.batch_size
        dtype = self._obs_dtype(tensordict)
        device = tensordict.device or getattr(action, "device", None) or torch.device("cpu")
        if action is None:
            raise self._missing_action()
        if isinstance(action, _ResetSentinel):
            action = RobotMacroAction.reset(
                batch_size=batch, dtype=dtype, device=device, steps=self.macro_steps, settle_steps=self.settle_steps
            )
        start = self.current_action(tensordict, batch, device, dtype, self.action_dim)
        if isinstance(action, torch.Tensor):
            target = self._row_shape(tensordict, action, self.action_key, self.action_dim).to(
                dtype=dtype, device=device
            )
            return self.macro_steps, self.settle_steps, start, target, None
        self._structured_keys(action, ("mode",), "a RobotMacroAction, a TensorDict or a low-level action tensor")
        mode_key = (*_as_tuple(self.action_key), "mode")
        mode = self._mode(tensordict, action).to(device)
        M = RobotMacroActionMode
        pose_rows = mode == int(M.REACH_POSE)
        path = self._field(tensordict, action, "path", 1, torch.zeros_like(mode))
        cartesian_rows = pose_rows & (path == RobotMacroAction.PATH_CARTESIAN)
        mask = self._field(
            tensordict, action, "orientation_mask", 3, torch.full((*batch, 3), float("nan"), dtype=dtype, device=device)
        )
        masked_rows = pose_rows & torch.isfinite(mask).any(-1, keepdim=True)
        reset_rows = mode == int(M.RESET)
        bad_mode = (mode < 0) | (mode > int(M.RESET))
        steps, settle, (any_pose, any_cartesian, any_mask, any_reset, any_bad) = self._durations(
            tensordict, action, pose_rows, cartesian_rows, masked_rows, reset_rows, bad_mode
        )
        if any_bad:
            raise ValueError(
                f"{type(self).__name__}: {fmt_key(mode_key)} must hold RobotMacroActionMode values "
                f"0..{int(M.RESET)}, got {sorted(set(mode.reshape(-1).tolist()))}"
            )

        # the arm destination of every row
        arm = start[..., : self.joint_dim]
        joints = self._field(tensordict, action, "joints", self.joint_dim, arm)
        if any_reset:
            joints = torch.where(reset_rows, self._home_qpos(batch, dtype, device), joints)
        move_rows = (mode == int(M.REACH_JOINTS)) | reset_rows
        arm_target = torch.where(move_rows, joints, arm)
        pose = mask_arg = None
        if any_pose:
            position = self._field(
                tensordict, action, "position", 3, torch.zeros((*batch, 3), dtype=dtype, device=device)
            )
            identity = torch.zeros((*batch, 4), dtype=dtype, device=device)
            identity[..., 0] = 1.0
            quaternion = self._field(tensordict, action, "quaternion", 4, identity)
            pose = torch.cat([position, quaternion], dim=-1)
            mask_arg = mask if any_mask else None
            solved = self._solve(pose, start, mask_arg, None, any_cartesian)
            arm_target = torch.where(pose_rows, solved[..., : self.joint_dim], arm_target)

        # the gripper: the mode implies open/closed for the gripper primitives; a finite raw
        # command overrides the preset
        code = self._field(
            tensordict, action, "gripper", 1, torch.full_like(mode, RobotMacroAction.GRIPPER_KEEP)
        ).long()
        code = torch.where(mode == int(M.OPEN_GRIPPER), RobotMacroAction.GRIPPER_OPEN, code)
        code = torch.where(mode == int(M.CLOSE_GRIPPER), RobotMacroAction.GRIPPER_CLOSED, code)
        grip_now = start[..., -1:]
        grip = torch.where(
            code == RobotMacroAction.GRIPPER_OPEN,
            torch.full_like(grip_now, self.open_gripper_ctrl),
            torch.where(
                code == RobotMacroAction.GRIPPER_CLOSED, torch.full_like(grip_now, self.close_gripper_ctrl), grip_now
            ),
        )
        raw = self._field(tensordict, action, "gripper_command", 1, torch.full_like(grip_now, float("nan")))
        grip = torch.where(torch.isfinite(raw), raw, grip)
        # arm moves apply the gripper command at once; the gripper primitives interpolate it
        gripper_primitive = (mode == int(M.OPEN_GRIPPER)) | (mode == int(M.CLOSE_GRIPPER))
        start = torch.cat([arm, torch.where(gripper_primitive, grip_now, grip)], dim=-1)
        target = torch.cat([arm_target, grip], dim=-1)

        plan = None
        if any_cartesian:
            waypoints = self._solve(pose, start, mask_arg, steps, True)
            expected = (*batch, steps, self.action_dim)
            if tuple(waypoints.shape) != expected:
                raise ValueError(
                    f"{type(self).__name__}: the Cartesian solver returned shape {list(waypoints.shape)} for "
                    f"waypoints={steps}; expected {list(expected)}"
                )
            plan = (cartesian_rows, waypoints.to(dtype=dtype, device=device))
        return steps, settle, start, target, plan

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(self.action_key, None)
        steps, settle, start, target, plan = self._resolve_all(tensordict, action)
        sequence = self._interpolate(start, target, steps, settle)
        if plan is not None:
            rows, waypoints = plan
            j = self.joint_dim
            arm = torch.cat(
                [waypoints[..., :j], waypoints[..., -1:, :j].expand(*waypoints.shape[:-2], settle, j)], dim=-2
            )
            sequence = torch.cat([torch.where(rows.unsqueeze(-2), arm, sequence[..., :j]), sequence[..., j:]], dim=-1)
        return tensordict.set(self.action_key, sequence)

    def _solve(
        self,
        pose: torch.Tensor,
        start: torch.Tensor,
        mask: torch.Tensor | None,
        waypoints: int | None,
        cartesian_requested: bool,
    ) -> torch.Tensor:
        kwargs: dict[str, Any] = {}
        if mask is not None:
            kwargs["orientation_mask"] = mask
        if waypoints is not None:
            kwargs["waypoints"] = waypoints
        requested = dict(kwargs)
        if cartesian_requested:
            requested.setdefault("waypoints", None)
        solver = self.cartesian_solver
        if solver is None:
            env = self._find_parent_env_with("_cartesian_pose_to_joint_target")
            solver = None if env is None else env._cartesian_pose_to_joint_target
        if solver is None:
            asked = " and ".join(_FEATURES[n] for n in sorted(requested)) or "RobotMacroAction.reach_pose(...)"
            raise TypeError(
                f"{type(self).__name__}: {asked} needs a Cartesian solver (the CartesianSolver contract): pass "
                "cartesian_solver= or use a parent env with _cartesian_pose_to_joint_target; none is configured"
            )
        missing = _undeclared_keywords(solver, sorted(kwargs))
        if missing:
            asked = " and ".join(_FEATURES[n] for n in missing)
            raise TypeError(
                f"{type(self).__name__}: {asked} needs a Cartesian solver taking the keyword(s) {missing} "
                f"(the CartesianSolver contract); the configured solver {solver!r} does not declare them"
            )
        out = solver(pose, start, **kwargs)
        if waypoints is None and tuple(out.shape) != tuple(start.shape):
            raise ValueError(
                f"{type(self).__name__}: the Cartesian solver returned shape {list(out.shape)}; expected the "
                f"start action's {list(start.shape)}"
            )
        return out

    def _home_qpos(self, batch: torch.Size, dtype: torch.dtype, device: Any) -> torch.Tensor:
        env = self._find_parent_env_with("robot_home_qpos")
        home = None if env is None else env.robot_home_qpos
        if callable(home):
            home = home()
        if home is None:
            raise RuntimeError(
                f"{type(self).__name__}: RobotMacroAction RESET needs a parent env exposing robot_home_qpos "
                "(none found); use RobotMacroAction.home(joints=...) with explicit joints instead"
            )
        home = torch.as_tensor(home, dtype=dtype, device=device)
        if home.shape[-1:] != (self.joint_dim,):
            raise ValueError(
                f"{type(self).__name__}: robot_home_qpos must have a trailing dim of {self.joint_dim}, got "
                f"shape {list(home.shape)}"
            )
        return home.expand(*batch, self.joint_dim)

    # ------------------------------------------------------------------ specs
    def _macro_fields(self, batch: torch.Size, device: Any, dtype: torch.dtype, action_dim: int) -> dict:
        """The :class:`RobotMacroAction` fields a policy sets (see the class doc)."""

        def real(dim: int) -> Unbounded:
            return Unbounded(shape=(*batch, dim), dtype=dtype, device=device)

        return {
            "mode": Categorical(len(RobotMacroActionMode), shape=(*batch, 1), dtype=torch.long, device=device),
            "position": real(3),
            "quaternion": real(4),
            "joints": real(self.joint_dim),
            "gripper": Categorical(3, shape=(*batch, 1), dtype=torch.long, device=device),
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(action_key={self.action_key!r}, macro_steps={self.macro_steps}, "
            f"action_dim={self.action_dim}, solver={'yes' if self.cartesian_solver is not None else 'parent'})"
        )
