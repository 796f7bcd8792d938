"""Batched image operations in pure torch (no PIL, no torchvision).

Every function takes images whose last three dims are ``(C, H, W)`` (``(H, W, C)`` for
:func:`to_tensor_image`) and any number of leading batch dims; they run on the tensor's device
and never read tensor values on the host.

Like TorchRL's pixel transforms, a requested size ``(w, h)`` is applied to the dims ``(-2, -1)``:
``w`` is the size of dim ``-2`` and ``h`` the size of dim ``-1``.

Examples:
    >>> import torch
    >>> from gpusim.transforms._pixel_ops import center_crop, grayscale, resize, to_tensor_image
    >>> img = torch.randint(0, 256, (5, 2, 16, 20, 3), dtype=torch.uint8)  # (*B, H, W, C)
    >>> x = to_tensor_image(img)  # (*B, C, H, W), float in [0, 1]
    >>> x.shape, x.dtype
    (torch.Size([5, 2, 3, 16, 20]), torch.float32)
    >>> resize(x, 8, 10).shape
    torch.Size([5, 2, 3, 8, 10])
    >>> grayscale(x).shape
    torch.Size([5, 2, 1, 16, 20])
    >>> center_crop(x, 4, 6).shape
    torch.Size([5, 2, 3, 4, 6])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = [
    "INTERPOLATION_MODES",
    "GRAYSCALE_WEIGHTS",
    "to_tensor_image",
    "grayscale",
    "resize",
    "center_crop",
    "center_crop_offsets",
    "make_grid",
]

#: interpolation names accepted by :func:`resize` (``torch.nn.functional.interpolate`` modes)
INTERPOLATION_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic", "area")

#: ITU-R 601-2 luma weights (the ones torchvision's ``rgb_to_grayscale`` uses)
GRAYSCALE_WEIGHTS = (0.2989, 0.587, 0.114)


def _flat_images(images: torch.Tensor, what: str) -> tuple[torch.Tensor, torch.Size]:
    """Views ``(*B, C, H, W)`` as ``(prod(B), C, H, W)``; returns it and ``B``."""
    if images.ndim < 3:
        raise ValueError(f"{what} expects images with at least 3 dims (C, H, W), got shape {list(images.shape)}")
    lead = images.shape[:-3]
    return images.reshape(-1, *images.shape[-3:]), lead


def to_tensor_image(
    images: torch.Tensor,
    from_int: bool | None = None,
    dtype: torch.dtype | None = None,
    unsqueeze: bool = False,
    permute: bool = True,
) -> torch.Tensor:
    """Turns ``(..., H, W, C)`` images into ``(..., C, H, W)`` floating images.

    Args:
        images: the images, channels last.
        from_int: divide by 255 (``None``: when ``images`` is not floating point).
        dtype: output dtype (default ``torch.get_default_dtype()``).
        unsqueeze: add a leading dim of size 1 when the image has exactly 3 dims.
        permute: move the channel dim (``False`` keeps the layout; used for shape tolerance).

    Examples:
        >>> to_tensor_image(torch.full((2, 2, 3), 255, dtype=torch.uint8))[:, 0, 0]
        tensor([1., 1., 1.])
    """
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if from_int is None:
        from_int = not images.is_floating_point()
    out = images.to(dtype)
    if from_int:
        out = out / 255
    if permute:
        out = out.movedim(-1, -3)
    if unsqueeze and out.ndim == 3:
        out = out.unsqueeze(0)
    return out


def grayscale(images: torch.Tensor) -> torch.Tensor:
    """Luma of RGB images ``(..., 3, H, W)`` as ``(..., 1, H, W)`` (same dtype).

    Single-channel images are returned as a copy. Integer images are truncated back to their
    dtype after the float computation (as torchvision does).

    Examples:
        >>> grayscale(torch.ones(3, 2, 2))[0]
        tensor([[0.9999, 0.9999],
                [0.9999, 0.9999]])
    """
    if images.ndim < 3:
        raise ValueError(f"grayscale expects (..., C, H, W) images, got shape {list(images.shape)}")
    channels = images.shape[-3]
    if channels == 1:
        return images.clone()
    if channels != 3:
        raise ValueError(f"grayscale expects 1 or 3 channels in dim -3, got {channels} (shape {list(images.shape)})")
    work = images if images.is_floating_point() else images.to(torch.float32)
    r, g, b = work.unbind(-3)
    wr, wg, wb = GRAYSCALE_WEIGHTS
    gray = (wr * r + wg * g + wb * b).unsqueeze(-3)
    return gray.to(images.dtype)


def resize(images: torch.Tensor, w: int, h: int, interpolation: str = "bilinear") -> torch.Tensor:
    """Resizes ``(..., C, H, W)`` images to ``(..., C, w, h)``.

    Floating images keep their dtype. Integer images are computed in float32, rounded, clamped
    to the dtype's range and cast back.

    Args:
        images: the images.
        w: size of dim ``-2`` after resizing.
        h: size of dim ``-1`` after resizing.
        interpolation: one of :data:`INTERPOLATION_MODES`.

    Examples:
        >>> resize(torch.arange(4.0).reshape(1, 2, 2), 4, 4, "nearest")[0]
        tensor([[0., 0., 1., 1.],
                [0., 0., 1., 1.],
                [2., 2., 3., 3.],
                [2., 2., 3., 3.]])
    """
    if interpolation not in INTERPOLATION_MODES:
        raise ValueError(f"interpolation must be one of {INTERPOLATION_MODES}, got {interpolation!r}")
    flat, lead = _flat_images(images, "resize")
    if tuple(flat.shape[-2:]) == (w, h):
        return images.clone()
    work = flat if flat.is_floating_point() else flat.to(torch.float32)
    kwargs = {"align_corners": False} if interpolation in ("bilinear", "bicubic") else {}
    if flat.shape[0] == 0:
        out = work.new_empty((0, flat.shape[1], w, h))
    else:
        out = F.interpolate(work, size=(w, h), mode=interpolation, **kwargs)
    if not images.is_floating_point():
        info = torch.iinfo(images.dtype) if images.dtype != torch.bool else None
        if info is None:
            out = out.round().clamp(0, 1)
        else:
            out = out.round().clamp(info.min, info.max)
        out = out.to(images.dtype)
    return out.reshape(*lead, *out.shape[-3:])


def center_crop_offsets(height: int, width: int, w: int, h: int) -> tuple[int, int]:
    """Top/left offsets of a centered ``(w, h)`` crop of an ``(height, width)`` image.

    Negative offsets mean padding (crop larger than the image). The rounding is torchvision's.

    Examples:
        >>> center_crop_offsets(10, 10, 4, 5)
        (3, 2)
    """
    top = int(round((height - w) / 2.0))
    left = int(round((width - h) / 2.0))
    return top, left


def center_crop(images: torch.Tensor, w: int, h: int) -> torch.Tensor:
    """Crops the center ``(w, h)`` of ``(..., C, H, W)`` images (zero padding when larger).

    Examples:
        >>> center_crop(torch.arange(16.0).reshape(1, 4, 4), 2, 2)[0]
        tensor([[ 5.,  6.],
                [ 9., 10.]])
    """
    if images.ndim < 2:
        raise ValueError(f"center_crop expects (..., H, W) images, got shape {list(images.shape)}")
    height, width = images.shape[-2:]
    top, left = center_crop_offsets(height, width, w, h)
    if top < 0 or left < 0 or top + w > height or left + h > width:
        pad_top, pad_left = max(-top, 0), max(-left, 0)
        pad_bottom = max(top + w - height, 0)
        pad_right = max(left + h - width, 0)
        images = F.pad(images, (pad_left, pad_right, pad_top, pad_bottom))
        top, left = top + pad_top, left + pad_left
    return images[..., top : top + w, left : left + h].clone()


def make_grid(images: torch.Tensor, nrow: int = 8, padding: int = 2, pad_value: float = 0) -> torch.Tensor:
    """Tiles ``(N, C, H, W)`` images into one ``(C, H', W')`` image, ``nrow`` images per row.

    Each cell is ``padding`` pixels apart and the border is padded too (torchvision's layout).

    Examples:
        >>> make_grid(torch.ones(3, 1, 2, 2), nrow=2, padding=1).shape
        torch.Size([1, 7, 7])
    """
    if images.ndim != 4:
        raise ValueError(f"make_grid expects (N, C, H, W) images, got shape {list(images.shape)}")
    if nrow < 1 or padding < 0:
        raise ValueError(f"make_grid needs nrow >= 1 and padding >= 0, got nrow={nrow}, padding={padding}")
    n, c, height, width = images.shape
    if n == 1 and padding == 0:
        return images[0].clone()
    cols = min(nrow, n)
    rows = int(math.ceil(n / cols)) if n else 0
    cell_h, cell_w = height + padding, width + padding
    grid = images.new_full((c, rows * cell_h + padding, cols * cell_w + padding), pad_value)
    if n == 0:
        return grid
    # pad the image list to rows * cols, then scatter all cells with one reshape
    full = images.new_full((rows * cols, c, height, width), pad_value)
    full[:n] = images
    cells = full.reshape(rows, cols, c, height, width).permute(2, 0, 3, 1, 4)  # C, rows, H, cols, W
    body = grid[:, padding:, padding:].reshape(c, rows, cell_h, cols, cell_w)
    body[:, :, :height, :, :width] = cells
    grid[:, padding:, padding:] = body.reshape(c, rows * cell_h, cols * cell_w)
    return grid
