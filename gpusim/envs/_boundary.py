"""The step boundary of :class:`~gpusim.envs.common.EnvBase`: what a step reads and writes is
checked against the specs (shapes and dtypes only on the step path: no device sync), and a raw
``_step``/``_reset`` output is completed (reward/done shapes, missing done flags).

The debug mode (``run_type_checks=True`` or ``GPUSIM_VALIDATE=1``) also checks values:
:func:`check_output` (every output leaf present, of its spec's dtype, finite, inside its spec).

Plans the checks read (``_input_checks``, ``_output_leaf_shapes``) are computed once from the
locked specs; ``TransformedEnv`` overrides ``_input_checks`` (a documented hook: the outer action
leaves, and the state entries its base env needs).

Examples:
    >>> import torch
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[2])
    >>> env.step(env.reset().set("action", torch.zeros(2)))
    Traceback (most recent call last):
    ...
    TypeError: CartPoleEnv.step: the action 'action' has dtype torch.float32, expected torch.int64 (the action spec's dtype)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._action_guard import action_value_error
from gpusim.envs._fasttd import fast_get, fast_get_path, fast_set, get_via, inner
from gpusim.envs._keys import DONE_NAMES, DoneLevel, NestedKey
from gpusim.envs._step_inputs import same_device
from gpusim.envs.env_specs import _cached_plan

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["StepBoundary", "check_output"]


class _ActionCheck(NamedTuple):
    """What the step boundary checks of one action leaf, planned when the specs lock."""

    key: NestedKey
    shape: torch.Size
    dtype: torch.dtype
    #: the other shape the spec's own samples take (TorchRL's ``MultiCategorical`` with
    #: ``remove_singleton`` and shape ``[1]`` drops the last dim), or ``None``
    squeezed: torch.Size | None = None
    #: ``((shape, dtype), ...)`` of the parts of a heterogeneous (lazy-stacked) leaf, or ``None``
    parts: tuple | None = None
    stack_dim: int = 0
    #: the spec's device (``None``: not checked)
    device: torch.device | None = None


def _dynamic_match(shape: torch.Size, spec_shape: torch.Size) -> bool:
    """Whether ``shape`` fits a spec shape with dynamic (``-1``) dims: any size there."""
    return (
        -1 in spec_shape and len(shape) == len(spec_shape) and all(s == d or d == -1 for s, d in zip(shape, spec_shape))
    )


def check_output(env: EnvBase, data: TensorDictBase, reset: bool = False) -> None:
    """Debug mode: every output leaf of ``data`` (a step's ``"next"`` data, or a reset's output)
    present, of its spec's dtype, finite and inside its spec; raises naming the key.

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2])
        >>> data = env.reset()
        >>> check_output(env, data, reset=True)  # silent when it passes
        >>> check_output(env, data.set("observation", data["observation"].double()), reset=True)
        Traceback (most recent call last):
        ...
        TypeError: CartPoleEnv: the reset output 'observation': expected observation.dtype to be torch.float32 (its spec's) but got torch.float64
    """
    name = type(env).__name__
    keys = [*env.observation_keys, *env.done_keys]
    if not reset:
        keys += env.reward_keys
    where = "reset" if reset else "step"
    reward_keys, done_keys = env.reward_keys, env.done_keys
    for key in keys:
        value = data.get(key, None)
        if value is None:
            raise KeyError(f"{name}: the {where} output misses the key {_keys.fmt(key)}")
        parent = (
            "full_reward_spec"
            if key in reward_keys
            else "full_done_spec"
            if key in done_keys
            else "full_observation_spec"
        )
        spec = env.output_spec[parent][key]
        if isinstance(value, torch.Tensor) and value.dtype != spec.dtype:
            dotted = ".".join(_keys.as_tuple(key))
            raise TypeError(
                f"{name}: the {where} output {_keys.fmt(key)}: expected "
                f"{dotted}.dtype to be {spec.dtype} (its spec's) but got {value.dtype}"
            )
        if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise ValueError(f"{name}: the {where} output {_keys.fmt(key)} holds non-finite values")
        if not spec.is_in(value):
            raise ValueError(f"{name}: the {where} output {_keys.fmt(key)} is outside its spec {spec}")


class StepBoundary:
    """Mixin of :class:`~gpusim.envs.common.EnvBase`: the step-boundary checks and the
    completion of raw outputs (see the module docstring).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> actions, states = CartPoleEnv(batch_size=[2])._input_checks
        >>> [check.key for check in actions], states
        (['action'], ['state'])
    """

    # ------------------------------------------------------------------ done handling
    def _complete_done(self, data: TensorDictBase) -> TensorDictBase:
        """Fills the missing ``done``/``terminated`` of every level (``terminated := done``,
        ``done := terminated | truncated``); a level with neither, and a missing ``truncated``
        the spec declares, gets ``False`` flags (as TorchRL does)."""
        for level in self.done_levels:
            node = data if level.prefix == () else fast_get_path(data, level.prefix)
            if node is None:  # a group the output does not hold is left alone
                continue
            done = fast_get(node, "done")
            terminated = fast_get(node, "terminated")
            if done is None and terminated is None:
                self._false_level(data, level)
                continue
            if done is None or terminated is None:
                if terminated is None:
                    fast_set(node, "terminated", done)
                else:
                    truncated = fast_get(node, "truncated")
                    fast_set(node, "done", terminated if truncated is None else terminated | truncated)
            if level.has_truncated and fast_get(node, "truncated") is None:
                self._false_level(data, level, ("truncated",))
        return data

    def _false_level(self, data: TensorDictBase, level: DoneLevel, names: tuple = DONE_NAMES) -> None:
        """Writes ``False`` flags (the spec's zeros, with the data's leading dims) for the
        ``names`` of ``level``."""
        spec = self.full_done_spec
        lead = data.batch_size[: len(data.batch_size) - len(self.batch_size)]
        for key in level.keys:
            if _keys.as_tuple(key)[-1] in names:
                data.set(key, spec[key].zero(lead))

    @_cached_plan
    def _output_leaf_shapes(self) -> tuple:
        """``(key, shape)`` of the reward and done leaves of fixed shape: a step that returns
        one of them with another shape of the same size (a Python bool for ``[1]``) is reshaped
        to the spec's, as TorchRL does."""
        out = []
        for spec in (self.full_reward_spec, self.full_done_spec):
            for key, leaf in spec.items(True, True):
                shape = torch.Size(leaf.shape)
                if -1 not in shape:
                    out.append((_keys.unravel(key), shape, shape.numel()))
        return tuple(out)

    @_cached_plan
    def _root_output_shapes(self) -> tuple | None:
        """:attr:`_output_leaf_shapes` as ``(key, shape)`` when it holds every reward and done leaf
        and all are root entries (the common layout), else ``None``: see :meth:`_output_complete`."""
        leaves = self._output_leaf_shapes
        if len(leaves) != len(self.reward_keys) + len(self.done_keys) or not all(
            isinstance(k, str) for k, _, _ in leaves
        ):
            return None
        return tuple((key, shape) for key, shape, _ in leaves)

    def _output_complete(self, next_td: TensorDictBase) -> bool:
        """Whether a raw step output already holds every reward and done leaf of the specs with
        the specs' shapes (one dict lookup per leaf): reshaping and done completion then have
        nothing to do."""
        plan = self._root_output_shapes
        data = inner(next_td)
        if plan is None or data is None or next_td.batch_size != self.batch_size:
            return False
        for key, shape in plan:
            value = data.get(key)
            if value is None or value.shape != shape:
                return False
        return True

    def _fix_output_shapes(self, next_td: TensorDictBase) -> None:
        if next_td.batch_size != self.batch_size:
            return
        data = inner(next_td)  # a plain TensorDict's root dict, read directly (same lookups)
        for key, shape, numel in self._output_leaf_shapes:
            value = get_via(data, next_td, key)
            if value is not None and value.shape != shape and value.numel() == numel:
                next_td.set(key, value.reshape(shape))

    @_cached_plan
    def _input_checks(self) -> tuple[list, list]:
        """``[(key, shape, dtype)]`` of the action leaves and ``[key]`` of the state leaves."""
        actions = self._action_checks()
        states = [k for k in self.state_keys if k not in set(self.action_keys)]
        return actions, states

    def _action_checks(self) -> list[_ActionCheck]:
        """What the step boundary checks of each action leaf (see :class:`_ActionCheck`)."""
        spec = self.full_action_spec
        out = []
        for k in self.action_keys:
            leaf = spec[k]
            if -1 in leaf.shape and hasattr(leaf, "stack_dim"):
                # heterogeneous leaf (lazy stack of unequal specs): checked part by part
                parts = tuple((p.shape, p.dtype) for p in leaf.unbind(leaf.stack_dim))
                out.append(_ActionCheck(k, leaf.shape, leaf.dtype, None, parts, leaf.stack_dim))
                continue
            squeezes = getattr(leaf, "_squeezes", None)
            squeezed = leaf.shape[:-1] if squeezes is not None and squeezes() else None
            device = leaf.device if self.device is not None else None  # None: a mixed-device env
            out.append(_ActionCheck(k, leaf.shape, leaf.dtype, squeezed, device=device))
        return out

    def _check_stacked_action(self, tensordict: TensorDictBase, check: _ActionCheck) -> None:
        """The step-boundary check of a heterogeneous action leaf: one tensor per stacked spec."""
        name = type(self).__name__
        key, parts = check.key, check.parts
        try:
            values = tensordict.get(key, as_list=True)
        except KeyError:
            values = None
        if values is None:
            raise KeyError(
                f"{name}.step: the input has no action entry {_keys.fmt(key)}; write one first, e.g. "
                "env.rand_action(td) or a policy"
            )
        if isinstance(values, torch.Tensor):
            values = list(values.unbind(check.stack_dim))
        if len(values) != len(parts):
            raise ValueError(
                f"{name}.step: the action {_keys.fmt(key)} has {len(values)} stacked parts, expected "
                f"{len(parts)} (the action spec's lazy stack)"
            )
        for i, (value, (shape, dtype)) in enumerate(zip(values, parts)):
            if value.shape != shape:
                raise ValueError(
                    f"{name}.step: part {i} of the action {_keys.fmt(key)} has shape {list(value.shape)}, "
                    f"expected {list(shape)} (the action spec's shape)"
                )
            if value.dtype != dtype:
                raise TypeError(
                    f"{name}.step: part {i} of the action {_keys.fmt(key)} has dtype {value.dtype}, "
                    f"expected {dtype} (the action spec's dtype)"
                )

    def _check_inputs(self, tensordict: TensorDictBase) -> None:
        actions, states = self._input_checks
        name = type(self).__name__
        lead = tensordict.batch_size if not self.batch_size and tensordict.batch_size else None
        data = inner(tensordict)  # a plain TensorDict's root dict, read directly (same lookups)
        for check in actions:
            if check.parts is not None:
                self._check_stacked_action(tensordict, check)
                continue
            key, shape, dtype, squeezed = check.key, check.shape, check.dtype, check.squeezed
            if lead is not None:  # a batch-unlocked env fed a batch: the rows lead the spec shape
                shape = lead + shape
            value = get_via(data, tensordict, key)
            if value is None:
                raise KeyError(
                    f"{name}.step: the input has no action entry {_keys.fmt(key)} (expected shape {list(shape)}, "
                    f"dtype {dtype}); write one first, e.g. env.rand_action(td) or a policy"
                )
            if (
                value.shape != shape
                and (squeezed is None or lead is not None or value.shape != squeezed)
                and not _dynamic_match(value.shape, shape)
            ):
                raise ValueError(
                    f"{name}.step: the action {_keys.fmt(key)} has shape {list(value.shape)}, expected {list(shape)} "
                    "(the action spec's shape)"
                )
            if value.dtype != dtype:
                raise TypeError(
                    f"{name}.step: the action {_keys.fmt(key)} has dtype {value.dtype}, expected {dtype} "
                    "(the action spec's dtype)"
                )
            device = check.device
            if device is not None and value.device != device and not same_device(value.device, device):
                raise ValueError(
                    f"{name}.step: the action {_keys.fmt(key)} is on device {value.device}, expected {device} "
                    f"(the env's device): move it first, e.g. action.to({str(device)!r})"
                )
        for key in states:
            value = get_via(data, tensordict, key)
            if value is None:
                raise KeyError(
                    f"{name}.step: the input has no state entry {_keys.fmt(key)}: call env.reset() first and step "
                    "from its output (or pass the state of a previous step)"
                )
        if self.run_type_checks:
            self._check_action_values(tensordict)

    def _check_action_values(self, tensordict: TensorDictBase) -> None:
        """Debug mode: every action value inside its spec, and finite."""
        spec = self.full_action_spec
        for key in self.action_keys:
            message = action_value_error(f"{type(self).__name__}.step", key, spec[key], tensordict.get(key))
            if message is not None:
                raise ValueError(message)

    @property
    def _run_type_checks(self) -> bool:
        """TorchRL's name of the attribute behind :attr:`run_type_checks` (the same flag)."""
        return self.run_type_checks

    @_run_type_checks.setter
    def _run_type_checks(self, value: bool) -> None:
        self.run_type_checks = bool(value)

    def _type_check(self, data: TensorDictBase, reset: bool = False) -> None:
        """Debug mode: :func:`check_output` of a step's (or a reset's) output."""
        check_output(self, data, reset)
