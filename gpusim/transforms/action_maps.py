"""Action-space maps: ``ActionScaling`` (affine normalisation) and ``FlattenAction`` (reshape).

Both act on the inverse path of an environment: the policy writes an action in the transformed
space, the transform maps it back to the base env's space before the base env steps, and the
action spec the transformed env advertises is the mapped one. Their forward path (``forward``,
``normalize``) maps env-space actions to the policy space, for stored data. Both are elementwise
tensor programs on the action's device: batched, no host reads.

Examples:
    >>> import torch
    >>> t = ActionScaling(loc=1.0, scale=3.0)
    >>> t.denormalize(torch.tensor([1.0, -1.0])), t.normalize(torch.tensor([4.0]))
    (tensor([ 4., -2.]), tensor([1.]))
    >>> FlattenAction(-2, -1, action_shape=(2, 3))._inv_apply_transform(torch.arange(6.0)).shape
    torch.Size([2, 3])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, unravel
from gpusim.specs import Bounded, Composite, TensorSpec, Unbounded
from gpusim.specs.spaces import ContinuousBox
from gpusim.transforms._spec_utils import fmt_key
from gpusim.transforms.transform import Transform

__all__ = ["ActionScaling", "FlattenAction"]


def _key_list(keys, default: list) -> list:
    if keys is None:
        return list(default)
    if isinstance(keys, (str, tuple)):
        return [keys]
    return list(keys)


def _as_float(x) -> torch.Tensor:
    t = torch.as_tensor(x)
    return t if t.dtype.is_floating_point else t.to(torch.get_default_dtype())


class _ActionMap(Transform):
    """Shared plumbing: the env path only uses the inverse (the action is not in the step
    output); ``forward`` applies the forward map to every present ``in_key``."""

    invertible = True

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return Transform._call(self, tensordict)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _parent_action_leaf(self, key: NestedKey) -> TensorSpec | None:
        parent = self.parent
        if parent is None:
            return None
        spec = parent.full_action_spec
        return spec[key] if key in spec.keys(True, True) else None


class ActionScaling(_ActionMap):
    """Affine map between a normalised action space and a bounded env action space.

    The policy acts in ``[-1, 1]`` (``standard_normal=True``) or ``[0, 1]``; before the base env
    steps, the action becomes ``action * scale + loc`` (after ``a * 2 - 1`` for ``[0, 1]``). By
    default ``loc``/``scale`` come from the env's bounds (``loc = (high + low) / 2``, ``scale =
    (high - low) / 2``) when the transform is attached; explicit ``loc`` and ``scale`` (e.g.
    dataset statistics, see :meth:`from_stats`) make it independent of the spec: a bounded spec
    is then advertised through the map, an unbounded one stays unbounded.

    Args:
        in_keys_inv: the env's action key (one key; default ``["action"]``). ``[]`` makes a
            forward-only instance (needs explicit ``loc``/``scale``) that leaves the env path alone.
        out_keys_inv: the policy-side action key (default: ``in_keys_inv``).
        in_keys: keys normalised by ``forward`` (default: ``in_keys_inv``, or ``["action"]``).
        out_keys: where ``forward`` writes (default: ``in_keys``).
        loc: explicit location (with ``scale``).
        scale: explicit scale (with ``loc``), nonzero everywhere.
        standard_normal: normalised space ``[-1, 1]`` (True) or ``[0, 1]`` (False).

    Raises:
        ValueError: several action keys; only one of ``loc``/``scale``; a zero scale; a
            forward-only instance without explicit statistics.
        RuntimeError: (when attached without explicit statistics) an action spec that is not a
            finitely bounded continuous spec with ``high > low``.

    Examples:
        >>> import torch
        >>> t = ActionScaling(loc=torch.tensor([0.0, 10.0]), scale=torch.tensor([1.0, 5.0]))
        >>> t.denormalize(torch.tensor([[1.0, -1.0]]))
        tensor([[1., 5.]])
    """

    def __init__(
        self,
        in_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        *,
        loc: torch.Tensor | float | None = None,
        scale: torch.Tensor | float | None = None,
        standard_normal: bool = True,
    ) -> None:
        in_keys_inv = _key_list(in_keys_inv, ["action"])
        if len(in_keys_inv) > 1:
            raise ValueError(
                f"ActionScaling handles a single action key per instance, got in_keys_inv={in_keys_inv}; "
                "compose several ActionScaling transforms to scale several actions"
            )
        out_keys_inv = _key_list(out_keys_inv, in_keys_inv)
        in_keys = _key_list(in_keys, in_keys_inv if in_keys_inv else ["action"])
        out_keys = _key_list(out_keys, in_keys)
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self._check_key_pairs()
        self.standard_normal = bool(standard_normal)
        if (loc is None) != (scale is None):
            raise ValueError(
                f"ActionScaling: loc and scale must be given together or not at all, got loc={loc!r}, scale={scale!r}"
            )
        self._explicit = loc is not None
        if not in_keys_inv and not self._explicit:
            raise ValueError(
                "ActionScaling(in_keys_inv=[]) is forward-only and needs explicit loc and scale "
                "(there is no action spec to derive them from)"
            )
        if self._explicit:
            loc, scale = _as_float(loc), _as_float(scale)
            if bool((scale == 0).any()):
                raise ValueError(f"ActionScaling: scale must be nonzero everywhere, got scale={scale}")
            self.register_buffer("loc", loc.clone())
            self.register_buffer("scale", scale.clone())
        else:
            self.register_buffer("loc", None)
            self.register_buffer("scale", None)

    # ------------------------------------------------------------------ statistics
    @property
    def initialized(self) -> bool:
        """Whether ``loc`` and ``scale`` are known (explicit, or read from the env's bounds).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> t = ActionScaling()
            >>> t.initialized
            False
            >>> env = TransformedEnv(PendulumEnv(batch_size=[2]), t)  # reads the bounds [-2, 2]
            >>> t.initialized, t.scale.flatten().tolist()
            (True, [2.0, 2.0])
        """
        return self.loc is not None

    @classmethod
    def from_stats(
        cls,
        *,
        mean: torch.Tensor | None = None,
        std: torch.Tensor | None = None,
        low: torch.Tensor | None = None,
        high: torch.Tensor | None = None,
        eps: float = 1e-6,
        **kwargs,
    ) -> ActionScaling:
        """An instance with explicit statistics: ``mean``/``std`` (``loc=mean, scale=std``) or
        ``low``/``high`` (mapped to ``[-1, 1]``). The scale is floored at ``eps``.

        Raises:
            ValueError: not exactly one complete pair, or loc/scale of different shapes.

        Examples:
            >>> t = ActionScaling.from_stats(low=torch.tensor([0.0]), high=torch.tensor([4.0]))
            >>> t.normalize(torch.tensor([4.0]))
            tensor([1.])
        """
        if (mean is None) != (std is None):
            raise ValueError("ActionScaling.from_stats: mean and std must be given together")
        if (low is None) != (high is None):
            raise ValueError("ActionScaling.from_stats: low and high must be given together")
        if (mean is None) == (low is None):
            raise ValueError("ActionScaling.from_stats: give exactly one of (mean, std) or (low, high)")
        dtype = torch.get_default_dtype()
        if mean is not None:
            loc = torch.as_tensor(mean, dtype=dtype)
            scale = torch.as_tensor(std, dtype=dtype)
        else:
            low_t = torch.as_tensor(low, dtype=dtype)
            high_t = torch.as_tensor(high, dtype=dtype)
            loc, scale = (low_t + high_t) / 2, (high_t - low_t) / 2
        if loc.shape != scale.shape:
            raise ValueError(
                f"ActionScaling.from_stats: loc and scale must have the same shape, got "
                f"{tuple(loc.shape)} and {tuple(scale.shape)}"
            )
        return cls(loc=loc, scale=scale.clamp_min(eps), **kwargs)

    @classmethod
    def from_metadata(cls, metadata, **kwargs) -> ActionScaling:
        """An instance from an object with ``action_key`` and ``action_mean``/``action_std`` or
        ``action_low``/``action_high`` attributes (a dataset's metadata).

        Raises:
            ValueError: the metadata carries no action statistics.

        Examples:
            >>> from types import SimpleNamespace
            >>> meta = SimpleNamespace(action_key="action", action_mean=torch.zeros(1),
            ...                        action_std=torch.full((1,), 2.0), dataset_id="demo")
            >>> ActionScaling.from_metadata(meta).denormalize(torch.ones(1))
            tensor([2.])
        """
        key = getattr(metadata, "action_key", "action")
        kwargs.setdefault("in_keys_inv", [key])
        if not kwargs["in_keys_inv"]:
            kwargs.setdefault("in_keys", [key])
        mean, std = getattr(metadata, "action_mean", None), getattr(metadata, "action_std", None)
        if mean is not None and std is not None:
            return cls.from_stats(mean=mean, std=std, **kwargs)
        low, high = getattr(metadata, "action_low", None), getattr(metadata, "action_high", None)
        if low is not None and high is not None:
            return cls.from_stats(low=low, high=high, **kwargs)
        raise ValueError(
            f"ActionScaling.from_metadata: metadata {getattr(metadata, 'dataset_id', metadata)!r} has no "
            "action normalization statistics (action_mean/action_std or action_low/action_high)"
        )

    @staticmethod
    def _bounds(leaf: TensorSpec, strict: bool) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The finite ``(low, high)`` of a continuous bounded leaf; ``None`` (or a ``RuntimeError``
        when ``strict``) for unbounded, partially unbounded or discrete leaves."""
        space = getattr(leaf, "space", None)
        if not isinstance(space, ContinuousBox) or isinstance(leaf, Unbounded):
            if strict:
                raise RuntimeError(
                    f"ActionScaling needs a finitely bounded continuous action spec (Bounded), got "
                    f"{type(leaf).__name__}"
                )
            return None
        low, high = space.low, space.high
        finite = bool(torch.isfinite(low).all() and torch.isfinite(high).all())
        if finite and low.dtype.is_floating_point:
            info = torch.finfo(low.dtype)
            finite = not bool((low == info.min).any() or (high == info.max).any())
        if not finite:
            if strict:
                raise RuntimeError(
                    f"ActionScaling needs every action bound finite, got low={low.tolist()}, high={high.tolist()}"
                )
            return None
        if strict and bool((high <= low).any()):
            raise RuntimeError(
                f"ActionScaling needs high > low everywhere, got low={low.tolist()}, high={high.tolist()}"
            )
        return low, high

    def _init_from_leaf(self, leaf: TensorSpec) -> None:
        low, high = self._bounds(leaf, strict=True)
        dtype = low.dtype if low.dtype.is_floating_point else torch.get_default_dtype()
        self.register_buffer("loc", ((high + low) / 2).to(dtype))
        self.register_buffer("scale", ((high - low) / 2).to(dtype))

    def _ensure_initialized(self) -> None:
        if self.initialized:
            return
        leaf = self._parent_action_leaf(unravel(self.in_keys_inv[0])) if self.in_keys_inv else None
        if leaf is None:
            raise RuntimeError(
                "ActionScaling is not initialized: pass loc and scale, or attach it to an env whose "
                f"action {fmt_key(self.in_keys_inv[0]) if self.in_keys_inv else ''} is bounded"
            )
        self._init_from_leaf(leaf)

    # ------------------------------------------------------------------ maps
    def _loc_scale(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self._ensure_initialized()
        loc, scale = self.loc, self.scale
        if loc.numel() > 1 and (action.ndim == 0 or action.shape[-1] != loc.shape[-1]):
            raise ValueError(
                f"ActionScaling: action shape {tuple(action.shape)} does not match the loc/scale "
                f"dimension {loc.shape[-1]} on its last dim"
            )
        if loc.device != action.device:
            loc, scale = loc.to(action.device), scale.to(action.device)
        return loc, scale

    def _apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        loc, scale = self._loc_scale(action)
        out = (action - loc) / scale
        return (out + 1) / 2 if not self.standard_normal else out

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        loc, scale = self._loc_scale(action)
        if not self.standard_normal:
            action = action * 2 - 1
        return action * scale + loc

    def normalize(self, action: torch.Tensor) -> torch.Tensor:
        """Env-space action -> normalised action (the forward map).

        Examples:
            >>> import torch
            >>> t = ActionScaling(loc=torch.tensor([0.0, 10.0]), scale=torch.tensor([1.0, 5.0]))
            >>> t.normalize(torch.tensor([[0.5, 15.0]]))
            tensor([[0.5000, 1.0000]])
        """
        return self._apply_transform(action)

    def denormalize(self, action: torch.Tensor) -> torch.Tensor:
        """Normalised action -> env-space action (the inverse map).

        Examples:
            >>> import torch
            >>> t = ActionScaling(loc=torch.tensor(1.0), scale=torch.tensor(2.0), standard_normal=False)
            >>> t.denormalize(torch.tensor([0.0, 0.5, 1.0]))  # [0, 1] -> [-1, 1] -> * 2 + 1
            tensor([-1.,  1.,  3.])
        """
        return self._inv_apply_transform(action)

    # ------------------------------------------------------------------ specs
    def _map_leaf(self, leaf: TensorSpec) -> TensorSpec:
        dtype = leaf.dtype if leaf.dtype.is_floating_point else torch.get_default_dtype()
        if self._explicit:
            if not isinstance(getattr(leaf, "space", None), ContinuousBox):
                raise RuntimeError(f"ActionScaling needs a continuous action spec, got {type(leaf).__name__}")
            bounds = self._bounds(leaf, strict=False)
            if bounds is None:
                return Unbounded(shape=leaf.shape, device=leaf.device, dtype=leaf.dtype)
            low, high = (self._apply_transform(b.to(dtype)) for b in bounds)
        else:
            if not self.initialized:
                self._init_from_leaf(leaf)
            else:
                self._bounds(leaf, strict=True)
            lo = -1.0 if self.standard_normal else 0.0
            low = torch.full(leaf.shape, lo, dtype=dtype, device=leaf.device)
            high = torch.ones(leaf.shape, dtype=dtype, device=leaf.device)
        return Bounded(low=low, high=high, shape=leaf.shape, device=leaf.device, dtype=leaf.dtype)

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        if not self.in_keys_inv:
            return action_spec
        in_key, out_key = unravel(self.in_keys_inv[0]), unravel(self.out_keys_inv[0])
        if in_key in action_spec.keys(True, True):
            mapped = self._map_leaf(action_spec[in_key])
            if in_key != out_key:
                del action_spec[in_key]
            action_spec[out_key] = mapped
        return action_spec

    def __repr__(self) -> str:
        stats = (
            f"loc={self.loc}, scale={self.scale}" if self.initialized else "loc=<uninitialized>, scale=<uninitialized>"
        )
        return f"ActionScaling({stats}, standard_normal={self.standard_normal}, in_keys_inv={self.in_keys_inv})"


class FlattenAction(_ActionMap):
    """Flattens adjacent dims ``[first_dim, last_dim]`` of an action for the policy.

    The transformed env advertises the flattened action spec; before the base env steps, the
    flat action is unflattened back to the env's shape (read from its action spec when attached,
    or given as ``action_shape``). ``forward`` flattens env-shaped actions.

    Args:
        first_dim: first dim to flatten (negative unless ``allow_positive_dim``).
        last_dim: last dim to flatten, inclusive (negative unless ``allow_positive_dim``).
        in_keys_inv: the env's action keys (default ``["action"]``); the same span applies to all.
        out_keys_inv: the policy-side keys (default: ``in_keys_inv``).
        in_keys: keys flattened by ``forward`` (default: ``in_keys_inv``).
        out_keys: where ``forward`` writes (default: ``in_keys``).
        allow_positive_dim: accept dims ``>= 0`` (counted after the env's batch dims).
        action_shape: the env-side shape of the ``[first_dim, last_dim]`` span, for use without
            an env.

    Raises:
        ValueError: a positive dim without ``allow_positive_dim``; ``first_dim > last_dim``.
        RuntimeError: unflattening without a known shape; ``_inv_apply_transform`` with several
            keys (use ``inv``).

    Examples:
        >>> import torch
        >>> t = FlattenAction(first_dim=-2, last_dim=-1)
        >>> t._apply_transform(torch.zeros(4, 3, 5)).shape
        torch.Size([4, 15])
    """

    def __init__(
        self,
        first_dim: int = -2,
        last_dim: int = -1,
        in_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        allow_positive_dim: bool = False,
        *,
        action_shape: Sequence[int] | None = None,
    ) -> None:
        in_keys_inv = _key_list(in_keys_inv, ["action"])
        out_keys_inv = _key_list(out_keys_inv, in_keys_inv)
        in_keys = _key_list(in_keys, in_keys_inv)
        out_keys = _key_list(out_keys, in_keys)
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self._check_key_pairs()
        for name, dim in (("first_dim", first_dim), ("last_dim", last_dim)):
            if not allow_positive_dim and dim >= 0:
                raise ValueError(
                    f"FlattenAction: {name} must be < 0 (so that it does not depend on the env's batch "
                    f"size), got {name}={dim}; pass allow_positive_dim=True to allow it"
                )
        if first_dim > last_dim:
            raise ValueError(f"FlattenAction: first_dim ({first_dim}) must be <= last_dim ({last_dim})")
        self._first_dim = int(first_dim)
        self._last_dim = int(last_dim)
        self.allow_positive_dim = bool(allow_positive_dim)
        self._shapes: dict = {}
        if action_shape is not None:
            span = tuple(int(s) for s in action_shape)
            for key in self.in_keys_inv:
                self._shapes[unravel(key)] = span

    def _abs(self, dim: int) -> int:
        if dim >= 0 and self.parent is not None:
            return len(self.parent.batch_size) + dim
        return dim

    @property
    def first_dim(self) -> int:
        """The first flattened dim (positive dims are offset by the parent's batch dims).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> t = FlattenAction(0, 0, allow_positive_dim=True)
            >>> t.first_dim
            0
            >>> env = TransformedEnv(PendulumEnv(batch_size=[2]), t)
            >>> t.first_dim  # after the env's one batch dim
            1
        """
        return self._abs(self._first_dim)

    @property
    def last_dim(self) -> int:
        """The last flattened dim (positive dims are offset by the parent's batch dims).

        Examples:
            >>> FlattenAction(first_dim=-3, last_dim=-2).last_dim
            -2
        """
        return self._abs(self._last_dim)

    def _merged_dim(self) -> int:
        """Where the merged dim sits in the flat tensor."""
        return self.first_dim if self._first_dim >= 0 else self.last_dim

    def _apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        return torch.flatten(action, self.first_dim, self.last_dim)

    def _shape_for(self, key: NestedKey) -> tuple:
        shape = self._shapes.get(key)
        if shape is None:
            leaf = self._parent_action_leaf(key)
            if leaf is not None:
                shape = self._shapes[key] = self._span(leaf)
        if shape is None:
            raise RuntimeError(
                f"FlattenAction has no unflatten shape for {fmt_key(key)}: pass action_shape= or attach it "
                "to an env that has this action"
            )
        return shape

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        if len(self.in_keys_inv) != 1:
            raise RuntimeError(
                f"FlattenAction._inv_apply_transform cannot disambiguate between the action keys "
                f"{self.in_keys_inv}; use inv(tensordict), which knows each key"
            )
        return torch.unflatten(action, self._merged_dim(), self._shape_for(unravel(self.in_keys_inv[0])))

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        dim = None
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is None:
                continue
            dim = self._merged_dim() if dim is None else dim
            tensordict.set(in_key, torch.unflatten(value, dim, self._shape_for(unravel(in_key))))
        return tensordict

    def _span(self, leaf: TensorSpec) -> tuple:
        ndim = len(leaf.shape)
        first = self._first_dim + ndim if self._first_dim < 0 else self.first_dim
        last = self._last_dim + ndim if self._last_dim < 0 else self.last_dim
        if first < 0 or last >= ndim or first > last:
            raise RuntimeError(
                f"FlattenAction(first_dim={self._first_dim}, last_dim={self._last_dim}) does not fit an "
                f"action of shape {tuple(leaf.shape)}"
            )
        return tuple(int(s) for s in leaf.shape[first : last + 1])

    def _flatten_leaf(self, leaf: TensorSpec) -> TensorSpec:
        ndim = len(leaf.shape)
        first = self._first_dim + ndim if self._first_dim < 0 else self.first_dim
        last = self._last_dim + ndim if self._last_dim < 0 else self.last_dim
        shape = list(leaf.shape)
        new_shape = torch.Size((*shape[:first], math.prod(shape[first : last + 1]), *shape[last + 1 :]))
        return leaf.reshape(new_shape)

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            in_key, out_key = unravel(in_key), unravel(out_key)
            if in_key not in action_spec.keys(True, True):
                continue
            leaf = action_spec[in_key]
            self._shapes[in_key] = self._span(leaf)
            flat = self._flatten_leaf(leaf)
            if in_key != out_key:
                del action_spec[in_key]
            action_spec[out_key] = flat
        return action_spec

    def clone(self) -> FlattenAction:
        out = super().clone()
        out._shapes = dict(self._shapes)
        return out

    def __repr__(self) -> str:
        return (
            f"FlattenAction(first_dim={self._first_dim}, last_dim={self._last_dim}, "
            f"in_keys_inv={self.in_keys_inv}, out_keys_inv={self.out_keys_inv})"
        )
