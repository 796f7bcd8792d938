"""Pixel transforms in a TransformedEnv: data equals the pure ops applied to the raw pixels,
specs follow (shape, dtype, bounds), bad arguments raise."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.specs import Bounded, Unbounded
from gpusim.transforms import (
    CenterCrop,
    Compose,
    GrayScale,
    PermuteTransform,
    RenameTransform,
    Resize,
    ToTensorImage,
    TransformedEnv,
)
from gpusim.transforms._pixel_ops import center_crop, grayscale, resize, to_tensor_image
from tests.transforms._stateless_envs import PixelEnv

BATCHES = [(), (1,), (7,), (3, 4)]
H, W = 6, 8


def _env(batch, *transforms):
    copy = RenameTransform(["pixels"], ["raw"], create_copy=True)
    return TransformedEnv(PixelEnv(batch, H=H, W=W), Compose(copy, *transforms))


def _check(env, op, shape, dtype):
    td = env.rollout(3)
    for data in (td, td["next"]):
        torch.testing.assert_close(data["pixels"], op(data["raw"]))
        assert data["pixels"].shape[-3:] == shape and data["pixels"].dtype == dtype
    spec = env.observation_spec["pixels"]
    assert spec.shape == (*env.batch_size, *shape) and spec.dtype == dtype
    return spec


@pytest.mark.parametrize("batch", BATCHES)
def test_to_tensor_image(batch):
    env = _env(batch, ToTensorImage())
    spec = _check(env, to_tensor_image, (3, H, W), torch.float32)
    assert isinstance(spec, Bounded) and spec.low.eq(0).all() and spec.high.eq(1).all()


@pytest.mark.parametrize("batch", BATCHES)
def test_to_tensor_image_options(batch):
    env = _env(batch, ToTensorImage(from_int=False, dtype=torch.float64))
    spec = _check(env, lambda x: x.movedim(-1, -3).double(), (3, H, W), torch.float64)
    assert spec.high.eq(255).all()


def test_to_tensor_image_shape_tolerant_and_unsqueeze():
    t = ToTensorImage(shape_tolerant=True, in_keys=["x"])
    out = t(TensorDict({"x": torch.full((2, 5, 4), 255, dtype=torch.uint8)}, [2]))["x"]
    assert out.shape == (2, 5, 4) and out.max() == 1
    out = ToTensorImage(unsqueeze=True, in_keys=["x"])(TensorDict({"x": torch.zeros(5, 4, 3, dtype=torch.uint8)}, []))[
        "x"
    ]
    assert out.shape == (1, 3, 5, 4)


@pytest.mark.parametrize("batch", BATCHES)
def test_grayscale(batch):
    env = _env(batch, ToTensorImage(), GrayScale())
    spec = _check(env, lambda x: grayscale(to_tensor_image(x)), (1, H, W), torch.float32)
    assert isinstance(spec, Bounded) and spec.low.eq(0).all() and spec.high.le(1).all()


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "area", "bicubic"])
def test_resize(batch, mode):
    env = _env(batch, ToTensorImage(), Resize(4, 11, mode))
    spec = _check(env, lambda x: resize(to_tensor_image(x), 4, 11, mode), (3, 4, 11), torch.float32)
    if mode == "bicubic":  # may overshoot: no bounds
        assert isinstance(spec, Unbounded)
    else:
        assert isinstance(spec, Bounded) and spec.low.eq(0).all() and spec.high.eq(1).all()


@pytest.mark.parametrize("batch", BATCHES)
def test_resize_uint8_images(batch):
    env = _env(batch, PermuteTransform([-1, -3, -2], in_keys=["pixels"]), Resize(3, 5, "bilinear"))
    spec = _check(env, lambda x: resize(x.movedim(-1, -3), 3, 5, "bilinear"), (3, 3, 5), torch.uint8)
    assert spec.low.eq(0).all() and spec.high.eq(255).all()


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("size", [(4, 4), (6, 3), (10, 12)])
def test_center_crop(batch, size):
    env = _env(batch, ToTensorImage(), CenterCrop(*size))
    spec = _check(env, lambda x: center_crop(to_tensor_image(x), *size), (3, *size), torch.float32)
    assert spec.low.eq(0).all() and spec.high.le(1).all()


def test_square_defaults():
    assert Resize(7).h == 7 and CenterCrop(5).h == 5


def test_pixel_pipeline_matches_composed_ops():
    env = _env((5,), ToTensorImage(), Resize(10, 10), GrayScale(), CenterCrop(4))
    _check(env, lambda x: center_crop(grayscale(resize(to_tensor_image(x), 10, 10)), 4, 4), (1, 4, 4), torch.float32)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Resize(-1), "w must be a positive int, got -1"),
        (lambda: Resize(4, 0), "h must be a positive int, got 0"),
        (lambda: Resize(True), "got True"),
        (lambda: Resize(4, interpolation="lanczos"), "'lanczos'"),
        (lambda: CenterCrop(0), "got 0"),
        (lambda: CenterCrop(3, 2.5), "got 2.5"),
    ],
)
def test_bad_sizes_raise_at_construction(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_dtype_raises_at_construction():
    with pytest.raises(TypeError, match="torch.int32"):
        ToTensorImage(dtype=torch.int32)


def test_channels_checked_when_attached():
    # GrayScale on channels-last uint8 images: dim -3 is H (6), not channels
    with pytest.raises(ValueError, match="got 6"):
        TransformedEnv(PixelEnv((2,), H=H, W=W), GrayScale())
    env = TransformedEnv(PixelEnv((2,), H=H, W=W), Resize(4, in_keys=["rgb"]))  # absent keys: specs unchanged
    with pytest.raises(KeyError, match="'rgb'"):  # ... and the first step names the key
        env.rand_step(env.reset())
