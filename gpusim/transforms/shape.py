"""Shape transforms on feature dims: ``UnsqueezeTransform``, ``SqueezeTransform``,
``FlattenObservation``, ``PermuteTransform``.

Dims are negative (counted from the end, so the same transform works for any batch size)
unless ``allow_positive_dim=True``, in which case ``0`` is the first dim after the env's batch
dims in an env, and the first dim of the tensor outside one (TorchRL's behaviour). A dim op that would reach into the batch dims is rejected when the transform is attached.
Specs are reshaped the same way (``Bounded`` bounds included; ``Categorical``/``Binary`` values
are kept).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.shape import FlattenObservation, PermuteTransform, UnsqueezeTransform
    >>> td = TensorDict({"pixels": torch.zeros(5, 3, 8, 9)}, [5])
    >>> PermuteTransform([-2, -1, -3], in_keys=["pixels"])(td.clone())["pixels"].shape
    torch.Size([5, 8, 9, 3])
    >>> FlattenObservation(-3, -1)(td.clone())["pixels"].shape
    torch.Size([5, 216])
    >>> UnsqueezeTransform(-1, in_keys=["pixels"])(td.clone())["pixels"].shape
    torch.Size([5, 3, 8, 9, 1])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey
from gpusim.specs import Composite, TensorSpec
from gpusim.transforms._keyed import KeyedTransform
from gpusim.transforms._spec_utils import fmt_key

__all__ = ["UnsqueezeTransform", "SqueezeTransform", "FlattenObservation", "PermuteTransform"]


def _check_dim(dim, name: str, owner: str, allow_positive: bool) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ValueError(f"{owner}: {name} must be an int, got {dim!r}")
    if dim >= 0 and not allow_positive:
        raise ValueError(
            f"{owner}: {name} must be negative (feature dims counted from the end), got {dim}; pass "
            "allow_positive_dim=True to count from the first dim after the batch dims"
        )
    return dim


class _DimTransform(KeyedTransform):
    """Keyed transform whose tensor op depends on the number of batch dims of the data."""

    _spec_values_change = False

    def __init__(self, in_keys=None, out_keys=None, in_keys_inv=None, out_keys_inv=None) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self._spec_batch_dims = 0

    def _forward(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        raise NotImplementedError

    def _inverse(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._forward(obs, self._spec_batch_dims)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return self._inverse(state, self._spec_batch_dims)

    def _batch_dims(self, tensordict: TensorDictBase) -> int:
        """Where positive dims start: after the env's batch dims in an env, after the data's own
        batch dims of env-shaped data; data outside an env counts them from dim 0 (TorchRL)."""
        if self.container is not None:
            return tensordict.batch_dims
        return 0

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        bd = self._batch_dims(next_tensordict)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is not None:
                next_tensordict.set(out_key, self._forward(value, bd))
            elif not self.missing_tolerance:
                raise self._missing(in_key, next_tensordict)
        return next_tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        bd = self._batch_dims(tensordict)
        for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(outer, None)
            if value is not None:
                tensordict.set(inner, self._inverse(value, bd))
            elif inner == outer and not self.missing_tolerance:
                raise self._missing(outer, tensordict)
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        self._spec_batch_dims = len(output_spec.shape)
        return super().transform_output_spec(output_spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        self._spec_batch_dims = len(input_spec.shape)
        return super().transform_input_spec(input_spec)


class UnsqueezeTransform(_DimTransform):
    """Inserts a dimension of size one at ``dim``.

    The inverse (``in_keys_inv``) squeezes that dim out of the input before the base env steps.

    Args:
        dim: where to insert the dim (negative; see the module docstring for positive dims).

    Keyword Args:
        allow_positive_dim: accept ``dim >= 0`` (counted from the first feature dim).
        in_keys: entries to unsqueeze.
        out_keys: where to write them (default ``in_keys``).
        in_keys_inv: inner names of input entries to squeeze before the base env steps.
        out_keys_inv: their outer names (default ``in_keys_inv``).

    Raises:
        ValueError: a missing or non-negative ``dim`` (without ``allow_positive_dim``); (when
            attached) a dim that falls into the batch dims.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = UnsqueezeTransform(-2, in_keys=["obs"])
        >>> t(TensorDict({"obs": torch.zeros(4, 3)}, [4]))["obs"].shape
        torch.Size([4, 1, 3])
    """

    def __init__(
        self,
        dim: int | None = None,
        *,
        allow_positive_dim: bool = False,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self.dim = _check_dim(dim, "dim", type(self).__name__, allow_positive_dim)
        self.allow_positive_dim = allow_positive_dim

    def _abs(self, batch_dims: int) -> int:
        return self.dim if self.dim < 0 else self.dim + batch_dims

    def _forward(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return x.unsqueeze(self._abs(batch_dims))

    def _inverse(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return x.squeeze(self._abs(batch_dims))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, in_keys={self.in_keys}, in_keys_inv={self.in_keys_inv})"


class SqueezeTransform(UnsqueezeTransform):
    """Removes a dimension of size one at ``dim`` (the inverse unsqueezes it back).

    Same arguments as :class:`UnsqueezeTransform`.

    Raises:
        ValueError: as :class:`UnsqueezeTransform`; (when attached) an entry whose size at
            ``dim`` is not 1.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = SqueezeTransform(-1, in_keys=["obs"])
        >>> t(TensorDict({"obs": torch.zeros(4, 3, 1)}, [4]))["obs"].shape
        torch.Size([4, 3])
    """

    def _forward(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return x.squeeze(self._abs(batch_dims))

    def _inverse(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return x.unsqueeze(self._abs(batch_dims))

    def _check_size_one(self, spec: TensorSpec, key: NestedKey) -> None:
        d = self._abs(self._spec_batch_dims)
        if not -spec.ndim <= d < spec.ndim or spec.shape[d] != 1:
            raise ValueError(
                f"SqueezeTransform: dim {self.dim} of {fmt_key(key)} (shape {list(spec.shape)}) is not a dim of size 1"
            )

    def _transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        self._check_size_one(spec, key)
        return super()._transform_leaf_spec(spec, key)

    def _inv_transform_leaf_spec(self, spec: TensorSpec, key: NestedKey) -> TensorSpec:
        self._check_size_one(spec, key)
        return super()._inv_transform_leaf_spec(spec, key)


class FlattenObservation(_DimTransform):
    """Flattens the adjacent dims ``first_dim..last_dim`` of a tensor.

    Args:
        first_dim: first dim to flatten.
        last_dim: last dim to flatten.
        in_keys: entries to flatten (default ``["pixels"]``).
        out_keys: where to write them (default ``in_keys``).
        allow_positive_dim: accept non-negative dims (counted from the first feature dim).

    Raises:
        ValueError: non-negative dims (without ``allow_positive_dim``) or ``first_dim > last_dim``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FlattenObservation(-2, -1, in_keys=["obs"])
        >>> t(TensorDict({"obs": torch.zeros(4, 3, 2)}, [4]))["obs"].shape
        torch.Size([4, 6])
    """

    def __init__(
        self,
        first_dim: int,
        last_dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        allow_positive_dim: bool = False,
    ) -> None:
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys, out_keys=out_keys)
        owner = type(self).__name__
        self.first_dim = _check_dim(first_dim, "first_dim", owner, allow_positive_dim)
        self.last_dim = _check_dim(last_dim, "last_dim", owner, allow_positive_dim)
        if (first_dim < 0) == (last_dim < 0) and first_dim > last_dim:
            raise ValueError(f"{owner}: first_dim must be <= last_dim, got first_dim={first_dim}, last_dim={last_dim}")
        self.allow_positive_dim = allow_positive_dim

    def _forward(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        first = self.first_dim if self.first_dim < 0 else self.first_dim + batch_dims
        last = self.last_dim if self.last_dim < 0 else self.last_dim + batch_dims
        return x.flatten(first, last)

    def __repr__(self) -> str:
        return f"FlattenObservation(first_dim={self.first_dim}, last_dim={self.last_dim}, in_keys={self.in_keys})"


class PermuteTransform(_DimTransform):
    """Permutes the last ``len(dims)`` dims of tensors.

    Args:
        dims: the new order of the trailing dims, a reordering of ``[-len(dims), ..., -1]``
            (e.g. ``[-1, -3, -2]`` turns ``(H, W, C)`` into ``(C, H, W)``).
        in_keys: entries to permute.
        out_keys: where to write them (default ``in_keys``).
        in_keys_inv: inner names of input entries; the outer ones are permuted back (inverse
            permutation) before the base env steps.
        out_keys_inv: their outer names (default ``in_keys_inv``).

    Raises:
        ValueError: ``dims`` that are not a reordering of ``[-len(dims), ..., -1]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = PermuteTransform([-1, -3, -2], in_keys=["pixels"])
        >>> t(TensorDict({"pixels": torch.zeros(2, 8, 9, 3)}, [2]))["pixels"].shape
        torch.Size([2, 3, 8, 9])
    """

    def __init__(
        self,
        dims: Sequence[int],
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        dims = list(dims)
        n = len(dims)
        if n == 0 or sorted(dims) != list(range(-n, 0)) or any(isinstance(d, bool) for d in dims):
            raise ValueError(
                f"PermuteTransform: dims must be a reordering of {list(range(-n, 0)) or [-1]}, got {dims}. "
                "Only tailing dims with negative indices can be permuted."
            )
        self.dims = dims
        rel = [d + n for d in dims]
        inverse = sorted(range(n), key=lambda i: rel[i])
        self._inv_dims = [i - n for i in inverse]

    @staticmethod
    def _permute(x: torch.Tensor, dims: list) -> torch.Tensor:
        nd = x.ndim
        return x.permute(*range(nd - len(dims)), *[nd + d for d in dims])

    def _forward(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return self._permute(x, self.dims)

    def _inverse(self, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return self._permute(x, self._inv_dims)

    def _spec_fn(self, key: NestedKey) -> Callable[[torch.Tensor], torch.Tensor]:
        return lambda x: self._permute(x, self.dims)

    def __repr__(self) -> str:
        return f"PermuteTransform(dims={self.dims}, in_keys={self.in_keys}, in_keys_inv={self.in_keys_inv})"
