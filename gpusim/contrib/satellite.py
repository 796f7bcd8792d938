"""Satellite attitude slews: a desired attitude quaternion expanded into control-moment-gyro
(CMG) gimbal-rate sequences by :class:`SatelliteAttitudeTransform` (TorchRL's
``torchrl.envs.SatelliteAttitudeTransform``).

The transform reads the satellite's observations ``bus_quat`` (attitude, ``(w, x, y, z)``),
``bus_omega`` (body rates) and ``gimbal_angles`` (``[sin(theta_1..N), cos(theta_1..N)]``), and
computes, per row, a proportional-derivative steering law in body-rate coordinates:

* the attitude error ``e = log(conj(bus_quat) * target)`` (axis times angle, shortest arc);
* the desired body acceleration ``a = k_p e - k_d omega``;
* the gimbal rates ``-pinv(J(theta)) a``, where column ``i`` of the CMG Jacobian ``J`` is
  ``h (g_i x r_i(theta_i))`` (gimbal axis ``g_i``, rotor axis ``r_i`` rotated by ``theta_i``
  about ``g_i``; the bus feels the reaction, hence the minus sign);
* divided by the env's ``action_scale`` and clamped to ``[-1, 1]``.

That command is the target of the generic linear expansion (from a zero command). Cluster
geometries: a 4-CMG pyramid (gimbal axes in the body ``xy`` plane, rotors skewed by
``atan(sqrt(2))`` from ``+z``) and a 6-CMG cluster with two gimbals per body axis.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(action=torch.tensor([[1.0, 0.0, 0.0, 0.0]]), bus_quat=torch.tensor([[1.0, 0.0, 0.0, 0.0]]),
    ...                 bus_omega=torch.zeros(1, 3), gimbal_angles=torch.tensor([[0.0] * 4 + [1.0] * 4]), batch_size=[1])
    >>> t = SatelliteAttitudeTransform(num_cmgs=4, macro_steps=2, settle_steps=0)
    >>> t.inv(td)["action"].abs().sum().item()  # already there: no command
    0.0
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms.macro import MacroPrimitive, MacroPrimitiveTransform, TargetMacroAction, _as_tuple

__all__ = ["SatelliteMacroAction", "SatelliteAttitudeTransform", "cmg_geometry"]

_OBSERVATIONS = ("bus_quat", "bus_omega", "gimbal_angles")
_TARGET_FIELDS = ("target", "attitude", "target_quat")


def _unit_or_identity(q: torch.Tensor) -> torch.Tensor:
    """``q / |q|``; a (near) zero quaternion becomes the identity."""
    norm = q.norm(dim=-1, keepdim=True)
    identity = torch.zeros_like(q)
    identity[..., 0] = 1.0
    return torch.where(norm > 1e-12, q / norm.clamp_min(1e-12), identity)


def _quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product of ``(w, x, y, z)`` quaternions."""
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    w = aw * bw - (av * bv).sum(-1, keepdim=True)
    v = aw * bv + bw * av + torch.linalg.cross(av, bv, dim=-1)
    return torch.cat([w, v], dim=-1)


def _quat_log(q: torch.Tensor) -> torch.Tensor:
    """Rotation vector (axis * angle, angle in ``[0, pi]``) of a unit quaternion."""
    q = torch.where(q[..., :1] < 0, -q, q)  # q and -q: the same rotation; take the short arc
    v = q[..., 1:]
    s = v.norm(dim=-1, keepdim=True)
    angle = 2.0 * torch.atan2(s, q[..., :1].clamp(-1.0, 1.0))
    return v * (angle / s.clamp_min(1e-8))


def cmg_geometry(
    num_cmgs: int, *, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gimbal axes and rotor axes at zero gimbal angle of a CMG cluster, each ``[3, num_cmgs]``.

    ``4``: a pyramid, one CMG per side face (``+x, +y, -x, -y``): gimbal axes in the body
    ``xy`` plane, rotor axes skewed by ``atan(sqrt(2))`` (about 54.74 degrees) from ``+z``
    toward their face. ``6``: two CMGs per body axis, full rank at zero angles.

    Args:
        num_cmgs: 4 or 6.
        dtype: of the axes.
        device: of the axes.

    Returns:
        ``(gimbal_axes, rotor_axes)``, unit columns, each rotor axis orthogonal to its gimbal axis.

    Raises:
        ValueError: another ``num_cmgs``.

    Examples:
        >>> g, r = cmg_geometry(4)
        >>> g.shape, bool(((g * r).sum(0).abs() < 1e-6).all())
        (torch.Size([3, 4]), True)
    """
    if num_cmgs == 4:
        beta = math.atan(math.sqrt(2.0))
        sb, cb = math.sin(beta), math.cos(beta)
        faces = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)]  # outward normals of the faces
        gimbal = [(-fy, fx, 0.0) for fx, fy in faces]  # the face normal turned by +90 deg about z
        rotor = [(sb * fx, sb * fy, cb) for fx, fy in faces]
    elif num_cmgs == 6:
        x, y, z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
        gimbal = [y, z, z, x, x, y]
        rotor = [z, y, x, z, y, x]
    else:
        raise ValueError(f"num_cmgs must be 4 (pyramid) or 6, got {num_cmgs!r}")
    to = dict(dtype=dtype, device=device)
    return torch.tensor(gimbal, **to).T.contiguous(), torch.tensor(rotor, **to).T.contiguous()


def _cmg_jacobian(theta: torch.Tensor, gimbal: torch.Tensor, rotor: torch.Tensor, h: float) -> torch.Tensor:
    """``[*batch, 3, N]``: column ``i`` is ``h * g_i x r_i(theta_i)``."""
    cos, sin = theta.cos().unsqueeze(-2), theta.sin().unsqueeze(-2)  # [*batch, 1, N]
    g_x_r = torch.linalg.cross(gimbal, rotor, dim=0)
    g_dot_r = (gimbal * rotor).sum(0)
    r = cos * rotor + sin * g_x_r + (1.0 - cos) * g_dot_r * gimbal  # Rodrigues, [*batch, 3, N]
    return h * torch.linalg.cross(gimbal.expand_as(r), r, dim=-2)


class SatelliteMacroAction(TargetMacroAction):
    """A :class:`~gpusim.transforms.macro.TargetMacroAction` whose target is a desired attitude.

    Examples:
        >>> import torch
        >>> a = SatelliteMacroAction.slew_attitude(torch.tensor([2.0, 0.0, 0.0, 0.0]))
        >>> a.target.tolist(), int(a.steps[0]), int(a.settle_steps[0])
        ([[1.0, 0.0, 0.0, 0.0]], 36, 8)
    """

    @classmethod
    def slew_attitude(
        cls, target_quat: torch.Tensor, *, steps: int = 36, settle_steps: int = 8
    ) -> SatelliteMacroAction:
        """Steer toward the attitude ``target_quat`` (``[*batch, 4]`` ``(w, x, y, z)``; normalised).

        Args:
            target_quat: the desired attitude (a zero quaternion: the identity).
            steps: interpolated low-level commands.
            settle_steps: held repeats.

        Returns:
            The macro action.

        Raises:
            ValueError: ``target_quat`` whose trailing dim is not 4.

        Examples:
            >>> import torch
            >>> SatelliteMacroAction.slew_attitude(torch.zeros(2, 4)).target[:, 0].tolist()
            [1.0, 1.0]
        """
        if not isinstance(target_quat, torch.Tensor) or target_quat.ndim == 0 or target_quat.shape[-1] != 4:
            shape = list(target_quat.shape) if isinstance(target_quat, torch.Tensor) else type(target_quat).__name__
            raise ValueError(f"target_quat must be a tensor with a trailing dim of 4, got {shape}")
        return cls.move(_unit_or_identity(target_quat), steps=steps, settle_steps=settle_steps)


class SatelliteAttitudeTransform(MacroPrimitiveTransform):
    """Expands desired attitudes into normalised CMG gimbal-rate command sequences.

    The action under ``action_key`` is a desired attitude: a raw ``[*batch, 4]`` quaternion, a
    :class:`SatelliteMacroAction`, or a ``TensorDict`` with ``target`` (or ``attitude`` /
    ``target_quat``) and optional ``mode`` (``WAIT`` holds: zero command), ``steps`` and
    ``settle_steps``. See the module doc for the steering law. The policy-facing action spec is
    ``(action_key, "mode")`` and ``(action_key, "target")`` (``[*batch, 4]``, the dtype of the
    ``bus_quat`` observation).

    Args:
        num_cmgs: 4 (pyramid) or 6.
        action_scale: physical gimbal rate of a unit command; default: the parent env's
            ``action_scale``, else 3.0.
        attitude_gain: ``k_p``.
        angular_rate_gain: ``k_d``.
        jacobian_rotor_h: rotor momentum ``h`` of the Jacobian.
        execute: return ``Compose(MultiAction(...), transform)``.
        multi_action_dim: the stack dim for ``MultiAction``.
        stack_rewards: ``MultiAction`` returns every low-level reward.
        stack_observations: ``MultiAction`` returns every low-level observation.
        action_key: the key of the attitude and of the command sequence.
        macro_steps: default interpolated commands.
        settle_steps: default held repeats.

    Raises:
        ValueError: another ``num_cmgs``; a non-positive ``action_scale``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> half_turn_z = torch.tensor([[0.0, 0.0, 0.0, 1.0]])
        >>> td = TensorDict(action=SatelliteMacroAction.slew_attitude(half_turn_z, steps=3, settle_steps=0),
        ...                 bus_quat=torch.tensor([[1.0, 0.0, 0.0, 0.0]]), bus_omega=torch.zeros(1, 3),
        ...                 gimbal_angles=torch.tensor([[0.0] * 4 + [1.0] * 4]), batch_size=[1])
        >>> seq = SatelliteAttitudeTransform(num_cmgs=4).inv(td)["action"]
        >>> seq.shape, bool(seq.abs().max() <= 1.0)
        (torch.Size([1, 3, 4]), True)
    """

    def __init__(
        self,
        *,
        num_cmgs: Literal[4, 6] = 4,
        action_scale: float | None = None,
        attitude_gain: float = 5.0,
        angular_rate_gain: float = 8.0,
        jacobian_rotor_h: float = 1.0,
        execute: bool = False,
        multi_action_dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        action_key: NestedKey = "action",
        macro_steps: int = 36,
        settle_steps: int = 8,
    ) -> None:
        gimbal, rotor = cmg_geometry(int(num_cmgs))
        if action_scale is not None and not float(action_scale) > 0:
            raise ValueError(f"action_scale must be > 0, got {action_scale!r}")
        super().__init__(
            action_key=action_key, macro_steps=macro_steps, settle_steps=settle_steps, action_dim=int(num_cmgs)
        )
        self.num_cmgs = int(num_cmgs)
        self.action_scale = None if action_scale is None else float(action_scale)
        self.attitude_gain = float(attitude_gain)
        self.angular_rate_gain = float(angular_rate_gain)
        self.jacobian_rotor_h = float(jacobian_rotor_h)
        self.gimbal_axes = gimbal
        self.rotor_axes_ref = rotor

    def _resolve(self, tensordict: TensorDictBase, action: Any) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        if action is None:
            raise self._missing_action()
        steps, settle, mode = self.macro_steps, self.settle_steps, None
        field: tuple = _as_tuple(self.action_key)
        if isinstance(action, torch.Tensor):
            quat = action
        else:
            keys = self._structured_keys(
                action, _TARGET_FIELDS, "an attitude quaternion tensor, a SatelliteMacroAction or a TensorDict"
            )
            name = next(n for n in _TARGET_FIELDS if n in keys)
            quat, field = action.get(name), (*field, name)
            steps, settle, _ = self._durations(tensordict, action)
            if "mode" in keys:
                mode = self._mode(tensordict, action)
        quat = self._row_shape(tensordict, quat, field, 4)
        target = self.attitude_action_target(tensordict, quat)
        start = self.current_action(tensordict, target.shape[:-1], target.device, target.dtype, self.num_cmgs)
        if mode is not None:
            target = torch.where(mode.to(target.device) == int(MacroPrimitive.WAIT), start, target)
        return start, target, steps, settle

    def attitude_action_target(self, tensordict: TensorDictBase, target_quat: torch.Tensor) -> torch.Tensor:
        """The normalised gimbal-rate command steering toward ``target_quat`` (module doc).

        Args:
            tensordict: holds ``bus_quat``, ``bus_omega`` and ``gimbal_angles``.
            target_quat: ``[*batch, 4]`` desired attitudes.

        Returns:
            ``[*batch, num_cmgs]`` in ``[-1, 1]``, the dtype / device of ``bus_quat``.

        Raises:
            KeyError: a missing observation.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> td = TensorDict(bus_quat=torch.tensor([1.0, 0, 0, 0]), bus_omega=torch.tensor([0.0, 0.0, 0.1]),
            ...                 gimbal_angles=torch.tensor([0.0] * 4 + [1.0] * 4))
            >>> SatelliteAttitudeTransform().attitude_action_target(td, torch.tensor([1.0, 0, 0, 0])).shape
            torch.Size([4])
        """
        present = set(tensordict.keys(True, True))
        missing = [k for k in _OBSERVATIONS if k not in present]
        if missing:
            raise KeyError(
                f"{type(self).__name__} steers from the satellite observations {list(_OBSERVATIONS)}; the "
                f"tensordict lacks {missing}"
            )
        bus = tensordict.get("bus_quat")
        to = dict(dtype=bus.dtype if bus.is_floating_point() else torch.get_default_dtype(), device=bus.device)
        omega = tensordict.get("bus_omega").to(**to)
        angles = tensordict.get("gimbal_angles").to(**to)
        n = self.num_cmgs
        if angles.shape[-1] != 2 * n:
            raise ValueError(
                f"{type(self).__name__}: 'gimbal_angles' must hold [sin, cos] of {n} gimbals (trailing dim "
                f"{2 * n}), got shape {list(angles.shape)}"
            )
        error = _quat_log(
            _quat_mul(_quat_conj(_unit_or_identity(bus.to(**to))), _unit_or_identity(target_quat.to(**to)))
        )
        theta = torch.atan2(angles[..., :n], angles[..., n:])
        jac = _cmg_jacobian(theta, self.gimbal_axes.to(**to), self.rotor_axes_ref.to(**to), self.jacobian_rotor_h)
        accel = self.attitude_gain * error - self.angular_rate_gain * omega
        rates = -(torch.linalg.pinv(jac) @ accel.unsqueeze(-1)).squeeze(-1)
        return (rates / self._action_scale()).clamp(-1.0, 1.0)

    def _action_scale(self) -> float:
        if self.action_scale is not None:
            return self.action_scale
        env = self._find_parent_env_with("action_scale")
        return 3.0 if env is None else float(env.action_scale)

    def _spec_dtype(self, input_spec: Composite) -> torch.dtype:
        """The dtype of the ``bus_quat`` observation, else of the ``target_quat`` state, else of
        the action."""
        for group, key in (
            ("full_observation_spec", "bus_quat"),
            ("full_state_spec", "target_quat"),
            ("full_action_spec", self.action_key),
        ):
            dtype = getattr(self._leaf(input_spec, group, key), "dtype", None)
            if dtype is not None and dtype.is_floating_point:
                return dtype
        return torch.get_default_dtype()

    def _macro_fields(self, batch: torch.Size, device: Any, dtype: torch.dtype, action_dim: int) -> dict:
        """``mode`` and a ``[*batch, 4]`` attitude quaternion ``target``."""
        return {
            "mode": Categorical(len(MacroPrimitive), shape=(*batch, 1), dtype=torch.long, device=device),
            "target": Unbounded(shape=(*batch, 4), dtype=dtype, device=device),
        }


def _quat_conj(q: torch.Tensor) -> torch.Tensor:
    return torch.cat([q[..., :1], -q[..., 1:]], dim=-1)
