"""Reward bookkeeping: ``RewardSum`` (episode return), ``TargetReturn`` (return-to-go target
fed to the policy) and ``Reward2GoTransform`` (offline, replay-buffer reward-to-go).

``RewardSum`` and ``TargetReturn`` keep their running value in the tensordict: a reset writes
the initial value for all rows and the base env's partial-reset merge keeps the value of rows
that are not reset, so partial resets (and nested MARL levels) need no extra work here.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import RewardSum, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[1], seed=0), RewardSum())
    >>> env.rollout(3)["next", "episode_reward"].flatten().tolist()  # CartPole pays 1 per step
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.specs import Composite, Unbounded
from gpusim.transforms._levels import tget, tset
from gpusim.transforms.transform import Transform

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.envs.common import EnvBase

__all__ = ["RewardSum", "TargetReturn", "Reward2GoTransform"]


def _replace_last(key: NestedKey, name: str) -> NestedKey:
    t = _keys.as_tuple(key)
    return _keys.unravel((*t[:-1], name))


def _prefix_last(key: NestedKey, prefix: str) -> NestedKey:
    t = _keys.as_tuple(key)
    return _keys.unravel((*t[:-1], prefix + t[-1]))


class _RewardTracker(Transform):
    """Shared machinery: in_keys default to the parent's reward keys; one output per reward,
    shaped like it, registered in the observation spec and in the state spec (it is an input of
    the next step)."""

    restarts_on_native_autoreset = True  # per-episode state: restarted on a native auto-reset

    _out_name: str = ""

    def __init__(self, in_keys=None, out_keys=None) -> None:
        # without a parent, the default reward key: ``"reward"`` (an env resolves its own)
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        self.__dict__["_user_in_keys"] = in_keys is not None
        self.__dict__["_user_out_keys"] = out_keys is not None
        self.__dict__["_shapes"] = None  # {out_key: (shape, dtype)} from the specs

    def _default_out_key(self, in_key: NestedKey) -> NestedKey:
        raise NotImplementedError

    def _resolve_keys(self, reward_keys: Sequence[NestedKey]) -> None:
        if not self.__dict__["_user_in_keys"]:
            self.in_keys = list(reward_keys) if reward_keys else ["reward"]
        if not self.__dict__["_user_out_keys"]:
            self.__dict__["_out_keys"] = [self._default_out_key(k) for k in self.in_keys]
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(
                f"{type(self).__name__}: in_keys {self.in_keys} and out_keys {self.out_keys} must have the same length"
            )

    @property
    def out_keys(self) -> list:
        out = self.__dict__.get("_out_keys")
        if out is None:
            return [self._default_out_key(k) for k in self.in_keys]
        return out

    @out_keys.setter
    def out_keys(self, value) -> None:
        Transform.out_keys.fset(self, value)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        reward_spec = output_spec["full_reward_spec"]
        self._resolve_keys(_keys.leaf_keys(reward_spec))
        obs_spec = output_spec["full_observation_spec"]
        shapes = {}
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in reward_spec.keys(True, True):
                raise KeyError(
                    f"{type(self).__name__}: in_key {in_key!r} is not a reward key of the parent "
                    f"env (reward keys: {_keys.leaf_keys(reward_spec)})"
                )
            r = reward_spec[in_key]
            obs_spec[out_key] = Unbounded(shape=r.shape, dtype=r.dtype, device=r.device)
            shapes[out_key] = (r.shape, r.dtype, r.device)
        self.__dict__["_shapes"] = shapes
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        shapes = self.__dict__["_shapes"]
        if not shapes:
            return input_spec
        state_spec = input_spec["full_state_spec"]
        for out_key, (shape, dtype, device) in shapes.items():
            state_spec[out_key] = Unbounded(shape=shape, dtype=dtype, device=device)
        return input_spec

    def _init_value(self, tensordict_reset: TensorDictBase, out_key: NestedKey) -> torch.Tensor:
        shapes = self.__dict__["_shapes"]
        if shapes is not None and out_key in shapes:
            shape, dtype, _ = shapes[out_key]
        else:
            shape, dtype = (*tensordict_reset.batch_size, 1), torch.float32
        return torch.zeros(shape, dtype=dtype, device=tensordict_reset.device)


class RewardSum(_RewardTracker):
    """Tracks the cumulative reward of each episode (``episode_<reward>``).

    Args:
        in_keys: reward keys to sum (default: the parent env's reward keys, else ``"reward"``).
        out_keys: the sums (default: the in_keys with ``"episode_"`` prepended to the last name,
            e.g. ``("agents", "episode_reward")``).
        reset_keys: the reset entries, one per ``in_key``; each must be a reset key of the parent
            (the ``"_reset"`` entries of the parent's done levels are honoured through the reset
            merge). Default: the parent's.

    Keyword Args:
        reward_spec: register the sums in the reward spec instead of the observation spec.

    The sum is zeroed on reset rows only and appears in the observation spec (or the reward spec)
    and in the state spec, as it is read back at the next step. Offline (``forward``), the sum is
    the cumulative sum along the dim of the data named ``"time"``.

    Raises:
        ValueError: ``in_keys`` and ``out_keys`` of different lengths; ``reset_keys`` that do not
            match the ``in_keys`` (their number, or a key that is not a reset key of the parent).
        KeyError: (when the env is built) an ``in_key`` that is not a reward key of the parent.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import Compose, RewardSum, StepCounter, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), Compose(StepCounter(2), RewardSum()))
        >>> td = env.rollout(3, break_when_any_done=False)
        >>> r, ret = td["next", "reward"][0].flatten(), td["next", "episode_reward"][0].flatten()
        >>> torch.allclose(ret, torch.stack([r[0], r[0] + r[1], r[2]]))  # restarts after the reset
        True
        >>> env.observation_spec["episode_reward"].shape
        torch.Size([2, 1])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        reset_keys: Sequence[NestedKey] | None = None,
        *,
        reward_spec: bool = False,
    ) -> None:
        if in_keys is not None and out_keys is not None:
            n_in = 1 if isinstance(in_keys, (str, tuple)) else len(in_keys)
            n_out = 1 if isinstance(out_keys, (str, tuple)) else len(out_keys)
            if n_in != n_out:
                raise ValueError(
                    f"RewardSum expects the same number of input and output keys, got in_keys={in_keys} and "
                    f"out_keys={out_keys}"
                )
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if isinstance(reset_keys, (str, tuple)):
            reset_keys = [reset_keys]
        self.reset_keys = reset_keys
        self.reward_spec = bool(reward_spec)

    @property
    def reset_keys(self) -> list | None:
        """The reset entries given by the user (``None``: the parent env's).

        Examples:
            >>> RewardSum(reset_keys=["_reset"]).reset_keys
            ['_reset']
        """
        return self.__dict__.get("_reset_keys")

    @reset_keys.setter
    def reset_keys(self, value: Sequence[NestedKey] | None) -> None:
        if isinstance(value, (str, tuple)):
            value = [value]
        self.__dict__["_reset_keys"] = None if value is None else [_keys.unravel(k) for k in value]

    def _default_out_key(self, in_key: NestedKey) -> NestedKey:
        return _prefix_last(in_key, "episode_")

    def _check_reset_keys(self, parent_reset_keys: Sequence[NestedKey] | None = None) -> None:
        reset_keys = self.reset_keys
        if reset_keys is None:
            return
        bad = len(reset_keys) != len(self.in_keys)
        if not bad and parent_reset_keys is not None:
            bad = any(k not in parent_reset_keys for k in reset_keys)
        if bad:
            raise ValueError(
                f"Could not match the env reset_keys {reset_keys} with the in_keys {self.in_keys}: give one reset key "
                f"per in_key, each a reset key of the parent env"
                + ("" if parent_reset_keys is None else f" ({list(parent_reset_keys)})")
            )

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        output_spec = super().transform_output_spec(output_spec)
        levels = _keys.done_levels(output_spec["full_done_spec"], output_spec.shape)
        self._check_reset_keys([level.reset_key for level in levels])
        if self.reward_spec:  # the sums are reward entries, not observations
            obs_spec = output_spec["full_observation_spec"]
            reward_spec = output_spec["full_reward_spec"]
            for out_key in self.out_keys:
                spec = obs_spec[out_key]
                del obs_spec[out_key]
                reward_spec[out_key] = spec
        return output_spec

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.reset_keys is None and self.container is None:
            raise TypeError(
                "RewardSum: reset_keys not provided but parent env not found: which sums to zero "
                "is decided by the env's reset entries; attach the transform to an env or pass reset_keys"
            )
        self._check_reset_keys()
        for out_key in self.out_keys:
            tset(tensordict_reset, out_key, self._init_value(tensordict_reset, out_key))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            reward = tget(next_tensordict, in_key)
            if reward is None:
                continue
            prev = tget(tensordict, out_key)
            tset(next_tensordict, out_key, reward.clone() if prev is None else prev + reward)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline: the cumulative sum of every ``in_key`` along the dim named ``"time"``.

        Args:
            tensordict: stored data with a batch dim named ``"time"`` (written in place).

        Returns:
            ``tensordict`` with the ``out_keys``.

        Raises:
            ValueError: no batch dim is named ``"time"``.
            KeyError: an ``in_key`` is missing.

        Examples:
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"next": {"reward": torch.ones(1, 3, 1)}}, [1, 3], names=[None, "time"])
            >>> t = RewardSum(in_keys=[("next", "reward")], out_keys=[("next", "episode_reward")])
            >>> t(td)["next", "episode_reward"].flatten().tolist()
            [1.0, 2.0, 3.0]
        """
        names = tensordict.names if tensordict.batch_dims else []
        if "time" not in names:
            raise ValueError(
                "At least one dimension of the tensordict must be named 'time' in offline mode: RewardSum sums "
                f"along it (names: {list(names)})"
            )
        dim = list(names).index("time")
        in_keys = self.in_keys or ["reward"]
        out_keys = self.out_keys if self.in_keys else [self._default_out_key("reward")]
        for in_key, out_key in zip(in_keys, out_keys):
            reward = tensordict.get(in_key, None)
            if reward is None:
                raise KeyError(f"RewardSum: the data has no entry {in_key!r}")
            tensordict.set(out_key, reward.cumsum(dim))
        return tensordict


class TargetReturn(_RewardTracker):
    """Sets a target return that the policy reads, reduced by the rewards collected.

    Args:
        target_return: the target set at reset.
        mode: ``"reduce"`` (``target -= reward`` at every step) or ``"constant"``.
        in_keys: reward keys (default: the parent env's reward keys).
        out_keys: target keys (default: in_keys with the last name replaced by
            ``"target_return"``).
        reset_key: accepted for API compatibility (the parent's ``"_reset"`` entries are used).

    Raises:
        ValueError: unknown ``mode``.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[1], seed=0), TargetReturn(10.0))
        >>> td = env.rollout(2)  # CartPole pays 1 per step
        >>> td["target_return"].flatten().tolist(), td["next", "target_return"].flatten().tolist()
        ([10.0, 9.0], [9.0, 8.0])
    """

    _MODES = ("reduce", "constant")

    def __init__(
        self,
        target_return: float,
        mode: str = "reduce",
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        reset_key: NestedKey | None = None,
    ) -> None:
        if mode not in self._MODES:
            raise ValueError(f"TargetReturn mode must be one of {self._MODES}, got {mode!r}")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.target_return = float(target_return)
        self.mode = mode
        self.reset_key = reset_key

    def _default_out_key(self, in_key: NestedKey) -> NestedKey:
        return _replace_last(in_key, "target_return")

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for out_key in self.out_keys:
            tset(tensordict_reset, out_key, self._init_value(tensordict_reset, out_key) + self.target_return)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            prev = tget(tensordict, out_key)
            if prev is None:
                continue
            if self.mode == "reduce":
                reward = tget(next_tensordict, in_key)
                tset(next_tensordict, out_key, prev if reward is None else prev - reward)
            else:
                tset(next_tensordict, out_key, prev.clone())
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the target follows env steps (use the transform in a ``TransformedEnv``).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from tensordict import TensorDict
            >>> TargetReturn(10.0)(TensorDict({}, []))
            Traceback (most recent call last):
            ...
            NotImplementedError: TargetReturn cannot be executed without a parent env: it updates a target during env steps; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "TargetReturn cannot be executed without a parent env: it updates a target during env steps; it has no offline forward. "
            "Use it in a TransformedEnv."
        )


class Reward2GoTransform(Transform):
    """Reward-to-go of stored trajectories (an inverse transform, for replay buffers).

    ``inv(td)`` on data of shape ``[*B, T]`` (time last) writes, for every ``(in_key,
    out_key)``, ``r2g[t] = r[t] + gamma * r2g[t + 1]``, restarted after every step whose done
    (``("next", done_key)``, or ``done_key``; OR-ed with ``truncated_key`` when present) is set.
    Episodes cut by the end of the data end there. ``forward`` leaves data unchanged; the
    transform cannot be used in an environment (the return is only known once the episode is
    over).

    Args:
        gamma: discount factor.
        in_keys: reward entries (default ``[("next", "reward")]``).
        out_keys: outputs (default: the in_keys, overwritten).
        done_key: the done entry.
        truncated_key: the truncated entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> done = torch.tensor([[False, False, True, False, True]]).unsqueeze(-1)
        >>> td = TensorDict({"next": {"done": done, "reward": torch.ones(1, 5, 1)}}, [1, 5])
        >>> r2g = Reward2GoTransform(gamma=0.5, out_keys=["reward_to_go"])
        >>> r2g.inv(td)["reward_to_go"].flatten().tolist()
        [1.75, 1.5, 1.0, 1.5, 1.0]
    """

    invertible = True
    #: the message of the ValueError raised when the transform is used within an environment
    ENV_ERR = (
        "Reward2GoTransform is an inverse transform for stored trajectories, e.g. in a replay buffer; "
        "it cannot be used within an environment"
    )

    def __init__(
        self,
        gamma: float | torch.Tensor = 1.0,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        done_key: NestedKey = "done",
        truncated_key: NestedKey = "truncated",
    ) -> None:
        if in_keys is None:
            in_keys = [("next", "reward")]
        if out_keys is None:
            out_keys = list(in_keys) if not isinstance(in_keys, (str, tuple)) else [in_keys]
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys, out_keys_inv=out_keys)
        self._check_key_pairs()
        if isinstance(gamma, torch.Tensor):
            self.register_buffer("gamma", gamma.clone())
        else:
            self.gamma = float(gamma)
        self.done_key = _keys.unravel(done_key)
        self.truncated_key = _keys.unravel(truncated_key)

    def _get_flag(self, tensordict: TensorDictBase, key: NestedKey) -> torch.Tensor | None:
        value = tensordict.get(_keys.unravel(("next", key)), None)
        if value is None:
            value = tget(tensordict, key)
        return value

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims < 1:
            raise ValueError("Reward2GoTransform needs data with a time dimension (batch_dims >= 1)")
        tdim = tensordict.batch_dims - 1
        done = self._get_flag(tensordict, self.done_key)
        if done is None:
            raise KeyError(f"Reward2GoTransform: no {self.done_key!r} entry (nor under 'next') in the data")
        trunc = self._get_flag(tensordict, self.truncated_key)
        if trunc is not None:
            done = done | trunc
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            reward = tget(tensordict, in_key)
            if reward is None:  # no silent no-op: the reward-to-go of absent rewards is undefined
                raise KeyError(
                    f"Reward2GoTransform: Could not find the reward entry {in_key!r} in the data (keys: "
                    f"{sorted(map(str, tensordict.keys(True, True)))[:20]})"
                )
            tset(tensordict, out_key, _reward_to_go(reward, done, self.gamma, tdim))
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The identity: the reward-to-go is written by :meth:`inv` (the replay-buffer write path).

        Examples:
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"reward": torch.ones(1, 2, 1)}, [1, 2])
            >>> Reward2GoTransform()(td) is td
            True
        """
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        """Raises: the transform cannot be used in an environment.

        Raises:
            ValueError: always.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> Reward2GoTransform().transform_output_spec(CartPoleEnv().output_spec)
            Traceback (most recent call last):
            ...
            ValueError: Reward2GoTransform is an inverse transform for stored trajectories, e.g. in a replay buffer; it cannot be used within an environment
        """
        raise ValueError(self.ENV_ERR)

    def set_container(self, container: Transform | EnvBase) -> None:
        """Registers the transform in a ``Compose``; an environment is refused.

        Args:
            container: a ``Compose`` (of a replay buffer, say).

        Raises:
            ValueError: ``container`` is an environment.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import Compose, TransformedEnv
            >>> chain = Compose(Reward2GoTransform(gamma=0.9))  # fine
            >>> TransformedEnv(CartPoleEnv(), Reward2GoTransform())
            Traceback (most recent call last):
            ...
            ValueError: Reward2GoTransform is an inverse transform for stored trajectories, e.g. in a replay buffer; it cannot be used within an environment
        """
        from gpusim.envs.common import EnvBase

        if isinstance(container, EnvBase):
            raise ValueError(self.ENV_ERR)
        super().set_container(container)

    def __repr__(self) -> str:
        return f"Reward2GoTransform(gamma={self.gamma}, in_keys={self.in_keys}, out_keys={self.out_keys})"


def _reward_to_go(reward: torch.Tensor, done: torch.Tensor, gamma, tdim: int) -> torch.Tensor:
    """Discounted reverse cumulative sum along ``tdim``, restarted after done steps."""
    done = done.to(torch.bool)
    if done.shape != reward.shape:
        done = done.expand_as(reward) if done.ndim == reward.ndim else done.reshape(reward.shape)
    r = reward.movedim(tdim, 0)
    d = done.movedim(tdim, 0)
    out = torch.empty_like(r)
    acc = torch.zeros_like(r[0])
    for t in range(r.shape[0] - 1, -1, -1):
        acc = r[t] + gamma * torch.where(d[t], torch.zeros_like(acc), acc)
        out[t] = acc
    return out.movedim(0, tdim)
