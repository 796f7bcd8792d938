"""Where a compiled rollout's time goes inside Inductor's one C++ kernel: a timer per loop nest.

Inductor fuses a CPU step into one C++ function of many loop nests, which ``torch.profiler``
shows as one row. This script wraps ``AsyncCompile.cpp_pybinding`` (a torch internal; a tool,
not library code) to put an ``rdtsc`` counter around each top-level nest of the generated source,
runs a native env's compiled rollout (warm-up calls not counted), and prints each nest's share
at exit (nests above 1%); the instrumented sources are written to ``/tmp/gpusim_nests_k*.cpp`` to
read the nests by number. The counters measure wall time: on a loaded machine a nest also
absorbs the time the thread was preempted.

Usage: ``OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/profile_inductor_nests.py
MPE/simple_spread-v0 8192 24``.
"""

import re
import sys
import time

import torch
import torch._inductor.config as inductor_config
from torch._inductor import async_compile

import gpusim as gs
from gpusim.envs.compiled import CompiledRollout

env_id, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
warm = steps + 3  # calls not counted: the compiling call, the first rollout
inductor_config.fx_graph_cache = False  # compile (and instrument) afresh
kernels = [0]


def instrument(src: str) -> str:
    m = re.search(r'(extern "C"[^{]*\{)(.*)\Z', src, re.S)
    head, body = m.group(1), m.group(2)
    out, depth, n = [], 0, 0
    for line in body.split("\n"):
        opens, closes = line.count("{"), line.count("}")
        if depth == 0 and opens and line.strip() == "{":
            if n == 0:
                out.append("    gs_calls++;")
            out.append("    { unsigned long long gs_t0 = __rdtsc();")
            depth = 1
            continue
        if depth == 1 and closes and line.strip() == "}":
            out.append(f"    if (gs_calls > {warm}) gs_acc[{n}] += __rdtsc() - gs_t0; }}")
            n, depth = n + 1, 0
            continue
        depth += opens - closes
        out.append(line)
    k = kernels[0]
    kernels[0] += 1
    with open(f"/tmp/gpusim_nests_k{k}.cpp", "w") as f:
        f.write(src)
    report = (
        f"struct GsReport {{ ~GsReport() {{ unsigned long long s = 0; for (int i = 0; i < {n}; i++) s += gs_acc[i];"
        f' if (!s) return; fprintf(stderr, "kernel {k}: %.1f Mcycles\\n", s / 1e6);'
        f" for (int i = 0; i < {n}; i++) if (gs_acc[i] * 100 > s)"
        f' fprintf(stderr, "  nest %d: %.1f%%\\n", i, 100.0 * gs_acc[i] / s); }} }} gs_report;\n'
    )
    pre = f"#include <x86intrin.h>\n#include <cstdio>\nstatic unsigned long long gs_acc[{n}]; static long gs_calls;\n"
    return src[: m.start()] + pre + report + head + "\n".join(out)


original = async_compile.AsyncCompile.cpp_pybinding


def cpp_pybinding(self, argtypes, source_code):
    return original(self, argtypes, instrument(source_code))


async_compile.AsyncCompile.cpp_pybinding = cpp_pybinding
torch.set_num_threads(1)
env = gs.make(env_id, num_envs=batch, seed=0)
runner = CompiledRollout(env, verbose=False)
runner(4)
runner(steps)
start = time.thread_time()
for _ in range(3):
    runner(steps)
seconds = (time.thread_time() - start) / 3
print(
    f"{env_id} batch {batch}: {batch * steps / seconds / 1e6:.3f} M env-steps/s (CPU time), {1e3 * seconds / steps:.3f} ms/step"
)
