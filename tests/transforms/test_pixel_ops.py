"""The pure-torch image ops behind the pixel transforms, against naive references."""

from __future__ import annotations

import pytest
import torch

from gpusim.transforms._pixel_ops import (
    center_crop,
    grayscale,
    make_grid,
    resize,
    to_tensor_image,
)

BATCHES = [(), (1,), (7,), (3, 4)]


def _images(batch, c=3, h=9, w=12, dtype=torch.uint8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (*batch, c, h, w), generator=g).to(dtype)


@pytest.mark.parametrize("batch", BATCHES)
def test_to_tensor_image_permutes_and_scales(batch):
    img = torch.randint(0, 256, (*batch, 5, 6, 3), dtype=torch.uint8)
    out = to_tensor_image(img)
    assert out.shape == (*batch, 3, 5, 6) and out.dtype == torch.float32
    torch.testing.assert_close(out, img.permute(*range(len(batch)), -1, -3, -2).float() / 255)
    # float input is not scaled unless asked
    f = img.double()
    assert torch.equal(to_tensor_image(f, dtype=torch.float64), f.movedim(-1, -3))
    assert torch.equal(to_tensor_image(f, from_int=True, dtype=torch.float64), f.movedim(-1, -3) / 255)


def test_to_tensor_image_unsqueeze_only_for_single_images():
    assert to_tensor_image(torch.zeros(4, 5, 3), unsqueeze=True).shape == (1, 3, 4, 5)
    assert to_tensor_image(torch.zeros(2, 4, 5, 3), unsqueeze=True).shape == (2, 3, 4, 5)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_grayscale_matches_luma(batch, dtype):
    img = _images(batch, dtype=dtype)
    out = grayscale(img)
    assert out.shape == (*batch, 1, 9, 12) and out.dtype == dtype
    f = img.float()
    ref = (0.2989 * f[..., 0, :, :] + 0.587 * f[..., 1, :, :] + 0.114 * f[..., 2, :, :]).unsqueeze(-3)
    torch.testing.assert_close(out, ref.to(dtype))


def test_grayscale_rejects_bad_channels():
    with pytest.raises(ValueError, match="got 4"):
        grayscale(torch.zeros(4, 2, 2))
    one = torch.rand(1, 2, 2)
    assert torch.equal(grayscale(one), one)


def _nearest_ref(img, w, h):
    H, W = img.shape[-2:]
    rows = torch.tensor([int(i * H / w) for i in range(w)])
    cols = torch.tensor([int(j * W / h) for j in range(h)])
    return img[..., rows, :][..., cols]


@pytest.mark.parametrize("batch", BATCHES)
def test_resize_nearest_matches_index_reference(batch):
    img = _images(batch)
    out = resize(img, 5, 17, "nearest")
    assert out.shape == (*batch, 3, 5, 17) and out.dtype == torch.uint8
    assert torch.equal(out, _nearest_ref(img, 5, 17))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "area", "nearest-exact"])
def test_resize_is_per_image(mode):
    """Batched resize equals resizing every image alone, and integer outputs stay in range."""
    img = _images((3, 4), dtype=torch.float32)
    out = resize(img, 6, 7, mode)
    for i in range(3):
        for j in range(4):
            torch.testing.assert_close(out[i, j], resize(img[i, j], 6, 7, mode))
    u8 = resize(_images((2,)), 20, 25, mode)
    assert u8.dtype == torch.uint8 and u8.shape == (2, 3, 20, 25)


def test_resize_bilinear_constant_image_is_constant():
    img = torch.full((2, 3, 8, 8), 0.25)
    torch.testing.assert_close(resize(img, 3, 11), torch.full((2, 3, 3, 11), 0.25))


def test_resize_rejects_unknown_mode():
    with pytest.raises(ValueError, match="'lanczos'"):
        resize(torch.zeros(1, 2, 2), 1, 1, "lanczos")


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("size", [(4, 6), (9, 12), (5, 5), (1, 12)])
def test_center_crop_slices_the_center(batch, size):
    img = _images(batch)
    w, h = size
    top, left = int(round((9 - w) / 2)), int(round((12 - h) / 2))
    out = center_crop(img, w, h)
    assert out.shape == (*batch, 3, w, h)
    assert torch.equal(out, img[..., top : top + w, left : left + h])


def test_center_crop_larger_than_image_pads_with_zeros():
    img = torch.ones(1, 2, 2)
    out = center_crop(img, 4, 4)
    assert out.shape == (1, 4, 4)
    assert out.sum() == 4 and torch.equal(out[0, 1:3, 1:3], torch.ones(2, 2))


@pytest.mark.parametrize("n,nrow", [(1, 8), (3, 2), (8, 8), (10, 4)])
def test_make_grid_layout(n, nrow):
    imgs = torch.arange(1, n + 1, dtype=torch.float32).reshape(n, 1, 1, 1).expand(n, 2, 3, 4)
    grid = make_grid(imgs, nrow=nrow, padding=2, pad_value=-1.0)
    cols = min(n, nrow)
    rows = -(-n // cols)
    assert grid.shape == (2, rows * 5 + 2, cols * 6 + 2)
    for k in range(n):
        r, c = divmod(k, cols)
        cell = grid[:, 2 + r * 5 : 2 + r * 5 + 3, 2 + c * 6 : 2 + c * 6 + 4]
        assert torch.equal(cell, imgs[k])
    # everything that is not a cell is padding
    assert (grid == -1).sum() == grid.numel() - n * 2 * 12
