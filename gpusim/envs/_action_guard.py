"""The action guard: what a step does with an action value outside its spec, without a host read.

Checking action VALUES on every step would read them on the host (a device sync per step), so
the default mode does not check them (the debug mode, ``run_type_checks=True``, and
``check_env_specs`` do). Instead, an env whose class sets ``guard_actions = True`` (every native
env) hands its physics guarded actions, by one elementwise op per action entry that
``torch.compile`` fuses into the step:

========================  =====================================================================
action spec               what the physics receives
========================  =====================================================================
``Categorical(n)``        the index clamped into ``[0, n - 1]``: ``-1 -> 0``, ``7 -> n - 1``
``MultiCategorical``      each index clamped into ``[0, nvec[i] - 1]``
floating point            NaN replaced by ``0.0`` (as MuJoCo does with bad controls); other
                          values as given, ±inf included: the env's own rule applies
                          (Pendulum and MountainCarContinuous clip to their bounds)
other kinds               as given (``OneHot``, ``Binary``, masks: the env's own rule)
========================  =====================================================================

The tensordict keeps the action as given (the record of what the policy chose: a log-prob is
computed from it); only the physics sees the guarded value. So a rollout is never silently
wrong in the sense of "the data says 7, the env applied 0": out-of-range indices act as the
nearest valid one. They are still bugs of the policy: run the debug mode
(``EnvBase(run_type_checks=True)``, or ``env.run_type_checks = True``) to have them raised, with
the key, the expected range and the received value.

Examples:
    >>> import torch
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[3], seed=0)
    >>> td = env.reset().set("action", torch.tensor([7, -1, 1]))
    >>> pushed = env.step(td.clone())["next", "observation"]
    >>> same = env.step(td.clone().set("action", torch.tensor([1, 0, 1])))["next", "observation"]
    >>> torch.equal(pushed, same), td["action"].tolist()  # 7 acts as 1, -1 as 0; the record is kept
    (True, [7, -1, 1])
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_set, get_via, inner
from gpusim.specs import Bounded, Categorical, MultiCategorical, OneHot, TensorSpec, Unbounded

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["ActionGuard", "plan_guards", "guarded_step", "describe_range", "action_value_error"]


class ActionGuard(NamedTuple):
    """The guard of one action entry: ``clamp`` indices into ``[0, high]`` or replace NaN by 0."""

    key: Any
    #: ``"clamp"`` (integer indices) or ``"nan"`` (floating point)
    kind: str
    #: the largest valid index (an int, or a tensor of ``nvec - 1`` for ``MultiCategorical``)
    high: Any = None

    def __call__(self, value: torch.Tensor) -> torch.Tensor:
        if self.kind == "clamp":
            return value.clamp(0, self.high)
        # NaN -> 0, ±inf kept; the same values both ways. Compiled: ``value != value`` (true
        # only for NaN), which Inductor's C++ code vectorizes, while ``nan_to_num``'s ``isnan``
        # runs as a scalar loop per vector (MPE simple_spread at 8192 envs: the integration
        # loop reading the actions 13% of the step with it). Eager: ``nan_to_num``, one
        # vectorized kernel, where the compare and ``torch.where`` (a scalar kernel) are two
        # (CPU, [8192, 1, 2] float32: 2.5 against 17 us)
        if torch.compiler.is_compiling():
            return torch.where(value != value, 0.0, value)
        return torch.nan_to_num(value, nan=0.0, posinf=math.inf, neginf=-math.inf)


class Guards(tuple):
    """The guards of an env's action entries (a tuple), with ``flat``: every key a root-level
    string (the swap-in-place path of :func:`guarded_step`)."""

    flat: bool

    def __new__(cls, guards: Any = ()) -> Guards:
        self = super().__new__(cls, guards)
        self.flat = all(type(g.key) is str for g in self)
        return self


def plan_guards(spec: Any, keys: list) -> tuple[ActionGuard, ...]:
    """The guards of the action entries ``keys`` of ``spec`` (the env's ``full_action_spec``).

    Examples:
        >>> from gpusim.specs import Bounded, Categorical, Composite
        >>> spec = Composite(move=Categorical(3, shape=(2,)), force=Bounded(-1.0, 1.0, shape=(2, 1)), shape=(2,))
        >>> [(g.key, g.kind, g.high) for g in plan_guards(spec, ["move", "force"])]
        [('move', 'clamp', 2), ('force', 'nan', None)]
    """
    out = []
    for key in keys:
        leaf = spec[key]
        if isinstance(leaf, Categorical) and leaf.dtype is not torch.bool and leaf.n > 0:
            out.append(ActionGuard(key, "clamp", int(leaf.n) - 1))
        elif isinstance(leaf, MultiCategorical) and not leaf.dtype.is_floating_point:
            out.append(ActionGuard(key, "clamp", (leaf.nvec - 1).to(leaf.dtype)))
        elif isinstance(leaf, (Bounded, Unbounded)) and leaf.dtype.is_floating_point:
            out.append(ActionGuard(key, "nan"))
    return Guards(out)


def guarded_step(env: EnvBase, tensordict: TensorDictBase, guards: tuple[ActionGuard, ...]) -> TensorDictBase:
    """``env``'s complete ``"next"`` data of a step whose physics sees the guarded actions; the
    input keeps the actions as given (restored once the step has run)."""
    data = inner(tensordict)
    if data is not None and getattr(guards, "flat", False):
        # a plain tensordict with root-level actions (every native env): swap the entries of its
        # dict in place and back (the tensordict is the same before and after the step)
        given = [data.get(g.key) for g in guards]
        for guard, value in zip(guards, given):
            if value is not None:
                data[guard.key] = guard(value)
        try:
            return env._finish_step(tensordict, env._step(tensordict))
        finally:
            for guard, value in zip(guards, given):
                if value is not None:
                    data[guard.key] = value
    given = []
    for guard in guards:
        key = guard.key
        value = get_via(data, tensordict, key)
        given.append(value)
        if isinstance(key, str):
            fast_set(tensordict, key, guard(value))
        else:
            tensordict.set(key, guard(value))
    try:
        return env._finish_step(tensordict, env._step(tensordict))
    finally:
        for guard, value in zip(guards, given):
            if isinstance(guard.key, str):
                fast_set(tensordict, guard.key, value)
            else:
                tensordict.set(guard.key, value)


def describe_range(leaf: TensorSpec) -> str:
    """The values ``leaf`` admits, in words (for error messages).

    Examples:
        >>> from gpusim.specs import Bounded, Categorical
        >>> describe_range(Categorical(2, shape=(4,)))
        'integers in [0, 1]'
        >>> describe_range(Bounded(-2.0, 2.0, shape=(4, 1)))
        'finite values in [-2.0, 2.0]'
    """
    if isinstance(leaf, Categorical):
        return f"integers in [0, {leaf.n - 1}]"
    if isinstance(leaf, MultiCategorical):
        nvec = leaf.nvec.reshape(-1, leaf.nvec.shape[-1])[0].tolist()
        return "integers in [0, nvec - 1] per entry, nvec=" + str(nvec)
    if isinstance(leaf, OneHot):
        return f"one-hot vectors of length {leaf.n}"
    if isinstance(leaf, Bounded):
        low, high = leaf.low.flatten(), leaf.high.flatten()
        if bool((low == low[0]).all()) and bool((high == high[0]).all()):
            return f"finite values in [{low[0].item()}, {high[0].item()}]"
        return f"finite values within the bounds low={leaf.low.tolist()}, high={leaf.high.tolist()}"
    if leaf.dtype.is_floating_point:
        return "finite values"
    return f"values of {type(leaf).__name__}"


def action_value_error(owner: str, key: Any, leaf: TensorSpec, value: torch.Tensor) -> str | None:
    """The message for an action ``value`` outside ``leaf`` (NaN/inf included), or ``None`` when
    it is inside. Reads the value on the host: for the debug mode and ``check_env_specs`` only.

    Examples:
        >>> import torch
        >>> from gpusim.specs import Categorical
        >>> action_value_error("CartPoleEnv.step", "action", Categorical(2, shape=(3,)), torch.tensor([0, 7, -1]))
        "CartPoleEnv.step: the action 'action' is outside its spec Categorical: expected integers in [0, 1], received 7 at index (1,) (2 of 3 values outside)"
    """
    if getattr(leaf, "mask", None) is not None:
        leaf = leaf.clone()
        leaf.update_mask(None)  # a legal-move mask is the env's own rule, not the spec's range
    bad = _outside(leaf, value)
    if bad is None or not bool(bad.any()):
        return None
    index = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
    if isinstance(leaf, (OneHot,)) and value.dim():
        shown = value[index[:-1]].tolist() if len(index) > 1 else value.tolist()
        where = index[:-1]
    else:
        shown = value[index].item()
        where = index
    return (
        f"{owner}: the action {_keys.fmt(key)} is outside its spec {type(leaf).__name__}: expected "
        f"{describe_range(leaf)}, received {shown} at index {where} ({int(bad.sum())} of {bad.numel()} values outside)"
    )


def _outside(leaf: TensorSpec, value: torch.Tensor) -> torch.Tensor | None:
    """A bool tensor of the value's shape marking the entries outside ``leaf``."""
    if value.is_floating_point():
        bad = ~torch.isfinite(value)
        if isinstance(leaf, Bounded):
            low, high = leaf.low.to(value.device), leaf.high.to(value.device)
            bad = bad | (value < low) | (value > high)
        return bad
    if isinstance(leaf, Categorical):
        return (value < 0) | (value >= leaf.n)
    if isinstance(leaf, MultiCategorical):
        return (value < 0) | (value >= leaf.nvec.to(value.device))
    if isinstance(leaf, Bounded):
        return (value < leaf.low.to(value.device)) | (value > leaf.high.to(value.device))
    if leaf.is_in(value):
        return None
    return torch.ones(value.shape, dtype=torch.bool, device=value.device)
