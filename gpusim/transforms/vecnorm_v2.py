"""``VecNormV2`` (``VecNorm(new_api=True)``): running normalization with exponential moving averages.

For every in_key the transform keeps a running first moment ``loc`` (the mean of x), a running
second moment ``var`` (the mean of x**2) and a ``count`` of updates. An update moves both moments
towards the new data with weight ``1 - decay`` (``decay < 1``) or ``1 / count`` (``decay == 1``: the
exact running mean over every update). Normalization corrects the start-up bias of the moving
averages (divides both moments by ``1 - decay ** count``) and computes::

    mean = loc / c;  var = var / c - mean ** 2;  y = (x - mean) / max(sqrt(var), eps)

By default the statistics are element-wise (shaped like the data, batch dims included); with
``reduce_batch_dims=True`` a batch of ``n`` rows is one update of weight ``n / count`` (``decay ==
1``) or ``1 - decay ** n``, and the statistics have the feature shape only.

In an env, the statistics are built from the env's specs when the transform is attached, updated
by each step and by full resets (a partial reset only normalizes), and not updated when frozen.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> vn = VecNormV2(in_keys=["obs"], decay=1.0, reduce_batch_dims=True)
    >>> td = vn(TensorDict(obs=torch.tensor([[1.0], [3.0]]), batch_size=[2]))
    >>> td["obs"].flatten().tolist(), vn.loc["obs"].tolist(), vn.scale["obs"].tolist()
    ([-1.0, 1.0], [2.0], [1.0])
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._keys import NestedKey
from gpusim.envs._keys import as_tuple as _as_tuple
from gpusim.transforms._levels import default_levels, reset_mask_for
from gpusim.transforms.transform import Transform

__all__ = ["VecNormV2"]

_SEP = "."


class VecNormV2(Transform):
    """Normalizes entries with moving-average statistics (TorchRL's ``VecNorm(new_api=True)``).

    Args:
        in_keys: the entries to normalize.
        out_keys: where the normalized values go (default: ``in_keys``).

    Keyword Args:
        lock: a lock (e.g. ``multiprocessing.Lock()``) held while the statistics are updated.
        stateful: ``True`` (default): the transform keeps the statistics. ``False``: the
            statistics travel in the data, per row and element: observation entries
            ``"_vecnorm_loc"``, ``"_vecnorm_var"`` (float) and ``"_vecnorm_count"`` (int64), each a
            composite with one entry per in_key (another prefix, ``"_vecnorm1"``, ..., when the
            env already has them). A step reads them from its input and writes the updated ones
            under ``"next"``; a reset updates those of the input (fresh ones when it has none)
            in the rows it resets. ``loc``/``scale``/``denorm`` then need the data and raise.
        decay: the weight of the past at each update, in ``(0, 1]``.
        eps: the floor of the scale (the standard deviation), > 0.
        shared_data: a TensorDict with ``"loc"``, ``"var"`` and ``"count"`` entries (from another
            transform's statistics) to update in place.
        reduce_batch_dims: reduce the batch dims of each batch into one update.

    Raises:
        ValueError: ``decay`` outside ``(0, 1]``, ``eps <= 0``, keys of different lengths, or
            ``stateful=False`` with ``reduce_batch_dims`` or ``shared_data``.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[8], seed=0),
        ...                      VecNormV2(in_keys=["observation"], out_keys=["obs_norm"], reduce_batch_dims=True))
        >>> td = env.rollout(4)
        >>> td["next", "obs_norm"].shape, env.transform.count["observation"].item()
        (torch.Size([8, 4, 3]), 40)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        lock: Any = None,
        stateful: bool = True,
        decay: float = 0.9999,
        eps: float = 1e-4,
        shared_data: TensorDictBase | None = None,
        reduce_batch_dims: bool = False,
    ) -> None:
        if not stateful and (reduce_batch_dims or shared_data is not None):
            given = "reduce_batch_dims=True" if reduce_batch_dims else "shared_data"
            raise ValueError(
                f"VecNormV2: stateful=False keeps per-row statistics in the data, which cannot take {given} "
                "(expected stateful=True for reduced or shared statistics)"
            )
        if not 0.0 < float(decay) <= 1.0:
            raise ValueError(f"VecNormV2: decay must be in (0, 1], got {decay!r}")
        if not float(eps) > 0.0:
            raise ValueError(f"VecNormV2: eps must be > 0, got {eps!r}")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.stateful = bool(stateful)
        self.__dict__["_prefix"] = "_vecnorm"
        self.lock = lock
        self.decay = float(decay)
        self.eps = float(eps)
        self.frozen = False
        self.reduce_batch_dims = bool(reduce_batch_dims)
        self._loc: TensorDictBase | None = None
        self._var: TensorDictBase | None = None
        self._count: TensorDictBase | None = None
        if shared_data is not None:
            self._loc, self._var, self._count = shared_data["loc"], shared_data["var"], shared_data["count"]

    @property
    def initialized(self) -> bool:
        """Whether the statistics exist (built from the env's specs or the first data).

        Examples:
            >>> VecNormV2(in_keys=["obs"]).initialized
            False
        """
        return self._loc is not None

    # ------------------------------------------------------------------ statistics
    def _init_from(self, data: TensorDictBase, batch_dims: int) -> None:
        loc, count = TensorDict(), TensorDict()
        for key in self.in_keys:
            x = data.get(key, None)
            if x is None:
                continue
            dtype = x.dtype if x.dtype.is_floating_point else torch.get_default_dtype()
            shape = x.shape[batch_dims:] if self.reduce_batch_dims else x.shape
            loc.set(key, torch.zeros(shape, dtype=dtype, device=x.device))
            count.set(key, torch.zeros((), dtype=torch.int64, device=x.device))
        self._loc, self._var, self._count = loc, loc.clone(), count

    def set_container(self, container: Any) -> None:
        """Attaches the transform; in an env, the statistics are built from its specs.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> vn = VecNormV2(in_keys=["observation"])
            >>> _ = TransformedEnv(PendulumEnv(), vn)
            >>> vn.loc["observation"].shape
            torch.Size([3])
        """
        super().set_container(container)
        parent = self.parent
        if self.stateful and self._loc is None and parent is not None:
            data = parent.full_observation_spec.zero()
            data.update(parent.full_reward_spec.zero())
            self._init_from(data, len(parent.batch_size))

    def _update(self, data: TensorDictBase, batch_dims: int, keys: list, mask: Any = None) -> None:
        for key in keys:
            x = data.get(key).to(self._loc.get(key).dtype)
            loc, var, count = self._loc.get(key), self._var.get(key), self._count.get(key)
            if self.reduce_batch_dims and batch_dims:
                dims = tuple(range(batch_dims))
                n = math.prod(x.shape[:batch_dims])
                count.add_(n)
                weight = (n / count.to(loc.dtype)) if self.decay == 1.0 else 1.0 - self.decay**n
                mean, mean2 = x.mean(dims), x.pow(2).mean(dims)
            else:
                count.add_(1)
                weight = (1.0 / count.to(loc.dtype)) if self.decay == 1.0 else 1.0 - self.decay
                mean, mean2 = x, x.pow(2)
            loc.lerp_(mean.to(loc.device), weight)
            var.lerp_(mean2.to(var.device), weight)

    def _moments(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor]:
        return self._moments_of(self._loc.get(key), self._var.get(key), self._count.get(key))

    def _moments_of(
        self, loc: torch.Tensor, var: torch.Tensor, count: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.decay < 1.0:
            correction = (1.0 - torch.exp(count.to(loc.dtype) * math.log(self.decay))).clamp_min(
                torch.finfo(loc.dtype).tiny
            )
            mean, second = loc / correction, var / correction
        else:
            mean, second = loc, var
        std = (second - mean.pow(2)).clamp_min(0.0).sqrt().clamp_min(self.eps)
        return mean, std

    @property
    def loc(self) -> TensorDictBase:
        """The current means, one entry per in_key.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict(obs=torch.tensor([2.0])))
            >>> vn.loc["obs"].tolist()
            [2.0]
        """
        self._require_init("loc")
        return TensorDict({key: self._moments(key)[0] for key in self._loc.keys(True, True)})

    @property
    def scale(self) -> TensorDictBase:
        """The current standard deviations (at least ``eps``), one entry per in_key.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"], decay=1.0, eps=0.5)
            >>> _ = vn(TensorDict(obs=torch.tensor([2.0])))
            >>> vn.scale["obs"].tolist()
            [0.5]
        """
        self._require_init("scale")
        return TensorDict({key: self._moments(key)[1] for key in self._loc.keys(True, True)})

    @property
    def count(self) -> TensorDictBase:
        """The number of updates (rows, with ``reduce_batch_dims``) per in_key.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"], reduce_batch_dims=True)
            >>> _ = vn(TensorDict(obs=torch.zeros(5, 2), batch_size=[5]))
            >>> vn.count["obs"].item()
            5
        """
        self._require_init("count")
        return self._count

    @property
    def standard_normal(self) -> bool:
        """Always True: ``loc``/``scale`` are used as ``(x - loc) / scale``.

        Examples:
            >>> VecNormV2(in_keys=["obs"]).standard_normal
            True
        """
        return True

    def _require_init(self, what: str) -> None:
        if not self.stateful:
            raise RuntimeError(
                f"VecNormV2.{what}: this VecNormV2 is stateless (stateful=False): its statistics live in each "
                f"tensordict, under {self.prefix + '_loc'!r}, {self.prefix + '_var'!r} and {self.prefix + '_count'!r}"
            )
        if self._loc is None:
            raise RuntimeError(
                f"VecNormV2.{what}: no statistics yet. Make sure the VecNorm has been initialized "
                "(attach it to an env or pass it data first)."
            )

    def transform_output_spec(self, output_spec: Any) -> Any:
        """Declares each ``out_key`` as an unbounded floating entry beside its ``in_key``.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(PendulumEnv(), VecNormV2(in_keys=["observation"], out_keys=["obs_n"]))
            >>> type(env.observation_spec["obs_n"]).__name__
            'Unbounded'
        """
        from gpusim.specs import Unbounded

        output_spec = output_spec.clone()  # the input may be an env's locked spec
        output_spec.unlock_()
        leaves = {}
        if not self.stateful and "full_observation_spec" in output_spec.keys():
            self.__dict__["_prefix"] = self._free_prefix(output_spec)
        for full in ("full_observation_spec", "full_reward_spec"):
            if full not in output_spec.keys():
                continue
            spec = output_spec[full]
            present = set(spec.keys(True, True))
            for in_key, out_key in zip(self.in_keys, self.out_keys):
                if in_key not in present:
                    continue
                leaf = spec[in_key]
                dtype = leaf.dtype if leaf.dtype.is_floating_point else torch.get_default_dtype()
                spec[out_key] = leaves[in_key] = Unbounded(shape=leaf.shape, dtype=dtype, device=leaf.device)
        if not self.stateful and leaves:  # the statistics travel as observations
            obs = output_spec["full_observation_spec"]
            for name, key in self._stat_keys(list(leaves)):
                leaf = leaves[key]
                dtype = torch.int64 if name == "count" else leaf.dtype
                obs[(self.prefix + "_" + name, *_as_tuple(key))] = Unbounded(
                    shape=leaf.shape, dtype=dtype, device=leaf.device
                )
        return output_spec

    @property
    def prefix(self) -> str:
        """The prefix of the statistic entries of a stateless transform (``"_vecnorm"``, or
        ``"_vecnorm1"``, ... when the env before it already has ``"_vecnorm_loc"``).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(PendulumEnv(), VecNormV2(in_keys=["observation"], stateful=False))
            >>> env.append_transform(VecNormV2(in_keys=["reward"], stateful=False)).transform[1].prefix
            '_vecnorm1'
        """
        return self.__dict__.get("_prefix", "_vecnorm")

    @staticmethod
    def _free_prefix(output_spec: Any) -> str:
        taken = set(output_spec["full_observation_spec"].keys())
        i, prefix = 0, "_vecnorm"
        while prefix + "_loc" in taken:
            i += 1
            prefix = f"_vecnorm{i}"
        return prefix

    def _stat_keys(self, keys: list) -> list[tuple[str, NestedKey]]:
        return [(name, key) for name in ("loc", "var", "count") for key in keys]

    def _stat(self, data: TensorDictBase, name: str, key: NestedKey) -> torch.Tensor | None:
        return data.get((self.prefix + "_" + name, *_as_tuple(key)), None)

    def _stateless(
        self, source: TensorDictBase | None, data: TensorDictBase, rows: torch.Tensor | None, update: bool
    ) -> TensorDictBase:
        """Stateless normalization: the statistics are read from ``source`` (zeros where it has
        none), updated with ``data`` in ``rows`` (``None``: every row) and written to ``data``
        beside the normalized values."""
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            x = data.get(in_key, None)
            stats = [None if source is None else self._stat(source, name, in_key) for name in ("loc", "var", "count")]
            if x is None:
                if not self.missing_tolerance:
                    raise self._missing(in_key, data)
                self._carry_stats(stats, data, in_key)  # a reset has no reward: its statistics go on
                continue
            xf = x if x.dtype.is_floating_point else x.to(torch.get_default_dtype())
            if any(t is None for t in stats):  # a first step or reset: fresh statistics
                stats = [
                    torch.zeros_like(xf),
                    torch.zeros_like(xf),
                    torch.zeros(x.shape, dtype=torch.int64, device=x.device),
                ]
            loc, var, count = stats
            if update and not self.frozen:
                step = (
                    torch.ones_like(count)
                    if rows is None
                    else rows.reshape(*rows.shape, *([1] * (count.ndim - rows.ndim))).expand_as(count).to(count.dtype)
                )
                count = count + step
                if self.decay == 1.0:
                    weight = step.to(xf.dtype) / count.clamp_min(1).to(xf.dtype)
                else:
                    weight = step.to(xf.dtype) * (1.0 - self.decay)
                loc = loc.lerp(xf, weight)
                var = var.lerp(xf.pow(2), weight)
            mean, std = self._moments_of(loc, var, count)
            data.set(out_key, ((xf - mean) / std).to(xf.dtype))
            for name, value in zip(("loc", "var", "count"), (loc, var, count)):
                data.set((self.prefix + "_" + name, *_as_tuple(in_key)), value)
        return data

    # ------------------------------------------------------------------ normalization
    def _normalize(self, data: TensorDictBase, batch_dims: int, update: bool, mask: Any = None) -> TensorDictBase:
        keys = []
        for key in self.in_keys:
            if data.get(key, None) is not None:
                keys.append(key)
            elif not self.missing_tolerance:
                raise self._missing(key, data)
        if not keys:
            return data
        if self._loc is None or any(k not in self._loc.keys(True, True) for k in keys):
            if self._loc is None:
                self._init_from(data, batch_dims)
            else:  # an entry the specs did not have: statistics of its own
                extra = VecNormV2(keys, reduce_batch_dims=self.reduce_batch_dims)
                extra._init_from(data, batch_dims)
                for k in keys:
                    if k not in self._loc.keys(True, True):
                        self._loc.set(k, extra._loc.get(k))
                        self._var.set(k, extra._var.get(k))
                        self._count.set(k, extra._count.get(k))
        if update and not self.frozen:
            if self.lock is not None:
                with self.lock:
                    self._update(data, batch_dims, keys)
            else:
                self._update(data, batch_dims, keys)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in keys:
                continue
            mean, std = self._moments(in_key)
            x = data.get(in_key)
            dtype = x.dtype if x.dtype.is_floating_point else mean.dtype
            data.set(out_key, ((x - mean) / std).to(dtype))
        return data

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self.stateful:  # offline: the statistics come with the data
            return self._stateless(next_tensordict, next_tensordict, None, update=True)
        return self._normalize(next_tensordict, next_tensordict.batch_dims, update=True)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self.stateful:
            return self._stateless(tensordict, next_tensordict, None, update=True)
        return self._normalize(next_tensordict, next_tensordict.batch_dims, update=True)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if not self.stateful:
            return self._stateless_reset(tensordict, tensordict_reset)
        levels = default_levels(tensordict_reset.batch_size)
        full = all(reset_mask_for(tensordict, key, levels, tensordict_reset.batch_size) is None for key in self.in_keys)
        mode = self.missing_tolerance
        self.set_missing_tolerance(True)
        try:
            return self._normalize(tensordict_reset, tensordict_reset.batch_dims, update=full)
        finally:
            self.set_missing_tolerance(mode)

    def _carry_stats(self, stats: list, data: TensorDictBase, key: NestedKey) -> None:
        """Writes the statistics of an entry the data lacks: those carried (``stats``), else
        fresh ones shaped by the parent env's spec (nothing without a parent)."""
        if any(t is None for t in stats):
            parent = self.parent
            if parent is None:
                return
            leaf = None
            for full in (parent.full_observation_spec, parent.full_reward_spec):
                if key in full.keys(True, True):
                    leaf = full[key]
            if leaf is None:
                return
            dtype = leaf.dtype if leaf.dtype.is_floating_point else torch.get_default_dtype()
            lead = data.batch_size[: data.batch_dims - len(parent.batch_size)]
            zeros = torch.zeros((*lead, *leaf.shape), dtype=dtype, device=leaf.device)
            stats = [zeros, zeros.clone(), torch.zeros(zeros.shape, dtype=torch.int64, device=leaf.device)]
        for name, value in zip(("loc", "var", "count"), stats):
            data.set((self.prefix + "_" + name, *_as_tuple(key)), value)

    def _stateless_reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        # the reset rows update the statistics the input carries (fresh ones without); the other
        # rows keep theirs, with their previous data
        levels = default_levels(tensordict_reset.batch_size)
        carried = tensordict is not None and all(
            self._stat(tensordict, name, key) is not None for name, key in self._stat_keys(self.in_keys)
        )
        rows = None
        if carried:
            for key in self.in_keys:
                rows = reset_mask_for(tensordict, key, levels, tensordict_reset.batch_size)
                break
        mode = self.missing_tolerance
        self.set_missing_tolerance(True)
        try:
            return self._stateless(tensordict if carried else None, tensordict_reset, rows, update=True)
        finally:
            self.set_missing_tolerance(mode)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use: updates the statistics (unless frozen) and normalizes, in place.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"], out_keys=["obs_n"], decay=1.0, reduce_batch_dims=True)
            >>> vn.forward(TensorDict(obs=torch.tensor([[0.0], [4.0]]), batch_size=[2]))["obs_n"].flatten().tolist()
            [-1.0, 1.0]
        """
        return self._call(tensordict)

    def denorm(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Inverse normalization: ``out_key * scale + loc`` written to ``in_key``, on a shallow copy.

        Raises:
            RuntimeError: no statistics yet.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"], decay=1.0, reduce_batch_dims=True)
            >>> td = vn(TensorDict(obs=torch.tensor([[1.0], [3.0]]), batch_size=[2]))
            >>> vn.denorm(td)["obs"].flatten().tolist()
            [1.0, 3.0]
        """
        if not self.stateful:
            raise NotImplementedError(
                "VecNormV2.denorm: a stateless VecNormV2 (stateful=False) has no statistics of its own; they live "
                f"in each tensordict under {self.prefix + '_loc'!r}/{self.prefix + '_var'!r}/{self.prefix + '_count'!r}"
            )
        self._require_init("denorm")
        out = tensordict.copy()
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = out.get(out_key, None)
            if value is None or in_key not in self._loc.keys(True, True):
                continue
            mean, std = self._moments(in_key)
            out.set(in_key, value * std + mean)
        return out

    # ------------------------------------------------------------------ copies and state
    def freeze(self) -> VecNormV2:
        """Stops the updates (normalization goes on). Returns ``self``.

        Examples:
            >>> VecNormV2(in_keys=["obs"]).freeze().frozen
            True
        """
        self.frozen = True
        return self

    def unfreeze(self) -> VecNormV2:
        """Resumes the updates. Returns ``self``.

        Examples:
            >>> VecNormV2(in_keys=["obs"]).freeze().unfreeze().frozen
            False
        """
        self.frozen = False
        return self

    def clone(self) -> VecNormV2:
        """A detached copy with its own copy of the statistics.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"])
            >>> _ = vn(TensorDict(obs=torch.zeros(2)))
            >>> vn.clone()._loc is vn._loc
            False
        """
        out = super().clone()
        if self._loc is not None:
            out._loc, out._var, out._count = self._loc.clone(), self._var.clone(), self._count.clone()
        return out

    def frozen_copy(self) -> VecNormV2:
        """A frozen copy with its own statistics (for evaluation).

        Raises:
            RuntimeError: the transform has no statistics yet.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"])
            >>> _ = vn(TensorDict(obs=torch.zeros(2)))
            >>> vn.frozen_copy().frozen
            True
        """
        if not self.stateful:  # the statistics are in the data: the copy reads them without updating
            return self.clone().freeze()
        self._require_init("frozen_copy")
        return self.clone().freeze()

    def to_observation_norm(self) -> Transform:
        """A static ``ObservationNorm`` per key with the current ``loc``/``scale`` (a ``Compose``
        of them for several keys).

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> vn = VecNormV2(in_keys=["obs"], decay=1.0, reduce_batch_dims=True)
            >>> _ = vn(TensorDict(obs=torch.tensor([[1.0], [3.0]]), batch_size=[2]))
            >>> vn.to_observation_norm().loc.tolist()
            [2.0]
        """
        from gpusim.transforms.compose import Compose
        from gpusim.transforms.normalization import ObservationNorm

        self._require_init("to_observation_norm")
        norms = []
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in self._loc.keys(True, True):
                mean, std = self._moments(in_key)
                norms.append(
                    ObservationNorm(loc=mean, scale=std, in_keys=[in_key], out_keys=[out_key], standard_normal=True)
                )
        return norms[0] if len(norms) == 1 else Compose(*norms)

    def get_extra_state(self) -> Any:
        if not self.stateful:  # nothing of its own to save
            return {}
        if self._loc is None:
            warnings.warn(
                "Querying state_dict on an uninitialized VecNorm: the state holds no statistics; loading it "
                "into an initialized VecNorm raises an error.",
                UserWarning,
                stacklevel=2,
            )
            return {}
        return TensorDict(loc=self._loc, var=self._var, count=self._count).flatten_keys(_SEP).to_dict()

    def set_extra_state(self, state: Any) -> None:
        if not self.stateful:
            return
        if not state:
            if self._loc is not None:
                raise RuntimeError(
                    "VecNormV2.load_state_dict called with a void state-dict while the instance is initialized."
                )
            return
        td = TensorDict(dict(state)).unflatten_keys(_SEP)
        if self._loc is None and not all(v.is_shared() for v in td.values(True, True)):
            warnings.warn(
                "VecNorm wasn't initialized and the tensordict is not shared: the loaded statistics are "
                "moved to shared memory; hand the transform to workers after loading.",
                UserWarning,
                stacklevel=2,
            )
            td.share_memory_()
        # the loaded tensors become the statistics (as in TorchRL): a transform loaded from another's
        # state_dict updates the same storage
        self._loc, self._var, self._count = td["loc"], td["var"], td["count"]

    def _apply(self, fn, recurse: bool = True):
        out = super()._apply(fn, recurse)
        if self._loc is not None and not all(v.is_shared() for v in self._loc.values(True, True)):
            self._loc, self._var = self._loc.apply(fn), self._var.apply(fn)
            device = next(iter(self._loc.values(True, True))).device if not self._loc.is_empty() else None
            if device is not None:
                self._count = self._count.to(device)
        return out

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        if state.get("lock") is not None:
            state["lock"] = None  # locks do not pickle; a copy updates without one
        return state
