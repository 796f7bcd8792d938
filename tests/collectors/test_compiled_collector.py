"""The compiled engine of ``gpusim.Collector`` and continuing compiled rollouts: the same data as
eager, no recompilation across batches or continuations (dynamo's counters), policy weights read
at every batch, compile messages."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch._dynamo.utils import counters

import gpusim as gs
from gpusim.envs.compiled import CompiledRollout, default_steps_per_call
from tests.envs.toy_envs import StatelessCounter


def _graphs() -> int:
    return counters["stats"]["unique_graphs"]


def _threshold_policy():
    """action = 1 where ``w * observation + b > 0``: weights decide the actions exactly."""
    lin = torch.nn.Linear(1, 1)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.fill_(1.0)
    return lin, TensorDictModule(lambda obs: (lin(obs) > 0).squeeze(-1).long(), ["observation"], ["action"])


def _assert_same(eager, compiled):
    assert set(eager.keys(True, True)) == set(compiled.keys(True, True))
    for key, value in eager.items(True, True):
        torch.testing.assert_close(compiled.get(key), value, msg=lambda m: f"{key}: {m}")


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])  # the second: steps returned by the graph
def test_compiled_collector_matches_eager_reads_new_weights_and_never_recompiles(mode, capfd):
    torch._dynamo.reset()
    schedule = [1.0, -1.0, 1.0, 1.0]  # the bias before each batch; 1: action 1, -1: action 0

    def collect(compile):
        lin, policy = _threshold_policy()
        env = StatelessCounter(batch_size=(5,), max_count=5)
        collector = gs.Collector(env, policy, frames_per_batch=5 * 6, total_frames=5 * 6 * 4, compile=compile)
        out, graphs = [], []
        for bias, data in zip(schedule, _batches(collector, lin, schedule)):
            out.append(data)
            graphs.append(_graphs())
            assert bool((data["action"] == (1 if bias > 0 else 0)).all())
        return out, graphs, collector

    eager, _, _ = collect(False)
    compiled, graphs, collector = collect({"steps_per_call": 3, "mode": mode})
    for a, b in zip(eager, compiled):
        _assert_same(a, b)
    assert graphs[0] == graphs[-1]  # one graph, compiled during the first batch
    assert collector.compiled and collector._runner.steps_per_call == 3
    assert collector.compile_seconds == collector._runner.compile_seconds > 0  # public, the runner's
    err = capfd.readouterr().err
    assert err.count("gpusim: compiling 3 steps per call") == 1 and err.count("gpusim: compiled in") == 1
    assert "recompiled" not in err  # one compilation: the env's plans were computed before tracing


def _batches(collector, lin, schedule):
    """Sets the policy's bias in place (as an optimizer does) before each batch."""
    it = iter(collector)
    for bias in schedule:
        with torch.no_grad():
            lin.bias.fill_(bias)
        yield next(it)


def _argmax_policy(bias):
    module = TensorDictSequential(
        TensorDictModule(torch.nn.Linear(1, 2), ["observation"], ["logits"]),
        TensorDictModule(lambda logits: logits.argmax(-1), ["logits"], ["action"]),
    )
    with torch.no_grad():
        module[0].module.weight.zero_()
        module[0].module.bias.copy_(torch.tensor(bias))
    return module


def test_update_policy_weights_reaches_the_compiled_graph(capfd):
    torch._dynamo.reset()
    env = StatelessCounter(batch_size=(3,), max_count=4)
    policy = _argmax_policy([1.0, 0.0])
    collector = gs.Collector(env, policy, frames_per_batch=12, compile={"verbose": False, "steps_per_call": 2})
    assert bool((collector.next()["action"] == 0).all())
    graphs = _graphs()
    weight = policy[0].module.weight
    collector.update_policy_weights_(_argmax_policy([0.0, 1.0]))
    assert policy[0].module.weight is weight  # copied in place: the graph's inputs are the same
    assert bool((collector.next()["action"] == 1).all())
    assert _graphs() == graphs
    assert capfd.readouterr().err == ""  # verbose=False


def test_compiled_rollout_continues_from_last_root_in_any_key_order():
    torch._dynamo.reset()
    env = StatelessCounter(batch_size=(4,), max_count=3)
    policy = lambda td: td.set("action", (td["observation"][..., 0] < 4).long()).set("extra", td["state"] * 0)  # noqa: E731
    eager = env.rollout(12, policy, break_when_any_done=False)
    runner = CompiledRollout(env, policy, steps_per_call=2, verbose=False)
    first = runner(4)
    graphs = _graphs()
    root = runner.last_root()
    assert "extra" in root.keys()  # the policy's outputs ride along in the root
    # the same entries inserted in the reverse order: the layout cache does not care
    reordered = TensorDict({k: root.get(k) for k in reversed(list(root.keys(True, True)))}, root.batch_size)
    second = runner(4, tensordict=reordered, auto_reset=False)
    third, _ = runner.run(4, runner.last_root())
    assert _graphs() == graphs  # continuing compiled nothing new
    whole = torch.cat([first, second, third], dim=1)
    _assert_same(eager, whole)
    with pytest.raises(ValueError, match="auto_reset=False continues from a root: pass tensordict="):
        runner(3, auto_reset=False)
    with pytest.raises(RuntimeError, match="only known after a rollout"):
        CompiledRollout(env, policy).last_root()


def test_rollout_compile_as_typed_names_the_call_to_make():
    env = gs.make("CartPole-v1", num_envs=2, seed=0)
    with pytest.raises(ValueError, match=r"call env.rollout\(50, policy, compile=True, break_when_any_done=False\)"):
        env.rollout(50, compile=True)


def test_default_steps_per_call_and_divisors():
    assert default_steps_per_call(1) == default_steps_per_call(64) == 2
    assert default_steps_per_call(65) == default_steps_per_call(4096) == 1
    # a policy network in the graph: one step per call (a smaller graph, a shorter compile)
    assert default_steps_per_call(1, with_policy=True) == default_steps_per_call(64, with_policy=True) == 1
    env = StatelessCounter(batch_size=(2,))
    collector = gs.Collector(env, frames_per_batch=2 * 5, compile=True)
    assert collector._compiled_runner().steps_per_call == 1  # the largest divisor of T=5 up to 2
    collector = gs.Collector(env, frames_per_batch=2 * 9, compile={"steps_per_call": 4})
    assert collector._compiled_runner().steps_per_call == 3  # the largest divisor of T=9 up to 4
    with pytest.raises(ValueError, match="steps_per_call must be a positive int, got 0"):
        CompiledRollout(env, steps_per_call=0)


def test_layout_order_depends_on_the_key_set_only():
    from gpusim.envs.compiled import _canonical

    flag = torch.zeros(2, 1, dtype=torch.bool)
    one = TensorDict(
        {"b": torch.zeros(2), "done": flag, "terminated": flag, "g": {"z": torch.ones(2, 3, 1), "y": torch.ones(2, 3)}},
        [2],
    )
    one["g"].batch_size = [2, 3]
    other = TensorDict(
        {
            "g": {"y": torch.ones(2, 3), "z": torch.ones(2, 3, 1)},
            "terminated": flag.clone(),
            "b": torch.zeros(2),
            "done": flag,
        },
        [2],
    )
    other["g"].batch_size = [2, 3]
    keys, spec = _canonical(one)
    assert keys == _canonical(other)[0]
    assert sorted(map(str, keys)) == sorted(map(str, ["b", "done", ("g", "y"), ("g", "z"), "terminated"]))
    rebuilt = torch.utils._pytree.tree_unflatten([other.get(k) for k in keys], spec)
    assert rebuilt["g"].batch_size == torch.Size([2, 3]) and rebuilt.get(("g", "z")).shape == (2, 3, 1)
