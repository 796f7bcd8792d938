"""torch.compile(fullgraph=True) traces every kernel op on CPU; importing has no side effects."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

import gpusim.kernels as K


def _inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    n = 9
    mask = torch.rand(n, generator=gen) > 0.5
    new = [torch.randn(n, 4, generator=gen), torch.randint(0, 9, (n, 1), generator=gen),
           torch.rand(n, 2, 3, generator=gen) > 0.5]  # fmt: skip
    old = [torch.randn(n, 4, generator=gen), torch.randint(0, 9, (n, 1), generator=gen),
           torch.rand(n, 2, 3, generator=gen) > 0.5]  # fmt: skip
    masks = [mask, mask, torch.rand(n, 2, generator=gen) > 0.5]
    buf = torch.randn(n, 12, generator=gen)
    frame = torch.randn(n, 3, generator=gen)
    x = torch.randn(n, 3, generator=gen)
    stats = (torch.rand(3, generator=gen), torch.rand(3, generator=gen) + 1, torch.full((), 4.0))
    return new, old, masks, buf, frame, x, stats


def _all_public(new, old, masks, buf, frame, x, loc, sq, cnt):
    merged = K.masked_merge(new, old, masks)
    dst = [o.clone() for o in old]
    K.masked_fill_rows_(dst, new, masks)
    obs = K.cat_frames_update(buf, frame, masks[0], -1, "constant", 0.5)
    obs2 = K.cat_frames_update(buf, frame, None, -1)
    y0 = K.vecnorm_normalize(x, loc, sq, cnt, 1e-4)
    K.vecnorm_update_(x, loc, sq, cnt, 0.99, 1)
    y1 = K.vecnorm_update_normalize_(x, loc, sq, cnt, 0.99, 1e-4, 1)
    return merged, dst, obs, obs2, y0, y1


def _all_ops(new, old, masks, buf, frame, x, loc, sq, cnt):
    ops = torch.ops.gpusim
    merged = ops.masked_merge(new, old, masks)
    dst = [o.clone() for o in old]
    ops.masked_fill_rows_(dst, new, masks)
    obs = ops.cat_frames_update(buf, frame, masks[0], -1, "same", 0.0)
    y0 = ops.vecnorm_normalize(x, loc, sq, cnt, 1e-4)
    ops.vecnorm_update_(x, loc, sq, cnt, 0.99, 1)
    y1 = ops.vecnorm_update_normalize_(x, loc, sq, cnt, 0.99, 1e-4, 1)
    return merged, dst, obs, y0, y1


def _check_compiled(fn, backend: str) -> None:
    new, old, masks, buf, frame, x, stats = _inputs()
    eager_state = (buf.clone(), *(s.clone() for s in stats))
    comp_state = (buf.clone(), *(s.clone() for s in stats))
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=backend)  # raises on a graph break
    for _ in range(2):  # second call: the compiled graph is reused, state carried over
        out_e = fn(new, old, masks, eager_state[0], frame, x, *eager_state[1:])
        out_c = compiled(new, old, masks, comp_state[0], frame, x, *comp_state[1:])
        torch.testing.assert_close(out_c, out_e)
        torch.testing.assert_close(comp_state, eager_state)


def test_public_functions_compile_fullgraph_inductor():
    _check_compiled(_all_public, "inductor")


def test_registered_ops_compile_fullgraph():
    _check_compiled(_all_ops, "aot_eager")


def test_import_has_no_triton_or_cuda_side_effects():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["triton"] = None  # pretend Triton is not installed
        import torch
        import gpusim.kernels as K
        loaded = [n for n in sys.modules if n.startswith("gpusim.kernels.") and "triton" in n]
        assert not loaded, loaded
        assert not torch.cuda.is_initialized()
        assert not K._dispatch.triton_available()
        m = torch.tensor([True, False])
        out = K.masked_merge([torch.ones(2)], [torch.zeros(2)], [m])
        assert out[0].tolist() == [1.0, 0.0]
        print("ok")
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=540)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("ok")
