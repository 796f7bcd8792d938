"""A second process reuses the first one's compile through Inductor's persistent caches
(``docs/compile.md``), checked through torch's counters, not wall-clock time; one compilation
per runner; the compile lines go through the runner's ``log``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpusim._torch_internals import compile_counters
from gpusim.envs.compiled import _cache_note

ROOT = Path(__file__).resolve().parents[2]

# one child process: compile a CartPole runner, run it twice, report the counters and the data
CHILD = """
import hashlib, json, sys
import gpusim as gs
from gpusim._torch_internals import compile_counters, compile_cache_dir

lines = []
env = gs.CartPoleEnv(batch_size=[4], seed=0)
runner = env.compile(steps_per_call=1, log=lines.append)
first = runner(6)
second = runner(6, tensordict=runner.last_root(), auto_reset=False)
digest = hashlib.sha256()
for data in (first, second):
    for key in sorted(data.keys(True, True), key=str):
        digest.update(data.get(key).contiguous().numpy().tobytes())
print(json.dumps({
    "counters": compile_counters(),
    "compiles": runner.compiles,
    "compile_seconds": runner.compile_seconds,
    "lines": lines,
    "cache_dir": compile_cache_dir(),
    "digest": digest.hexdigest(),
}))
"""


def _child(cache: Path) -> dict:
    env = dict(os.environ)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(cache),
        OMP_NUM_THREADS="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
    )
    env.pop("GPUSIM_COMPILE_VERBOSE", None)
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not compile_counters(), reason="this torch keeps no compile counters")
def test_second_process_hits_the_persistent_compile_cache(tmp_path):
    cache = tmp_path / "inductor"
    cold = _child(cache)
    warm = _child(cache)
    assert cold["cache_dir"] == warm["cache_dir"] == str(cache)
    # the first process compiles (misses), the second finds everything in the cache
    assert cold["counters"]["fxgraph_cache_miss"] >= 1
    assert cold["counters"]["fxgraph_cache_hit"] == 0
    assert warm["counters"]["fxgraph_cache_hit"] >= 1
    assert warm["counters"]["fxgraph_cache_miss"] == 0
    assert warm["counters"]["autograd_cache_hit"] >= 1
    assert warm["counters"]["autograd_cache_miss"] == 0
    assert (cache / "fxgraph").is_dir()
    # one compilation per runner (the continued run reuses it), timed and printed once
    for child in (cold, warm):
        assert child["compiles"] == 1 and child["counters"]["graphs"] == 1
        assert child["compile_seconds"] > 0
        assert len(child["lines"]) == 2
        assert child["lines"][0].startswith("gpusim: compiling 1 step per call (CartPoleEnv")
        assert child["lines"][1].startswith("gpusim: compiled in ")
    assert "0 hits, 1 miss" in cold["lines"][1] and "1 hit, 0 misses" in warm["lines"][1]
    assert warm["digest"] == cold["digest"]  # the cached graph gives the same bits


def test_cache_note_reads_the_counters():
    before = dict.fromkeys(("graphs", "fxgraph_cache_hit", "fxgraph_cache_miss"), 0)
    after = {**before, "graphs": 1, "fxgraph_cache_hit": 2}
    assert _cache_note(before, after) == " (Inductor cache: 2 hits, 0 misses)"
    assert _cache_note(before, before) == ""  # Inductor not reached (another backend)
    assert _cache_note({}, {}) == ""  # no counters in this torch
