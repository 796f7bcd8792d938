"""UnsqueezeTransform, SqueezeTransform, FlattenObservation, PermuteTransform."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.specs import Bounded, Categorical
from gpusim.transforms import (
    Compose,
    FlattenObservation,
    PermuteTransform,
    RenameTransform,
    SqueezeTransform,
    TransformedEnv,
    UnsqueezeTransform,
)
from tests.transforms._stateless_envs import PixelEnv, VectorEnv

BATCHES = [(), (1,), (7,), (3, 4)]


def _copy(*keys):
    return RenameTransform(list(keys), [f"raw_{k}" for k in keys], create_copy=True)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dim", [-1, -2])
def test_unsqueeze_forward_and_inverse(batch, dim):
    env = TransformedEnv(
        VectorEnv(batch),
        Compose(_copy("observation"), UnsqueezeTransform(dim, in_keys=["observation"], in_keys_inv=["action"])),
    )
    td = env.rollout(3, break_when_any_done=False)
    nxt = td["next"]
    torch.testing.assert_close(nxt["observation"], nxt["raw_observation"].unsqueeze(dim))
    assert env.observation_spec["observation"].shape == torch.zeros(*batch, 3).unsqueeze(dim).shape
    # the outer action has the extra dim, the base env gets it squeezed
    assert env.action_spec.shape == torch.zeros(*batch, 1).unsqueeze(dim).shape
    assert isinstance(env.action_spec, Bounded)
    assert td["action"].shape == (*batch, 3, *env.action_spec.shape[len(batch) :])
    assert env.base_env.last_input["action"].shape == (*batch, 1)


@pytest.mark.parametrize("batch", BATCHES)
def test_unsqueeze_positive_dim_counts_from_the_first_feature_dim(batch):
    env = TransformedEnv(VectorEnv(batch), UnsqueezeTransform(0, allow_positive_dim=True, in_keys=["observation"]))
    assert env.observation_spec["observation"].shape == (*batch, 1, 3)
    assert env.rollout(2)["next", "observation"].shape == (*batch, 2, 1, 3)


@pytest.mark.parametrize("batch", BATCHES)
def test_squeeze_forward_and_inverse(batch):
    env = TransformedEnv(
        VectorEnv(batch),
        Compose(_copy("reward"), SqueezeTransform(-1, in_keys=["reward"], out_keys=["r"], in_keys_inv=["action"])),
    )
    td = env.rollout(3)
    torch.testing.assert_close(td["next", "r"], td["next", "raw_reward"].squeeze(-1))
    assert env.full_reward_spec["r"].shape == batch
    assert env.action_spec.shape == batch
    td = env.reset()
    td.set("action", torch.full(batch, 0.5))
    env.step(td)
    assert env.base_env.last_input["action"].shape == (*batch, 1)
    assert env.base_env.last_input["action"].eq(0.5).all()


@pytest.mark.parametrize("batch", BATCHES)
def test_flatten(batch):
    env = TransformedEnv(PixelEnv(batch, H=5, W=6), Compose(_copy("pixels"), FlattenObservation(-3, -2)))
    td = env.rollout(2)
    torch.testing.assert_close(td["next", "pixels"], td["next", "raw_pixels"].flatten(-3, -2))
    spec = env.observation_spec["pixels"]
    assert spec.shape == (*batch, 30, 3) and spec.dtype == torch.uint8
    assert spec.low.eq(0).all() and spec.high.eq(255).all()


@pytest.mark.parametrize("batch", BATCHES)
def test_permute_forward(batch):
    env = TransformedEnv(
        PixelEnv(batch, H=5, W=6), Compose(_copy("pixels"), PermuteTransform([-1, -3, -2], in_keys=["pixels"]))
    )
    td = env.rollout(2)
    torch.testing.assert_close(td["next", "pixels"], td["next", "raw_pixels"].movedim(-1, -3))
    assert env.observation_spec["pixels"].shape == (*batch, 3, 5, 6)


def test_permute_inverse_roundtrip_offline():
    from tensordict import TensorDict

    t = PermuteTransform([-2, -1, -3], in_keys=["x"], in_keys_inv=["x"])
    x = torch.randn(4, 2, 3, 5)
    out = t(TensorDict({"x": x.clone()}, [4]))
    assert out["x"].shape == (4, 3, 5, 2)
    back = t.inv(out)
    assert torch.equal(back["x"], x)


def test_shape_ops_keep_categorical_values():
    env = TransformedEnv(PixelEnv((4,), H=5, W=6), UnsqueezeTransform(-1, in_keys_inv=["action"]))
    spec = env.action_spec
    assert isinstance(spec, Categorical) and spec.shape == (4, 1) and spec.n == 2
    env.rollout(2)
    assert env.base_env.last_input["action"].shape == (4,)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: UnsqueezeTransform(1, in_keys=["observation"]), "must be negative"),
        (lambda: UnsqueezeTransform(None, in_keys=["observation"]), "must be an int, got None"),
        (lambda: SqueezeTransform(2), "must be negative"),
        (lambda: FlattenObservation(-1, -2), "first_dim=-1, last_dim=-2"),
        (lambda: FlattenObservation(0, -1), "must be negative"),
        (lambda: PermuteTransform([-1, -3]), r"reordering of \[-2, -1\], got \[-1, -3\]"),
    ],
)
def test_bad_dims_raise_at_construction(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: SqueezeTransform(-1, in_keys=["observation"]), "not a dim of size 1"),
        (lambda: UnsqueezeTransform(-3, in_keys=["observation"]), "batch dims"),
        (lambda: UnsqueezeTransform(-5, in_keys=["observation"]), "'observation'"),
    ],
)
def test_bad_dims_raise_when_attached(make, match):
    with pytest.raises((ValueError, KeyError), match=match):
        TransformedEnv(VectorEnv((2,)), make())


def test_positive_dims_count_from_the_tensor_outside_an_env_and_after_the_batch_inside():
    td = TensorDict({"x": torch.zeros(2, 1, 3)}, [2])
    assert SqueezeTransform(1, in_keys=["x"], allow_positive_dim=True)(td.clone())["x"].shape == (2, 3)
    assert SqueezeTransform(0, in_keys=["x"], allow_positive_dim=True)(td.clone())["x"].shape == (
        2,
        1,
        3,
    )  # size 2: kept
    assert UnsqueezeTransform(0, in_keys=["x"], allow_positive_dim=True)(TensorDict({"x": torch.zeros(2, 3)}, []))[
        "x"
    ].shape == (1, 2, 3)
    inv = SqueezeTransform(1, in_keys_inv=["x"], allow_positive_dim=True).inv(TensorDict({"x": torch.zeros(2, 3)}, [2]))
    assert inv["x"].shape == (2, 1, 3)
    env = TransformedEnv(VectorEnv((2,)), UnsqueezeTransform(0, in_keys=["observation"], allow_positive_dim=True))
    assert env.observation_spec["observation"].shape == (2, 1, 3)
    assert env.rollout(2)["next", "observation"].shape == (2, 2, 1, 3)
    with pytest.raises(KeyError, match="'y'"):
        SqueezeTransform(-1, in_keys=["y"])(td.clone())


@pytest.mark.parametrize("dims", [(-1, -10), (0, 1), (-1, -1), ()])
def test_permute_dims_must_reorder_trailing_negative_dims(dims):
    with pytest.raises(ValueError, match=r"dims must be a reordering of .*Only tailing dims with negative indices"):
        PermuteTransform(dims)
