"""``ModuleTransform``: a tensordict module run as a transform.

The module's ``in_keys``/``out_keys`` are the transform's keys. With ``inverse=True`` the module runs
on the data going into the base env (actions) instead of the data coming out of it. Specs are left
as they are unless a ``*_spec_transform`` (a new spec, or a function of the current one) is given.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.nn import TensorDictModule
    >>> t = ModuleTransform(module=TensorDictModule(torch.nn.Linear(3, 5), ["obs"], ["feat"]))
    >>> t(TensorDict(obs=torch.zeros(2, 3), batch_size=[2]))["feat"].shape
    torch.Size([2, 5])
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.transforms.transform import Transform

__all__ = ["ModuleTransform"]

SpecChange = Any  # a TensorSpec, or a callable taking the current spec and returning the new one


def _fixed_keys(name: str):
    def getter(self) -> list:
        return list(self._module_keys(name))

    def setter(self, value) -> None:
        if value is not None and "module" in self._modules:
            raise RuntimeError(f"ModuleTransform: {name} come from the module and cannot be set (got {value!r})")

    side = "inverse=True" if name.endswith("_inv") else "inverse=False"
    source = {"in_keys": "in_keys", "out_keys": "out_keys", "in_keys_inv": "out_keys", "out_keys_inv": "in_keys"}[name]
    doc = f"""The transform's ``{name}``: the module's ``{source}`` with ``{side}``, else empty.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> t = ModuleTransform(module=TensorDictModule(lambda a: a, ["a"], ["b"]), {side})
            >>> t.{name}
            {["a"] if source == "in_keys" else ["b"]!r}
        """
    return property(getter, setter, doc=doc)


class ModuleTransform(Transform):
    """Runs a tensordict module (``in_keys`` -> ``out_keys``) on the env's outputs or inputs.

    Keyword Args:
        module: the module to run (a ``TensorDictModuleBase``). Exactly one of ``module`` and
            ``module_factory`` is given.
        module_factory: a callable building the module.
        no_grad: run the module under ``torch.no_grad()`` (default: False).
        inverse: run the module on the inputs of ``step`` (e.g. actions) instead of the outputs.
        device: the device the data is moved to before the module runs (default: unchanged).
        observation_spec_transform, action_spec_transform, reward_spec_transform,
        done_spec_transform, state_spec_transform: the new spec, or a callable mapping the
            current spec to it; ``None`` (default) keeps the spec unchanged.

    Raises:
        ValueError: neither or both of ``module`` and ``module_factory`` are given.
        RuntimeError: setting the keys (they come from the module).

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> double = TensorDictModule(lambda a: a * 0.5, in_keys=["action"], out_keys=["action"])
        >>> env = TransformedEnv(PendulumEnv(seed=0), ModuleTransform(module=double, inverse=True))
        >>> env.transform.in_keys_inv, env.rollout(3).shape
        (['action'], torch.Size([3]))
    """

    in_keys = _fixed_keys("in_keys")
    out_keys = _fixed_keys("out_keys")
    in_keys_inv = _fixed_keys("in_keys_inv")
    out_keys_inv = _fixed_keys("out_keys_inv")

    def __init__(
        self,
        *,
        module: Any = None,
        module_factory: Callable[[], Any] | None = None,
        no_grad: bool = False,
        inverse: bool = False,
        device: torch.device | str | None = None,
        observation_spec_transform: SpecChange = None,
        action_spec_transform: SpecChange = None,
        reward_spec_transform: SpecChange = None,
        done_spec_transform: SpecChange = None,
        state_spec_transform: SpecChange = None,
    ) -> None:
        if (module is None) == (module_factory is None):
            raise ValueError(
                "ModuleTransform: exactly one of `module` and `module_factory` must be given, got "
                f"module={type(module).__name__}, module_factory={type(module_factory).__name__}"
            )
        super().__init__()
        self.module = module if module is not None else module_factory()
        self.no_grad = bool(no_grad)
        self.inverse = bool(inverse)
        self.device = None if device is None else torch.device(device)
        self._spec_changes = {
            "observation": observation_spec_transform,
            "action": action_spec_transform,
            "reward": reward_spec_transform,
            "done": done_spec_transform,
            "state": state_spec_transform,
        }

    def _module_keys(self, name: str) -> list:
        module = self._modules.get("module")
        if module is None:
            return []
        forward_side = name in ("in_keys", "out_keys")
        if forward_side == self.inverse:
            return []
        # the inverse reads the module's outputs' outer names: in_keys_inv are what the base env gets
        return list(
            {
                "in_keys": module.in_keys,
                "out_keys": module.out_keys,
                "in_keys_inv": module.out_keys,
                "out_keys_inv": module.in_keys,
            }[name]
        )

    def _run(self, tensordict: TensorDictBase) -> TensorDictBase:
        with torch.no_grad() if self.no_grad else nullcontext():
            td = tensordict.to(self.device) if self.device is not None else tensordict
            return self.module(td)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict if self.inverse else self._run(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._run(tensordict) if self.inverse else tensordict

    def _has_inverse(self) -> bool:
        return self.inverse

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs the module on ``tensordict`` (offline use; a no-op when ``inverse=True``).

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> from tensordict.nn import TensorDictModule
            >>> t = ModuleTransform(module=TensorDictModule(lambda x: x + 1, ["x"], ["y"]))
            >>> t.forward(TensorDict(x=torch.zeros(2), batch_size=[2]))["y"].tolist()
            [1.0, 1.0]
        """
        return self._call(tensordict)

    def _changed(self, kind: str, spec: Any) -> Any:
        change = self._spec_changes[kind]
        if change is None:
            return spec
        return change(spec) if callable(change) and not hasattr(change, "is_in") else change

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        """The observation spec after the module (``observation_spec_transform``; default unchanged).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Composite, Unbounded
            >>> t = ModuleTransform(module=TensorDictModule(lambda x: x, ["x"], ["x"]),
            ...                     observation_spec_transform=lambda s: s.set("x", Unbounded(4)))
            >>> t.transform_observation_spec(Composite(x=Unbounded(2)))["x"].shape
            torch.Size([4])
        """
        return self._changed("observation", observation_spec)

    def transform_action_spec(self, action_spec: Any) -> Any:
        """The action spec seen outside (``action_spec_transform``; default unchanged).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Unbounded
            >>> t = ModuleTransform(module=TensorDictModule(lambda x: x, ["a"], ["a"]), action_spec_transform=Unbounded(3))
            >>> t.transform_action_spec(Unbounded(1)).shape
            torch.Size([3])
        """
        return self._changed("action", action_spec)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        """The reward spec (``reward_spec_transform``; default unchanged).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Unbounded
            >>> t = ModuleTransform(module=TensorDictModule(lambda x: x, ["r"], ["r"]))
            >>> t.transform_reward_spec(Unbounded(1)).shape
            torch.Size([1])
        """
        return self._changed("reward", reward_spec)

    def transform_done_spec(self, done_spec: Any) -> Any:
        """The done spec (``done_spec_transform``; default unchanged).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Binary
            >>> t = ModuleTransform(module=TensorDictModule(lambda x: x, ["d"], ["d"]))
            >>> t.transform_done_spec(Binary(1)).shape
            torch.Size([1])
        """
        return self._changed("done", done_spec)

    def transform_state_spec(self, state_spec: Any) -> Any:
        """The state spec (``state_spec_transform``; default unchanged).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Composite
            >>> t = ModuleTransform(module=TensorDictModule(lambda x: x, ["s"], ["s"]))
            >>> t.transform_state_spec(Composite()).is_empty()
            True
        """
        return self._changed("state", state_spec)
