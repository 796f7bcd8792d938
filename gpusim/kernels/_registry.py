"""The op table: one :class:`KernelOp` per kernel op builds its public function AND its
``torch.library`` operator, so the two share one dispatch and cannot drift.

A row names the op's implementations (all with the public function's signature):

* ``reference``: the pure-torch implementation (what ``torch.compile`` traces);
* ``cpu``: the eager-CPU fast path, or ``None``;
* ``triton``: ``"module:function"`` of the Triton host wrapper, imported on the first call that
  needs it (importing gpusim never imports Triton), or ``None``;
* ``fake``: the shape/dtype-only implementation ``torch.compile`` traces the operator with; its
  annotations (``list[torch.Tensor]``, ``Optional[torch.Tensor]``, ``float``...) give the
  operator's schema;

plus the op's :data:`~gpusim.kernels._dispatch.BACKEND_TABLE` key and how to read the device and
the size (in the table's unit) from the first argument. :meth:`KernelOp.define` turns a stub (a
signature and a docstring) into the public function and registers ``torch.ops.gpusim.<name>``.
Both call :meth:`KernelOp.dispatch`, which asks :func:`~gpusim.kernels._dispatch.select` for the
backend; the public function takes the reference directly while ``torch.compile`` traces it (so
Inductor fuses it), the operator stays one opaque node in the graph and dispatches at run time.

Examples:
    >>> import torch
    >>> from gpusim.kernels import masked_merge
    >>> masked_merge.kernel_op.name, masked_merge.kernel_op.table
    ('masked_merge', 'masked_merge')
    >>> KERNEL_OPS["cat_frames_update"].backends
    ('triton', 'cpu', 'reference')
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import torch

from gpusim.kernels._dispatch import BACKEND_TABLE, select

__all__ = ["KernelOp", "KERNEL_OPS", "kernel_op", "leaves_device", "largest_leaf", "tensor_device", "tensor_numel"]

#: Every op built by :meth:`KernelOp.define`, by name.
KERNEL_OPS: dict[str, KernelOp] = {}


def leaves_device(leaves: Any) -> torch.device | None:
    """Device of the first tensor of a list of leaves (``None`` for an empty list).

    Examples:
        >>> leaves_device([torch.zeros(2)]), leaves_device([])
        (device(type='cpu'), None)
    """
    return leaves[0].device if len(leaves) else None


def largest_leaf(leaves: Any) -> int:
    """Elements of the largest tensor of a list of leaves (0 for an empty list).

    Examples:
        >>> largest_leaf([torch.zeros(2, 3), torch.zeros(4)])
        6
    """
    return max((t.numel() for t in leaves), default=0)


def tensor_device(t: torch.Tensor) -> torch.device:
    """``t.device``.

    Examples:
        >>> tensor_device(torch.zeros(1))
        device(type='cpu')
    """
    return t.device


def tensor_numel(t: torch.Tensor) -> int:
    """``t.numel()``.

    Examples:
        >>> tensor_numel(torch.zeros(2, 3))
        6
    """
    return t.numel()


def _unaliased(outs: Any) -> Any:
    """Clones repeated tensors of a list output (a library op may not return one tensor twice)."""
    if not isinstance(outs, list):
        return outs
    seen: set[int] = set()
    fresh = []
    for t in outs:
        fresh.append(t.clone() if id(t) in seen else t)
        seen.add(id(t))
    return fresh


@dataclasses.dataclass(frozen=True)
class KernelOp:
    """One row of the op table (see the module docstring).

    Args:
        name: the operator is ``torch.ops.gpusim.<name>``.
        table: the op's key in :data:`~gpusim.kernels._dispatch.BACKEND_TABLE`; the
            implementations given must be exactly the backends of that row.
        reference: the pure-torch implementation.
        fake: the meta implementation; its annotations give the operator's schema.
        cpu: the eager-CPU fast path, or ``None``.
        triton: ``"module:function"`` of the Triton host wrapper, or ``None``.
        mutates_args: names of the arguments written in place.
        device: device of the call, from the first argument.
        size: size of the call in the table's unit, from the first argument (read on CPU only).

    Raises:
        ValueError: unknown ``table`` key, or implementations that do not match its backends.

    Examples:
        >>> op = KernelOp("demo", "categorical_rand", reference=abs, fake=abs, cpu=abs)
        >>> op.backends
        ('cpu', 'reference')
        >>> KernelOp("demo", "categorical_rand", reference=abs, fake=abs)
        Traceback (most recent call last):
        ...
        ValueError: KernelOp 'demo': the implementations ('reference',) must match the backends ('cpu', 'reference') of BACKEND_TABLE['categorical_rand']
    """

    name: str
    table: str
    reference: Callable[..., Any]
    fake: Callable[..., Any]
    cpu: Callable[..., Any] | None = None
    triton: str | None = None
    mutates_args: tuple[str, ...] = ()
    device: Callable[[Any], torch.device | None] = tensor_device
    size: Callable[[Any], int] = tensor_numel
    _impls: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.table not in BACKEND_TABLE:
            raise ValueError(
                f"KernelOp {self.name!r}: table must be one of {sorted(BACKEND_TABLE)}, got {self.table!r}"
            )
        if self.triton is not None and ":" not in self.triton:
            raise ValueError(f"KernelOp {self.name!r}: triton must be 'module:function', got {self.triton!r}")
        expected = BACKEND_TABLE[self.table].backends
        if self.backends != expected:
            raise ValueError(
                f"KernelOp {self.name!r}: the implementations {self.backends} must match the backends "
                f"{expected} of BACKEND_TABLE[{self.table!r}]"
            )
        self._impls.update(reference=self.reference)
        if self.cpu is not None:
            self._impls["cpu"] = self.cpu
        if self.triton is not None:
            self._impls["triton"] = self._load_triton

    @property
    def backends(self) -> tuple[str, ...]:
        """The backends this row implements, in :data:`~gpusim.kernels._dispatch.BACKENDS` order.

        Examples:
            >>> KERNEL_OPS["masked_fill_rows_"].backends
            ('triton', 'cpu', 'reference')
        """
        have = {"triton": self.triton is not None, "cpu": self.cpu is not None, "reference": True}
        return tuple(b for b, ok in have.items() if ok)

    def _import_triton(self) -> Callable[..., Any]:
        """Imports the Triton host wrapper and keeps it in place of the loader."""
        module, _, attr = self.triton.partition(":")  # type: ignore[union-attr]
        fn = self._impls["triton"] = getattr(importlib.import_module(module), attr)
        return fn

    def _load_triton(self, *args: Any, **kwargs: Any) -> Any:
        """The ``"triton"`` implementation until the first call: imports the wrapper, runs it."""
        return self._import_triton()(*args, **kwargs)

    def implementation(self, backend: str) -> Callable[..., Any]:
        """The implementation of ``backend`` (the Triton wrapper is imported here).

        Raises:
            ValueError: the op has no such backend.

        Examples:
            >>> from gpusim.kernels import masked_merge
            >>> masked_merge.kernel_op.implementation("reference").__name__
            'masked_merge_reference'
        """
        if backend not in self._impls:
            raise ValueError(f"{self.name}: backend must be one of {self.backends}, got {backend!r}")
        return self._import_triton() if backend == "triton" else self._impls[backend]

    def dispatch(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the backend :func:`~gpusim.kernels._dispatch.select` picks for these arguments.

        Examples:
            >>> from gpusim.kernels import masked_merge
            >>> masked_merge.kernel_op.dispatch([torch.ones(1)], [torch.zeros(1)], [torch.tensor([True])])
            [tensor([1.])]
        """
        first = args[0] if args else kwargs[self._first_arg]
        dev = self.device(first)
        size = self.size(first) if dev is not None and dev.type == "cpu" else 0
        return self._impls[select(self.table, dev, size)](*args, **kwargs)

    @functools.cached_property
    def _first_arg(self) -> str:
        return next(iter(inspect.signature(self.reference).parameters))

    def define(self, stub: Callable[..., Any]) -> Callable[..., Any]:
        """Builds the public function (signature and docstring of ``stub``, whose body is not run)
        and registers the operator ``torch.ops.gpusim.<name>``; both dispatch through
        :meth:`dispatch`.

        Returns:
            The public function; its ``kernel_op`` attribute is this row.

        Raises:
            ValueError: an op of this name is already defined, or the stub, the reference, the CPU
                path and the fake do not take the same arguments.

        Examples:
            >>> from gpusim.kernels import vecnorm_normalize
            >>> vecnorm_normalize.kernel_op is KERNEL_OPS["vecnorm_normalize"]
            True
            >>> str(torch.ops.gpusim.vecnorm_normalize.default._schema)
            'gpusim::vecnorm_normalize(Tensor x, Tensor loc_sum, Tensor sq_sum, Tensor count, float eps) -> Tensor'
        """
        if self.name in KERNEL_OPS:
            raise ValueError(f"kernel op {self.name!r} is already defined")
        params = list(inspect.signature(stub).parameters)
        for role, fn in (("reference", self.reference), ("cpu", self.cpu), ("fake", self.fake)):
            if fn is not None and list(inspect.signature(fn).parameters) != params:
                raise ValueError(
                    f"kernel op {self.name!r}: the {role} takes {list(inspect.signature(fn).parameters)}, "
                    f"expected the public arguments {params}"
                )
        reference, dispatch = self.reference, self.dispatch

        @functools.wraps(stub)
        def public(*args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling():  # traced: Inductor fuses the reference
                return reference(*args, **kwargs)
            return dispatch(*args, **kwargs)

        def op_impl(*args: Any, **kwargs: Any) -> Any:
            return _unaliased(dispatch(*args, **kwargs))

        schema = torch.library.infer_schema(self.fake, mutates_args=self.mutates_args)
        library_op = torch.library.custom_op(
            f"gpusim::{self.name}", op_impl, mutates_args=self.mutates_args, schema=schema
        )
        library_op.register_fake(self.fake)
        public.kernel_op = self  # type: ignore[attr-defined]
        KERNEL_OPS[self.name] = self
        return public


def kernel_op(name: str, table: str, **row: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``@kernel_op(name, table, reference=..., fake=..., ...)`` on a stub defines the
    public function and ``torch.ops.gpusim.<name>`` (see :class:`KernelOp` for the arguments).

    Examples:
        >>> import torch
        >>> from gpusim.kernels import cat_frames_update
        >>> cat_frames_update.kernel_op.triton
        'gpusim.kernels.cat_frames_triton:cat_frames_update_triton'
    """
    return KernelOp(name, table, **row).define
