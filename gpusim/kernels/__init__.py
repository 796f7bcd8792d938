"""Fused hot-path ops: Triton kernels, CPU fast paths, their pure-torch references and the dispatch.

Each op has a public function, a ``*_reference`` with the same signature and a ``torch.library``
operator ``torch.ops.gpusim.<name>``, both built from one row of the op table
(:class:`~gpusim.kernels._registry.KernelOp`), so they share one dispatch. The backend is chosen
in one place, :func:`select` (rules and thresholds in :data:`BACKEND_TABLE`): eager CUDA tensors
with Triton installed run the hand-written Triton kernel (one launch for all leaves); eager CPU
tensors from the op's size threshold on run the CPU fast path; anything else (small inputs, no
Triton, code traced by ``torch.compile``) runs the pure-torch reference, which Inductor fuses.
:func:`force_backend` (or ``GPUSIM_BACKEND``) forces a backend, :func:`record_backends` records
the choices. The operators carry a fake implementation so ``torch.compile(fullgraph=True)``
traces them as one opaque node that dispatches at run time.

Modules: ``masked_merge`` (partial-reset / step_and_maybe_reset merge of many leaves),
``cat_frames`` (CatFrames shift-in + refill), ``vecnorm`` (running statistics + normalization),
``categorical`` (uniform categorical draws). The kernels sit beside them in ``*_triton.py``
modules, imported only when a call needs them: importing this package imports no Triton,
compiles nothing and queries no device.

Examples:
    >>> import torch
    >>> from gpusim.kernels import masked_merge
    >>> m = torch.tensor([True, False])
    >>> masked_merge([torch.ones(2, 3)], [torch.zeros(2, 3)], [m])[0].sum().item()
    3.0
"""

from gpusim.kernels._dispatch import (
    BACKEND_TABLE,
    BACKENDS,
    force_backend,
    record_backends,
    select,
    threshold,
)
from gpusim.kernels._registry import KERNEL_OPS, KernelOp, kernel_op
from gpusim.kernels.cat_frames import cat_frames_update, cat_frames_update_reference
from gpusim.kernels.categorical import categorical_rand, categorical_rand_reference
from gpusim.kernels.masked_merge import (
    masked_fill_rows_,
    masked_fill_rows_reference_,
    masked_merge,
    masked_merge_reference,
)
from gpusim.kernels.vecnorm import (
    vecnorm_normalize,
    vecnorm_normalize_reference,
    vecnorm_update_,
    vecnorm_update_normalize_,
    vecnorm_update_normalize_reference_,
    vecnorm_update_reference_,
)

__all__ = [
    "BACKENDS",
    "BACKEND_TABLE",
    "select",
    "threshold",
    "force_backend",
    "record_backends",
    "KernelOp",
    "KERNEL_OPS",
    "kernel_op",
    "masked_merge",
    "masked_merge_reference",
    "masked_fill_rows_",
    "masked_fill_rows_reference_",
    "cat_frames_update",
    "cat_frames_update_reference",
    "vecnorm_update_",
    "vecnorm_normalize",
    "vecnorm_update_normalize_",
    "vecnorm_update_reference_",
    "vecnorm_normalize_reference",
    "vecnorm_update_normalize_reference_",
    "categorical_rand",
    "categorical_rand_reference",
]
