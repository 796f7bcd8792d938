"""VideoRecorder, TensorDictRecorder and the CSVLogger they write through."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from gpusim.transforms import (
    Compose,
    CSVLogger,
    TensorDictRecorder,
    ToTensorImage,
    TransformedEnv,
    VideoRecorder,
)
from gpusim.transforms._pixel_ops import make_grid
from tests.transforms._stateless_envs import PixelEnv

BATCHES = [(), (1,), (7,), (3, 4)]
H, W = 6, 8


class ListLogger:
    """Keeps what ``log_video`` receives."""

    def __init__(self):
        self.videos = []

    def log_video(self, name, video, step=None, **kwargs):
        self.videos.append((name, video, step, kwargs))
        return len(self.videos) - 1


def _frames_of(td_pixels):
    """Expected uint8 (C, H, W) frames of channels-last uint8 pixels ``(*B, T, H, W, 3)``."""
    return td_pixels.movedim(-1, -3)


@pytest.mark.parametrize("batch", BATCHES)
def test_video_recorder_records_every_frame_of_a_rollout(batch):
    logger = ListLogger()
    env = TransformedEnv(PixelEnv(batch, H=H, W=W), VideoRecorder(logger, "run", skip=1, make_grid=False, fps=7))
    td = env.rollout(4, break_when_any_done=False)
    env.transform.dump()
    (name, video, step, kwargs) = logger.videos[0]
    assert name == "run" and step == 0 and kwargs == {"fps": 7}
    # the reset frame, then one frame per step
    expected = torch.cat([td["pixels"][..., :1, :, :, :], td["next", "pixels"]], len(batch))
    expected = _frames_of(expected)
    if not batch:
        expected = expected.unsqueeze(0)
    assert video.dtype == torch.uint8 and torch.equal(video, expected)
    assert env.transform.frames["pixels"] == []  # dump forgets the frames


@pytest.mark.parametrize("batch", [(7,), (3, 4)])
def test_video_recorder_grid_for_batched_envs(batch):
    logger = ListLogger()
    env = TransformedEnv(PixelEnv(batch, H=H, W=W), VideoRecorder(logger, "grid", skip=1))
    td = env.rollout(2, break_when_any_done=False)
    env.transform.dump()
    video = logger.videos[0][1]
    first = td["pixels"][..., 0, :, :, :].movedim(-1, -3).reshape(-1, 3, H, W)
    assert video.shape[:2] == (1, 3)
    assert torch.equal(video[0, 0], make_grid(first, padding=0))


def test_video_recorder_skip_defaults_and_counts():
    logger = ListLogger()
    single = TransformedEnv(PixelEnv((), H=H, W=W), VideoRecorder(logger, "s"))
    single.rollout(6, break_when_any_done=False)
    single.transform.dump()
    assert logger.videos[-1][1].shape[1] == 1 + 3  # reset + every 2nd of 6 steps
    batched = TransformedEnv(PixelEnv((2,), H=H, W=W), VideoRecorder(logger, "b"))
    batched.rollout(6, break_when_any_done=False)
    batched.transform.dump()
    assert logger.videos[-1][1].shape[1] == 1 + 6


def test_video_recorder_float_images_center_crop_and_max_frames():
    logger = ListLogger()
    rec = VideoRecorder(logger, "f", center_crop=4, max_frames=3, skip=1)
    env = TransformedEnv(PixelEnv((2,), H=H, W=W), Compose(ToTensorImage(), rec))
    td = env.rollout(5, break_when_any_done=False)
    rec.dump()
    video = logger.videos[0][1]
    assert video.shape == (1, 3, 3, 4, 8)  # 3 frames (max_frames) of a 1x2 grid of 4x4 crops
    # the first frame: the grid of the center-cropped reset images, scaled back to uint8
    imgs = (td["pixels"][:, 0] * 255).round().to(torch.uint8)[..., 1:5, 2:6]
    assert torch.equal(video[0, 0], make_grid(imgs, padding=0))


def test_video_recorder_partial_resets_are_not_frames():
    logger = ListLogger()
    env = TransformedEnv(PixelEnv((3,), H=H, W=W), VideoRecorder(logger, "p", skip=1, make_grid=False))
    env.rollout(12, break_when_any_done=False)  # done after 5 steps: auto-resets happen
    env.transform.dump()
    assert logger.videos[0][1].shape[1] == 1 + 12


def test_video_recorder_dump_on_done_and_out_keys():
    logger = ListLogger()
    rec = VideoRecorder(logger, "d", skip=1, dump_on_done=True, out_keys=["frames"])
    env = TransformedEnv(PixelEnv((2,), H=H, W=W), rec)
    td = env.rollout(5)  # every row is done at step 5
    assert len(logger.videos) == 1 and logger.videos[0][1].shape[1] == 6
    assert torch.equal(td["next", "frames"], td["next", "pixels"])
    assert "frames" in env.observation_spec.keys()


def test_video_recorder_errors():
    with pytest.raises(TypeError, match="log_video"):
        VideoRecorder(object(), "x")
    with pytest.raises(ValueError, match="skip must be a positive int, got 0"):
        VideoRecorder(ListLogger(), "x", skip=0)
    with pytest.raises(KeyError, match="'rgb'"):
        TransformedEnv(PixelEnv((2,), H=H, W=W), VideoRecorder(ListLogger(), "x", in_keys=["rgb"]))
    assert VideoRecorder(ListLogger(), "x").dump() is None


@pytest.mark.parametrize("fmt", ["pt", "npy"])
def test_csv_logger_files(tmp_path, fmt):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format=fmt, video_fps=12)
    env = TransformedEnv(PixelEnv((2,), H=H, W=W), VideoRecorder(logger, "vid", skip=1))
    env.rollout(3, break_when_any_done=False)
    path = env.transform.dump()
    assert path == tmp_path / "exp" / "videos" / f"vid_0.{fmt}"
    video = torch.load(path, weights_only=True) if fmt == "pt" else torch.from_numpy(np.load(path))
    assert video.dtype == torch.uint8 and video.shape[:2] == (1, 4)
    index = (tmp_path / "exp" / "videos" / "index.csv").read_text().strip().split(",")
    assert index[0] == f"vid_0.{fmt}" and index[1] == "12"
    logger.log_scalar("loss", torch.tensor(0.5))
    logger.log_scalar("loss", 0.25)
    assert (tmp_path / "exp" / "scalars" / "loss.csv").read_text() == "0,0.5\n1,0.25\n"
    logger.log_hparams({"lr": 0.1})
    assert "lr: 0.1" in (tmp_path / "exp" / "hparams.txt").read_text()


def test_csv_logger_errors(tmp_path):
    with pytest.raises(ValueError, match="'mp4'"):
        CSVLogger("e", log_dir=tmp_path, video_format="mp4")
    with pytest.raises(ValueError, match="exp_name"):
        CSVLogger("", log_dir=tmp_path)


@pytest.mark.parametrize("batch", BATCHES)
def test_tensordict_recorder(batch, tmp_path):
    rec = TensorDictRecorder(tmp_path / "run", skip=2, in_keys=["t", "pixels"])
    env = TransformedEnv(PixelEnv(batch, H=H, W=W), rec)
    td = env.rollout(4, break_when_any_done=False)
    path = rec.dump()
    assert path == tmp_path / "run_0.pt"
    saved = TensorDict(torch.load(path, weights_only=True), batch_size=[2, *batch])
    assert set(saved.keys()) == {"t", "pixels"}
    steps = td["next"].select("t", "pixels")
    for i, t in enumerate((1, 3)):  # every 2nd step
        assert torch.equal(saved[i]["t"], steps[..., t]["t"])
        assert torch.equal(saved[i]["pixels"], steps[..., t]["pixels"])
    assert rec.dump() is None


def test_tensordict_recorder_with_reset_records_common_keys(tmp_path):
    rec = TensorDictRecorder(str(tmp_path / "r"), skip_reset=False, skip=1)
    env = TransformedEnv(PixelEnv((3,), H=H, W=W), rec)
    env.rollout(2, break_when_any_done=False)
    saved = torch.load(rec.dump(suffix="x"), weights_only=True)
    assert saved["t"].shape == (3, 3, 1) and "reward" not in saved  # the reset has no reward
    assert (tmp_path / "r_x.pt").exists()
    with pytest.raises(ValueError, match="skip must be a positive int"):
        TensorDictRecorder("x", skip=0)


def test_video_recorder_without_logger_keeps_frames():
    rec = VideoRecorder(None, None, max_frames=2)
    rec._apply_transform(torch.zeros(1, 4, 4, dtype=torch.uint8))  # grayscale -> 3 channels
    rec._apply_transform(torch.ones(4, 4, 3, dtype=torch.uint8))  # channels last
    rec._apply_transform(torch.ones(3, 4, 4, dtype=torch.uint8))  # over max_frames: dropped
    frames = rec.obs
    assert [f.shape for f in frames] == [torch.Size([3, 4, 4])] * 2
    assert rec.dump(step=3) is None and rec.obs is frames and frames == []
    with pytest.raises(TypeError, match="log_video"):
        VideoRecorder(object(), "tag")


def test_video_recorder_dump_step_and_animation():
    logger = ListLogger()
    rec = VideoRecorder(logger, "v", fps=5)
    rec._apply_transform(torch.zeros(3, 4, 4, dtype=torch.uint8))
    rec.dump(step=7)
    assert logger.videos[-1][1].shape == (1, 1, 3, 4, 4) and logger.videos[-1][2] == 7
    rec._apply_transform(torch.zeros(3, 4, 4, dtype=torch.uint8))
    anim = rec.to_animation(title="t")
    assert type(anim).__name__ == "ArtistAnimation" and rec.obs == [] and rec.count == 0
    with pytest.raises(RuntimeError, match="no frames"):
        rec.to_animation()


def test_standalone_batches_are_consecutive_frames():
    # no env: a batch of images (stored data) is a sequence of frames, capped by max_frames
    rec = VideoRecorder(None, None, max_frames=5)
    gray = torch.arange(4, dtype=torch.uint8).view(4, 1, 1, 1).expand(4, 1, 6, 6)
    rec._apply_transform(gray)
    assert [f.shape for f in rec.obs] == [torch.Size([3, 6, 6])] * 4
    assert [int(f[0, 0, 0]) for f in rec.obs] == [0, 1, 2, 3]  # in order
    rec._apply_transform(gray + 10)
    assert len(rec.obs) == 5 and int(rec.obs[-1][0, 0, 0]) == 10
    grid = VideoRecorder(None, None, make_grid=True)
    grid._apply_transform(gray)
    assert len(grid.obs) == 1 and grid.obs[0].shape == (3, 6, 24)  # one tiled image
