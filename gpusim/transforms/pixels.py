"""Pixel transforms: ``ToTensorImage``, ``GrayScale``, ``Resize``, ``CenterCrop``.

Batched image ops in pure torch (no PIL, no torchvision), on the env device, for images with
any number of leading batch dims. They follow TorchRL's conventions: ``ToTensorImage`` turns
``(..., H, W, C)`` integer images into ``(..., C, H, W)`` floats in ``[0, 1]``; the others take
``(..., C, H, W)``; a size ``(w, h)`` applies to dims ``(-2, -1)``. Specs follow the same ops:
the bounds of a ``Bounded`` pixel spec are transformed like the images.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms import Compose
    >>> from gpusim.transforms.pixels import CenterCrop, GrayScale, Resize, ToTensorImage
    >>> t = Compose(ToTensorImage(), Resize(32, 40), GrayScale(), CenterCrop(16))
    >>> img = torch.randint(0, 256, (8, 64, 64, 3), dtype=torch.uint8)
    >>> t(TensorDict({"pixels": img}, [8]))["pixels"].shape
    torch.Size([8, 1, 16, 16])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpusim.envs._keys import NestedKey
from gpusim.transforms._keyed import KeyedTransform
from gpusim.transforms._pixel_ops import (
    INTERPOLATION_MODES,
    center_crop,
    grayscale,
    resize,
    to_tensor_image,
)

__all__ = ["ToTensorImage", "GrayScale", "Resize", "CenterCrop"]


def _check_size(value, name: str, owner: str, optional: bool = False) -> int | None:
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
    return value


class _PixelTransform(KeyedTransform):
    """Forward-only image transform on ``["pixels"]`` by default."""

    def __init__(self, in_keys=None, out_keys=None) -> None:
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys, out_keys=out_keys)


class ToTensorImage(_PixelTransform):
    """Transforms numpy-like images ``(..., H, W, C)`` into torch images ``(..., C, H, W)``.

    Args:
        from_int: divide by 255 (``None``: when the images are not floating point).
        unsqueeze: add a leading dim of size 1 to single images (exactly 3 dims).
        dtype: output dtype (default ``torch.get_default_dtype()``).

    Keyword Args:
        in_keys: the image entries (default ``["pixels"]``).
        out_keys: where to write them (default ``in_keys``).
        shape_tolerant: leave the layout as it is when the last dim is not 3 (only scale and
            cast).

    Raises:
        TypeError: a ``dtype`` that is not a floating torch dtype.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"pixels": torch.full((1, 1, 10, 11, 3), 255, dtype=torch.uint8)}, [1, 1])
        >>> out = ToTensorImage()(td)["pixels"]
        >>> out.shape, out.dtype, out.max().item()
        (torch.Size([1, 1, 3, 10, 11]), torch.float32, 1.0)
    """

    def __init__(
        self,
        from_int: bool | None = None,
        unsqueeze: bool = False,
        dtype: torch.dtype | None = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        shape_tolerant: bool = False,
    ) -> None:
        if dtype is not None and (not isinstance(dtype, torch.dtype) or not dtype.is_floating_point):
            raise TypeError(f"ToTensorImage: dtype must be a floating torch.dtype, got {dtype!r}")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.from_int = from_int
        self.unsqueeze = unsqueeze
        self.dtype = torch.get_default_dtype() if dtype is None else dtype
        self.shape_tolerant = shape_tolerant

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        permute = not (self.shape_tolerant and (obs.ndim == 0 or obs.shape[-1] != 3))
        return to_tensor_image(obs, self.from_int, self.dtype, self.unsqueeze, permute=permute)

    def __repr__(self) -> str:
        return f"ToTensorImage(in_keys={self.in_keys}, from_int={self.from_int}, dtype={self.dtype})"


class GrayScale(_PixelTransform):
    """Turns ``(..., 3, H, W)`` pixel observations into grayscale ``(..., 1, H, W)``.

    Uses the ITU-R 601-2 luma weights; integer images stay integer (truncated).

    Args:
        in_keys: the image entries (default ``["pixels"]``).
        out_keys: where to write them (default ``in_keys``).

    Raises:
        ValueError: (when attached) an entry whose dim ``-3`` is not 1 or 3 channels.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> GrayScale()(TensorDict({"pixels": torch.rand(4, 3, 8, 8)}, [4]))["pixels"].shape
        torch.Size([4, 1, 8, 8])
    """

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return grayscale(obs)


class Resize(_PixelTransform):
    """Resizes ``(..., C, H, W)`` pixel observations to ``(..., C, w, h)``.

    Integer images are interpolated in float32, rounded and cast back. With ``"bicubic"``
    (which can overshoot the input range) the output spec has no bounds (floats) or the dtype's
    range (integers); the other modes keep the input bounds.

    Args:
        w: size of dim ``-2`` after resizing.
        h: size of dim ``-1`` after resizing (default ``w``).
        interpolation: ``"nearest"``, ``"nearest-exact"``, ``"bilinear"`` (default),
            ``"bicubic"`` or ``"area"``.
        in_keys: the image entries (default ``["pixels"]``).
        out_keys: where to write them (default ``in_keys``).

    Raises:
        ValueError: a non-positive size or an unknown interpolation (naming the value).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> Resize(64, 84)(TensorDict({"pixels": torch.rand(2, 3, 100, 100)}, [2]))["pixels"].shape
        torch.Size([2, 3, 64, 84])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        interpolation: str = "bilinear",
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        self.w = _check_size(w, "w", "Resize")
        self.h = self.w if h is None else _check_size(h, "h", "Resize")
        if interpolation not in INTERPOLATION_MODES:
            raise ValueError(f"Resize: interpolation must be one of {INTERPOLATION_MODES}, got {interpolation!r}")
        self.interpolation = interpolation
        super().__init__(in_keys=in_keys, out_keys=out_keys)

    @property
    def _spec_bounds(self) -> str:  # type: ignore[override]
        return "unbounded" if self.interpolation == "bicubic" else "map"

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return resize(obs, self.w, self.h, self.interpolation)

    def __repr__(self) -> str:
        return f"Resize(w={self.w}, h={self.h}, interpolation={self.interpolation!r}, in_keys={self.in_keys})"


class CenterCrop(_PixelTransform):
    """Crops the center ``(w, h)`` of ``(..., C, H, W)`` images (zero-padded when larger).

    Args:
        w: size of dim ``-2`` after cropping.
        h: size of dim ``-1`` after cropping (default ``w``: a square crop).
        in_keys: the image entries (default ``["pixels"]``).
        out_keys: where to write them (default ``in_keys``).

    Raises:
        ValueError: a non-positive size (naming the value).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> CenterCrop(4, 6)(TensorDict({"pixels": torch.rand(2, 3, 10, 10)}, [2]))["pixels"].shape
        torch.Size([2, 3, 4, 6])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        self.w = _check_size(w, "w", "CenterCrop")
        self.h = self.w if h is None else _check_size(h, "h", "CenterCrop")
        super().__init__(in_keys=in_keys, out_keys=out_keys)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return center_crop(obs, self.w, self.h)

    def __repr__(self) -> str:
        return f"CenterCrop(w={self.w}, h={self.h}, in_keys={self.in_keys})"
