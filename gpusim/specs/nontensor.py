"""The :class:`NonTensor` spec: non-tensor data (strings, objects) carried as ``NonTensorData``."""

from __future__ import annotations

from typing import Any

import torch

from gpusim.specs._common import reject_kwargs
from gpusim.specs.base import DEVICE_TYPING, TensorSpec

__all__ = ["NonTensor"]


class NonTensor(TensorSpec):
    """Non-tensor data (strings, objects), carried as ``tensordict.NonTensorData``.

    Args:
        shape: batch size of the non-tensor data (default ``(1,)``, as in TorchRL).
        device: device of the data containers (default cpu).
        dtype: unused, kept for API compatibility (None).
        example_data: the value ``rand``/``zero``/``one`` carry.
        batched: if True, every element of ``shape`` is its own ``NonTensorData`` (stacked);
            exclusive with ``feature_dims``.
        feature_dims: how many trailing dims one ``NonTensorData`` covers (default: all of
            them); the leading dims are stacked as a ``NonTensorStack``.

    Examples:
        >>> spec = NonTensor(shape=(2,), example_data="hello")
        >>> data = spec.rand()
        >>> data.batch_size, spec.is_in(data)
        (torch.Size([2]), True)
        >>> type(NonTensor(shape=(2, 3), example_data="x", feature_dims=1).zero()).__name__
        'NonTensorStack'
    """

    def __init__(
        self,
        shape: Any = (1,),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = None,
        example_data: Any = None,
        batched: bool | None = None,
        feature_dims: int | None = None,
        **kwargs: Any,
    ) -> None:
        reject_kwargs("NonTensor", kwargs)
        self._init_common(shape, device, dtype, None)
        self.example_data = example_data
        if batched is not None and feature_dims is not None:
            raise ValueError("NonTensor: cannot specify both batched and feature_dims")
        if feature_dims is None:
            feature_dims = 0 if batched else self.ndim
        if not 0 <= int(feature_dims) <= self.ndim:
            raise ValueError(f"NonTensor: feature_dims must be in [0, {self.ndim}], got {feature_dims}")
        self.batched = bool(batched)
        self.feature_dims = int(feature_dims)

    @property
    def _eq_class(self) -> type:
        return NonTensor

    @property
    def space(self) -> None:
        """Non-tensor specs have no space: always None.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.space is None
            True
        """
        return None

    def _make(self, full_shape: torch.Size) -> Any:
        from tensordict import NonTensorData, lazy_stack
        from tensordict.utils import set_capture_non_tensor_stack

        split = len(full_shape) - min(self.feature_dims, len(full_shape))
        batch, feature = full_shape[:split], full_shape[split:]
        with set_capture_non_tensor_stack(False):
            val = NonTensorData(data=self.example_data, batch_size=feature, device=self.device)
            for size in reversed(batch):
                val = lazy_stack([val.copy() for _ in range(size)])
        return val

    def _rand(self, full_shape: torch.Size) -> Any:
        return self._make(full_shape)

    def zero(self, shape: Any = None) -> Any:
        """Non-tensor data carrying ``example_data`` with batch size ``(*shape, *self.shape)``.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.zero()
            NonTensorData(data=hi, batch_size=torch.Size([2]), device=cpu)
        """
        return self._make(self._full_shape(shape))

    def one(self, shape: Any = None) -> Any:
        """Same as :meth:`zero`.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> data = spec.one((3,))
            >>> data.batch_size, data.data
            (torch.Size([3, 2]), 'hi')
        """
        return self._make(self._full_shape(shape))

    def invalid_reason(self, val: Any) -> str | None:
        """Why ``val`` is not non-tensor data of the right batch size (None when it is).

        Any data is valid: only the type and the batch size are checked.

        Examples:
            >>> from tensordict import NonTensorData
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.invalid_reason(NonTensorData("other", batch_size=(2,))) is None
            True
            >>> spec.invalid_reason(NonTensorData("other", batch_size=(3,)))
            'batch size (3,) does not end with spec shape (2,)'
            >>> spec.invalid_reason(torch.zeros(2))
            'expected NonTensorData or NonTensorStack, got Tensor'
        """
        from tensordict import NonTensorData, NonTensorStack

        if not isinstance(val, (NonTensorData, NonTensorStack)):
            return f"expected NonTensorData or NonTensorStack, got {type(val).__name__}"
        if not self._shape_matches(val.batch_size):
            return f"batch size {tuple(val.batch_size)} does not end with spec shape {tuple(self.shape)}"
        return None

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        return None

    def _project(self, val: Any) -> Any:
        raise NotImplementedError("Cannot project a NonTensor spec")

    def project(self, val: Any) -> Any:
        """Returns ``val`` unchanged (any non-tensor value is valid).

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.project("anything")
            'anything'
        """
        return val

    def cardinality(self) -> int:
        """Non-tensor data cannot be enumerated.

        Raises:
            NotImplementedError: always.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.cardinality()
            Traceback (most recent call last):
            ...
            NotImplementedError: Cannot enumerate a NonTensor spec.
        """
        raise NotImplementedError("Cannot enumerate a NonTensor spec.")

    def enumerate(self, use_mask: bool = False) -> Any:
        """Non-tensor data cannot be enumerated.

        Raises:
            NotImplementedError: always.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.enumerate()
            Traceback (most recent call last):
            ...
            NotImplementedError: Cannot enumerate a NonTensor spec.
        """
        raise NotImplementedError("Cannot enumerate a NonTensor spec.")

    def encode(self, val: Any, *, ignore_device: bool = False) -> Any:
        """Wraps ``val`` into ``NonTensorData`` of batch size ``shape`` (kept as is if already).

        Args:
            val: the value to wrap.
            ignore_device: if True, the result has no device.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> data = spec.encode("hello")
            >>> type(data).__name__, data.batch_size, data.data
            ('NonTensorData', torch.Size([2]), 'hello')
        """
        from tensordict import NonTensorData, NonTensorStack, lazy_stack

        if isinstance(val, (NonTensorData, NonTensorStack)):
            return val
        shape = self._safe_shape
        split = len(shape) - min(self.feature_dims, len(shape))
        device = None if ignore_device else self.device
        out = NonTensorData(val, batch_size=shape[split:], device=device)
        for size in reversed(shape[:split]):
            out = lazy_stack([out.copy() for _ in range(size)])
        return out

    def to_numpy(self, val: Any, safe: bool | None = None) -> Any:
        """Returns the wrapped data (``val`` itself when it wraps nothing).

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.to_numpy(spec.encode("hello"))
            'hello'
        """
        return getattr(val, "data", val)

    def type_check(self, value: Any, key: Any = None) -> None:
        """Non-tensor values are not type checked: never raises.

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.type_check(spec.zero())
        """

    def to(self, dest: DEVICE_TYPING | torch.dtype | None) -> TensorSpec:
        """Returns the spec on another device (a dtype is ignored: self).

        Examples:
            >>> spec = NonTensor(shape=(2,), example_data="hi")
            >>> spec.to(torch.float64) is spec, spec.to("cpu") is spec
            (True, True)
        """
        if dest is None or isinstance(dest, torch.dtype):
            return self
        return super().to(dest)

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other) and self.example_data == getattr(other, "example_data", None)

    __hash__ = None  # type: ignore[assignment]

    def _short(self) -> str:
        return f"example_data={self.example_data!r}, " + super()._short()

    def _repr_fields(self) -> list[str]:
        return [*super()._repr_fields(), f"example_data={self.example_data}"]
