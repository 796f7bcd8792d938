"""Argument checks shared by the Triton wrappers and the torch references.

They read only shapes, dtypes and devices (host metadata, no device sync), so they are cheap
and traceable by ``torch.compile``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["check_merge_args", "check_cat_frames_args", "check_vecnorm_args", "frame_layout"]


def check_merge_args(new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]) -> None:
    """Validate the leaves of a masked merge.

    Args:
        new: values taken where the mask is True.
        old: values kept where the mask is False (same shape/dtype/device as ``new``).
        masks: bool row masks; ``masks[i].shape`` is a prefix of ``new[i].shape``.

    Raises:
        ValueError: list lengths, shapes or devices disagree.
        TypeError: dtypes disagree or a mask is not bool.

    Examples:
        >>> a = torch.zeros(3, 2)
        >>> check_merge_args([a], [a], [torch.ones(3, dtype=torch.bool)])
    """
    if not (len(new) == len(old) == len(masks)):
        raise ValueError(f"new, old and masks must have the same length, got {len(new)}, {len(old)}, {len(masks)}")
    for i, (n, o, m) in enumerate(zip(new, old, masks)):
        if n.shape != o.shape:
            raise ValueError(f"leaf {i}: new.shape {tuple(n.shape)} != old.shape {tuple(o.shape)}")
        if n.dtype != o.dtype:
            raise TypeError(f"leaf {i}: new.dtype {n.dtype} != old.dtype {o.dtype}")
        if m.dtype != torch.bool:
            raise TypeError(f"leaf {i}: mask dtype must be torch.bool, got {m.dtype}")
        if tuple(n.shape[: m.ndim]) != tuple(m.shape):
            raise ValueError(
                f"leaf {i}: mask shape {tuple(m.shape)} is not a prefix of the leaf shape {tuple(n.shape)}"
            )
        if not (n.device == o.device == m.device):
            raise ValueError(f"leaf {i}: tensors on different devices: new {n.device}, old {o.device}, mask {m.device}")


def frame_layout(frame: torch.Tensor, dim: int) -> tuple[int, int]:
    """Split a frame into ``(outer, S)``: the buffer is then ``(outer, N, S)`` in memory.

    Args:
        frame: the newest frame, shape ``(*batch, *feature)``.
        dim: negative concatenation dim.

    Returns:
        ``outer`` (product of the dims before ``dim``) and ``S`` (product of ``dim`` and after).

    Examples:
        >>> frame_layout(torch.zeros(5, 3, 4, 4), -3)
        (5, 48)
    """
    d = frame.ndim + dim
    outer = 1
    for s in frame.shape[:d]:
        outer *= s
    inner = 1
    for s in frame.shape[d:]:
        inner *= s
    return outer, inner


def check_cat_frames_args(
    buffer: torch.Tensor,
    frame: torch.Tensor,
    reset_mask: torch.Tensor | None,
    dim: int,
    padding: str,
    padding_value: float = 0.0,
) -> int:
    """Validate a CatFrames update and return the number of frames ``N`` in the buffer.

    Args:
        buffer: ``N`` frames concatenated along ``dim``.
        frame: the newest frame.
        reset_mask: bool mask over the frame's batch dims, or ``None``.
        dim: negative concatenation dim, relative to the frame's trailing dims.
        padding: ``"same"`` or ``"constant"``.
        padding_value: padding for ``"constant"`` (must fit an integer buffer's dtype).

    Returns:
        ``N = buffer.shape[dim] // frame.shape[dim]``.

    Raises:
        ValueError: bad ``dim``, ``padding`` or shapes.
        TypeError: dtype mismatch or non-bool mask.

    Examples:
        >>> check_cat_frames_args(torch.zeros(2, 12), torch.zeros(2, 3), None, -1, "same")
        4
    """
    if padding not in ("same", "constant"):
        raise ValueError(f"padding must be 'same' or 'constant', got {padding!r}")
    if padding == "constant" and not buffer.is_floating_point() and buffer.dtype != torch.bool:
        info = torch.iinfo(buffer.dtype)
        if not info.min <= padding_value <= info.max:
            raise ValueError(f"padding_value {padding_value} does not fit the buffer dtype {buffer.dtype}")
    if not isinstance(dim, int) or dim >= 0 or -dim > frame.ndim:
        raise ValueError(f"dim must be a negative int within the frame's dims, got {dim!r}")
    if buffer.ndim != frame.ndim:
        raise ValueError(
            f"buffer.ndim {buffer.ndim} != frame.ndim {frame.ndim} "
            f"(buffer {tuple(buffer.shape)}, frame {tuple(frame.shape)})"
        )
    if buffer.dtype != frame.dtype:
        raise TypeError(f"buffer.dtype {buffer.dtype} != frame.dtype {frame.dtype}")
    if buffer.device != frame.device:
        raise ValueError(f"buffer on {buffer.device} but frame on {frame.device}")
    length = frame.shape[dim]
    expected = list(frame.shape)
    n = buffer.shape[dim] // length if length else 0
    expected[dim] = n * length
    if length == 0 or n < 1 or list(buffer.shape) != expected:
        raise ValueError(
            f"buffer shape {tuple(buffer.shape)} must equal the frame shape {tuple(frame.shape)} "
            f"with dim {dim} multiplied by the number of frames"
        )
    if reset_mask is not None:
        if reset_mask.dtype != torch.bool:
            raise TypeError(f"reset_mask dtype must be torch.bool, got {reset_mask.dtype}")
        if reset_mask.device != frame.device:
            raise ValueError(f"reset_mask on {reset_mask.device} but frame on {frame.device}")
        if tuple(frame.shape[: reset_mask.ndim]) != tuple(reset_mask.shape):
            raise ValueError(
                f"reset_mask shape {tuple(reset_mask.shape)} is not a prefix of the frame shape {tuple(frame.shape)}"
            )
        if reset_mask.ndim > frame.ndim + dim:
            raise ValueError(
                f"dim {dim} falls inside the batch dims {tuple(reset_mask.shape)} of the frame {tuple(frame.shape)}"
            )
    return n


def check_vecnorm_args(
    x: torch.Tensor,
    loc_sum: torch.Tensor,
    sq_sum: torch.Tensor,
    count: torch.Tensor,
    batch_ndim: int | None = None,
) -> None:
    """Validate VecNorm tensors.

    Args:
        x: data, shape ``(*batch, *feature)``.
        loc_sum: running (decayed) sum, shape ``feature``.
        sq_sum: running (decayed) sum of squares, shape ``feature``.
        count: running (decayed) count, one element.
        batch_ndim: number of leading batch dims of ``x`` (``None``: infer from ``loc_sum``).

    Raises:
        ValueError: shapes or devices disagree.
        TypeError: statistics are not floating point.

    Examples:
        >>> stats = (torch.zeros(3), torch.zeros(3), torch.zeros(()))
        >>> check_vecnorm_args(torch.zeros(4, 3), *stats, 1)
    """
    for name, t in (("loc_sum", loc_sum), ("sq_sum", sq_sum), ("count", count)):
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating point tensor, got {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"{name} on {t.device} but x on {x.device}")
    if sq_sum.shape != loc_sum.shape or sq_sum.dtype != loc_sum.dtype:
        raise ValueError(
            f"sq_sum ({tuple(sq_sum.shape)}, {sq_sum.dtype}) must match loc_sum "
            f"({tuple(loc_sum.shape)}, {loc_sum.dtype})"
        )
    if count.numel() != 1:
        raise ValueError(f"count must have one element, got shape {tuple(count.shape)}")
    if batch_ndim is None:
        batch_ndim = x.ndim - loc_sum.ndim
    if not 0 <= batch_ndim <= x.ndim:
        raise ValueError(f"batch_ndim must be in [0, {x.ndim}], got {batch_ndim}")
    if tuple(x.shape[batch_ndim:]) != tuple(loc_sum.shape):
        raise ValueError(
            f"statistics shape {tuple(loc_sum.shape)} != feature shape "
            f"{tuple(x.shape[batch_ndim:])} of x {tuple(x.shape)} (batch_ndim={batch_ndim})"
        )
