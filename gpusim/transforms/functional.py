"""Stateless tensor functions behind some transforms: ``cat_frames`` (the offline windows of
``CatFrames``) and ``rgb_to_grayscale``.

Every function is one batched tensor program (gathers and ``torch.where``; no Python loop over
time or batch, no host reads), usable on stored trajectories of any batch shape.

Examples:
    >>> import torch
    >>> cat_frames(torch.arange(8.0).view(4, 2), N=3, dim=-1, time_dim=-2, padding="constant")
    tensor([[0., 0., 0., 0., 0., 1.],
            [0., 0., 0., 1., 2., 3.],
            [0., 1., 2., 3., 4., 5.],
            [2., 3., 4., 5., 6., 7.]])
"""

from __future__ import annotations

import torch

from gpusim.transforms._pixel_ops import grayscale

__all__ = ["cat_frames", "rgb_to_grayscale"]

_PADDINGS = ("same", "constant")


def _check_dims(tensor: torch.Tensor, dim: int, time_dim: int, padding: str) -> int:
    """Validates the arguments; returns the absolute position of the time axis."""
    if padding not in _PADDINGS:
        raise ValueError(f"cat_frames: padding must be one of {_PADDINGS}, got {padding!r}")
    if dim >= 0:
        raise ValueError(
            f"cat_frames: dim must be < 0 to accommodate for tensors of different batch sizes, got dim={dim}"
        )
    if time_dim >= 0:
        raise ValueError(f"cat_frames: time_dim must be < 0, got time_dim={time_dim}")
    time_pos = tensor.ndim + time_dim
    if time_pos < 0 or tensor.ndim + dim <= time_pos:
        raise ValueError(
            f"cat_frames: dim={dim} must be a feature dim after time_dim={time_dim} of a tensor of shape "
            f"{tuple(tensor.shape)}"
        )
    return time_pos


def frame_windows(
    x: torch.Tensor,
    N: int,
    dim: int,
    time_pos: int,
    n_pad: torch.Tensor,
    padding: str = "same",
    padding_value: float = 0.0,
    future: bool = False,
    root: torch.Tensor | None = None,
) -> torch.Tensor:
    """Windows of ``N`` frames of ``x`` at every time step, concatenated along ``dim``.

    ``n_pad`` (shape ``x.shape[:time_pos + 1]``, integer) counts the padded slots of each window:
    the oldest ones for history windows ``[t - N + 1, ..., t]``, the newest ones for future
    windows ``[t, ..., t + N - 1]``. Padded slots repeat the nearest in-trajectory frame
    (``"same"``) or hold ``padding_value``. With ``root`` (history only), ``x`` is a ``"next"``
    series and the frame just before a trajectory's first one is ``root`` at that step (what an
    env's frame buffer holds after a reset); the older padded slots repeat it (``"same"``).

    Examples:
        >>> x = torch.arange(4.0).view(4, 1)
        >>> frame_windows(x, 2, -1, 0, torch.tensor([1, 0, 1, 0]))[:, :]
        tensor([[0., 0.],
                [0., 1.],
                [2., 2.],
                [2., 3.]])
    """
    T = x.shape[time_pos]
    lead = x.shape[:time_pos]
    feat = x.shape[time_pos + 1 :]
    device = x.device
    k = torch.arange(N, device=device)
    t = torch.arange(T, device=device).unsqueeze(-1)  # (T, 1)
    n_pad = n_pad.unsqueeze(-1)  # (*lead, T, 1)
    if future:
        last_valid = N - 1 - n_pad
        src = t + torch.minimum(k, last_valid)  # padded slots read the last in-trajectory frame
        padded = k > last_valid
    else:
        src = t - (N - 1) + torch.maximum(k, n_pad)  # padded slots read the first in-trajectory frame
        padded = k < n_pad
    src = src.clamp(0, T - 1)  # (*lead, T, N)
    index = src.reshape(*lead, T * N, *([1] * len(feat))).expand(*lead, T * N, *feat)
    out = torch.gather(x, time_pos, index).reshape(*lead, T, N, *feat)
    mask = padded.reshape(*padded.shape, *([1] * len(feat)))
    if root is not None:
        if future:
            raise NotImplementedError("frame_windows: root frames only apply to history windows")
        first = torch.gather(root, time_pos, index).reshape(*lead, T, N, *feat)  # root at the episode start
        if padding == "same":
            out = torch.where(mask, first, out)
        else:
            just_before = (k == n_pad - 1).reshape(*padded.shape, *([1] * len(feat)))
            out = torch.where(just_before, first, torch.where(mask, torch.full_like(out, padding_value), out))
    elif padding == "constant":
        out = torch.where(mask, torch.full_like(out, padding_value), out)
    # the window axis goes just before the concatenation axis, then both are merged
    out = out.movedim(time_pos + 1, out.ndim + dim - 1)
    return out.flatten(out.ndim + dim - 1, out.ndim + dim)


def cat_frames(
    tensor: torch.Tensor,
    N: int,
    dim: int,
    *,
    padding: str = "same",
    padding_value: float = 0.0,
    time_dim: int = -1,
    done_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Stacks a sliding window of ``N`` successive frames along ``dim``.

    For every step ``t`` along ``time_dim``, the frames ``[t - N + 1, ..., t]`` are concatenated
    along ``dim`` (oldest first), so the size along ``dim`` is multiplied by ``N``. Slots before
    the trajectory start are padded: ``"same"`` repeats the first frame of the trajectory,
    ``"constant"`` writes ``padding_value``. ``done_mask`` (shape ``(*batch, time, N)``, ``True``
    = the slot lies before its trajectory's start; the padded slots of a window are its oldest)
    delimits several trajectories; without it the input is one trajectory.

    Args:
        tensor: the frames; ``time_dim`` is the time axis, ``dim`` a feature axis after it.
        N: the window length.
        dim: the (negative) concatenation dim.
        padding: ``"same"`` or ``"constant"``.
        padding_value: the pad of ``"constant"``.
        time_dim: the (negative) time dim.
        done_mask: the padded slots of every window.

    Raises:
        ValueError: a non-negative ``dim``/``time_dim``, ``dim`` not after ``time_dim``, an
            unknown ``padding``.

    Examples:
        >>> frames = torch.arange(4.0).view(1, 4, 1)  # one trajectory of 4 one-number frames
        >>> cat_frames(frames, N=2, dim=-1, time_dim=-2, padding="same")[0].tolist()
        [[0.0, 0.0], [0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]
    """
    time_pos = _check_dims(tensor, dim, time_dim, padding)
    lead_time = tensor.shape[: time_pos + 1]
    if done_mask is None:
        T = tensor.shape[time_pos]
        n_pad = (N - 1 - torch.arange(T, device=tensor.device)).clamp_min(0).expand(lead_time)
    else:
        n_pad = done_mask.reshape(*lead_time, N).sum(-1).to(tensor.device)
    return frame_windows(tensor, N, dim, time_pos, n_pad, padding, padding_value)


def rgb_to_grayscale(img: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    """ITU-R 601-2 luma of a channels-first RGB image ``(..., 3, H, W)``.

    Raises:
        TypeError: fewer than 3 dims or not 3 channels.
        ValueError: ``num_output_channels`` not 1 or 3.

    Examples:
        >>> rgb_to_grayscale(torch.ones(3, 2, 2)).shape
        torch.Size([1, 2, 2])
    """
    if img.ndim < 3 or img.shape[-3] != 3:
        raise TypeError(f"rgb_to_grayscale: expected an image (..., 3, H, W), got shape {tuple(img.shape)}")
    if num_output_channels not in (1, 3):
        raise ValueError(f"rgb_to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels}")
    gray = grayscale(img)
    return gray.expand(img.shape) if num_output_channels == 3 else gray
