"""CatFrames offline (unfolding, future windows, padding masks, named time dims) and the
``cat_frames`` functional, checked against a per-window loop written here."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.transforms import CatFrames, TransformedEnv
from gpusim.transforms.functional import cat_frames, rgb_to_grayscale
from tests.envs.toy_envs import StatelessCounter


def _loop_windows(x, done, N, padding, value, future=False):
    """Reference: windows of a [T, F] series, built one step at a time."""
    T = x.shape[0]
    ends = [t for t in range(T) if done[t]] + [T - 1]
    out, masks = [], []
    for t in range(T):
        start = max([0] + [e + 1 for e in ends if e < t])
        end = min(e for e in ends if e >= t)
        frames, mask = [], []
        for k in range(N):
            j = t + k if future else t - (N - 1) + k
            ok = j <= end if future else j >= start
            mask.append(not ok)
            if ok:
                frames.append(x[j])
            elif padding == "same":
                frames.append(x[end] if future else x[start])
            else:
                frames.append(torch.full_like(x[0], value))
        out.append(torch.cat(frames, -1))
        masks.append(mask)
    return torch.stack(out), torch.tensor(masks)


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("future", [False, True])
@pytest.mark.parametrize("N", [1, 3, 7])
def test_unfolding_matches_a_loop_across_trajectory_boundaries(padding, future, N):
    torch.manual_seed(0)
    B, T = 3, 6
    x = torch.randn(B, T, 2)
    done = torch.rand(B, T, 1) < 0.3
    td = TensorDict({"obs": x, ("next", "done"): done}, [B, T], names=[None, "time"])
    t = CatFrames(
        N, -1, in_keys=["obs"], out_keys=["cat"], padding=padding, padding_value=-2.0, future=future, mask_key="m"
    )
    out = t(td)
    for b in range(B):
        ref, mask = _loop_windows(x[b], done[b, :, 0].tolist(), N, padding, -2.0, future)
        torch.testing.assert_close(out["cat"][b], ref)
        assert torch.equal(out["m"][b], mask)


def test_unfolding_time_dim_by_name_next_series_and_errors():
    torch.manual_seed(1)
    x = torch.randn(5, 2, 3)  # time first
    td = TensorDict({"obs": x, ("next", "done"): torch.zeros(5, 2, 1, dtype=torch.bool)}, [5, 2], names=["time", None])
    out = CatFrames(2, -1, in_keys=["obs"], out_keys=["cat"])(td)
    torch.testing.assert_close(out["cat"][1:, 0], torch.cat([x[:-1, 0], x[1:, 0]], -1))
    with pytest.warns(UserWarning, match="time"):
        CatFrames(2, -1, in_keys=["obs"])(
            TensorDict({"obs": x, ("next", "done"): torch.zeros(5, 2, 1, dtype=torch.bool)}, [5, 2])
        )
    with pytest.raises(ValueError, match="unbatched"):
        CatFrames(2, -1, in_keys=["obs"])(TensorDict({"obs": torch.zeros(3)}, []))
    with pytest.raises(KeyError, match="delimit"):
        CatFrames(2, -1, in_keys=["obs"])(TensorDict({"obs": x}, [5, 2], names=["time", None]))
    both = CatFrames(2, -1, in_keys=["obs", ("next", "obs")], future=True)
    with pytest.raises(NotImplementedError, match="history"):
        both(TensorDict({"obs": x, ("next", "obs"): x}, [5, 2], names=["time", None]))


def test_offline_next_series_equals_the_env_and_env_rejects_offline_options():
    env = TransformedEnv(
        StatelessCounter(batch_size=(2,), max_count=3), CatFrames(3, -1, in_keys=["observation"], out_keys=["s"])
    )
    r = env.rollout(8, break_when_any_done=False)
    raw = r.exclude("s", ("next", "s"))
    off = CatFrames(3, -1, in_keys=["observation", ("next", "observation")], out_keys=["s", ("next", "s")])(raw)
    assert torch.equal(off["s"], r["s"]) and torch.equal(off["next", "s"], r["next", "s"])
    for kwargs in (dict(future=True), dict(mask_key="m"), dict(as_inverse=True)):
        bad = TransformedEnv(StatelessCounter(batch_size=(2,)), CatFrames(2, -1, in_keys=["observation"], **kwargs))
        with pytest.raises(RuntimeError, match="offline|replay buffers"):
            bad.reset()


def test_step_without_reset_pads_with_padding_value():
    t = CatFrames(3, -1, in_keys=["x"], padding="same", padding_value=0.5)
    out = t._call(TensorDict({"x": torch.ones(2, 1)}, [2]))
    assert out["x"].tolist() == [[0.5, 0.5, 1.0]] * 2
    assert hasattr(t, "_cat_buffers_x")


@pytest.mark.parametrize("padding", ["same", "constant"])
def test_cat_frames_functional(padding):
    torch.manual_seed(2)
    x = torch.randn(2, 9, 3, 4)  # batch, time, features, window dim
    out = cat_frames(x, N=3, dim=-2, time_dim=-3, padding=padding, padding_value=1.5)
    assert out.shape == (2, 9, 9, 4)
    for b in range(2):
        ref, _ = _loop_windows(x[b].transpose(-1, -2), [False] * 9, 3, padding, 1.5)
        torch.testing.assert_close(out[b].transpose(-1, -2), ref)
    done = torch.zeros(2, 9, dtype=torch.bool)
    done[:, 3] = True
    mask = CatFrames(3, -1, in_keys=["x"], mask_key="m")(
        TensorDict({"x": x[..., 0], ("next", "done"): done}, [2, 9], names=[None, "time"])
    )["m"]
    with_done = cat_frames(x, N=3, dim=-2, time_dim=-3, padding=padding, padding_value=1.5, done_mask=mask)
    ref, _ = _loop_windows(x[0].transpose(-1, -2), done[0].tolist(), 3, padding, 1.5)
    torch.testing.assert_close(with_done[0].transpose(-1, -2), ref)
    with pytest.raises(ValueError, match="dim must be < 0"):
        cat_frames(x, N=2, dim=0, time_dim=-3)
    with pytest.raises(ValueError, match="time_dim must be < 0"):
        cat_frames(x, N=2, dim=-1, time_dim=1)
    with pytest.raises(ValueError, match="padding must be one of"):
        cat_frames(x, N=2, dim=-1, time_dim=-3, padding="zeros")


def test_rgb_to_grayscale():
    img = torch.rand(2, 3, 4, 5)
    gray = rgb_to_grayscale(img)
    torch.testing.assert_close(gray[:, 0], 0.2989 * img[:, 0] + 0.587 * img[:, 1] + 0.114 * img[:, 2])
    assert rgb_to_grayscale(img, 3).shape == img.shape
    with pytest.raises(TypeError):
        rgb_to_grayscale(torch.rand(2, 4, 4))
