"""Direct calls of a compiled rollout (``compiled.DIRECT_CALLS``): after a run's guarded calls,
the rest run the code Dynamo would run (the cache entry's bytecode) as a plain function. They
must give what Dynamo's own calls give, replay the Python side effects, follow the compiled graph
the guards pick, and fall back when the guarded calls disagree; the run pauses Python's cyclic GC
and restores it. Also: the Inductor options a runner adds."""

from __future__ import annotations

import gc

import pytest
import torch

from gpusim.envs import compiled
from gpusim.envs.compiled import GUARDED_CALLS, CompiledRollout
from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import StepCounter, TransformedEnv


def _balance(td):
    return td.set("action", (td["observation"][..., 2] > 0).long())


def _make():
    return TransformedEnv(CartPoleEnv(batch_size=[8], seed=6, auto_reset_mode="masked"), StepCounter(max_steps=3))


def _assert_equal(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key, value in a.items(True, True):
        assert torch.equal(b.get(key), value), key


def test_direct_calls_equal_dynamo_calls(monkeypatch):
    """The same rollouts (two runs, the second continuing the first; resets inside the graph)
    with direct calls and with Dynamo's calls only: equal data and roots, bit for bit."""
    torch._dynamo.reset()
    monkeypatch.setattr(compiled, "DIRECT_CALLS", False)
    env_ref = _make()
    reference = CompiledRollout(env_ref, _balance, steps_per_call=1, verbose=False)
    monkeypatch.setattr(compiled, "DIRECT_CALLS", True)
    env = _make()
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    assert reference.direct_calls == 0 and runner._direct and not reference._direct

    roots = {id(reference): env_ref.reset(), id(runner): env.reset()}
    for steps in (9, 10):
        ref_data, roots[id(reference)] = reference.run(steps, roots[id(reference)])
        data, roots[id(runner)] = runner.run(steps, roots[id(runner)])
        _assert_equal(ref_data, data)
        _assert_equal(roots[id(reference)], roots[id(runner)])
        assert data["next", "truncated"].any()  # resets inside the graph
    # first run: 9 calls (the layout came from a step of copies), 3 guarded; second: 10, 3 guarded
    assert runner.direct_calls == (9 - 3) + (10 - 3)
    assert reference.direct_calls == 0


class _Remembering:
    """A policy that keeps its last action as a Python attribute: a side effect that Dynamo
    replays after each compiled call."""

    def __init__(self):
        self.last = None

    def __call__(self, td):
        td = _balance(td)
        self.last = td["action"]
        return td


def test_direct_calls_replay_the_python_side_effects():
    torch._dynamo.reset()
    env = _make()
    policy = _Remembering()
    runner = CompiledRollout(env, policy, steps_per_call=1, verbose=False)
    data, _ = runner.run(12, env.reset())
    assert runner.direct_calls > 0
    # the attribute holds the action of the run's last call, not of the last guarded one
    assert torch.equal(policy.last, data["action"][:, -1])
    assert not torch.equal(data["action"][:, -1], data["action"][:, GUARDED_CALLS + 1])


class _Constant:
    """A policy whose action is a Python int read while tracing (a guarded constant)."""

    def __init__(self, action):
        self.action = action

    def __call__(self, td):
        return td.set("action", torch.full(td.batch_size, self.action, dtype=torch.long))


def test_direct_calls_run_the_graph_the_guards_picked():
    """Changing the constant between runs compiles a second graph; changing it back selects the
    first one again: each run's direct calls run the graph of its own guarded calls."""
    torch._dynamo.reset()
    env = _make()
    policy = _Constant(0)
    runner = CompiledRollout(env, policy, steps_per_call=1, verbose=False)
    root = env.reset()
    done = 0
    for action in (0, 1, 0, 1):
        policy.action = action
        data, root = runner.run(GUARDED_CALLS + 5, root)
        assert (data["action"] == action).all(), action
        assert runner.direct_calls > done
        done = runner.direct_calls
    assert len(runner._direct_fns) == 2


def test_direct_fn_needs_two_guarded_calls_of_one_graph():
    """Guarded calls that ran different compiled graphs (or an unknown one) give no direct
    function: the run goes on with Dynamo's calls."""
    runner = CompiledRollout(_make(), _balance, steps_per_call=1, verbose=False)
    body = lambda *args: None  # noqa: E731 - a function Dynamo never compiled
    fn = type("Fn", (), {"_gpusim_body": body})()
    assert runner._direct_fn(fn, [0, 1]) is None
    assert runner._direct_fn(fn, [None, None]) is None
    assert runner._direct_fn(fn, [3]) is None
    assert runner._direct_fn(fn, [7, 7]) is None  # no cache entry calls graph 7


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_paused_restores_the_collector(enabled):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with compiled._gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ZeroDivisionError), compiled._gc_paused():
            1 / 0
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_compiled_run_leaves_the_collector_on():
    torch._dynamo.reset()
    env = _make()
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    assert gc.isenabled()
    _, root = runner.run(6, env.reset())
    runner.run(6, root)
    assert gc.isenabled()


def test_default_inductor_options_and_the_callers_prevail():
    """CPU runners compile with size asserts and Inductor's tiling heuristics off (the strided
    loops of native env steps vectorized: ``VECTORIZE_STRIDED``); the caller's ``options`` prevail,
    a ``mode`` gets none, and non-CPU envs keep the tiling heuristics."""
    import types

    env = CartPoleEnv(batch_size=[4])
    assert CompiledRollout(env, verbose=False).compile_kwargs["options"] == {
        "size_asserts": False,
        "cpp.enable_tiling_heuristics": False,
    }
    runner = CompiledRollout(env, verbose=False, options={"cpp.enable_tiling_heuristics": True})
    assert runner.compile_kwargs["options"]["cpp.enable_tiling_heuristics"] is True
    assert runner._backend.options == runner.compile_kwargs["options"]  # the graph's backend gets them
    assert "options" not in CompiledRollout(env, verbose=False, mode="max-autotune-no-cudagraphs").compile_kwargs
    assert compiled._default_options(types.SimpleNamespace(device=torch.device("cuda"))) == {"size_asserts": False}
