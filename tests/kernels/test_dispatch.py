"""The selection point (select / force_backend / record_backends / GPUSIM_BACKEND) and the op table
(KernelOp: one row builds the public function and torch.ops.gpusim.<name>)."""

from __future__ import annotations

import ast
import inspect
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import gpusim.kernels as K
from gpusim.kernels import _dispatch
from gpusim.kernels._dispatch import BACKEND_TABLE, force_backend, record_backends, select, threshold
from gpusim.kernels._registry import KERNEL_OPS, KernelOp

CPU, CUDA = torch.device("cpu"), torch.device("cuda")  # a device object: CUDA is not initialised


@pytest.mark.parametrize("op", sorted(BACKEND_TABLE))
def test_cpu_threshold_rule(op):
    t = threshold(op)
    assert select(op, CPU, t) == "cpu" and select(op, "cpu", 10 * t) == "cpu"
    if t > 0:
        assert select(op, CPU, t - 1) == "reference"
    assert select(op, torch.device("meta"), 10 * t) == "reference"
    assert select(op, None, 10 * t) == "reference"


@pytest.mark.parametrize("op", sorted(BACKEND_TABLE))
@pytest.mark.parametrize("installed", [True, False])
def test_cuda_rule(op, installed, monkeypatch):
    monkeypatch.setattr(_dispatch, "triton_available", lambda: installed)
    has_kernel = "triton" in BACKEND_TABLE[op].backends
    assert select(op, CUDA, 0) == ("triton" if installed and has_kernel else "reference")
    assert select(op, CUDA, 10**9) != "cpu"  # a CPU path never runs on device tensors


def test_compiled_code_takes_the_reference():
    def fn(x):
        return x + (1 if select("masked_merge", x.device, 10**9) == "reference" else 2)

    with force_backend("cpu"):
        out = torch.compile(fn, fullgraph=True, backend="eager")(torch.zeros(2))
    assert out.tolist() == [1.0, 1.0]


def test_force_backend_all_some_nested_and_restored():
    big = 10**9
    with force_backend("reference"):
        assert select("masked_merge", CPU, big) == "reference"
        with force_backend(None):  # back to the automatic choice
            assert select("masked_merge", CPU, big) == "cpu"
        with force_backend("cpu", ops=["vecnorm", "rollout_cache"]):
            assert select("vecnorm", CPU, 0) == "cpu" and select("rollout_cache", CPU, 0) == "cpu"
            assert select("masked_merge", CPU, big) == "cpu"  # not forced here: automatic
        assert select("vecnorm", CPU, big) == "reference"
    assert select("masked_merge", CPU, big) == "cpu"


def test_forced_backend_the_op_lacks_gives_the_reference(monkeypatch):
    monkeypatch.setattr(_dispatch, "triton_available", lambda: True)
    with force_backend("triton"):
        assert select("categorical_rand", CPU, 10**9) == "reference"  # no Triton kernel
        assert select("masked_merge", CPU, 0) == "triton"  # CPU tensors: the interpreter's business
    with force_backend("cpu"):
        assert select("masked_merge", CUDA, 10**9) == "reference"  # never a host path on a device
    monkeypatch.setattr(_dispatch, "triton_available", lambda: False)
    with force_backend("triton"), pytest.raises(RuntimeError, match="'triton' is forced for 'vecnorm'"):
        select("vecnorm", CUDA, 0)


def test_bad_names_raise():
    with pytest.raises(ValueError, match=r"op must be one of \[.*'masked_merge'.*\], got 'masked_marge'"):
        select("masked_marge", CPU, 0)
    with pytest.raises(ValueError, match="op must be one of"):
        threshold("nope")
    with pytest.raises(ValueError, match=r"backend must be one of \('triton', 'cpu', 'reference'\) or None, got 'gpu'"):
        with force_backend("gpu"):
            pass
    with pytest.raises(ValueError, match="got 'nope'"):
        with force_backend("cpu", ops="nope"):
            pass


def _size(text: str) -> int:
    number, _, unit = text.partition(" ")
    return int(number) << {"": 0, "MiB": 20}[unit]


def test_documented_table_is_the_table():
    rows = {}
    for line in _dispatch.__doc__.splitlines():
        m = re.fullmatch(r"``(\w+)``\s+(\d+(?: MiB)?)\s{2,}(.+?)\s{2,}(\w+(?:, \w+)*)\s*", line)
        if m:
            rows[m[1]] = (_size(m[2]), m[3], tuple(m[4].split(", ")))
    assert rows == {op: (e.threshold, e.unit, e.backends) for op, e in BACKEND_TABLE.items()}


def test_record_backends_records_in_order_and_stops():
    with record_backends() as calls:
        select("vecnorm", CPU, 5)
        select("sparse_reset", CPU, 255)
    select("vecnorm", CPU, 5)
    assert calls == [("vecnorm", "cpu"), ("sparse_reset", "reference")]


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=540,  # (a hang guard: a fresh interpreter imports torch, slow on a loaded machine)
        env={**os.environ, **env},
    )


def test_gpusim_backend_environment_variable():
    res = _run(
        """
        import torch
        from gpusim.kernels import masked_merge, record_backends, select
        assert select("masked_merge", "cpu", 10**9) == "reference"
        with record_backends() as calls:
            masked_merge([torch.ones(9000)], [torch.zeros(9000)], [torch.ones(9000, dtype=torch.bool)])
        assert calls == [("masked_merge", "reference")], calls
        print("ok")
        """,
        GPUSIM_BACKEND="Reference",
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
    res = _run("import gpusim.kernels", GPUSIM_BACKEND="fast")
    assert res.returncode != 0
    assert "GPUSIM_BACKEND must be one of 'auto', 'triton', 'cpu', 'reference', got 'fast'" in res.stderr


# --- the op table ------------------------------------------------------------------------------

PUBLIC = {
    "masked_merge": K.masked_merge,
    "masked_fill_rows_": K.masked_fill_rows_,
    "cat_frames_update": K.cat_frames_update,
    "vecnorm_update_": K.vecnorm_update_,
    "vecnorm_normalize": K.vecnorm_normalize,
    "vecnorm_update_normalize_": K.vecnorm_update_normalize_,
}


def test_every_op_is_in_the_table_with_matching_signatures():
    assert set(KERNEL_OPS) == set(PUBLIC)
    for name, public in PUBLIC.items():
        row = KERNEL_OPS[name]
        assert public.kernel_op is row and public.__name__ == name
        assert row.backends == BACKEND_TABLE[row.table].backends
        params = list(inspect.signature(public).parameters)
        for backend in row.backends:  # every implementation takes the public arguments
            assert list(inspect.signature(row.implementation(backend)).parameters) == params, (name, backend)
        assert list(inspect.signature(row.fake).parameters) == params
        schema = getattr(torch.ops.gpusim, name).default._schema
        assert [a.name for a in schema.arguments] == params
        assert sorted(a.name for a in schema.arguments if a.is_write) == sorted(row.mutates_args)


def test_kernel_op_row_validation():
    with pytest.raises(ValueError, match=r"table must be one of \[.*\], got 'merge'"):
        KernelOp("x", "merge", reference=abs, fake=abs)
    with pytest.raises(
        ValueError,
        match=r"implementations \('cpu', 'reference'\) must match the backends \('triton', 'cpu', 'reference'\)",
    ):
        KernelOp("x", "masked_merge", reference=abs, fake=abs, cpu=abs)
    with pytest.raises(ValueError, match="triton must be 'module:function', got 'mod.fn'"):
        KernelOp("x", "masked_merge", reference=abs, fake=abs, cpu=abs, triton="mod.fn")
    with pytest.raises(ValueError, match="kernel op 'masked_merge' is already defined"):
        KERNEL_OPS["masked_merge"].define(lambda new, old, masks: None)
    row = KernelOp("not_registered", "categorical_rand", reference=lambda a, b: a, fake=lambda a, b: a,
                   cpu=lambda a, c: a)  # fmt: skip
    with pytest.raises(ValueError, match=r"the cpu takes \['a', 'c'\], expected the public arguments \['a', 'b'\]"):
        row.define(lambda a, b: None)
    assert "not_registered" not in KERNEL_OPS and not hasattr(torch.ops.gpusim, "not_registered")
    with pytest.raises(ValueError, match=r"backend must be one of \('triton', 'cpu', 'reference'\), got 'gpu'"):
        KERNEL_OPS["masked_merge"].implementation("gpu")


def test_library_op_and_public_function_share_the_dispatch():
    """The operators take the CPU paths the public functions take (they used not to)."""
    n = threshold("masked_fill_rows")
    mask = torch.arange(n) % 3 == 0
    dst_pub, dst_op = torch.zeros(n), torch.zeros(n)
    buf_pub, buf_op = torch.zeros(n // 2, 2), torch.zeros(n // 2, 2)
    frame = torch.ones(n // 2, 1)
    with record_backends() as calls:
        K.masked_fill_rows_([dst_pub], [torch.ones(n)], [mask])
        torch.ops.gpusim.masked_fill_rows_([dst_op], [torch.ones(n)], [mask])
        out_pub = K.cat_frames_update(buf_pub, frame, mask[: n // 2], -1, "constant", 2.0)
        out_op = torch.ops.gpusim.cat_frames_update(buf_op, frame, mask[: n // 2], -1, "constant", 2.0)
    assert calls == [("masked_fill_rows", "cpu")] * 2 + [("cat_frames_update", "cpu")] * 2
    assert torch.equal(dst_pub, dst_op) and torch.equal(dst_pub, mask.float())
    assert torch.equal(out_pub, out_op) and torch.equal(buf_pub, buf_op)


def test_keyword_arguments_dispatch_like_positional_ones():
    n = threshold("masked_merge")
    new, old, mask = [torch.ones(n)], [torch.zeros(n)], [torch.arange(n) % 2 == 0]
    with record_backends() as calls:
        out = K.masked_merge(new=new, old=old, masks=mask)
        y = K.vecnorm_normalize(torch.ones(2, 1), loc_sum=torch.ones(1), sq_sum=torch.ones(1),
                                count=torch.ones(()), eps=1e-4)  # fmt: skip
    assert calls == [("masked_merge", "cpu"), ("vecnorm", "cpu")]
    assert torch.equal(out[0], mask[0].float()) and torch.equal(y, torch.zeros(2, 1))


def test_library_op_returns_no_aliases():
    """The CPU merge returns a leaf passed twice once; an operator may not return a tensor twice."""
    n = threshold("masked_merge")
    new, old, mask = torch.ones(n), torch.zeros(n), torch.arange(n) % 2 == 0
    pub = K.masked_merge([new, new], [old, old], [mask, mask])
    assert pub[0] is pub[1]
    out = torch.ops.gpusim.masked_merge([new, new], [old, old], [mask, mask])
    assert out[0] is not out[1] and out[0].data_ptr() != out[1].data_ptr()
    assert all(torch.equal(o, pub[0]) for o in out)


def _imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_import_cycle_between_kernel_modules_and_their_triton_modules():
    root = pathlib.Path(K.__file__).parent
    for triton_module in sorted(root.glob("*_triton.py")):
        imported = _imports(triton_module)
        assert not {n for n in imported if n.startswith("gpusim.") and "kernels._" not in n}, (
            f"{triton_module.name} imports {sorted(imported)}: only the private helpers may be imported"
        )
    for module in sorted(root.glob("*.py")):  # the others name their kernels only as strings
        if not module.name.endswith("_triton.py"):
            kernels = {n for n in _imports(module) if n.split(".")[0] == "triton" or "_triton" in n}
            assert not kernels, (module.name, kernels)
