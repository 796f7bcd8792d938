"""The torch internals of compiled rollouts, quarantined in ``gpusim._torch_internals``: the probe
at import (tested torch range, every private name present) and the public-API fallback, forced
here, which must give the data of the fast path."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from gpusim import _torch_internals as internals
from gpusim.envs.compiled import CompiledRollout
from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import StepCounter, TransformedEnv


def test_probe_accepts_this_torch_and_rejects_untested_versions():
    assert internals.check_private_api() == (True, "")
    assert internals.PRIVATE_API
    for version in ("2.13.0", "2.13.1", "2.14.0", "2.14.1+cu128"):
        assert internals.check_private_api(version) == (True, ""), version
    for version in ("2.12.1", "2.15.0", "3.0.0"):
        ok, reason = internals.check_private_api(version)
        assert not ok and f"torch {version} is outside" in reason and ">= 2.13, < 2.15" in reason


def test_probe_names_a_missing_internal(monkeypatch):
    import torch._dynamo.eval_frame as eval_frame

    monkeypatch.setattr(eval_frame, "_stance", None)
    ok, reason = internals.check_private_api()
    assert not ok and "_stance" in reason
    monkeypatch.undo()
    monkeypatch.delattr(torch._C._dynamo.eval_frame, "_debug_get_cache_entry_list")
    ok, reason = internals.check_private_api()
    assert not ok and "_debug_get_cache_entry_list" in reason


def test_pyproject_bounds_torch_to_the_tested_range():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml")) as f:
        text = f.read()
    low, high = internals.TESTED
    assert f'"torch>={low[0]}.{low[1]},<{high[0]}.{high[1]}"' in text


def test_environment_variable_turns_the_internals_off_silently():
    code = "import warnings; warnings.simplefilter('error'); import gpusim._torch_internals as i; print(i.PRIVATE_API)"
    env = {**os.environ, "GPUSIM_TORCH_INTERNALS": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_gcc_loop_vectorizer_drops_only_that_flag_while_active():
    import torch._inductor.cpp_builder as builder

    compiler = builder.get_cpp_compiler()
    before = builder._get_optimization_cflags(compiler)[0]
    with internals.gcc_loop_vectorizer():
        inside = builder._get_optimization_cflags(compiler)[0]
    assert builder._get_optimization_cflags(compiler)[0] == before  # restored on exit
    assert inside == [f for f in before if f != "fno-tree-loop-vectorize"]
    if builder._is_gcc(compiler):
        assert len(inside) == len(before) - 1


def test_runners_of_envs_that_ask_compile_with_the_loop_vectorizer():
    import gpusim as gs

    assert CompiledRollout(gs.make("MinAtar/Breakout-v1", num_envs=2), verbose=False)._backend.loop_vectorize
    assert not CompiledRollout(CartPoleEnv(batch_size=[2]), verbose=False)._backend.loop_vectorize


def test_fallback_functions_take_the_public_way(monkeypatch):
    monkeypatch.setattr(internals, "PRIVATE_API", False)
    assert internals.inductor_backend({}, lambda graph: graph) is None
    assert internals.entry_function(test_fallback_functions_take_the_public_way, lambda graph: True) is None
    # public torch.compile options (listed by torch._inductor.list_options()): kept, same numerics
    assert sorted(internals.inductor_options(skip_size_asserts=True, cpu_strided_vectorize=True)) == [
        "cpp.enable_tiling_heuristics",
        "size_asserts",
    ]
    with internals.skip_guards():  # a no-op context
        pass
    import torch._inductor.cpp_builder as builder

    original = builder._get_optimization_cflags
    with internals.gcc_loop_vectorizer():  # a no-op context
        assert builder._get_optimization_cflags is original
    runner = CompiledRollout(CartPoleEnv(batch_size=[2]), verbose=False)
    assert not runner._direct and runner._backend is None
    cuda_runner = SimpleNamespace(
        env=SimpleNamespace(device=torch.device("cuda"), batch_size=torch.Size([2])), mode=None
    )
    with pytest.raises(ValueError, match="torch internals are off"):  # (the check reads no GPU)
        CompiledRollout._wants_cuda_graphs(cuda_runner, True, {})
    assert CompiledRollout._wants_cuda_graphs(cuda_runner, None, {}) is False


def _balance(td):
    return td.set("action", (td["observation"][..., 2] > 0).long())


def _runs(runner, env):
    root = env.reset()
    first, root = runner.run(7, root)
    second, root = runner.run(8, root)  # continued: every call compiled, later ones direct
    return first, second, root


def test_forced_fallback_gives_the_data_of_the_fast_path(monkeypatch):
    torch._dynamo.reset()

    def make():
        return TransformedEnv(CartPoleEnv(batch_size=[8], seed=3, auto_reset_mode="masked"), StepCounter(max_steps=4))

    env = make()
    fast = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    expected = _runs(fast, env)
    assert fast.direct_calls > 0
    monkeypatch.setattr(internals, "PRIVATE_API", False)
    env = make()
    slow = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    got = _runs(slow, env)
    assert slow.direct_calls == 0 and slow._backend is None
    for a, b in zip(expected, got):
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        for key, value in a.items(True, True):
            assert torch.equal(b.get(key), value), key
    assert bool(got[1]["next", "truncated"].any())  # resets inside the graph


def test_each_runners_step_has_a_dynamo_cache_of_its_own():
    """``runner.step`` compiles a function per runner: sharing one code object, the runners of
    more envs than Dynamo's recompile limit (8) ran eagerly, silently, past the limit."""
    torch._dynamo.reset()
    for _ in range(torch._dynamo.config.recompile_limit + 2):
        env = CartPoleEnv(batch_size=[2])
        runner = CompiledRollout(env, lambda td: td.set("action", torch.zeros(2, dtype=torch.long)), backend="eager")
        before = internals.compiled_graphs()
        stepped, root = runner.step(env.reset())
        assert internals.compiled_graphs() == before + 1  # a graph compiled for this runner
        assert stepped["next", "reward"].shape == (2, 1)


def test_step_from_an_eager_reset_then_its_own_output_compiles_once():
    """A native env's reset root holds its state and its observation as one tensor; the graph's
    outputs hold two. ``runner.step`` unaliases data that is not its own last output, so the
    second step does not compile a second graph (the reset root is left as it was)."""
    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[3])
    runner = CompiledRollout(env, lambda td: td.set("action", torch.ones(3, dtype=torch.long)), backend="eager")
    root = env.reset()
    assert root["state"] is root["observation"]  # what made the second graph
    before = internals.compiled_graphs()
    _, nxt = runner.step(root)
    for _ in range(3):
        _, nxt = runner.step(nxt)
    assert internals.compiled_graphs() == before + 1
    assert root["state"] is root["observation"]
