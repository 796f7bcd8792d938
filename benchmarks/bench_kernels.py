"""Throughput of the gpusim kernel ops (GB/s) against the eager torch reference.

For each op and batch size this times, side by side in one run:

* ``torch``: the pure-torch reference, eager (one or more launches per leaf);
* ``triton``: the hand-written Triton kernel (CUDA only; what eager ``gpusim`` runs on CUDA);
* ``op``: the same kernel through ``torch.ops.gpusim.*`` (adds the dispatcher overhead);
* ``inductor``: ``torch.compile`` of the reference (what a compiled rollout runs); its compile
  time is reported apart.

GB/s counts the logical bytes of the op (inputs read once, outputs written once), the same
number for every implementation, so the columns compare directly. Times are per call, averaged
over a pipelined loop with one device sync at the end (so small sizes show launch overhead).
Without a GPU, only the CPU figures of ``torch`` and ``inductor`` are printed (say so when
quoting them).

Usage::

    python benchmarks/bench_kernels.py [--sizes 1 1024 65536 1048576] [--no-compile] [--json F]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import torch

from gpusim.kernels import (
    cat_frames_update_reference,
    masked_merge_reference,
    vecnorm_normalize_reference,
    vecnorm_update_normalize_reference_,
)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_per_call(fn: Callable[[], object], device: torch.device, min_time: float = 0.25) -> float:
    """Seconds per call of ``fn``: warm up, then a pipelined loop of at least ``min_time`` s."""
    for _ in range(3):
        fn()
    _sync(device)
    iters, elapsed = 1, 0.0
    while True:
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        _sync(device)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time or iters >= 100_000:
            return elapsed / iters
        iters *= max(2, int(min_time / max(elapsed, 1e-6)))


def _nbytes(*ts: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in ts)


# --- cases: each returns (label, logical bytes, {impl: fn}) -----------------------------------


def case_masked_merge(n: int, device: torch.device, kernels: bool):
    """step_and_maybe_reset-like merge: 8 small leaves of a CartPole-like root, 5% resets."""
    g = torch.Generator(device=device).manual_seed(0)
    specs = [((n, 4), torch.float32), ((n, 4), torch.float32), ((n, 1), torch.float32),
             ((n, 1), torch.bool), ((n, 1), torch.bool), ((n, 1), torch.bool),
             ((n, 1), torch.int64), ((n, 1), torch.bool)]  # fmt: skip

    def make(shape, dtype):
        if dtype == torch.bool:
            return torch.rand(shape, generator=g, device=device) > 0.5
        return torch.rand(shape, generator=g, device=device).to(dtype)

    new = [make(s, d) for s, d in specs]
    old = [make(s, d) for s, d in specs]
    mask = torch.rand(n, generator=g, device=device) < 0.05
    masks = [mask] * len(new)
    nbytes = 3 * _nbytes(*new) + len(new) * _nbytes(mask)
    impls: dict[str, Callable[[], object]] = {"torch": lambda: masked_merge_reference(new, old, masks)}
    if kernels:
        from gpusim.kernels.masked_merge_triton import masked_merge_triton

        impls["triton"] = lambda: masked_merge_triton(new, old, masks)
        impls["op"] = lambda: torch.ops.gpusim.masked_merge(new, old, masks)
    compiled = torch.compile(masked_merge_reference, dynamic=False)
    impls["inductor"] = lambda: compiled(new, old, masks)
    return "masked_merge 8 leaves", nbytes, impls


def case_masked_fill(n: int, device: torch.device, kernels: bool):
    """In-place variant of the merge (reset values written into the current root)."""
    label = "masked_fill_rows_ 8 leaves"
    g = torch.Generator(device=device).manual_seed(1)
    shapes = [(n, 4), (n, 4), (n, 1), (n, 1)]
    dst = [torch.rand(s, generator=g, device=device) for s in shapes]
    src = [torch.rand(s, generator=g, device=device) for s in shapes]
    dst += [torch.zeros(n, 1, dtype=torch.bool, device=device) for _ in range(3)]
    src += [torch.ones(n, 1, dtype=torch.bool, device=device) for _ in range(3)]
    dst.append(torch.zeros(n, 1, dtype=torch.int64, device=device))
    src.append(torch.ones(n, 1, dtype=torch.int64, device=device))
    mask = torch.rand(n, generator=g, device=device) < 0.05
    masks = [mask] * len(dst)
    nbytes = 3 * _nbytes(*dst) + len(dst) * _nbytes(mask)
    from gpusim.kernels import masked_fill_rows_reference_

    impls: dict[str, Callable[[], object]] = {"torch": lambda: masked_fill_rows_reference_(dst, src, masks)}
    if kernels:
        from gpusim.kernels.masked_merge_triton import masked_fill_rows_triton_

        impls["triton"] = lambda: masked_fill_rows_triton_(dst, src, masks)
    compiled = torch.compile(masked_fill_rows_reference_, dynamic=False)
    impls["inductor"] = lambda: compiled(dst, src, masks)
    return label, nbytes, impls


def _cat_frames_case(label, batch, feature, dim, dtype, n_frames, device, kernels):
    g = torch.Generator(device=device).manual_seed(2)
    buf_shape = list(batch + feature)
    buf_shape[dim] *= n_frames
    buf = (torch.rand(buf_shape, generator=g, device=device) * 100).to(dtype)
    frame = (torch.rand(batch + feature, generator=g, device=device) * 100).to(dtype)
    mask = torch.rand(batch, generator=g, device=device) < 0.05
    nbytes = 3 * _nbytes(buf) + _nbytes(frame, mask)  # read buf, write buf, write copy
    impls: dict[str, Callable[[], object]] = {
        "torch": lambda: cat_frames_update_reference(buf, frame, mask, dim, "same", 0.0)
    }
    if kernels:
        from gpusim.kernels.cat_frames_triton import cat_frames_update_triton

        impls["triton"] = lambda: cat_frames_update_triton(buf, frame, mask, dim, "same", 0.0)
        impls["op"] = lambda: torch.ops.gpusim.cat_frames_update(buf, frame, mask, dim, "same", 0.0)
    compiled = torch.compile(cat_frames_update_reference, dynamic=False)
    impls["inductor"] = lambda: compiled(buf, frame, mask, dim, "same", 0.0)
    return label, nbytes, impls


def case_cat_frames_vec(n: int, device: torch.device, kernels: bool):
    """CatFrames(4) over a (N, 4) float32 observation."""
    return _cat_frames_case("cat_frames (N,4)x4 f32", (n,), (4,), -1, torch.float32, 4, device, kernels)


def case_cat_frames_img(n: int, device: torch.device, kernels: bool):
    """CatFrames(4) over (N, 1, 84, 84) uint8 frames along dim=-3 (Atari-like)."""
    n = max(1, n // 256)  # keep the buffer near the size of the vector cases
    return _cat_frames_case(
        f"cat_frames (N/256={n},1,84,84)x4 u8", (n,), (1, 84, 84), -3, torch.uint8, 4, device,
        kernels,
    )  # fmt: skip


def case_vecnorm(n: int, device: torch.device, kernels: bool, width: int = 4):
    """Fused VecNorm update + normalize of a (N, width) float32 observation."""
    g = torch.Generator(device=device).manual_seed(3)
    x = torch.randn(n, width, generator=g, device=device)
    stats = [torch.zeros(width, device=device), torch.zeros(width, device=device),
             torch.zeros((), device=device)]  # fmt: skip
    nbytes = 2 * _nbytes(x)
    impls: dict[str, Callable[[], object]] = {
        "torch": lambda: vecnorm_update_normalize_reference_(x, *stats, 0.9999, 1e-4, 1)
    }
    if kernels:
        from gpusim.kernels.vecnorm_triton import vecnorm_update_normalize_triton_

        impls["triton"] = lambda: vecnorm_update_normalize_triton_(x, *stats, 0.9999, 1e-4, 1)
        impls["op"] = lambda: torch.ops.gpusim.vecnorm_update_normalize_(x, *stats, 0.9999, 1e-4, 1)
    compiled = torch.compile(vecnorm_update_normalize_reference_, dynamic=False)
    impls["inductor"] = lambda: compiled(x, *stats, 0.9999, 1e-4, 1)
    return f"vecnorm update+norm (N,{width}) f32", nbytes, impls


def case_vecnorm_wide(n: int, device: torch.device, kernels: bool):
    """Fused VecNorm update + normalize of a (N/16, 64) float32 observation."""
    return case_vecnorm(max(1, n // 16), device, kernels, width=64)


def case_vecnorm_normalize(n: int, device: torch.device, kernels: bool):
    """VecNorm normalize only (frozen statistics) of a (N, 4) float32 observation."""
    g = torch.Generator(device=device).manual_seed(4)
    x = torch.randn(n, 4, generator=g, device=device)
    stats = [torch.ones(4, device=device), torch.full((4,), 3.0, device=device),
             torch.full((), 2.0, device=device)]  # fmt: skip
    impls: dict[str, Callable[[], object]] = {"torch": lambda: vecnorm_normalize_reference(x, *stats, 1e-4)}
    if kernels:
        from gpusim.kernels.vecnorm_triton import vecnorm_normalize_triton

        impls["triton"] = lambda: vecnorm_normalize_triton(x, *stats, 1e-4)
    compiled = torch.compile(vecnorm_normalize_reference, dynamic=False)
    impls["inductor"] = lambda: compiled(x, *stats, 1e-4)
    return "vecnorm normalize (N,4) f32", 2 * _nbytes(x), impls


CASES = [case_masked_merge, case_masked_fill, case_cat_frames_vec, case_cat_frames_img,
         case_vecnorm, case_vecnorm_wide, case_vecnorm_normalize]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 1024, 65536, 1048576])
    parser.add_argument("--no-compile", action="store_true", help="skip the inductor column")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--min-time", type=float, default=0.25)
    args = parser.parse_args()
    device = torch.device(args.device)
    kernels = device.type == "cuda"
    if kernels:
        name = torch.cuda.get_device_name(device)
        import triton

        print(f"device: {name}; torch {torch.__version__}; triton {triton.__version__}")
    else:
        print(f"device: CPU ({torch.get_num_threads()} threads), torch {torch.__version__}: "
              "no GPU, so no Triton kernel figures (the kernels need CUDA)")  # fmt: skip
    rows = []
    header = f"{'op':36s} {'N':>8s} {'impl':>9s} {'us/call':>10s} {'GB/s':>8s} {'vs torch':>8s}"
    print(header)
    print("-" * len(header))
    for case in CASES:
        for n in args.sizes:
            label, nbytes, impls = case(n, device, kernels)
            if args.no_compile:
                impls.pop("inductor", None)
            base = None
            for impl, fn in impls.items():
                extra = ""
                if impl == "inductor":
                    t0 = time.perf_counter()
                    fn()
                    _sync(device)
                    extra = f"  (compile {time.perf_counter() - t0:.1f} s)"
                sec = time_per_call(fn, device, args.min_time)
                base = sec if impl == "torch" else base
                gbs = nbytes / sec / 1e9
                speed = base / sec if base else float("nan")
                print(f"{label:36s} {n:8d} {impl:>9s} {sec * 1e6:10.1f} {gbs:8.2f} "
                      f"{speed:7.2f}x{extra}", flush=True)  # fmt: skip
                rows.append(dict(op=label, n=n, impl=impl, us=sec * 1e6, gbps=gbs,
                                 speedup_vs_torch=speed))  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=str(device), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
