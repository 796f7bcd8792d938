"""Kernel tests run the Triton kernels on CPU through Triton's interpreter.

``TRITON_INTERPRET=1`` must be set before ``triton.jit`` decorates the kernels, i.e. before the
``gpusim.kernels.*_triton`` modules are imported; those modules are imported only by tests
(``gpusim.kernels`` itself never imports Triton), so setting it here is early enough.

The interpreter choice is per process. On a CUDA machine, run the suite a second time with
``GPUSIM_KERNEL_TESTS=compiled`` to exercise the compiled kernels: the CUDA tests (marked with
``needs_compiled_cuda``) run only then, the interpreter tests only in the default mode.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator

import pytest

from tests.kernels._marks import INTERPRETED

if INTERPRETED:
    os.environ["TRITON_INTERPRET"] = "1"

triton = pytest.importorskip("triton")


class LaunchSpy:
    """Wraps a ``@triton.jit`` kernel and records every launch grid."""

    def __init__(self, kernel: object) -> None:
        self.kernel = kernel
        self.grids: list[object] = []

    def __getitem__(self, grid: object) -> Callable[..., object]:
        self.grids.append(grid)
        return self.kernel[grid]  # type: ignore[index]


@pytest.fixture
def spy_kernel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], LaunchSpy]]:
    """Replace ``module.name`` (a Triton kernel) by a spy that asserts it is interpreted."""

    if not INTERPRETED:
        pytest.skip("interpreter tests run in the default mode (GPUSIM_KERNEL_TESTS unset)")

    def install(module_name: str, kernel_name: str) -> LaunchSpy:
        from triton.runtime.interpreter import InterpretedFunction

        module = importlib.import_module(module_name)
        kernel = getattr(module, kernel_name)
        assert isinstance(kernel, InterpretedFunction), type(kernel)
        spy = LaunchSpy(kernel)
        monkeypatch.setattr(module, kernel_name, spy)
        return spy

    yield install
