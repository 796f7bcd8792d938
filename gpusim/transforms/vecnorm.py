"""``VecNorm``: on-the-fly normalization with running (decayed) statistics.

For every in_key the transform keeps three statistics (in a TensorDict, so they can be saved,
loaded and shared between workers): ``<key>_sum`` (decayed sum of x), ``<key>_ssq`` (decayed sum
of x**2) and ``<key>_count`` (decayed number of rows). Each step updates them with the batch of
new values and normalizes with the updated values (:func:`gpusim.kernels.vecnorm_update_normalize_`,
one fused op)::

    sum   = decay * sum   + x.sum(batch dims)
    ssq   = decay * ssq   + (x ** 2).sum(batch dims)
    count = decay * count + n_rows
    mean  = sum / count;  var = ssq / count - mean ** 2
    y     = (x - mean) / sqrt(max(var, eps))

With ``decay=1.0`` this is the exact running mean and the biased (population) standard deviation
of every value seen. ``eps`` floors the variance (so the std is at least ``sqrt(eps)``). The
batch dims reduced over are the env's batch dims (per-agent statistics are kept for nested MARL
keys). A reset adds the values of the reset rows only (read from the ``"_reset"`` masks,
without decay) and normalizes; a frozen transform (``freeze()``) only normalizes. The module's
train/eval mode does not matter (transforms added to an env are in eval mode, as in TorchRL).

Sharing: :meth:`VecNorm.build_td_for_shared_vecnorm` builds a statistics TensorDict in shared
memory; every ``VecNorm(shared_td=td)`` (in this process or in workers) updates the same
tensors in place. ``state_dict()``/``load_state_dict()`` save and restore the statistics
(loading writes in place, so sharing survives).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
    >>> td = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
    >>> td["obs"].flatten().tolist()
    [-1.0, 1.0]
    >>> vn.loc["obs"].tolist(), vn.scale["obs"].tolist()
    ([2.0], [1.0])
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.envs.episode import rows_of
from gpusim.kernels import select, vecnorm_normalize, vecnorm_update_, vecnorm_update_normalize_
from gpusim.kernels.vecnorm import row_sums
from gpusim.specs import Composite, Unbounded
from gpusim.transforms._levels import (
    default_levels,
    done_levels_of,
    reduce_rows,
    reset_mask_for,
    tget,
    tset,
)
from gpusim.transforms.transform import Transform

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.envs.common import EnvBase

__all__ = ["VecNorm"]

_SUFFIXES = ("_sum", "_ssq", "_count")


def _stat_keys(key: NestedKey) -> tuple[NestedKey, NestedKey, NestedKey]:
    t = _keys.as_tuple(key)
    return tuple(_keys.unravel((*t[:-1], t[-1] + s)) for s in _SUFFIXES)  # type: ignore[return-value]


def _zero_stats(shape, dtype, device) -> dict[str, torch.Tensor]:
    return {
        "_sum": torch.zeros(shape, dtype=dtype, device=device),
        "_ssq": torch.zeros(shape, dtype=dtype, device=device),
        "_count": torch.zeros((), dtype=dtype, device=device),
    }


def _stat_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


class VecNorm(Transform):
    """Moving-average normalization of observations (and rewards).

    Args:
        in_keys: entries to normalize (default ``["observation", "reward"]``; in an env, those
            the env does not have are ignored).
        out_keys: destinations (default: ``in_keys``).
        shared_td: a statistics TensorDict (see :meth:`build_td_for_shared_vecnorm`) to update
            in place, typically in shared memory.
        lock: a lock (e.g. ``multiprocessing.Lock()``) held while the statistics are updated.
        decay: weight of the old statistics at each update, in ``(0, 1]``.
        eps: variance floor (``std >= sqrt(eps)``), > 0.
        shapes: feature shapes of the in_keys, to build the statistics without an env.
        new_api: ``True`` builds a :class:`~gpusim.transforms.VecNormV2` (moving-average moments)
            with the other arguments (``stateful``, ``reduce_batch_dims``, ``shared_data`` imply it).

    Raises:
        ValueError: ``decay`` outside ``(0, 1]``, ``eps <= 0``, or ``shapes``/``shared_td`` that
            do not match the keys.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv, VecNorm
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[64], seed=0), VecNorm(in_keys=["observation"], decay=1.0))
        >>> td = env.rollout(5, break_when_any_done=False)
        >>> vn = env.transform
        >>> vn.stats["observation_count"].item()  # 64 reset rows + 5 steps of 64 rows
        384.0
        >>> vn.loc["observation"].shape, vn.scale["observation"].shape  # per-feature statistics
        (torch.Size([4]), torch.Size([4]))
        >>> frozen = vn.frozen_copy()  # for evaluation: normalizes, never updates
        >>> frozen.frozen, frozen.stats is vn.stats
        (True, False)
    """

    _V2_ONLY = ("stateful", "reduce_batch_dims", "shared_data")

    def __new__(cls, *args: Any, new_api: bool | None = None, **kwargs: Any):
        if new_api or (new_api is None and any(k in kwargs for k in cls._V2_ONLY)):
            from gpusim.transforms.vecnorm_v2 import VecNormV2

            if args:
                kwargs["in_keys"] = args[0]
                args = args[1:]
            if kwargs.get("in_keys") is None:
                kwargs["in_keys"] = ["observation", "reward"]
            for name in ("shared_td", "shapes"):
                if kwargs.get(name) is not None:
                    raise TypeError(f"VecNorm(new_api=True) does not take {name!r}")
                kwargs.pop(name, None)
            return VecNormV2(*args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        shared_td: TensorDictBase | None = None,
        lock: Any = None,
        decay: float = 0.9999,
        eps: float = 1e-4,
        shapes: Sequence[Sequence[int]] | None = None,
        new_api: bool | None = None,
    ) -> None:
        if new_api:
            raise TypeError("VecNorm(new_api=True) builds a VecNormV2")
        if not 0.0 < float(decay) <= 1.0:
            raise ValueError(f"VecNorm decay must be in (0, 1], got {decay!r}")
        if not float(eps) > 0.0:
            raise ValueError(f"VecNorm eps must be > 0, got {eps!r}")
        if in_keys is None:
            in_keys = ["observation", "reward"]
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.decay = float(decay)
        self.eps = float(eps)
        self.lock = lock
        self.frozen = False
        self.__dict__["_td"] = None
        self.__dict__["_levels"] = None
        self.__dict__["_stats"] = {}  # in_key -> (sum, ssq, count), rebuilt from _td
        if shared_td is not None:
            for key in self.in_keys:
                for sk in _stat_keys(key):
                    if sk not in shared_td.keys(True, True):
                        raise ValueError(f"VecNorm shared_td misses the statistic {sk!r} of in_key {key!r}")
            self._set_td(shared_td)
        elif shapes is not None:
            shapes = list(shapes)
            if len(shapes) != len(self.in_keys):
                raise ValueError(
                    f"VecNorm shapes has {len(shapes)} entries for {len(self.in_keys)} in_keys {self.in_keys}"
                )
            td = TensorDict({}, [])
            for key, shape in zip(self.in_keys, shapes):
                for sk, v in zip(_stat_keys(key), _zero_stats(torch.Size(shape), torch.float32, None).values()):
                    td.set(sk, v)
            self._set_td(td)

    # ------------------------------------------------------------------ statistics storage
    def _set_td(self, td: TensorDictBase | None) -> None:
        self.__dict__["_td"] = td
        stats = {}
        if td is not None:
            for key in self.in_keys:
                sks = _stat_keys(key)
                if all(sk in td.keys(True, True) for sk in sks):
                    stats[key] = tuple(td.get(sk) for sk in sks)
        self.__dict__["_stats"] = stats

    def _add_stats(self, key: NestedKey, feature_shape, dtype, device) -> None:
        td = self.__dict__["_td"]
        if td is None:
            td = TensorDict({}, [], device=device)
        for sk, v in zip(_stat_keys(key), _zero_stats(feature_shape, _stat_dtype(dtype), device).values()):
            td.set(sk, v)
        self._set_td(td)

    @property
    def stats(self) -> TensorDictBase | None:
        """The statistics TensorDict (``<key>_sum``, ``<key>_ssq``, ``<key>_count``).

        ``None`` until the feature shapes are known (from an env, ``shapes`` or the first data).

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> vn.stats is None
            True
            >>> _ = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> sorted(vn.stats.keys()), vn.stats["obs_sum"].tolist()
            (['obs_count', 'obs_ssq', 'obs_sum'], [4.0])
        """
        return self.__dict__["_td"]

    def _mean_std(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor]:
        s, ss, c = self.__dict__["_stats"][key]
        mean = s / c
        var = (ss / c - mean * mean).clamp_min(self.eps)
        return mean, var.sqrt()

    @property
    def loc(self) -> TensorDictBase:
        """The current means, one entry per in_key.

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> vn.loc["obs"].tolist()
            [2.0]
        """
        return TensorDict({k: self._mean_std(k)[0] for k in self.__dict__["_stats"]}, [])

    @property
    def scale(self) -> TensorDictBase:
        """The current standard deviations (``sqrt(max(var, eps))``), one entry per in_key.

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict({"obs": torch.tensor([[1.0], [5.0]])}, [2]))
            >>> vn.scale["obs"].tolist()
            [2.0]
        """
        return TensorDict({k: self._mean_std(k)[1] for k in self.__dict__["_stats"]}, [])

    @staticmethod
    def build_td_for_shared_vecnorm(
        env: EnvBase, keys: Sequence[NestedKey] | None = None, memmap: bool = False
    ) -> TensorDictBase:
        """Builds zeroed statistics for ``keys`` of ``env`` in shared memory (or memory-mapped).

        Args:
            env: the env whose specs give the feature shapes.
            keys: the entries (default ``["observation", "reward"]``, those the env has).
            memmap: memory-map the statistics instead of placing them in shared memory.

        Returns:
            A TensorDict to pass as ``shared_td`` to several ``VecNorm`` transforms.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4])
            >>> td = VecNorm.build_td_for_shared_vecnorm(env, keys=["observation"])
            >>> sorted(td.keys()), td["observation_sum"].shape, td.is_shared()
            (['observation_count', 'observation_ssq', 'observation_sum'], torch.Size([4]), True)
            >>> a, b = VecNorm(in_keys=["observation"], shared_td=td), VecNorm(in_keys=["observation"], shared_td=td)
            >>> a.stats["observation_sum"].data_ptr() == b.stats["observation_sum"].data_ptr()
            True
        """
        specs = {}
        for full in ("full_observation_spec", "full_reward_spec"):
            spec = env.output_spec[full]
            for k in _keys.leaf_keys(spec):
                specs[k] = spec[k]
        if keys is None:
            keys = [k for k in ("observation", "reward") if k in specs]
        nb = len(env.batch_size)
        td = TensorDict({}, [])
        for key in keys:
            key = _keys.unravel(key)
            if key not in specs:
                raise KeyError(f"build_td_for_shared_vecnorm: the env has no observation/reward {key!r}")
            spec = specs[key]
            for sk, v in zip(_stat_keys(key), _zero_stats(spec.shape[nb:], _stat_dtype(spec.dtype), "cpu").values()):
                td.set(sk, v)
        return td.memmap_() if memmap else td.share_memory_()

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        self.__dict__["_levels"] = done_levels_of(output_spec)
        nb = len(output_spec.shape)
        stats = self.__dict__["_stats"]
        for full in ("full_observation_spec", "full_reward_spec"):
            spec = output_spec[full]
            present = set(_keys.leaf_keys(spec))
            for in_key, out_key in zip(self.in_keys, self.out_keys):
                if in_key not in present:
                    continue
                leaf = spec[in_key]
                if in_key not in stats:
                    self._add_stats(in_key, leaf.shape[nb:], leaf.dtype, leaf.device)
                    stats = self.__dict__["_stats"]
                elif tuple(stats[in_key][0].shape) != tuple(leaf.shape[nb:]):
                    raise ValueError(
                        f"VecNorm statistics of {in_key!r} have shape {list(stats[in_key][0].shape)}, "
                        f"the env gives features of shape {list(leaf.shape[nb:])}"
                    )
                dtype = torch.result_type(torch.zeros((), dtype=leaf.dtype), stats[in_key][0])
                spec[out_key] = Unbounded(shape=leaf.shape, dtype=dtype, device=leaf.device)
        return output_spec

    # ------------------------------------------------------------------ data
    def freeze(self) -> VecNorm:
        """Stops updating the statistics (normalization only); returns ``self``.

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> _ = vn.freeze()(TensorDict({"obs": torch.tensor([[100.0]])}, [1]))
            >>> vn.loc["obs"].tolist()  # unchanged by the frozen call
            [2.0]
        """
        self.frozen = True
        return self

    def unfreeze(self) -> VecNorm:
        """Resumes updating the statistics; returns ``self``.

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0).freeze()
            >>> _ = vn.unfreeze()(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> vn.frozen, vn.stats["obs_count"].item()
            (False, 2.0)
        """
        self.frozen = False
        return self

    def _updating(self) -> bool:
        return not self.frozen

    def _stats_for(self, key: NestedKey, x: torch.Tensor, batch_ndim: int):
        stats = self.__dict__["_stats"]
        if key not in stats:  # used without an env: statistics follow the first data seen
            self._add_stats(key, x.shape[batch_ndim:], x.dtype, x.device)
            stats = self.__dict__["_stats"]
        return stats[key]

    def _normalize_step(self, key: NestedKey, x: torch.Tensor, batch_ndim: int | None = None) -> torch.Tensor:
        if batch_ndim is None:
            s = self.__dict__["_stats"].get(key)
            batch_ndim = x.ndim - s[0].ndim if s is not None else x.ndim - 1
        s, ss, c = self._stats_for(key, x, batch_ndim)
        if not self._updating():
            return vecnorm_normalize(x, s, ss, c, self.eps)
        if self.lock is not None:
            with self.lock:
                return vecnorm_update_normalize_(x, s, ss, c, self.decay, self.eps, x.ndim - s.ndim)
        return vecnorm_update_normalize_(x, s, ss, c, self.decay, self.eps, x.ndim - s.ndim)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            x = tget(next_tensordict, in_key)
            if x is None:
                continue
            tset(next_tensordict, out_key, self._normalize_step(in_key, x, next_tensordict.batch_dims))
        return next_tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            x = tget(next_tensordict, in_key)
            if x is None:
                continue
            tset(next_tensordict, out_key, self._normalize_step(in_key, x))
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        levels = self.__dict__["_levels"] or default_levels(tensordict_reset.batch_size)
        nb = tensordict_reset.batch_dims
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            x = tget(tensordict_reset, in_key)
            if x is None:
                continue
            s, ss, c = self._stats_for(in_key, x, nb)
            batch_ndim = x.ndim - s.ndim
            if self._updating():
                mask = reset_mask_for(tensordict, in_key, levels, tensordict_reset.batch_size)
                if self.lock is not None:
                    with self.lock:
                        self._reset_update(x, s, ss, c, mask, batch_ndim)
                else:
                    self._reset_update(x, s, ss, c, mask, batch_ndim)
            tset(tensordict_reset, out_key, vecnorm_normalize(x, s, ss, c, self.eps))
        return tensordict_reset

    @staticmethod
    def _reset_update(x, s, ss, c, mask, batch_ndim: int) -> None:
        """Adds the reset rows (all rows when ``mask`` is None) to the sums, without decay."""
        if mask is None:
            vecnorm_update_(x, s, ss, c, 1.0, batch_ndim)
            return
        rows_mask = reduce_rows(mask, x.shape[:batch_ndim]).reshape(-1)
        x2 = x.to(s.dtype).reshape(rows_mask.shape[0], -1)
        if select("vecnorm", x.device, x.numel()) == "cpu":
            # eager CPU: read the reset rows on the host (no device to wait for), sum only those
            xr = x2.index_select(0, rows_of(rows_mask))
            s.add_(xr.sum(0).reshape(s.shape))
            ss.add_((xr * xr).sum(0).reshape(ss.shape))
            c.add_(xr.shape[0])
            return
        # reference (compiled graphs, devices): a masked sum over all rows, no host read. A
        # reduction (not a matmul) so that Inductor fuses it with the step's statistics into one
        # pass over the batch; rows not reset are zeroed, never multiplied (anything times 0)
        xm = torch.where(rows_mask.unsqueeze(-1), x2, 0.0)
        s.add_(row_sums(xm).reshape(s.shape))
        ss.add_(row_sums(xm * xm).reshape(ss.shape))
        c.add_(rows_mask.sum().to(c.dtype))

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use: updates (unless frozen) and normalizes over all batch dims of the data.

        Args:
            tensordict: the data (written in place).

        Returns:
            ``tensordict`` with normalized entries.

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))["obs"].flatten().tolist()
            [-1.0, 1.0]
        """
        return self._call(tensordict)

    # ------------------------------------------------------------------ state
    def get_extra_state(self) -> Any:
        td = self.__dict__["_td"]
        if td is None:
            warnings.warn(
                "Querying state_dict on an uninitialized VecNorm: the state holds no statistics; loading it "
                "into an initialized VecNorm raises an error.",
                UserWarning,
                stacklevel=2,
            )
        return {"stats": None if td is None else td.clone(), "frozen": self.frozen}

    def set_extra_state(self, state: Any) -> None:
        if not state:
            return
        self.frozen = bool(state.get("frozen", self.frozen))
        loaded = state.get("stats")
        td = self.__dict__["_td"]
        if loaded is None:
            if td is not None:
                raise KeyError(
                    "VecNorm.load_state_dict: Could not find a tensordict of statistics in the state dict, "
                    "and this VecNorm has statistics (the state was saved before any data was seen)"
                )
            return
        if td is None:
            if not all(v.is_shared() for v in loaded.values(True, True)):
                warnings.warn(
                    "VecNorm wasn't initialized and the tensordict is not shared: the loaded statistics are "
                    "private to this process; hand the transform to workers after loading.",
                    UserWarning,
                    stacklevel=2,
                )
            self._set_td(loaded.clone())
            return
        for key, value in loaded.items(True, True):
            if key in td.keys(True, True):
                td.get(key).copy_(value)  # in place: shared statistics stay shared
            else:
                td.set(key, value.clone())
        self._set_td(td)

    def _apply(self, fn, recurse: bool = True):
        out = super()._apply(fn, recurse)
        td = self.__dict__["_td"]
        if td is not None:
            self._set_td(td.apply(fn))
        return out

    def frozen_copy(self) -> VecNorm:
        """A frozen copy that keeps track of the statistics without updating them (TorchRL's
        documented behaviour): it reads the very tensors this transform updates, so it normalizes
        with the latest statistics (an evaluation env beside a training env).

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> copy = vn.frozen_copy()
            >>> copy.frozen, copy.loc["obs"].tolist()
            (True, [2.0])
            >>> _ = vn(TensorDict({"obs": torch.tensor([[5.0], [7.0]])}, [2]))  # the original updates...
            >>> copy.loc["obs"].tolist()  # ...and the copy follows
            [4.0]
        """
        td = self.__dict__["_td"]
        if td is None:
            raise RuntimeError(
                "VecNorm.frozen_copy: no statistics yet. Make sure the VecNorm has been initialized "
                "(attach it to an env or pass it data first)."
            )
        out = self.clone()
        out._set_td(td.copy())  # a new container of the same statistic tensors
        out.lock = None
        out.frozen = True
        return out

    def denorm(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Inverse normalization on a shallow copy: ``out_key * std + mean`` written to ``in_key``.

        Args:
            tensordict: data holding normalized ``out_keys``.

        Returns:
            A shallow copy of ``tensordict`` with the denormalized ``in_keys``.

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], out_keys=["obs_n"], decay=1.0)
            >>> td = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> vn.denorm(td.exclude("obs"))["obs"].flatten().tolist()
            [1.0, 3.0]
        """
        out = tensordict.copy()
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tget(out, out_key)
            if value is None or in_key not in self.__dict__["_stats"]:
                continue
            mean, std = self._mean_std(in_key)
            tset(out, in_key, value * std + mean)
        return out

    def to_observation_norm(self) -> Transform:
        """A static ``ObservationNorm`` (``standard_normal=True``) with the current mean/std
        (a ``Compose`` of them when there are several keys).

        Examples:
            >>> from tensordict import TensorDict
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict({"obs": torch.tensor([[1.0], [3.0]])}, [2]))
            >>> norm = vn.to_observation_norm()
            >>> type(norm).__name__, norm.loc.tolist(), norm.scale.tolist()
            ('ObservationNorm', [2.0], [1.0])
        """
        from gpusim.transforms.normalization import ObservationNorm

        norms = []
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in self.__dict__["_stats"]:
                continue
            mean, std = self._mean_std(in_key)
            norms.append(
                ObservationNorm(
                    loc=mean.clone(), scale=std.clone(), in_keys=[in_key], out_keys=[out_key], standard_normal=True
                )
            )
        if len(norms) == 1:
            return norms[0]
        from gpusim.transforms.compose import Compose

        return Compose(*norms)

    def clone(self) -> VecNorm:
        out = super().clone()
        out.__dict__["_stats"] = dict(self.__dict__["_stats"])
        return out

    def __setstate__(self, state: dict) -> None:
        """After a deep copy or unpickling, the statistics the updates write (``_stats``) are
        the very tensors ``stats`` reads again (a deep copy of the TensorDict makes new leaves).

        Examples:
            >>> import copy
            >>> vn = VecNorm(in_keys=["obs"], decay=1.0)
            >>> _ = vn(TensorDict({"obs": torch.ones(4, 2)}, [4]))
            >>> twin = copy.deepcopy(vn)
            >>> _ = twin(TensorDict({"obs": torch.ones(4, 2)}, [4]))
            >>> vn.stats["obs_count"].item(), twin.stats["obs_count"].item()
            (4.0, 8.0)
        """
        super().__setstate__(state)
        self._set_td(self.__dict__["_td"])

    def __repr__(self) -> str:
        return f"VecNorm(in_keys={self.in_keys}, decay={self.decay}, eps={self.eps}, frozen={self.frozen})"
