"""Info dict readers: copy entries of a gym ``info`` dict into the step/reset tensordict.

A reader is any callable ``reader(info_dict, tensordict) -> tensordict`` with an ``info_spec``
attribute (a ``Composite`` with per-env shapes, i.e. without the env batch dims). The env adds
the (batched) ``info_spec`` to its observation spec when the reader is registered with
:meth:`GymWrapper.set_info_dict_reader`, so ``check_env_specs`` and the rollout see the keys.

Examples:
    >>> import numpy as np
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.specs import Unbounded
    >>> reader = default_info_dict_reader(["x_position"], spec=[Unbounded(())])
    >>> td = reader({"x_position": 0.5}, TensorDict({}, []))
    >>> td["x_position"]
    tensor(0.5000)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.specs import Composite, TensorSpec, Unbounded

__all__ = ["default_info_dict_reader", "BaseInfoDictReader"]


class BaseInfoDictReader:
    """Base class of info readers: ``__call__(info_dict, tensordict)`` and ``info_spec``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from gpusim.specs import Composite, Unbounded
        >>> class Lives(BaseInfoDictReader):  # reads info["lives"] as an int64 entry
        ...     info_spec = Composite(lives=Unbounded((), dtype=torch.int64), shape=())
        ...     def __call__(self, info_dict, tensordict):
        ...         return tensordict.set("lives", torch.as_tensor(info_dict.get("lives", 0)))
        >>> Lives()({"lives": 3}, TensorDict({}, []))["lives"]
        tensor(3)
    """

    info_spec: Composite

    def __call__(self, info_dict: dict, tensordict: TensorDictBase) -> TensorDictBase:  # pragma: no cover
        raise NotImplementedError

    def reset(self) -> None:
        """Called when the env is reset (stateless readers ignore it).

        Examples:
            >>> class Counting(BaseInfoDictReader):  # counts the resets it sees
            ...     resets = 0
            ...     def reset(self):
            ...         self.resets += 1
            >>> reader = Counting()
            >>> reader.reset()
            >>> reader.resets
            1
        """


class default_info_dict_reader(BaseInfoDictReader):  # noqa: N801 (TorchRL's name)
    """Copies the numeric info entries declared in its spec.

    Entries missing from an ``info`` dict (reset infos often lack step keys) are written as
    zeros, so every declared key is present after reset and step. Values are converted with one
    ``torch.as_tensor`` per key (vector envs give one array for all envs).

    Args:
        keys: the info keys to read. When ``None``, the keys of ``spec``.
        spec: the per-env spec of each key: a ``Composite``, a dict ``{key: spec}`` or a list
            aligned with ``keys``. Keys without a spec get ``Unbounded(())`` (float32 scalar per env).
        ignore_private: skip keys starting with ``"_"`` (gymnasium's vector masks).

    Raises:
        ValueError: if ``keys`` and a list ``spec`` differ in length, or nothing is declared.
        TypeError: if a spec is not a ``TensorSpec``.

    Examples:
        >>> import gymnasium as gym
        >>> from gpusim.envs.libs import GymWrapper
        >>> from gpusim.specs import Unbounded
        >>> class WithX(gym.Wrapper):  # puts the cart position in the info dict of every step
        ...     def step(self, action):
        ...         obs, reward, terminated, truncated, _ = self.env.step(action)
        ...         return obs, reward, terminated, truncated, {"x": float(obs[0])}
        >>> reader = default_info_dict_reader(["x"], spec=[Unbounded(())])
        >>> env = GymWrapper(WithX(gym.make("CartPole-v1"))).set_info_dict_reader(reader)
        >>> td = env.rollout(3)
        >>> torch.equal(td["next", "x"], td["next", "observation"][:, 0])
        True
        >>> td["x"][0].item()  # the reset info has no "x": a zero is written
        0.0
    """

    def __init__(
        self,
        keys: Sequence[str] | None = None,
        spec: Composite | dict | Sequence[TensorSpec] | None = None,
        ignore_private: bool = True,
    ) -> None:
        if isinstance(keys, str):
            keys = [keys]
        if spec is None:
            specs = {}
        elif isinstance(spec, Composite):
            specs = {k: spec[k] for k in spec.keys()}
        elif isinstance(spec, dict):
            specs = dict(spec)
        else:
            spec = list(spec)
            if keys is None or len(spec) != len(keys):
                raise ValueError(
                    f"default_info_dict_reader: a list spec needs keys of the same length, got "
                    f"{len(spec)} specs for keys {keys}"
                )
            specs = dict(zip(keys, spec))
        if keys is None:
            keys = list(specs)
        keys = [k for k in keys if not (ignore_private and k.startswith("_"))]
        if not keys:
            raise ValueError("default_info_dict_reader needs at least one key (through keys or spec)")
        for k in keys:
            s = specs.setdefault(k, Unbounded(()))
            if not isinstance(s, TensorSpec):
                raise TypeError(f"the spec of info key {k!r} must be a TensorSpec, got {type(s).__name__}")
        self.keys = list(keys)
        self.ignore_private = ignore_private
        self.info_spec = Composite({k: specs[k] for k in self.keys}, shape=())
        self._batch: torch.Size | None = None
        self._zeros: dict[str, torch.Tensor] = {}

    def bind(self, batch_size: torch.Size) -> None:
        """Fixes the env batch dims (called by the env when the reader is registered).

        Args:
            batch_size: the env batch dims.

        Examples:
            >>> from tensordict import TensorDict
            >>> reader = default_info_dict_reader(["x"])
            >>> reader.bind(torch.Size([3]))
            >>> reader({}, TensorDict({}, [3]))["x"]  # missing entries are zeros of the batch
            tensor([0., 0., 0.])
        """
        self._batch = torch.Size(batch_size)
        self._zeros = {k: self.info_spec[k].zero(self._batch) for k in self.keys}

    def __call__(self, info_dict: dict, tensordict: TensorDictBase) -> TensorDictBase:
        batch = tensordict.batch_size if self._batch is None else self._batch
        for key in self.keys:
            value = info_dict.get(key, None)
            spec = self.info_spec[key]
            if value is None:
                zero = self._zeros.get(key)
                tensordict.set(key, zero.clone() if zero is not None else spec.zero(batch))
                continue
            t = torch.as_tensor(np.asarray(value), dtype=spec.dtype)
            tensordict.set(key, t.reshape((*batch, *spec.shape)))
        return tensordict

    def __repr__(self) -> str:
        return f"{type(self).__name__}(keys={self.keys})"
