"""Pixel envs: ``make(..., from_pixels=True)`` (``PixelRenderTransform``), the tiled video of a
batch, ``to_gymnasium(render_mode="rgb_array")``, and the pixel chain in the compiled graph."""

from __future__ import annotations

import pytest
import torch

import gpusim as gs
from gpusim.transforms import (
    CatFrames,
    Compose,
    GrayScale,
    PixelRenderTransform,
    Resize,
    ToTensorImage,
    TransformedEnv,
    VideoRecorder,
)

SIZES = {
    "CartPole-v1": (400, 600),
    "Pendulum-v1": (500, 500),
    "MountainCar-v0": (400, 600),
    "MountainCarContinuous-v0": (400, 600),
    "Acrobot-v1": (500, 500),
    "TicTacToe-v0": (96, 96),
}


class ListLogger:
    def __init__(self):
        self.videos = []

    def log_video(self, name, video, step=None, **kwargs):
        self.videos.append((name, video))


def _push_right(td):
    return td.set("action", torch.ones(td.batch_size, dtype=torch.long))


@pytest.mark.parametrize("env_id", list(SIZES))
def test_make_from_pixels_specs_and_check_env_specs(env_id):
    env = gs.make(env_id, num_envs=2, seed=0, from_pixels=True)
    spec = env.observation_spec["pixels"]
    assert spec.shape == (2, *SIZES[env_id], 3) and spec.dtype == torch.uint8
    assert "observation" not in env.observation_spec.keys()  # pixels_only=True by default
    gs.check_env_specs(env)
    td = env.reset()
    assert td["pixels"].shape == (2, *SIZES[env_id], 3)


def test_pixels_only_false_keeps_the_vector_observation():
    env = gs.make("Pendulum-v1", num_envs=3, seed=0, from_pixels=True, pixels_only=False)
    assert {"pixels", "observation"} <= set(env.observation_spec.keys())
    data = env.rollout(2)
    assert data["next", "observation"].shape == (3, 2, 3)


@pytest.mark.parametrize("mode", ["sparse", "masked"])  # sparse: the reset rows alone are drawn
def test_pixels_of_every_step_and_reset_are_the_frames_of_the_state(mode):
    env = gs.make("CartPole-v1", num_envs=3, seed=1, from_pixels=True, auto_reset_mode=mode)
    data = env.rollout(14, _push_right, break_when_any_done=False)
    assert data["next", "done"].any()  # episodes ended: the roots after them are reset rows
    base = env.base_env
    assert torch.equal(data["next", "pixels"], base.render(data["next"]))
    assert torch.equal(data["pixels"], base.render(data))  # roots, reset rows included


def test_pixel_chain_over_partial_resets_eager():
    """Later transforms rewrite "pixels" in place: a sparse partial reset must not take their
    output for the previous frames; the newest frame of every stack is the processed render."""
    from tensordict import TensorDict

    env = gs.make("CartPole-v1", num_envs=3, seed=1, from_pixels=True, auto_reset_mode="sparse")
    env = env.append_transform(Compose(ToTensorImage(), Resize(21, 21), GrayScale(), CatFrames(2, dim=-3)))
    data = env.rollout(14, _push_right, break_when_any_done=False)
    assert data["next", "done"].any() and data["pixels"].shape == (3, 14, 2, 21, 21)
    raw = env.base_env.render(data)
    processed = Compose(ToTensorImage(), Resize(21, 21), GrayScale())(TensorDict({"pixels": raw}, data.batch_size))
    torch.testing.assert_close(data["pixels"][..., -1:, :, :], processed["pixels"])


def test_make_rejects_non_bool_pixel_flags():
    with pytest.raises(TypeError, match="from_pixels must be a bool, got 'yes'"):
        gs.make("CartPole-v1", from_pixels="yes")


def test_pixel_render_transform_needs_a_drawing():
    from tests.transforms._stateless_envs import PixelEnv

    with pytest.raises(AttributeError, match="has no 'render' method"):
        TransformedEnv(PixelEnv((2,), H=4, W=4), PixelRenderTransform(out_keys=["frame"]))


def test_video_recorder_tiles_the_rows_of_a_pixel_env():
    logger = ListLogger()
    recorder = VideoRecorder(logger, "tiles")
    env = TransformedEnv(gs.make("CartPole-v1", num_envs=3, seed=0, from_pixels=True), recorder)
    data = env.rollout(4, break_when_any_done=False)
    recorder.dump()
    name, video = logger.videos[0]
    assert name == "tiles" and video.shape == (1, 5, 3, 400, 3 * 600)  # the reset frame, 4 steps
    for row in range(3):
        tile = video[0, 1:, :, :, row * 600 : (row + 1) * 600]
        assert torch.equal(tile, data["next", "pixels"][row].movedim(-1, -3))


@pytest.mark.parametrize("from_pixels", [True, False])
def test_to_gymnasium_rgb_array_frames(from_pixels):
    env = gs.make("MountainCar-v0", num_envs=2, seed=0, from_pixels=from_pixels, pixels_only=False)
    envs = gs.to_gymnasium(env, observation_keys="observation", render_mode="rgb_array")
    envs.reset(seed=0)
    envs.step(envs.action_space.sample())
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == (400, 600, 3) and frames[0].dtype.name == "uint8"
    expected = env.base_env.render(envs._td)
    assert all((torch.from_numpy(f) == expected[i]).all() for i, f in enumerate(frames))


def test_pixel_chain_compiled_matches_eager():
    """The render, ToTensorImage, Resize, GrayScale and CatFrames(4) inside ``rollout(compile=True)``
    against the eager rollout, with resets inside the graph. Raw frames: uint8, equal up to a
    handful of pixels on shape edges (Inductor's fused float math may round a pixel-centre test
    the other way); the processed stack: floats within 1e-5 where the frames agree."""

    def make():
        env = gs.make("CartPole-v1", num_envs=4, seed=2, from_pixels=True)
        chain = Compose(
            ToTensorImage(in_keys=["pixels"], out_keys=["frames"]),
            Resize(42, 42, in_keys=["frames"]),
            GrayScale(in_keys=["frames"]),
            CatFrames(4, dim=-3, in_keys=["frames"]),
        )
        return TransformedEnv(env, chain)

    torch._dynamo.reset()
    eager = make().rollout(14, _push_right, break_when_any_done=False)
    compiled = make().rollout(14, _push_right, break_when_any_done=False, compile={"steps_per_call": 1})
    assert eager["next", "done"].any()  # resets happened inside the graph
    assert compiled["next", "frames"].shape == (4, 14, 4, 42, 42)
    torch.testing.assert_close(compiled["next", "state"], eager["next", "state"], rtol=1e-5, atol=1e-5)
    for key in ("pixels", ("next", "pixels")):
        differ = (compiled[key] != eager[key]).any(-1)
        assert differ.float().mean() < 1e-4, f"{key}: {int(differ.sum())} pixels differ"
    if not (compiled["next", "pixels"] != eager["next", "pixels"]).any():
        torch.testing.assert_close(compiled["next", "frames"], eager["next", "frames"], rtol=1e-5, atol=1e-5)
    else:
        assert (compiled["next", "frames"] - eager["next", "frames"]).abs().mean() < 1e-3


def test_make_render_size_draws_small_frames_in_every_step():
    env = gs.make("CartPole-v1", num_envs=3, seed=0, from_pixels=True, render_size=(84, 84))
    assert env.observation_spec["pixels"].shape == (3, 84, 84, 3)
    gs.check_env_specs(env)
    data = env.rollout(12, _push_right, break_when_any_done=False)
    assert data["next", "pixels"].shape == (3, 12, 84, 84, 3)
    assert torch.equal(data["next", "pixels"], env.base_env.render(data["next"], size=(84, 84)))
    with pytest.raises(ValueError, match=r"render_size=\(84, 84\) needs from_pixels=True"):
        gs.make("CartPole-v1", render_size=(84, 84))
    with pytest.raises(ValueError, match="two positive ints, got"):
        PixelRenderTransform(size=(84, 0))
