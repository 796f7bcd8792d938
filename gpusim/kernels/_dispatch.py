"""Backend choice shared by the kernel ops: Triton kernel or pure-torch reference.

Nothing here imports Triton or touches CUDA at import time: whether Triton is installed is
looked up (without importing it) the first time a CUDA tensor asks.

Policy:

* eager, CUDA tensors, Triton installed -> the Triton host wrapper (one launch per op);
* anything else (CPU tensors, no Triton, or inside ``torch.compile``) -> the torch reference,
  which TorchInductor fuses with the surrounding graph (on CUDA it generates Triton itself).

The registered ``torch.ops.gpusim.*`` operators are always available for callers that want the
hand-written kernel inside a compiled graph (an opaque, CUDA-graph-safe launch).
"""

from __future__ import annotations

import functools
import importlib.util

import torch

__all__ = ["triton_available", "use_triton_kernel"]


@functools.cache
def triton_available() -> bool:
    """Whether the ``triton`` package can be imported (looked up once, never imported here).

    Returns:
        ``True`` when ``import triton`` would find a package.

    Examples:
        >>> isinstance(triton_available(), bool)
        True
    """
    return importlib.util.find_spec("triton") is not None


def use_triton_kernel(device: torch.device) -> bool:
    """Whether an eager call on ``device`` should run the hand-written Triton kernel.

    Args:
        device: the device of the op's tensors.

    Returns:
        ``True`` for CUDA tensors outside ``torch.compile`` when Triton is installed.

    Examples:
        >>> use_triton_kernel(torch.device("cpu"))
        False
    """
    if device.type != "cuda" or torch.compiler.is_compiling():
        return False
    return triton_available()
