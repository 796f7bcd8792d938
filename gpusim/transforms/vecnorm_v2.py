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
from typing import Any, Sequence

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._keys import NestedKey
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
        stateful: only ``True`` (statistics kept by the transform) is supported.
        decay: the weight of the past at each update, in ``(0, 1]``.
        eps: the floor of the scale (the standard deviation), > 0.
        shared_data: a TensorDict with ``"loc"``, ``"var"`` and ``"count"`` entries (from another
            transform's statistics) to update in place.
        reduce_batch_dims: reduce the batch dims of each batch into one update.

    Raises:
        ValueError: ``decay`` outside ``(0, 1]``, ``eps <= 0`` or keys of different lengths.
        NotImplementedError: ``stateful=False`` (statistics carried in the data) is not supported.

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
        if not stateful:
            raise NotImplementedError(
                "VecNormV2: stateful=False (statistics carried in the tensordicts) is not supported by gpusim; "
                "use stateful=True"
            )
        if not 0.0 < float(decay) <= 1.0:
            raise ValueError(f"VecNormV2: decay must be in (0, 1], got {decay!r}")
        if not float(eps) > 0.0:
            raise ValueError(f"VecNormV2: eps must be > 0, got {eps!r}")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.stateful = True
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
        if self._loc is None and parent is not None:
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
        loc, var, count = self._loc.get(key), self._var.get(key), self._count.get(key)
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
                spec[out_key] = Unbounded(shape=leaf.shape, dtype=dtype, device=leaf.device)
        return output_spec

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
        return self._normalize(next_tensordict, next_tensordict.batch_dims, update=True)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._normalize(next_tensordict, next_tensordict.batch_dims, update=True)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        levels = default_levels(tensordict_reset.batch_size)
        full = all(
            reset_mask_for(tensordict, key, levels, tensordict_reset.batch_size) is None
            for key in self.in_keys
        )
        mode = self.missing_tolerance
        self.set_missing_tolerance(True)
        try:
            return self._normalize(tensordict_reset, tensordict_reset.batch_dims, update=full)
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
    def freeze(self) -> "VecNormV2":
        """Stops the updates (normalization goes on). Returns ``self``.

        Examples:
            >>> VecNormV2(in_keys=["obs"]).freeze().frozen
            True
        """
        self.frozen = True
        return self

    def unfreeze(self) -> "VecNormV2":
        """Resumes the updates. Returns ``self``.

        Examples:
            >>> VecNormV2(in_keys=["obs"]).freeze().unfreeze().frozen
            False
        """
        self.frozen = False
        return self

    def clone(self) -> "VecNormV2":
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

    def frozen_copy(self) -> "VecNormV2":
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
        if self._loc is None:
            warnings.warn(
                "Querying state_dict on an uninitialized VecNorm: the state holds no statistics; loading it "
                "into an initialized VecNorm raises an error.",
                UserWarning,
            )
            return {}
        return TensorDict(loc=self._loc, var=self._var, count=self._count).flatten_keys(_SEP).to_dict()

    def set_extra_state(self, state: Any) -> None:
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
