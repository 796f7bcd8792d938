"""A gpusim env as a TorchRL env: :class:`TorchRLEnv`, built by :func:`gpusim.to_torchrl`.

TorchRL's stack (``check_env_specs``, collectors, ``TransformedEnv``, ``SerialEnv`` /
``ParallelEnv``, objectives, replay buffers) takes instances of ``torchrl.envs.EnvBase`` whose
specs are ``torchrl.data`` specs: it checks ``isinstance`` against its own classes and reads
private attributes of its own base class (``_has_dynamic_specs``, ``_supports_set_state``, ...).
A gpusim env is a gpusim ``EnvBase`` with gpusim specs, so TorchRL does not take it as it is;
making it pass for one (registering gpusim's classes as virtual subclasses, copying TorchRL's
private attributes) would tie gpusim to TorchRL internals that change between releases, and
TorchRL transforms would still meet gpusim specs. The adapter is the documented road instead: a
real ``torchrl.envs.EnvBase`` subclass that implements TorchRL's hooks (``_step``, ``_reset``,
``_set_seed``) by calling the gpusim env, with TorchRL specs converted once from gpusim's.

No data is copied on the way: ``_step`` returns the tensordict the gpusim env produced (its
tensors, on its device), ``_reset`` returns the gpusim env's reset data, which TorchRL then
merges with the rows that are not reset, as it does for any env, and ``step_and_maybe_reset``
(the collectors' step) is the gpusim env's own.

This module imports torchrl: use it through :func:`gpusim.to_torchrl`, which says what to
install when torchrl is missing.

Examples:
    >>> import gpusim as gs
    >>> from torchrl.envs.utils import check_env_specs
    >>> env = TorchRLEnv(gs.make("CartPole-v1", num_envs=4, seed=0))
    >>> check_env_specs(env)  # TorchRL's own checker
    >>> env.rollout(3).batch_size
    torch.Size([4, 3])
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase as _TorchRLEnvBase

from gpusim.envs.common import EnvBase
from gpusim.interop.torchrl_specs import to_torchrl_spec
from gpusim.specs import Composite

__all__ = ["TorchRLEnv"]


def _observations_with_state(env: EnvBase) -> Composite:
    """The gpusim observation spec plus the state entries that are not observations.

    gpusim's ``step`` writes every state entry under ``"next"`` and its ``step_mdp`` carries
    every ``"next"`` entry to the next root. TorchRL's ``step_mdp`` carries observations only
    (state entries are inputs, kept from the root), so a state that the env advances (the
    native envs' ``"state"``) is declared as an observation too, as TorchRL's own stateless
    envs do (``PendulumEnv``).
    """
    spec = env.full_observation_spec
    extra = [key for key in env.state_keys if key not in set(env.observation_keys)]
    if not extra:
        return spec
    spec = spec.clone()
    spec.unlock_()
    for key in extra:
        spec[key] = env.full_state_spec[key].clone()
    return spec


class TorchRLEnv(_TorchRLEnvBase):
    """A gpusim env seen as a ``torchrl.envs.EnvBase`` (same data, same device, no copies).

    Specs are the gpusim env's, converted once to ``torchrl.data`` specs at construction (a
    later change of the gpusim env's specs is not followed: adapt the env when it is
    complete). State entries that are not observations (the native envs' ``"state"``) are
    declared as observations too, as TorchRL's stateless envs do: TorchRL's ``step_mdp``
    carries observations from ``"next"`` to the next step, gpusim's carries every entry.
    ``batch_size`` and ``device`` are the gpusim env's.

    * ``_step`` checks the action against the spec as gpusim's ``step`` does (shape and dtype,
      no device sync) and returns the gpusim env's complete ``"next"`` data.
    * ``_reset`` is gpusim's ``reset`` on a shallow copy of the input: gpusim's rules resolve
      the ``"_reset"`` entries and the rows that are not reset keep the input's data, so
      TorchRL's own merge that follows (full or masked) gives gpusim's result. TorchRL's
      auto-reset passes the ``"_reset"`` entries only; it then restores the other rows itself.
      Both roads give the same data (the tests compare them).
    * ``_set_seed`` seeds the gpusim env (``set_seed`` returns TorchRL's next seed).
    * A ``"_step"`` entry (TorchRL's partial steps, written by ``rollout(...,
      break_when_all_done=True)``) is honoured for envs whose step is a pure function of the
      tensordict (``functional_step``, e.g. the native envs): every row is stepped and the rows
      that are not stepped keep their data (reward 0), as TorchRL's skipped steps do. Other envs
      raise on it.
    * ``close`` closes the gpusim env. Attributes of the gpusim env are reached through
      :attr:`gpusim_env` (they are not forwarded: TorchRL probes env attributes such as
      ``transform`` and ``base_env`` that a gpusim env also has, with another meaning).

    * ``step_and_maybe_reset`` (what collectors call every step) is the gpusim env's: its
      ``step``, ``step_mdp`` and auto-reset in one call, without TorchRL's host reads of the
      done flags on ``MASKED`` (device) envs; see the method for the one documented difference
      in entries carried in the root. Everything else (``step``, ``reset``, ``rollout`` with a
      break, TorchRL transforms and batched envs around the adapter) is TorchRL's machinery over
      the hooks above.

    Args:
        env: the gpusim env (a :class:`gpusim.EnvBase`).
        allow_done_after_reset: TorchRL's flag: do not raise when a reset leaves ``done`` set.

    Raises:
        TypeError: ``env`` is not a gpusim ``EnvBase``, or it has a spec with no TorchRL
            equivalent (naming its key).

    Examples:
        >>> import gpusim as gs
        >>> from torchrl.envs import StepCounter, TransformedEnv
        >>> base = TorchRLEnv(gs.make("Pendulum-v1", num_envs=2, seed=0))
        >>> env = TransformedEnv(base, StepCounter(step_count_key="steps"))  # a TorchRL transform
        >>> td = env.rollout(4)
        >>> td["next", "steps"][0].squeeze(-1).tolist()
        [1, 2, 3, 4]
        >>> type(base.gpusim_env).__name__
        'TransformedEnv'
    """

    def __init__(self, env: EnvBase, *, allow_done_after_reset: bool = False) -> None:
        if not isinstance(env, EnvBase):
            raise TypeError(f"TorchRLEnv needs a gpusim EnvBase as env, got {type(env).__name__}")
        super().__init__(device=env.device, batch_size=env.batch_size, allow_done_after_reset=allow_done_after_reset)
        self._gpusim_env = env  # a submodule: state_dict() holds its statistics (VecNorm, ...)
        self.full_action_spec = to_torchrl_spec(env.full_action_spec, ("full_action_spec",))
        self.full_state_spec = to_torchrl_spec(env.full_state_spec, ("full_state_spec",))
        self.full_observation_spec = to_torchrl_spec(_observations_with_state(env), ("full_observation_spec",))
        self.full_reward_spec = to_torchrl_spec(env.full_reward_spec, ("full_reward_spec",))
        self.full_done_spec = to_torchrl_spec(env.full_done_spec, ("full_done_spec",))
        self.is_closed = False

    @property
    def gpusim_env(self) -> EnvBase:
        """The adapted gpusim env."""
        return self._gpusim_env

    # ------------------------------------------------------------------ TorchRL hooks
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        env = self._gpusim_env
        env._check_inputs(tensordict)  # TorchRL checked the batch size
        partial = tensordict.get("_step", None)
        next_tensordict = env._step_output(tensordict)
        if partial is not None:
            return self._keep_skipped_rows(tensordict, next_tensordict, partial)
        return next_tensordict

    def _keep_skipped_rows(
        self, tensordict: TensorDictBase, next_tensordict: TensorDictBase, partial: Any
    ) -> TensorDictBase:
        """Rows whose ``"_step"`` is False keep the input's data (zeros where it has none, as
        TorchRL's skipped steps do); only a functional step may be computed and discarded."""
        env = self._gpusim_env
        if not env.functional_step:
            raise NotImplementedError(
                f"{type(env).__name__} does not support TorchRL's partial steps (a '_step' entry in the input, "
                "written e.g. by rollout(break_when_all_done=True)): its step is not a pure function of the "
                "tensordict (functional_step is False), so rows cannot be stepped and discarded; use "
                "break_when_any_done or non-stop rollouts"
            )
        if not isinstance(partial, torch.Tensor) or partial.dtype is not torch.bool:
            raise TypeError(f"the '_step' entry must be a bool tensor, got {partial!r}")
        stepped = partial.reshape(env.batch_size)
        for key, value in list(next_tensordict.items(True, True)):
            if not isinstance(value, torch.Tensor):
                continue
            previous = tensordict.get(key, None)
            keep = previous if isinstance(previous, torch.Tensor) and previous.shape == value.shape else 0
            mask = stepped.reshape(*stepped.shape, *([1] * (value.ndim - stepped.ndim)))
            next_tensordict.set(key, torch.where(mask, value, keep))
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        env = self._gpusim_env
        if tensordict is None:
            return env.reset(**kwargs)
        # gpusim's reset resolves the "_reset" entries with its rules and merges the reset rows into
        # (a shallow copy of) the input: TorchRL wants a new tensordict and still reads the input's
        # "_reset" entries. The rows that are not reset hold the previous data (when the input has
        # it), so TorchRL's own merge, full or masked, agrees with gpusim's.
        return env.reset(tensordict.copy(), **kwargs)

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """TorchRL's ``step`` + ``step_mdp`` + ``maybe_reset`` (what collectors call every step),
        run by the gpusim env's ``step_and_maybe_reset``: one call into gpusim's episode core,
        without TorchRL's host reads of the done flags when the env resets ``MASKED`` (as device
        envs do). The data is that of TorchRL's own road (the tests compare them): the next root
        keeps the action, as TorchRL's does. One difference, within TorchRL's documented
        contract ("identical to the input where the environment was not reset and contains the
        new reset data where it was"): in the rows that are reset, entries that a reset does not
        produce (the action, a policy's outputs, carried in the root) keep their values, where
        TorchRL's merge writes zeros; the next policy call overwrites them, and collectors store
        the stepped data, which is the same.

        TorchRL's own road runs instead for what it handles and gpusim does not: a
        ``compile()`` d env, partial steps (a ``"_step"`` entry), ``"next"`` entries already in
        the input, and post-``step_mdp`` hooks.
        """
        if (
            self.__dict__.get("_compiled_step_and_maybe_reset") is not None  # set by TorchRL's compile()
            or getattr(self, "_post_step_mdp_hooks", None) is not None  # TorchRL 0.14 hooks
            or "_step" in tensordict.keys()
            or "next" in tensordict.keys()
        ):
            return super().step_and_maybe_reset(tensordict)
        stepped, root = self._gpusim_env.step_and_maybe_reset(tensordict)
        for key in self.action_keys:  # TorchRL's step_mdp keeps the action in the next root
            root.set(key, stepped.get(key))
        return stepped, root

    def _set_seed(self, seed: int | None) -> None:
        self._gpusim_env.set_seed(seed)

    # ------------------------------------------------------------------ misc
    def close(self, *, raise_if_closed: bool = True) -> None:
        """Closes the gpusim env and this adapter."""
        self._gpusim_env.close()
        super().close(raise_if_closed=raise_if_closed)

    def to(self, device: Any) -> TorchRLEnv:
        """Moves the gpusim env and the specs to ``device``; returns ``self``."""
        if torch.device(device) != self._gpusim_env.device:
            self._gpusim_env.to(device)
        return super().to(device)

    def __repr__(self) -> str:
        inner = "\n    ".join(repr(self._gpusim_env).split("\n"))
        return f"TorchRLEnv(\n    {inner})"
