"""Which Triton mode this test process uses, and the mark for compiled-CUDA tests."""

from __future__ import annotations

import os

import pytest
import torch

#: True (default): kernels run in Triton's interpreter on CPU tensors.
#: ``GPUSIM_KERNEL_TESTS=compiled``: kernels are compiled (CUDA machine).
INTERPRETED = os.environ.get("GPUSIM_KERNEL_TESTS", "interpret") != "compiled"

#: CUDA tests of the compiled kernels: need a GPU and ``GPUSIM_KERNEL_TESTS=compiled``.
needs_compiled_cuda = pytest.mark.skipif(
    INTERPRETED or not torch.cuda.is_available(),
    reason="needs CUDA and compiled Triton kernels (GPUSIM_KERNEL_TESTS=compiled)",
)
