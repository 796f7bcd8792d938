"""Macro-control primitives: one policy action expands into a fixed-length low-level sequence.

A macro action names a *destination* (a low-level action target, or a semantic target that a
subclass maps to one) and a duration. :class:`MacroPrimitiveTransform` turns it, on the inverse
path of a ``TransformedEnv``, into the ``(*batch, T, action_dim)`` sequence that moves linearly
from a start action to the target in ``steps`` actions and then holds the target for
``settle_steps`` more; with ``execute=True`` it is returned as ``Compose(MultiAction(...),
transform)`` so the parent env runs the ``T`` base steps in one outer step (TorchRL's
``torchrl.envs.transforms.MacroPrimitiveTransform``).

Subclasses specialise three hooks: ``_resolve`` (macro action -> ``(start, target, steps,
settle_steps)``), ``current_action`` (the interpolation start) and the policy-facing action spec
(``_macro_fields``, the fields that ``transform_input_spec`` puts under the action key). See :mod:`gpusim.contrib.robot_macros` (a UR-style arm) and
:mod:`gpusim.contrib.satellite` (CMG attitude slews).

The sequence length is a shape, so the ``steps`` / ``settle_steps`` of a structured action are
read on the host, once per expansion (one transfer for all the scalars a transform needs); every
row of a batch must then ask for the same durations (a mixed batch raises instead of silently
using one row's value).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> t = MacroPrimitiveTransform(action_dim=2, macro_steps=4)
    >>> td = TensorDict(action=TargetMacroAction.move(torch.tensor([[4.0, 8.0]]), steps=4), batch_size=[1])
    >>> t.inv(td)["action"][0, :, 0].tolist()
    [1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any

import torch
from tensordict import TensorClass, TensorDictBase, is_tensorclass
from tensordict.utils import NestedKey, unravel_key

from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms._spec_utils import fmt_key
from gpusim.transforms.compose import Compose
from gpusim.transforms.transform import Transform

__all__ = [
    "MacroPrimitive",
    "MacroAction",
    "TargetMacroAction",
    "HumanoidMacroAction",
    "MacroPrimitiveTransform",
]


class MacroPrimitive(IntEnum):
    """The generic primitive ids: hold the start action (``WAIT``) or move to a target (``MOVE``).

    ``str()`` gives the lower-case name. Domain transforms extend the vocabulary with their own
    enums (e.g. :class:`~gpusim.contrib.robot_macros.URScriptPrimitive`).

    Examples:
        >>> int(MacroPrimitive.MOVE), str(MacroPrimitive.WAIT)
        (1, 'wait')
    """

    WAIT = 0
    MOVE = 1

    def __str__(self) -> str:
        return self.name.lower()


def _batched_target(value: torch.Tensor, name: str = "target") -> torch.Tensor:
    """A target with at least one batch dim (a 1-d target becomes ``[1, dim]``)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a tensor with a trailing feature dim, got {type(value).__name__}")
    if value.ndim == 0:
        raise ValueError(f"{name} must have a trailing feature dim, got a 0-d tensor")
    return value.unsqueeze(0) if value.ndim == 1 else value


def _check_durations(steps: int, settle_steps: int) -> None:
    if int(steps) <= 0:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if int(settle_steps) < 0:
        raise ValueError(f"settle_steps must be a non-negative int, got {settle_steps!r}")


class MacroAction(TensorClass["nocast"]):
    """A structured macro action: a primitive ``mode`` and its duration.

    Every field is a ``[*batch, 1]`` int64 tensor: ``mode`` (a primitive id), ``steps`` (the
    interpolated low-level actions) and ``settle_steps`` (the held repeats of the final one).
    Domain actions subclass it and add their target fields.

    Examples:
        >>> import torch
        >>> a = MacroAction(mode=torch.ones(2, 1, dtype=torch.long), steps=torch.full((2, 1), 3),
        ...                 settle_steps=torch.zeros(2, 1, dtype=torch.long), batch_size=[2])
        >>> a.steps[:, 0].tolist()
        [3, 3]
    """

    mode: torch.Tensor
    steps: torch.Tensor
    settle_steps: torch.Tensor

    @classmethod
    def _durations(
        cls, mode: int, steps: int, settle_steps: int, batch_size: Sequence[int], device: torch.device
    ) -> dict[str, torch.Tensor]:
        """The ``mode`` / ``steps`` / ``settle_steps`` fields for ``batch_size`` rows."""
        _check_durations(steps, settle_steps)
        shape = (*batch_size, 1)
        return {
            name: torch.full(shape, int(value), dtype=torch.long, device=device)
            for name, value in (("mode", mode), ("steps", steps), ("settle_steps", settle_steps))
        }


class TargetMacroAction(MacroAction):
    """A macro action with one ``target`` (``[*batch, dim]``) that the transform interprets.

    For :class:`MacroPrimitiveTransform` the target is a low-level action; a domain transform
    gives it a meaning of its own (e.g. an attitude quaternion).

    Examples:
        >>> import torch
        >>> a = TargetMacroAction.move(torch.ones(3), steps=2, settle_steps=1)
        >>> a.batch_size, a.target.shape, int(a.mode[0])
        (torch.Size([1]), torch.Size([1, 3]), 1)
    """

    target: torch.Tensor

    @classmethod
    def move(
        cls, target: torch.Tensor, *, steps: int = 16, settle_steps: int = 0, mode: int = MacroPrimitive.MOVE
    ) -> TargetMacroAction:
        """Move toward ``target`` (``[*batch, dim]``, or ``[dim]`` for one row) in ``steps`` actions.

        Args:
            target: the destination.
            steps: interpolated low-level actions (> 0).
            settle_steps: held repeats of the final action (>= 0).
            mode: the primitive id (default ``MOVE``).

        Returns:
            The macro action, with ``batch_size = target.shape[:-1]``.

        Examples:
            >>> import torch
            >>> TargetMacroAction.move(torch.zeros(2, 4), steps=3).steps[:, 0].tolist()
            [3, 3]
        """
        target = _batched_target(target)
        batch = target.shape[:-1]
        return cls(target=target, batch_size=batch, **cls._durations(mode, steps, settle_steps, batch, target.device))

    @classmethod
    def wait(
        cls,
        *,
        action_dim: int,
        steps: int = 1,
        settle_steps: int = 0,
        batch_size: Sequence[int] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> TargetMacroAction:
        """Hold the start action for ``steps`` low-level steps (a ``WAIT`` with a zero target).

        Args:
            action_dim: the low-level action dim (> 0).
            steps: held low-level actions.
            settle_steps: more held actions.
            batch_size: the rows (default ``[1]``).
            dtype: the target dtype (default: torch's default dtype).
            device: the target device (default CPU).

        Returns:
            The macro action.

        Examples:
            >>> int(TargetMacroAction.wait(action_dim=2, batch_size=[3]).mode[0])
            0
        """
        if int(action_dim) <= 0:
            raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
        batch = torch.Size([1] if batch_size is None else batch_size)
        target = torch.zeros(
            (*batch, int(action_dim)), dtype=dtype or torch.get_default_dtype(), device=device or "cpu"
        )
        return cls.move(target, steps=steps, settle_steps=settle_steps, mode=MacroPrimitive.WAIT)


class HumanoidMacroAction(TargetMacroAction):
    """A :class:`TargetMacroAction` whose target is a low-level actuator-control vector.

    It only names the intent: the plain :class:`MacroPrimitiveTransform` expands it.

    Examples:
        >>> import torch
        >>> HumanoidMacroAction.reach_control(torch.zeros(1, 6), steps=4).target.shape
        torch.Size([1, 6])
    """

    @classmethod
    def reach_control(cls, target: torch.Tensor, *, steps: int = 16, settle_steps: int = 0) -> HumanoidMacroAction:
        """Interpolate toward the control vector ``target`` in ``steps`` actions, then hold it.

        Args:
            target: ``[*batch, action_dim]`` (or ``[action_dim]``).
            steps: interpolated low-level actions.
            settle_steps: held repeats of ``target``.

        Returns:
            The macro action.

        Examples:
            >>> import torch
            >>> int(HumanoidMacroAction.reach_control(torch.ones(3), settle_steps=2).settle_steps[0])
            2
        """
        return cls.move(target, steps=steps, settle_steps=settle_steps)


def _is_structured(action: Any) -> bool:
    return isinstance(action, TensorDictBase) or is_tensorclass(action)


class MacroPrimitiveTransform(Transform):
    """Expands a macro action into a low-level action sequence (the inverse path).

    The action under ``action_key`` may be a :class:`MacroAction` / :class:`TargetMacroAction`,
    a plain ``TensorDict`` with the same fields (``target`` required; ``mode``, ``steps``,
    ``settle_steps`` optional) or a raw ``[*batch, dim]`` tensor (a ``MOVE`` to that target with
    the transform's default durations). The sequence ``[*batch, steps + settle_steps, dim]``
    goes linearly from the start (:meth:`current_action`, zeros here) to the target: action ``k``
    (1-based) is ``start + k / steps * (target - start)``; then the target is repeated
    ``settle_steps`` times. ``WAIT`` rows hold the start.

    ``transform_input_spec`` replaces the action entry with the policy-facing macro spec:
    ``(action_key, "mode")`` (``Categorical`` over the primitive enum) and ``(action_key,
    "target")`` (``Unbounded`` ``[*batch, action_dim]``).

    Args:
        action_key: the key of the macro action on the way in and of the sequence on the way out.
        macro_steps: default interpolated actions per primitive (> 0).
        settle_steps: default held repeats (>= 0).
        action_dim: the low-level action dim; read from the action spec or the target otherwise.
        execute: return ``Compose(MultiAction(...), transform)``: the parent env executes each
            sequence in one outer step.
        multi_action_dim: the stack dim of the sequence for ``MultiAction``.
        stack_rewards: ``MultiAction`` returns every low-level reward.
        stack_observations: ``MultiAction`` returns every low-level observation.

    Raises:
        ValueError: a non-positive ``macro_steps`` / ``action_dim`` or a negative ``settle_steps``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = MacroPrimitiveTransform(macro_steps=2, settle_steps=1)
        >>> t.inv(TensorDict(action=torch.tensor([[2.0, 4.0]]), batch_size=[1]))["action"][0].tolist()
        [[1.0, 2.0], [2.0, 4.0], [2.0, 4.0]]
    """

    #: The primitive ids the policy-facing ``mode`` spec samples from.
    primitive_enum: type[IntEnum] = MacroPrimitive

    def __new__(
        cls,
        *args: Any,
        execute: bool = False,
        multi_action_dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        **kwargs: Any,
    ) -> MacroPrimitiveTransform | Compose:
        if execute:
            import gpusim.transforms as transforms

            multi_action = getattr(transforms, "MultiAction", None)
            if multi_action is None:
                raise NotImplementedError(
                    f"{cls.__name__}(execute=True) executes the sequence with MultiAction, which this "
                    "gpusim build lacks; use execute=False and step the sequence yourself"
                )
            inner = cls(*args, execute=False, **kwargs)
            return Compose(
                multi_action(dim=multi_action_dim, stack_rewards=stack_rewards, stack_observations=stack_observations),
                inner,
            )
        return super().__new__(cls)

    def __init__(
        self,
        *,
        action_key: NestedKey = "action",
        macro_steps: int = 16,
        settle_steps: int = 0,
        action_dim: int | None = None,
        execute: bool = False,
        multi_action_dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
    ) -> None:
        del execute, multi_action_dim, stack_rewards, stack_observations  # consumed by __new__
        super().__init__()
        if int(macro_steps) <= 0:
            raise ValueError(f"macro_steps must be a positive int, got {macro_steps!r}")
        if int(settle_steps) < 0:
            raise ValueError(f"settle_steps must be a non-negative int, got {settle_steps!r}")
        if action_dim is not None and int(action_dim) <= 0:
            raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
        self.action_key = unravel_key(action_key)
        self.macro_steps = int(macro_steps)
        self.settle_steps = int(settle_steps)
        self.action_dim = None if action_dim is None else int(action_dim)

    # ------------------------------------------------------------------ inverse path
    def _has_inverse(self) -> bool:
        return True

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(self.action_key, None)
        start, target, steps, settle_steps = self._resolve(tensordict, action)
        return tensordict.set(self.action_key, self._interpolate(start, target, steps, settle_steps))

    def _missing_action(self) -> RuntimeError:
        return RuntimeError(
            f"{type(self).__name__} found no action under {fmt_key(self.action_key)} to expand: set a "
            "macro action (or a target tensor) there before stepping"
        )

    def _row_shape(self, tensordict: TensorDictBase, value: torch.Tensor, field: str, dim: int | None) -> torch.Tensor:
        """``value`` as ``[*batch, dim]``; raises naming the field on any other shape."""
        batch = tensordict.batch_size
        expected = (*batch, dim if dim is not None else value.shape[-1] if value.ndim else 1)
        if value.ndim == len(batch) and dim == 1:  # a [*batch] column
            value = value.unsqueeze(-1)
        if tuple(value.shape) != expected:
            raise ValueError(
                f"{type(self).__name__}: {fmt_key(field)} must have shape {list(expected)} (the tensordict's "
                f"batch {list(batch)} + the feature dim), got {list(value.shape)}"
            )
        return value

    def _durations(self, tensordict: TensorDictBase, action: Any, *flags: torch.Tensor) -> tuple[int, int, list[bool]]:
        """The ``steps`` / ``settle_steps`` of ``action`` (defaults when absent) and the truth of
        ``flags`` (bool tensors, any-reduced), read on the host in one transfer."""
        probes, names = [], []
        keys = set(action.keys(True, True)) if _is_structured(action) else set()
        for name in ("steps", "settle_steps"):
            if name in keys:
                value = action.get(name).reshape(-1).to(torch.long)
                if value.numel() == 0:
                    raise ValueError(f"{type(self).__name__}: {fmt_key((*_as_tuple(self.action_key), name))} is empty")
                probes.append(torch.stack([value.amin(), value.amax()]))
                names.append(name)
        probes.extend(f.any().to(torch.long).reshape(1) for f in flags)
        values = torch.cat([p.cpu() for p in probes]).tolist() if probes else []
        out = {"steps": self.macro_steps, "settle_steps": self.settle_steps}
        for i, name in enumerate(names):
            lo, hi = values[2 * i], values[2 * i + 1]
            key = fmt_key((*_as_tuple(self.action_key), name))
            if lo != hi:
                raise ValueError(
                    f"{type(self).__name__}: {key} sets the sequence length, so every row must ask for the "
                    f"same value; got values from {lo} to {hi}"
                )
            if name == "steps" and lo <= 0:
                raise ValueError(f"{type(self).__name__}: {key} must be > 0, got {lo}")
            if name == "settle_steps" and lo < 0:
                raise ValueError(f"{type(self).__name__}: {key} must be >= 0, got {lo}")
            out[name] = int(lo)
        return out["steps"], out["settle_steps"], [bool(v) for v in values[2 * len(names) :]]

    def _target_dtype(self, value: torch.Tensor) -> torch.dtype:
        return value.dtype if value.is_floating_point() else torch.get_default_dtype()

    def _resolve(self, tensordict: TensorDictBase, action: Any) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        """Maps ``action`` to ``(start, target, steps, settle_steps)`` (the override point).

        Args:
            tensordict: the step input (observations included).
            action: the entry under ``action_key`` (``None`` when absent).

        Returns:
            ``start`` and ``target`` ``[*batch, action_dim]`` and the two durations.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> td = TensorDict(action=torch.ones(1, 2), batch_size=[1])
            >>> start, target, steps, settle = MacroPrimitiveTransform(macro_steps=3)._resolve(td, td["action"])
            >>> start.tolist(), target.tolist(), steps, settle
            ([[0.0, 0.0]], [[1.0, 1.0]], 3, 0)
        """
        if action is None:
            raise self._missing_action()
        if isinstance(action, torch.Tensor):
            target = self._row_shape(tensordict, action, self.action_key, self.action_dim)
            target = target.to(self._target_dtype(target))
            start = torch.zeros_like(target)
            return start, target, self.macro_steps, self.settle_steps
        keys = self._structured_keys(action, ("target",), "a MacroAction, a TensorDict or a target tensor")
        field = (*_as_tuple(self.action_key), "target")
        target = self._row_shape(tensordict, action.get("target"), field, self.action_dim)
        target = target.to(self._target_dtype(target))
        start = self.current_action(tensordict, tensordict.batch_size, target.device, target.dtype, target.shape[-1])
        steps, settle_steps, _ = self._durations(tensordict, action)
        if "mode" in keys:
            target = torch.where(self._mode(tensordict, action) == int(MacroPrimitive.WAIT), start, target)
        return start, target, steps, settle_steps

    def _structured_keys(self, action: Any, required: Sequence[str], accepted: str) -> set:
        """The keys of a structured macro action; raises when ``action`` is not structured
        (naming what ``accepted`` lists) or lacks every one of ``required``."""
        if not _is_structured(action):
            raise TypeError(
                f"{type(self).__name__} expands {accepted} under {fmt_key(self.action_key)}, got "
                f"{type(action).__name__}"
            )
        keys = set(action.keys(True, True))
        if required and not keys.intersection(required):
            names = " or ".join(repr(r) for r in required)
            raise KeyError(
                f"{type(self).__name__}: the action under {fmt_key(self.action_key)} has no {names} field "
                f"(keys: {sorted(map(str, keys))})"
            )
        return keys

    def _mode(self, tensordict: TensorDictBase, action: Any) -> torch.Tensor:
        """The ``mode`` field of ``action`` as int64 ``[*batch, 1]`` (raises on another shape)."""
        mode = self._row_shape(tensordict, action.get("mode"), (*_as_tuple(self.action_key), "mode"), 1)
        return mode.to(torch.long)

    def current_action(
        self,
        tensordict: TensorDictBase,
        batch_shape: torch.Size,
        device: torch.device,
        dtype: torch.dtype,
        action_dim: int,
    ) -> torch.Tensor:
        """The interpolation start (the override point): zeros here.

        The entry under ``action_key`` is the incoming macro action, so it is never read back
        as the start; a subclass that observes the controlled state (joint positions) reads it.

        Args:
            tensordict: the step input.
            batch_shape: the rows.
            device: the device of the start.
            dtype: its dtype.
            action_dim: its trailing dim (``self.action_dim`` when set).

        Returns:
            ``[*batch_shape, action_dim]``.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> t = MacroPrimitiveTransform()
            >>> t.current_action(TensorDict(batch_size=[2]), torch.Size([2]), "cpu", torch.float32, 3).shape
            torch.Size([2, 3])
        """
        dim = self.action_dim if self.action_dim is not None else action_dim
        return torch.zeros((*batch_shape, dim), dtype=dtype, device=device)

    @staticmethod
    def _interpolate(start: torch.Tensor, target: torch.Tensor, steps: int, settle_steps: int) -> torch.Tensor:
        """``[*batch, steps + settle_steps, dim]``: linear from ``start`` (excluded) to ``target``."""
        alpha = torch.arange(1, steps + 1, dtype=start.dtype, device=start.device) / steps
        alpha = torch.cat([alpha, alpha.new_ones(settle_steps)]).unsqueeze(-1)
        return start.unsqueeze(-2) + alpha * (target - start).unsqueeze(-2)

    def action_sequence(self, tensordict: TensorDictBase) -> torch.Tensor:
        """The low-level sequence of the macro action in ``tensordict`` (nothing is executed).

        Args:
            tensordict: carries the macro action under ``action_key``.

        Returns:
            ``[*batch, steps + settle_steps, action_dim]``.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> td = TensorDict(action=torch.ones(1, 2), batch_size=[1])
            >>> MacroPrimitiveTransform(macro_steps=5).action_sequence(td).shape
            torch.Size([1, 5, 2])
        """
        return self.inv(tensordict).get(self.action_key)

    # ------------------------------------------------------------------ specs
    def _leaf(self, input_spec: Composite, group: str, key: NestedKey) -> Any:
        sub = input_spec.get(group, None) if group in input_spec.keys() else None
        if isinstance(sub, Composite) and key in sub.keys(True, True):
            return sub[key]
        return None

    def _spec_dtype(self, input_spec: Composite) -> torch.dtype:
        leaf = self._leaf(input_spec, "full_action_spec", self.action_key)
        dtype = getattr(leaf, "dtype", None)
        return dtype if dtype is not None and dtype.is_floating_point else torch.get_default_dtype()

    def _spec_action_dim(self, input_spec: Composite) -> int:
        if self.action_dim is not None:
            return self.action_dim
        leaf = self._leaf(input_spec, "full_action_spec", self.action_key)
        if leaf is not None and len(leaf.shape):
            return int(leaf.shape[-1])
        raise RuntimeError(
            f"{type(self).__name__} cannot build the action spec: no action_dim was given and the parent "
            f"has no {fmt_key(self.action_key)} action spec to read it from; pass action_dim="
        )

    def _macro_fields(self, batch: torch.Size, device: Any, dtype: torch.dtype, action_dim: int) -> dict:
        """The fields of the policy-facing macro spec (the override point of the spec)."""
        return {
            "mode": Categorical(len(self.primitive_enum), shape=(*batch, 1), dtype=torch.long, device=device),
            "target": Unbounded(shape=(*batch, action_dim), dtype=dtype, device=device),
        }

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """Replaces the ``action_key`` entry with the macro action spec (see the class doc).

        Args:
            input_spec: ``Composite(full_action_spec=..., ...)``.

        Returns:
            A new input spec.

        Examples:
            >>> from gpusim.specs import Composite
            >>> spec = MacroPrimitiveTransform(action_dim=3).transform_input_spec(Composite(shape=(2,)))
            >>> spec["full_action_spec", "action", "target"].shape
            torch.Size([2, 3])
        """
        fields = self._macro_fields(
            input_spec.shape, input_spec.device, self._spec_dtype(input_spec), self._spec_action_dim(input_spec)
        )
        return self._set_macro_spec(input_spec, fields)

    def _set_macro_spec(self, input_spec: Composite, fields: dict) -> Composite:
        input_spec = input_spec.clone()
        batch, device = input_spec.shape, input_spec.device
        if "full_action_spec" in input_spec.keys():
            actions = input_spec["full_action_spec"].clone()
            if self.action_key in actions.keys(True, True):
                del actions[self.action_key]
        else:
            actions = Composite(shape=batch, device=device)
        actions[self.action_key] = Composite(fields, shape=batch, device=device)
        input_spec["full_action_spec"] = actions
        return input_spec

    # ------------------------------------------------------------------ helpers
    def _find_parent_env_with(self, attr: str) -> Any:
        """The first env of the parent chain (parent, its ``base_env``, ...) with ``attr``."""
        try:
            env = self.parent
        except AttributeError:
            return None
        seen = set()
        while env is not None and id(env) not in seen:
            seen.add(id(env))
            if hasattr(env, attr):
                return env
            env = getattr(env, "base_env", None)
        return None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(action_key={self.action_key!r}, macro_steps={self.macro_steps}, "
            f"settle_steps={self.settle_steps})"
        )


def _as_tuple(key: NestedKey) -> tuple:
    return key if isinstance(key, tuple) else (key,)
