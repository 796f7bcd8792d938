"""The native env contract: :class:`NativeEnv` (specs + ``_reset(td, rows)`` + ``_step(td)``).

A native env is a tensor program written once in plain torch: the same ``_reset``/``_step``
run eager, inside ``torch.compile`` graphs (``rollout(..., compile=True)``) and on CUDA, for any
batch size. The contract (see ``docs/writing_an_env.md`` for a complete env in ~30 lines):

* ``__init__``: call ``super().__init__(batch_size, device, seed)``, then set the specs
  (``observation_spec``, ``action_spec``, ``reward_spec``, ``state_spec``, ``done_spec``) with
  the env's batch dims ``self.batch_size`` and device ``self.device``.
* ``_reset(tensordict, rows) -> TensorDict``: the start data of every row. ``rows`` is a
  :class:`~gpusim.envs.native.rng.ResetRows`: which rows reset (``rows.mask``, ``rows.index``)
  and their random numbers (``rows.uniform(low, high, n)``, ``rows.randint``,
  ``rows.bernoulli``). Rows that do not reset are restored afterwards.
* ``_step(tensordict) -> TensorDict``: the next observation, reward and done flags, a pure
  function of the input (keep the physical state in the tensordict, e.g. under ``"state"``).
  Randomness inside a step comes from ``self.rng`` (:class:`~gpusim.envs.native.rng.CounterRNG`:
  ``self.rng.uniform(low, high, n)``, ``randint``, ``bernoulli``).
* no host reads (``.item()``, ``bool(tensor)``), no ``torch.Generator``, no Python branch on
  tensor values; shared eager-CPU speed tricks are in :mod:`gpusim.envs.native._ops`.

``seed`` / ``env.set_seed(s)`` seed ``self.rng`` (both streams).

Physical constants that may vary per env are named by the class attribute ``params``; env code
reads them through :meth:`NativeEnv.physics` (numbers, or ``[*B]`` tensors travelling in the data
under ``"params"``; see :mod:`gpusim.envs.native.params`). :meth:`NativeEnv.get_state` and
:meth:`NativeEnv.set_state` save and restore everything that defines the next step.

Examples:
    >>> import torch
    >>> from gpusim.specs import Composite
    >>> done_spec(torch.Size([2]), torch.device("cpu"))["terminated"].shape
    torch.Size([2, 1])
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._fasttd import fast_get, new_td
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import ResetMasks
from gpusim.envs.native._checks import random_seed
from gpusim.envs.native._ops import stack_last
from gpusim.envs.native.params import ParamTable
from gpusim.envs.native.rng import CounterRNG, ResetRows
from gpusim.kernels import select
from gpusim.render.drawings import Renderable
from gpusim.specs import Categorical, Composite

__all__ = ["NativeEnv", "done_spec", "stack_last"]


def done_spec(batch_size: torch.Size, device: torch.device) -> Composite:
    """``Composite(done=..., terminated=...)``, both bool ``[*B, 1]``.

    Args:
        batch_size: the env batch dims.
        device: the env device.
    """
    flag = Categorical(2, shape=(*batch_size, 1), dtype=torch.bool, device=device)
    return Composite(done=flag, terminated=flag.clone(), shape=batch_size, device=device)


class NativeEnv(Renderable, EnvBase):
    """Base of the native envs (see the module docstring for the contract).

    Subclasses implement ``_reset(tensordict, rows)`` and ``_step(tensordict)``. The base owns
    the env's random numbers, :attr:`rng` (a :class:`~gpusim.envs.native.rng.CounterRNG` seeded
    by ``seed`` and ``set_seed``), and builds the ``rows`` argument of ``_reset`` in its
    ``_reset_rows`` hook.

    **Action values are not checked in the default mode** (no host read per step): the physics
    receive guarded actions, ``Categorical`` indices clamped into range (CartPole's ``7`` pushes
    right, ``-1`` left) and NaN float actions as ``0``, while the tensordict keeps the action as
    given (:mod:`gpusim.envs._action_guard`, ``docs/bad-actions.md``). The debug mode
    (``env.run_type_checks = True``) raises on them instead, naming the key, range and value.

    Args:
        batch_size: the env batch dims.
        device: the env device.
        seed: the initial seed; ``None`` draws one from torch's global generator.

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (see :class:`~gpusim.envs.common.EnvBase`).
        num_noise: the default ``n`` of a draw (``rows.uniform(low, high)`` without ``n``); the
            lane ids of draws of this size are cached.
        noise_bits: the default resolution of uniform draws, 16 or 24 bits.
        randomize: ``{param: distribution}`` (``gs.uniform``, ``gs.log_uniform``, ``gs.normal``,
            ``gs.choice``): those parameters are re-drawn for the rows that reset.
        expose_params: also put the per-env parameters in the observation spec (``"params"``),
            for policies that condition on them.

    Attributes:
        rng: the env's :class:`~gpusim.envs.native.rng.CounterRNG` (step stream:
            ``self.rng.uniform(low, high, n)`` in ``_step``).
        params: (class attribute) the names of the physical constants that may be per-env
            tensors or randomized.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0)
        >>> isinstance(env.rng, CounterRNG), env.rng.batch_size
        (True, torch.Size([2]))
    """

    functional_step = True
    #: ``reset(td, set_state=True)`` restores the state held by ``td`` (see :meth:`_reset_rows`)
    _supports_set_state = True
    guard_actions = True  # out-of-range indices clamped, NaN actions as 0 (see gpusim.envs._action_guard)
    params: tuple[str, ...] = ()

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        num_noise: int = 1,
        noise_bits: int = 24,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        super().__init__(batch_size=batch_size, device=device, auto_reset_mode=auto_reset_mode)
        self.rng = CounterRNG(self.batch_size, num=num_noise, device=self.device, bits=noise_bits)
        self.set_seed(seed)  # (the public call: rollout()'s random actions follow the seed too)
        if not isinstance(expose_params, bool):
            raise TypeError(f"expose_params must be a bool, got {expose_params!r}")
        self._param_options = (randomize, expose_params)

    def _post_init(self) -> None:
        # the subclass has set its specs and constants: plan the per-env parameters before the
        # specs lock (a "params" entry in the state spec, and in the observation spec if exposed)
        randomize, expose = self.__dict__.pop("_param_options", (None, False))
        values = {name: getattr(self, name) for name in self.params}
        self.param_table = ParamTable(type(self).__name__, self.params, values, randomize, self.batch_size, self.device)
        for name in self.param_table.per_env:  # the env attribute shows the per-env tensor given
            if f"value_{name}" in self.param_table._buffers:
                setattr(self, name, self.param_table._buffers[f"value_{name}"])
        if self.param_table.per_env:
            spec = self.param_table.spec(self.device)
            self.state_spec = self._with_params(self.state_spec, spec)
            if expose:
                self.observation_spec = self._with_params(self.observation_spec, spec)
        elif expose:
            raise ValueError(
                f"{type(self).__name__}: expose_params=True but no parameter is per-env (give one as a [*B] tensor "
                f"or in randomize=...; parameters: {list(self.params)})"
            )
        super()._post_init()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).params:  # physics() reads the new value
            self.__dict__.pop("_constants", None)
        super().__setattr__(name, value)

    def _with_params(self, spec: Composite, params: Composite) -> Composite:
        spec = spec.clone()
        spec["params"] = params.clone()
        return spec

    def physics(
        self, tensordict: TensorDictBase | None, rows: ResetRows | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The env's parameters for this reset (with ``rows``) or step: ``(values, echo)``.

        ``values`` is read-only (with constants only, the same dict is returned every call).
        ``values[name]`` is the Python number of a constant parameter, or the ``[*B]`` tensor of a
        per-env one (drawn for the resetting rows, or read from ``tensordict["params"]`` in a
        step). ``echo`` is ``{}``, or ``{"params": ...}`` to return with the step's or reset's
        data (pass it to :meth:`_out`), so that the values travel with the rows.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.PendulumEnv(batch_size=[2], g=torch.tensor([9.0, 11.0]))
            >>> p, echo = env.physics(env.reset())
            >>> p["g"].tolist(), p["m"], list(echo)
            ([9.0, 11.0], 1.0, ['params'])
        """
        table = self.param_table
        if not table.per_env:  # constants only: the same (read-only) dict every eager call
            if torch.compiler.is_compiling():  # (no env state written inside a graph: no guard on it)
                return {name: getattr(self, name) for name in self.params}, {}
            values = self.__dict__.get("_constants")
            if values is None:  # (dropped by __setattr__ when a parameter is set)
                values = self.__dict__["_constants"] = {name: getattr(self, name) for name in self.params}
            return values, {}
        values = {name: getattr(self, name) for name in self.params}
        if rows is not None:
            drawn = table.start(rows)
            values.update(drawn)
            return values, {"params": new_td(drawn, self.batch_size, self.device)}
        params = tensordict.get("params")
        for name in table.per_env:
            values[name] = params.get(name)
        return values, {"params": params}

    def set_ranges(self, **ranges: Any) -> None:
        """Changes the numbers of randomized parameters in place (a curriculum step): the rows
        that reset next draw from the new ranges. Never recompiles, never reads the device.

        Args:
            **ranges: ``name=(low, high)`` (``(mean, std)`` for a normal, the choices for a
                choice), or a distribution of the same kind.

        Raises:
            KeyError: a parameter that is not randomized. ValueError: invalid numbers.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.CartPoleEnv(batch_size=[3], seed=0, randomize={"length": gs.uniform(0.4, 0.6)})
            >>> env.set_ranges(length=(2.0, 2.0))
            >>> env.reset()["params", "length"].tolist()
            [2.0, 2.0, 2.0]
        """
        self.param_table.set_ranges(**ranges)

    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        """The start data of every row (a new tensordict); ``rows`` tells which rows reset and
        draws their random numbers (see the module docstring)."""

    def _reset_rows(self, tensordict, masks: ResetMasks, **kwargs):
        # The rows of ``masks`` start their next episode (the reset stream of a row is keyed by
        # its episode index). In SPARSE mode, on large batches, only those rows are hashed (their
        # numbers are those of a full draw) when the input holds every entry a reset writes, so
        # that the merge restores the other rows; the other rows are zero, never uninitialised.
        if kwargs.pop("set_state", False):
            return self._restore_rows(tensordict, masks)
        mask = masks.env_rows()
        index = None
        if (
            mask is not None
            and masks.sparse
            and select("sparse_reset", self.device, self.batch_size.numel()) == "cpu"
            and self._holds_noise_keys(tensordict)
        ):
            index = masks.rows()
        rows = ResetRows.start(self.rng, mask, index)
        return super()._reset_rows(tensordict, masks, rows=rows, **kwargs)

    def _input_td_has_state(self, tensordict: TensorDictBase | None) -> bool:
        # a native env's data always holds its state (the env keeps none): its presence says
        # nothing about the caller's intent, so an unspecified set_state means False (TorchRL's
        # rule from its v0.15), never a warning; reset(td, set_state=True) restores it
        return False

    def _restore_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks) -> TensorDictBase:
        """``reset(td, set_state=True)``: the reset rows take the observation and state entries
        of ``td`` (copies; done flags cleared); the random streams are left as they are."""
        if tensordict is None:
            raise ValueError(
                f"{type(self).__name__}.reset(set_state=True) needs the data to restore: pass the root "
                "tensordict holding the state (or a state of get_state())"
            )
        keys = self._cached(
            "native_restore_keys",
            lambda: [*self.observation_spec.keys(True, True), *self.state_spec.keys(True, True)],
        )
        out = self.full_done_spec.zero()
        for key in keys:
            value = tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"{type(self).__name__}.reset(td, set_state=True): the input has no {key!r} entry; it "
                    f"needs every observation and state entry ({[str(k) for k in keys]}): pass a root the "
                    "env returned, or a state of get_state()"
                )
            out.set(key, value.clone())
        self._remember(out, tensordict, masks)
        return out

    def get_state(self, tensordict: TensorDictBase | None = None) -> TensorDict:
        """Everything that defines the next step, ``[*B]``: ``"data"`` (a copy of the root data the
        next step reads: physics state, per-env parameters, done flags, transforms' entries) and
        ``"rng"`` (the random streams' keys and counters, and each row's episode index).

        ``state[idx]`` gathers rows (a planner branches ``K`` copies of a row into an env of batch
        ``K``); :meth:`set_state` restores a state. Replaying the same actions from a restored
        state gives the same data, bit for bit (a forked row's step-stream numbers are those of
        its new row index).

        Args:
            tensordict: the root data the next step would read (what ``reset`` or
                ``step_and_maybe_reset`` returned as the next root). ``None``: the root the
                env's last call returned (``reset``, ``step``'s ``"next"``, ``maybe_reset``,
                ``step_and_maybe_reset``, the end of a ``rollout``).

        Raises:
            RuntimeError: no data given and the env has not returned any yet.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
            >>> td = env.reset()
            >>> state = env.get_state(td)
            >>> sorted(state.keys()), state.batch_size
            (['data', 'rng'], torch.Size([4]))
            >>> lean = lambda td: td.set("action", (td["state"][..., 2] > 0).long())  # push toward the lean
            >>> a = env.rollout(20, lean, auto_reset=False, tensordict=td, break_when_any_done=False)
            >>> b = env.rollout(20, lean, auto_reset=False, tensordict=env.set_state(state), break_when_any_done=False)
            >>> torch.equal(a["next", "state"], b["next", "state"])
            True
        """
        if tensordict is None:
            tensordict = self._current_root()
        B, rng = self.batch_size, self.rng
        data = tensordict.exclude("next").clone()
        streams = {
            "key": rng.key.expand(B).clone(),
            "counter": rng.counter.expand(B).clone(),
            "reset_key": rng.reset_key.expand(B).clone(),
            "episodes": rng.episodes.clone(),
        }
        return TensorDict({"data": data, "rng": streams}, batch_size=B, device=self.device)

    def set_state(self, state: TensorDictBase) -> TensorDictBase:
        """Restores a state of :meth:`get_state` (of this batch size: gather rows first) and
        returns the root data to continue from (a copy).

        The streams' keys and counters are shared by the rows: a state's first row gives them
        (the rows of one saved state agree). No host read: the copies stay on the device.

        Raises:
            ValueError: a state of another batch size, or without ``"data"``/``"rng"`` (naming
                what was expected and received).

        Examples:
            >>> import gpusim as gs
            >>> env = gs.PendulumEnv(batch_size=[3], seed=0)
            >>> state = env.get_state(env.reset())
            >>> fork = gs.PendulumEnv(batch_size=[2], seed=5)  # two copies of row 1
            >>> td = fork.set_state(state[torch.tensor([1, 1])])
            >>> torch.equal(td["state"][0], state["data", "state"][1])
            True
        """
        B = self.batch_size
        if not isinstance(state, TensorDictBase) or "data" not in state.keys() or "rng" not in state.keys():
            raise ValueError(
                f"{type(self).__name__}.set_state: expected a state of get_state (a tensordict with 'data' and 'rng'), "
                f"got {type(state).__name__} with keys {sorted(map(str, state.keys())) if isinstance(state, TensorDictBase) else '-'}"
            )
        if state.batch_size != B:
            raise ValueError(
                f"{type(self).__name__}.set_state: the state has batch size {list(state.batch_size)}, the env "
                f"{list(B)}; gather rows first (state[idx]) or build an env of that batch size"
            )
        rng, streams = self.rng, state["rng"]
        for name in ("key", "counter", "reset_key"):
            buffer = getattr(rng, name)
            buffer.copy_(streams[name].reshape(-1)[0])
        rng.episodes.copy_(streams["episodes"])
        return state["data"].clone()

    def _holds_noise_keys(self, tensordict) -> bool:
        """Whether ``tensordict`` has every entry a reset draws (observation and state keys)."""
        if tensordict is None:
            return False
        keys = self._cached("native_noise_keys", lambda: [*self.observation_keys, *self.state_keys])
        for key in keys:
            value = fast_get(tensordict, key) if isinstance(key, str) else tensordict.get(key, None)
            if value is None:
                return False
        return True

    def _set_seed(self, seed: int | None) -> None:
        self.rng.manual_seed(random_seed() if seed is None else seed)

    def _flags(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh ``(done, terminated)`` all-False tensors ``[*B, 1]``."""
        shape = (*self.batch_size, 1)
        return (
            torch.zeros(shape, dtype=torch.bool, device=self.device),
            torch.zeros(shape, dtype=torch.bool, device=self.device),
        )

    def _out(self, **entries: torch.Tensor) -> TensorDict:
        """A flat tensordict of freshly computed tensors (already on the env device, with the
        env batch dims), built without per-key validation when tensordict allows it."""
        return new_td(entries, self.batch_size, self.device)
