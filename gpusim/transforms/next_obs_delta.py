"""``NextObservationDelta``: record ``("next", obs)`` as a low-precision difference.

A rollout stores every observation twice: at the root of step ``t`` and under ``"next"`` of
step ``t - 1``. With this transform the recorded steps keep the full-precision root
observation and, instead of ``("next", k)``, the difference ``("next", "delta", k) =
(next_obs - obs)`` cast to ``delta_dtype`` (``float16`` by default), which halves (or better)
the memory of the ``"next"`` half.

Env side: the step writes the delta; ``step_and_maybe_reset`` and ``rollout`` then drop
``("next", k)`` from the stepped data once ``step_mdp`` has carried the full observation to the
next root (the policy always reads full precision). A bare ``env.step`` keeps both entries.

Offline side (a replay buffer's transform, or a call on stored data): ``forward`` rebuilds
``("next", k) = k + ("next", "delta", k)`` and drops the delta. The compression is lossy: the
rebuilt observation is exact up to the rounding of ``delta_dtype``.

The transform must wrap a batched env, not sit inside its workers: a ``SerialEnv``/
``ParallelEnv`` steps its workers with ``step``, never their ``step_and_maybe_reset``.

Examples:
    >>> import torch
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import NextObservationDelta, TransformedEnv
    >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), NextObservationDelta())
    >>> data = env.rollout(4)
    >>> data["next", "delta", "observation"].dtype, ("next", "observation") in data.keys(True)
    (torch.float16, False)
    >>> rebuilt = env.transform(data.clone())  # offline: back to full observations
    >>> torch.allclose(rebuilt["next", "observation"][:, :-1], data["observation"][:, 1:], atol=1e-2)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, as_tuple
from gpusim.transforms.transform import Transform, _as_key_list

__all__ = ["NextObservationDelta"]

_INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)


def _drop(td: TensorDictBase, key: tuple) -> None:
    """Removes ``key`` from ``td`` and the containers it leaves empty (if present)."""
    if td.get(key, None) is None:
        return
    td.pop(key)
    for depth in range(len(key) - 1, 0, -1):
        sub = td.get(key[:depth])
        if isinstance(sub, TensorDictBase) and sub.is_empty():
            td.pop(key[:depth])
        else:
            break


class NextObservationDelta(Transform):
    """Stores ``("next", k)`` as ``("next", "delta", k) = (next_obs - obs).to(delta_dtype)``.

    Args:
        in_keys: the observation keys to compress. ``None`` (default): every floating-point
            observation of the parent env whose dtype is not in ``excluded_dtypes``, found when
            the transform is attached. Offline (no parent env) the keys must be given.

    Keyword Args:
        delta_dtype: the floating dtype of the stored delta (default ``torch.float16``).
        restore_dtype: the dtype of the rebuilt ``("next", k)`` offline: a floating dtype, or
            ``"root"`` (default): the dtype of the root entry ``k``.
        drop_delta: drop ``("next", "delta", k)`` after rebuilding offline (default ``True``).
        excluded_dtypes: dtypes skipped when the keys are found from the env (default: the
            integer and bool dtypes).

    Raises:
        ValueError: ``delta_dtype`` or ``restore_dtype`` is not a floating dtype; an explicit
            key that the parent's observation spec lacks, or whose dtype is bool.
        RuntimeError: built inside the worker of a ``SerialEnv``/``ParallelEnv``.

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), NextObservationDelta())
        >>> env.transform.in_keys  # found from the observation spec
        ['observation']
        >>> td = env.reset()
        >>> stepped, root = env.step_and_maybe_reset(env.rand_action(td))
        >>> sorted(map(str, stepped["next"].keys(True, True)))
        ["('delta', 'observation')", 'done', 'reward', 'state', 'terminated']
        >>> root["observation"].dtype  # the next root keeps full precision
        torch.float32

        Offline, on stored data:

        >>> from tensordict import TensorDict
        >>> t = NextObservationDelta(in_keys=["obs"])
        >>> data = TensorDict({"obs": torch.ones(2, 1), ("next", "delta", "obs"): torch.full((2, 1), 0.5, dtype=torch.float16)}, [2])
        >>> t(data)["next", "obs"].flatten().tolist(), ("next", "delta", "obs") in data.keys(True)
        ([1.5, 1.5], False)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        *,
        delta_dtype: torch.dtype = torch.float16,
        restore_dtype: torch.dtype | Literal["root"] = "root",
        drop_delta: bool = True,
        excluded_dtypes: Sequence[torch.dtype] = _INT_DTYPES,
    ) -> None:
        if not isinstance(delta_dtype, torch.dtype) or not delta_dtype.is_floating_point:
            raise ValueError(f"NextObservationDelta: delta_dtype must be a floating dtype, got {delta_dtype!r}")
        if restore_dtype != "root" and not (isinstance(restore_dtype, torch.dtype) and restore_dtype.is_floating_point):
            raise ValueError(
                f"NextObservationDelta: restore_dtype must be a floating dtype or 'root', got {restore_dtype!r}"
            )
        super().__init__()
        self.__dict__["_explicit_keys"] = None if in_keys is None else _as_key_list(in_keys, "in_keys")
        self.__dict__["_found_keys"] = None
        self.delta_dtype = delta_dtype
        self.restore_dtype = restore_dtype
        self.drop_delta = bool(drop_delta)
        self.excluded_dtypes = tuple(excluded_dtypes)

    # ------------------------------------------------------------------ keys
    @property
    def in_keys(self) -> list[NestedKey]:
        """The compressed observation keys (given, or found from the parent env's spec).

        Examples:
            >>> NextObservationDelta(in_keys="pixels_state").in_keys
            ['pixels_state']
            >>> NextObservationDelta().in_keys  # no env yet: nothing to find
            []
        """
        explicit = self.__dict__.get("_explicit_keys")
        if explicit is not None:
            return list(explicit)
        found = self.__dict__.get("_found_keys")
        if found is None:
            parent = self.parent
            if parent is None:
                return []
            found = self._find_keys(parent.full_observation_spec)
            self.__dict__["_found_keys"] = found
        return list(found)

    @in_keys.setter
    def in_keys(self, value) -> None:
        if "_explicit_keys" in self.__dict__:  # Transform.__init__ sets the (empty) default first
            self.__dict__["_explicit_keys"] = None if value is None else _as_key_list(value, "in_keys")
            self.__dict__["_found_keys"] = None

    @property
    def out_keys(self) -> list[NestedKey]:
        """The same keys as :attr:`in_keys` (the delta lives under ``("next", "delta", k)``).

        Examples:
            >>> NextObservationDelta(in_keys=["observation"]).out_keys
            ['observation']
        """
        return self.in_keys

    @out_keys.setter
    def out_keys(self, value) -> None:
        if value is not None and "_explicit_keys" in self.__dict__:
            raise AttributeError("NextObservationDelta.out_keys are its in_keys; set in_keys instead")

    def _find_keys(self, observation_spec) -> list[NestedKey]:
        keys = []
        for key, leaf in observation_spec.items(True, True):
            dtype = getattr(leaf, "dtype", None)
            if dtype is None or dtype in self.excluded_dtypes or not dtype.is_floating_point:
                continue
            keys.append(key)
        return keys

    def reset_parent(self) -> None:
        """Drops the cached parent and the keys found from it.

        Examples:
            >>> t = NextObservationDelta()
            >>> t.reset_parent()
            >>> t.in_keys
            []
        """
        super().reset_parent()
        if "_found_keys" in self.__dict__:
            self.__dict__["_found_keys"] = None

    def transform_observation_spec(self, observation_spec):
        """Checks the explicit keys against the observations (the spec itself is unchanged:
        the delta is not an observation of the next root).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> TransformedEnv(PendulumEnv(), NextObservationDelta(in_keys=["velocity"]))
            Traceback (most recent call last):
            ...
            ValueError: NextObservationDelta: in_key 'velocity' is not an observation of the env (expected one of ['observation']); received 'velocity'
        """
        explicit = self.__dict__.get("_explicit_keys")
        if explicit is None:
            self.__dict__["_found_keys"] = self._find_keys(observation_spec)
            return observation_spec
        leaves = dict(observation_spec.items(True, True))
        for key in explicit:
            leaf = leaves.get(key)
            if leaf is None:
                raise ValueError(
                    f"NextObservationDelta: in_key {key!r} is not an observation of the env (expected one of "
                    f"{sorted(map(str, leaves))}); received {key!r}"
                )
            if leaf.dtype == torch.bool:
                raise ValueError(
                    f"NextObservationDelta: in_key {key!r} has dtype torch.bool, which has no difference "
                    "(expected a numeric observation)"
                )
        return observation_spec

    # ------------------------------------------------------------------ env side
    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.in_keys:
            obs = tensordict.get(key, None)
            next_obs = next_tensordict.get(key, None)
            if obs is None or next_obs is None:
                continue
            # subtract at the observation's precision, round once
            next_tensordict.set(("delta", *as_tuple(key)), (next_obs - obs).to(self.delta_dtype))
        return next_tensordict

    def _post_step_mdp(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        # step_mdp carried the full ("next", k) to the next root: the recorded step keeps the
        # delta only, and the next root does not inherit the delta
        next_td = tensordict.get("next", None)
        for key in self.in_keys:
            key = as_tuple(key)
            if next_td is not None:
                _drop(next_td, key)
            _drop(tensordict_, ("delta", *key))
        return tensordict, tensordict_

    def _check_batched_worker_compat(self) -> None:
        raise RuntimeError(
            "NextObservationDelta cannot live inside a SerialEnv/ParallelEnv worker: a batched env steps "
            "its workers with step(), never with their step_and_maybe_reset(), so the full "
            "('next', observation) entries would not be dropped; put the transform around the batched env "
            "instead: TransformedEnv(SerialEnv(n, make_env), NextObservationDelta(...))"
        )

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        """The recorded step holds ``("next", "delta", k)`` in ``delta_dtype`` instead of
        ``("next", k)``.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(PendulumEnv(), NextObservationDelta())
            >>> fake = env.fake_tensordict()
            >>> ("next", "observation") in fake.keys(True), fake["next", "delta", "observation"].dtype
            (False, torch.float16)
        """
        next_td = fake_tensordict.get("next", None)
        if next_td is None:
            return fake_tensordict
        for key in self.in_keys:
            key = as_tuple(key)
            leaf = next_td.get(key, None)
            if leaf is None:
                continue
            next_td.set(("delta", *key), leaf.to(self.delta_dtype))
            _drop(next_td, key)
        return fake_tensordict

    # ------------------------------------------------------------------ offline side
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Rebuilds ``("next", k) = k + ("next", "delta", k)`` in stored data (in place).

        Keys whose root entry or delta is absent are left alone.

        Args:
            tensordict: recorded steps (a replay buffer sample, a rollout).

        Returns:
            ``tensordict`` with ``("next", k)`` (and without the delta unless ``drop_delta=False``).

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> data = TensorDict({"obs": torch.zeros(2, 1, dtype=torch.float64),
            ...                    ("next", "delta", "obs"): torch.ones(2, 1, dtype=torch.float16)}, [2])
            >>> out = NextObservationDelta(["obs"], restore_dtype=torch.float32, drop_delta=False)(data)
            >>> out["next", "obs"].dtype, ("next", "delta", "obs") in out.keys(True)
            (torch.float32, True)
        """
        for key in self.in_keys:
            key = as_tuple(key)
            obs = tensordict.get(key, None)
            delta = tensordict.get(("next", "delta", *key), None)
            if obs is None or delta is None:
                continue
            dtype = obs.dtype if self.restore_dtype == "root" else self.restore_dtype
            tensordict.set(("next", *key), obs.to(dtype) + delta.to(dtype))
            if self.drop_delta:
                _drop(tensordict, ("next", "delta", *key))
        return tensordict

    def __repr__(self) -> str:
        keys = self.__dict__.get("_explicit_keys")
        return f"NextObservationDelta(in_keys={keys}, delta_dtype={self.delta_dtype})"
