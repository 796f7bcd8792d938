"""``ModelBasedEnvBase``: a learned world model as the transition of a batched env.

The world model is a tensordict module (``td -> td``, e.g. a ``tensordict.nn.TensorDictModule`` or
``TensorDictSequential``) that reads the current observation/state entries and the action at the
root of its input and writes the next ones (and the reward, and optionally done flags) at the root
of its output, as TorchRL's ``ModelBasedEnvBase`` documents. A step runs the model once on a
shallow copy of the input (no copy of the tensors), over the whole batch, on the env device, and
keeps the spec'd output keys: observations, reward and done entries. A model without a done head
never ends an episode (``done``/``terminated`` are ``False``).

``params``/``buffers`` (optional) run the model functionally (``torch.func.functional_call``), e.g.
with a copy of the weights being trained. Subclasses write ``_reset`` and the specs; a model that
samples draws from torch's generator, so ``torch.manual_seed`` seeds it (``set_seed`` has nothing
else to seed).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.nn import TensorDictModule
    >>> from gpusim.specs import Composite, Unbounded
    >>> class LinearModelEnv(ModelBasedEnvBase):
    ...     def __init__(self, world_model, batch_size=(4,)):
    ...         super().__init__(world_model, batch_size=batch_size)
    ...         B = self.batch_size
    ...         self.observation_spec = Composite(hidden=Unbounded((*B, 3)), shape=B)
    ...         self.state_spec = Composite(hidden=Unbounded((*B, 3)), shape=B)
    ...         self.action_spec = Unbounded((*B, 1))
    ...         self.reward_spec = Unbounded((*B, 1))
    ...     def _reset(self, tensordict=None, **kwargs):
    ...         return TensorDict({"hidden": torch.zeros(*self.batch_size, 3)}, self.batch_size)
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    >>> world = TensorDictModule(lambda h, a: model(torch.cat([h, a], -1)).split([3, 1], -1),
    ...                          in_keys=["hidden", "action"], out_keys=["hidden", "reward"])
    >>> LinearModelEnv(world).rollout(5)["next", "hidden"].shape
    torch.Size([4, 5, 3])
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.common import EnvBase

__all__ = ["ModelBasedEnvBase"]


class ModelBasedEnvBase(EnvBase):
    """A batched env whose transition is a world model (the module docstring says what the model
    reads and writes).

    Args:
        world_model: a tensordict module; moved to ``device``.
        params: parameters to run the model with (``functional_call``), by name, or ``None``.
        buffers: buffers to run the model with, by name, or ``None``.
        device: the device of the model and the data.
        batch_size: the env batch dims.
        run_type_checks: passed to ``EnvBase``.
        allow_done_after_reset: passed to ``EnvBase``.

    Raises:
        TypeError: ``world_model`` is not callable; ``params``/``buffers`` that are not dicts.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from gpusim.specs import Composite, Unbounded
        >>> class Drift(ModelBasedEnvBase):  # x' = x + a, reward = -|x'|
        ...     def __init__(self, world_model):
        ...         super().__init__(world_model, batch_size=[2])
        ...         self.observation_spec = Composite(x=Unbounded((2, 1)), shape=(2,))
        ...         self.state_spec = Composite(x=Unbounded((2, 1)), shape=(2,))
        ...         self.action_spec = Unbounded((2, 1))
        ...         self.reward_spec = Unbounded((2, 1))
        ...     def _reset(self, tensordict=None, **kwargs):
        ...         return self.full_observation_spec.zero()
        >>> step = lambda x, a: (x + a, -(x + a).abs())
        >>> env = Drift(TensorDictModule(step, ["x", "action"], ["x", "reward"]))
        >>> td = env.rollout(3, policy=lambda t: t.set("action", torch.ones(2, 1)))
        >>> td["next", "x"][0].flatten().tolist(), td["next", "reward"][0].flatten().tolist()
        ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0])
        >>> bool(td["next", "done"].any())  # no done head: the episodes never end
        False
    """

    functional_step = True

    def __init__(
        self,
        world_model: Any,
        params: dict[str, torch.Tensor] | None = None,
        buffers: dict[str, torch.Tensor] | None = None,
        device: torch.device | str | int | None = "cpu",
        batch_size: Any = None,
        run_type_checks: bool = False,
        allow_done_after_reset: bool = False,
    ) -> None:
        if not callable(world_model):
            raise TypeError(f"world_model must be a callable tensordict module, got {type(world_model).__name__}")
        for name, value in (("params", params), ("buffers", buffers)):
            if value is not None and not isinstance(value, dict):
                raise TypeError(
                    f"{name} must be a dict of tensors by name (functional_call), got {type(value).__name__}"
                )
        super().__init__(
            device=device,
            batch_size=batch_size,
            run_type_checks=run_type_checks,
            allow_done_after_reset=allow_done_after_reset,
        )
        self.world_model = world_model.to(self.device) if hasattr(world_model, "to") else world_model
        self.world_model_params = params
        self.world_model_buffers = buffers

    def set_specs_from_env(self, env: EnvBase) -> None:
        """Copies the input and output specs of ``env`` (moved to this env's device).

        Examples:
            >>> from gpusim import PendulumEnv
            >>> from tensordict.nn import TensorDictModule
            >>> class Model(ModelBasedEnvBase):
            ...     def _reset(self, tensordict=None, **kwargs):
            ...         return self.full_observation_spec.zero()
            >>> env = Model(TensorDictModule(torch.nn.Identity(), ["observation"], ["observation"]), batch_size=[2])
            >>> env.set_specs_from_env(PendulumEnv(batch_size=[2]))
            >>> env.observation_spec["observation"].shape
            torch.Size([2, 3])
        """
        if env.batch_size != self.batch_size:
            raise ValueError(
                f"set_specs_from_env: the env's batch_size {list(env.batch_size)} differs from this env's "
                f"{list(self.batch_size)}"
            )
        output = env.output_spec.clone().to(self.device)
        inputs = env.input_spec.clone().to(self.device)
        self.output_spec = output
        self.input_spec = inputs

    def _run_model(self, tensordict: TensorDictBase) -> TensorDictBase:
        model = self.world_model
        if self.world_model_params is None and self.world_model_buffers is None:
            return model(tensordict)
        tensors = {**(self.world_model_params or {}), **(self.world_model_buffers or {})}
        return torch.func.functional_call(model, tensors, (tensordict,))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self._run_model(tensordict.copy())  # a shallow copy: the model writes new entries
        keep = self._model_keys
        return self._fill_done(out.select(*keep, strict=False))

    def _fill_done(self, data: TensorDictBase) -> TensorDictBase:
        """Adds ``done = False`` at every done level that has neither ``done`` nor ``terminated``
        (a model without a done head, a ``_reset`` that writes only the start states)."""
        for level in self.done_levels:
            node = data if level.prefix == () else data.get(level.prefix, None)
            if node is None or not any(name in node.keys() for name in ("done", "terminated")):
                shape = self.full_done_spec[level.key("done")].shape
                data.set(level.key("done"), torch.zeros(shape, dtype=torch.bool, device=self.device))
        return data

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: Any, **kwargs: Any) -> TensorDictBase:
        out = self._reset(tensordict, **kwargs)
        if out is tensordict:
            raise RuntimeError(f"{type(self).__name__}._reset must return a new tensordict, not its input")
        return self._complete_done(self._fill_done(out))

    @property
    def _model_keys(self) -> list:
        return self._cached("model_keys", lambda: [*self.observation_keys, *self.reward_keys, *self.done_keys])

    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """The start states (subclasses decide: from data, from a prior, ...)."""

    def _set_seed(self, seed: int | None) -> None:
        """Nothing to seed beyond torch's generator (the model's own sampling uses it)."""
