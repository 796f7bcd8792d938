"""``Timer``: wall-clock intervals of an env loop, written into the data: the time of each env
step (``time_step``), of the policy between two steps (``time_policy``) and of each reset
(``time_reset``).

The times are host clock readings (``time.perf_counter``); on an asynchronous device they time
the launches, not the kernels (synchronise first for kernel times). Reading the clock never
syncs the device.

Examples:
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import TransformedEnv
    >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), Timer())
    >>> td = env.rollout(3)
    >>> bool((td["next", "time_step"] > 0).all()), td["time_step"][:, 0].tolist()  # 0 after the reset
    (True, [0.0, 0.0])
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey
from gpusim.specs import Composite, Unbounded
from gpusim.transforms.transform import Transform

__all__ = ["Timer"]


class Timer(Transform):
    """Measures the env step, policy and reset times of an env loop (seconds, float32).

    Args:
        out_keys: the three entries ``[step, policy, reset]`` (default: ``time_key`` + ``"_step"``,
            ``"_policy"``, ``"_reset"``).
        time_key: the prefix of the default ``out_keys``.

    After a reset, the root holds ``time_reset`` (the reset's duration) and zeros for the two
    others. After a step, ``"next"`` holds ``time_step`` (the base env's step) and
    ``time_policy`` (from the end of the previous reset or step to this step: the policy's
    time), and ``time_reset = 0``. Every entry has the env's batch shape.

    Raises:
        TypeError: ``out_keys`` without exactly three keys.
        NotImplementedError: on a forward call (it times env calls only).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(), Timer())
        >>> sorted(k for k in env.observation_spec.keys() if k.startswith("time"))
        ['time_policy', 'time_reset', 'time_step']
    """

    def __init__(self, out_keys: Sequence[NestedKey] | None = None, time_key: str = "time") -> None:
        if out_keys is None:
            out_keys = [f"{time_key}_step", f"{time_key}_policy", f"{time_key}_reset"]
        elif len(out_keys) != 3:
            raise TypeError(f"Timer expects three out_keys (step, policy, reset), got out_keys={out_keys}")
        super().__init__(in_keys=[], out_keys=list(out_keys))
        self.time_key = time_key
        self.time_step_key, self.time_policy_key, self.time_reset_key = self.out_keys
        self.__dict__["_marks"] = {"reset": None, "done": None, "inv": None, "policy": 0.0}

    def _value(self, seconds: float, td: TensorDictBase) -> torch.Tensor:
        return torch.full(td.batch_size, float(seconds), dtype=torch.float32, device=td.device)

    def _set(self, td: TensorDictBase, key: NestedKey, seconds: float) -> None:
        parent = td.get(key[:-1]) if isinstance(key, tuple) and len(key) > 1 else td
        leaf = key[-1] if isinstance(key, tuple) else key
        parent.set(leaf, self._value(seconds, parent))

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        self.__dict__["_marks"]["reset"] = time.perf_counter()
        return tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        marks = self.__dict__["_marks"]
        now = time.perf_counter()
        started = marks["reset"] if marks["reset"] is not None else now
        self._set(tensordict_reset, self.time_reset_key, now - started)
        self._set(tensordict_reset, self.time_step_key, 0.0)
        self._set(tensordict_reset, self.time_policy_key, 0.0)
        marks["done"] = now
        return tensordict_reset

    def _has_inverse(self) -> bool:
        return True

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        marks = self.__dict__["_marks"]
        now = time.perf_counter()
        marks["policy"] = 0.0 if marks["done"] is None else now - marks["done"]
        marks["inv"] = now
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        marks = self.__dict__["_marks"]
        now = time.perf_counter()
        self._set(next_tensordict, self.time_step_key, 0.0 if marks["inv"] is None else now - marks["inv"])
        self._set(next_tensordict, self.time_policy_key, marks["policy"])
        self._set(next_tensordict, self.time_reset_key, 0.0)
        marks["done"] = now
        return next_tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        obs = output_spec["full_observation_spec"]
        for key in self.out_keys:
            obs[key] = Unbounded(shape=output_spec.shape, dtype=torch.float32, device=output_spec.device)
        return output_spec

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the transform times env calls (use it in a TransformedEnv).

        Examples:
            >>> from tensordict import TensorDict
            >>> Timer()(TensorDict())
            Traceback (most recent call last):
            ...
            NotImplementedError: Timer times env resets and steps; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "Timer times env resets and steps; it has no offline forward. Use it in a TransformedEnv."
        )
