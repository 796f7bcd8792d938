"""CUDA runs of compiled rollouts: one CUDA graph per run length, replayed by later runs, against
the eager step loop and against the same runner without graphs. The tests that need a GPU are
skipped on machines without one (CI has none; they ran on the H100 of the device tool)."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs.compiled import CUDA_GRAPHS_UP_TO, CompiledRollout
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from tests.envs.test_compiled_rollout import _assert_close, _balance, _eager_loop

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _counted(rows):
    from gpusim.transforms import StepCounter, TransformedEnv

    return TransformedEnv(CartPoleEnv(batch_size=[rows], seed=3, device="cuda"), StepCounter(max_steps=4))


def _five(env):
    from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNorm

    return TransformedEnv(
        env,
        Compose(
            StepCounter(max_steps=7),
            RewardSum(),
            InitTracker(),
            CatFrames(4, dim=-1, in_keys=["observation"]),
            VecNorm(in_keys=["observation"], decay=0.99),
        ),
    )


def test_cuda_graphs_refused_off_cuda_and_with_a_mode():
    env = CartPoleEnv(batch_size=[4])
    with pytest.raises(ValueError, match="cuda_graphs=True needs a CUDA env.*device is cpu"):
        CompiledRollout(env, cuda_graphs=True)
    assert not CompiledRollout(env)._cuda_graphs  # CPU: never


def test_tagged_backend_records_which_graph_ran_and_its_input_addresses():
    """The backend behind the CUDA graphs (it runs on any device): each call says which compiled
    graph ran and, when asked, the addresses of that graph's tensor inputs (the tensors
    themselves, not the elements of one of them)."""
    from gpusim.envs.compiled import _TaggedInductor

    torch._dynamo.reset()
    backend = _TaggedInductor()
    weight = torch.full((3,), 2.0)

    def f(x):
        return x * weight + 1

    g = torch.compile(f, backend=backend, fullgraph=True)
    x = torch.arange(3.0)
    backend.record = True
    torch.testing.assert_close(g(x), x * 2 + 1)
    assert backend.last == 0
    assert sorted(a for a in backend.addresses if a is not None) == sorted([x.data_ptr(), weight.data_ptr()])
    backend.record = False
    before = backend.addresses
    g(torch.arange(3.0))
    assert backend.addresses == before  # recorded only on request
    g(torch.arange(3, dtype=torch.float64))  # another dtype: another compiled graph
    assert backend.last == 1


@cuda
def test_cuda_graphs_refused_with_reduce_overhead():
    env = CartPoleEnv(batch_size=[4], device="cuda")
    with pytest.raises(ValueError, match="mode='reduce-overhead'"):
        CompiledRollout(env, mode="reduce-overhead", cuda_graphs=True)


@cuda
@pytest.mark.parametrize("rows", [CUDA_GRAPHS_UP_TO - 1, CUDA_GRAPHS_UP_TO, CUDA_GRAPHS_UP_TO + 1])
def test_default_captures_up_to_the_threshold(rows):
    env = CartPoleEnv(batch_size=[rows], device="cuda")
    assert CompiledRollout(env)._cuda_graphs == (rows <= CUDA_GRAPHS_UP_TO)


def _runs(runner, root, lengths):
    datas = []
    for steps in lengths:
        data, root = runner.run(steps, root)
        datas.append(data)
    return torch.cat(datas, dim=-1), root


@cuda
def test_graph_replays_match_eager_across_runs():
    """Three runs of the same length (capture, then two replays) and one of another length (a new
    capture), continuing the episodes, equal the eager loop, resets inside replayed graphs."""
    torch._dynamo.reset()
    env = _counted(64)
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    assert runner._cuda_graphs
    data, root = _runs(runner, env.reset(), (6, 6, 6, 5))
    eager_env = _counted(64)
    eager, eager_root = _eager_loop(eager_env, eager_env.reset(), 23)
    assert eager["next", "truncated"][:, 6:12].any()
    _assert_close(eager, data)
    _assert_close(eager_root, root)
    assert runner._captured is not None and runner._captured.key[2] == 5
    assert runner.recaptures == []  # a new length is a new key, not a recapture


@cuda
@pytest.mark.parametrize("rows", [CUDA_GRAPHS_UP_TO - 1, CUDA_GRAPHS_UP_TO])
def test_graph_replays_equal_the_ungraphed_runner_at_the_threshold(rows):
    """At the default's size threshold and one row below it: the replayed graphs give the very
    numbers of the same compiled calls launched one by one (the same kernels)."""
    torch._dynamo.reset()
    outs = []
    for graphs in (None, False):
        env = _counted(rows)
        torch.manual_seed(7)  # the random-action stream's seed
        runner = CompiledRollout(env, steps_per_call=1, cuda_graphs=graphs, verbose=False)
        assert runner._cuda_graphs == (graphs is None)
        outs.append(_runs(runner, env.reset(), (5, 5, 5)))
        assert runner.recaptures == []
    (graphed, groot), (plain, proot) = outs
    assert plain["next", "truncated"][:, 5:].any()
    for key, value in plain.items(True, True):
        assert torch.equal(graphed.get(key), value), key
    for key, value in proot.items(True, True):
        assert torch.equal(groot.get(key), value), key


@cuda
def test_returned_roots_survive_later_runs():
    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[64], seed=1, device="cuda")
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    _, root1 = runner.run(4, env.reset())
    kept = root1.clone()
    _, root2 = runner.run(4, root1)
    _, root3 = runner.run(4, root2)
    for key, value in kept.items(True, True):
        assert torch.equal(root1.get(key), value), key


@cuda
@pytest.mark.parametrize("steps_per_call", [1, 3])
def test_graphs_with_five_transforms_match_eager_and_the_ungraphed_runner(steps_per_call):
    torch._dynamo.reset()

    def make():
        return _five(CartPoleEnv(batch_size=[96], seed=5, device="cuda"))

    env = make()
    runner = CompiledRollout(env, _balance, steps_per_call=steps_per_call, verbose=False)
    root = env.reset()
    parts = []
    for _ in range(3):
        data, root = runner.run(10, root)  # 10 % 3 = 1 eager step first with 3 per call
        parts.append(data)
    plain_env = make()
    plain = CompiledRollout(plain_env, _balance, steps_per_call=steps_per_call, cuda_graphs=False, verbose=False)
    assert not plain._cuda_graphs
    proot = plain_env.reset()
    pparts = []
    for _ in range(3):
        data, proot = plain.run(10, proot)
        pparts.append(data)
    eager_env = make()
    eager, eager_root = _eager_loop(eager_env, eager_env.reset(), 30)
    assert eager["next", "done"].any() and eager["is_init"][:, 11:].any()
    _assert_close(eager, torch.cat(parts, dim=-1), tol=1e-4)
    _assert_close(torch.cat(pparts, dim=-1), torch.cat(parts, dim=-1), tol=1e-5)
    _assert_close(eager_root, root, tol=1e-4)


@cuda
def test_a_changed_env_constant_or_replaced_tensor_is_seen():
    """Each run's first call is guarded: a Python constant changed between runs recompiles and
    captures anew; a tensor the graph reads replaced by another object (not updated in place)
    moves the first call's input addresses and captures anew."""
    torch._dynamo.reset()
    env = PendulumEnv(batch_size=[32], seed=2, device="cuda")
    runner = CompiledRollout(env, steps_per_call=1, verbose=False)
    _, root = runner.run(5, env.reset())
    _, root = runner.run(5, root)
    first = runner._captured
    env.max_speed = 2.0  # read while tracing: guarded
    rng = runner.policy.rng
    start, state = root.clone(), rng.counter.clone()
    data, root = runner.run(5, root)
    assert runner._captured is not first and "compiled graph" in runner.recaptures[-1]
    rng.counter.copy_(state)
    eager, _ = _eager_loop(env, start, 5, policy=runner.policy)
    torch.testing.assert_close(data["next", "observation"], eager["next", "observation"], rtol=1e-5, atol=1e-5)

    second = runner._captured
    rng.counter = rng.counter.clone()  # a new tensor object holding the same count
    start, state = root.clone(), rng.counter.clone()
    parts = []
    for _ in range(2):  # a stale replay would advance the old counter: the second run would differ
        data, root = runner.run(5, root)
        parts.append(data)
    assert runner._captured is not second and "other addresses" in runner.recaptures[-1]
    rng.counter.copy_(state)
    eager, _ = _eager_loop(env, start, 10, policy=runner.policy)
    torch.testing.assert_close(torch.cat(parts, -1)["action"], eager["action"])
    torch.testing.assert_close(
        torch.cat(parts, -1)["next", "observation"], eager["next", "observation"], rtol=1e-5, atol=1e-5
    )


@cuda
def test_policy_weights_updated_in_place_are_read_by_replays():
    """An optimizer updates weights in place: the replayed calls read the new values (no new
    capture). Zero weights push every cart the same way; the updated ones balance, so each step's
    action follows the sign of the angle it was chosen from, replayed steps included."""
    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[16], seed=0, device="cuda")
    weight = torch.nn.Parameter(torch.zeros(4, device="cuda"))

    def policy(td):
        return td.set("action", (td["observation"] @ weight > 0).long())

    runner = CompiledRollout(env, policy, steps_per_call=1, verbose=False)
    _, root = runner.run(4, env.reset())
    _, root = runner.run(4, root)
    with torch.no_grad():
        weight.copy_(torch.tensor([0.0, 0.0, 1.0, 0.0], device="cuda"))  # the balancing policy
    data, _ = runner.run(4, root)
    assert runner.recaptures == []
    angle_positive = (data["observation"][..., 2] > 0).long()
    assert angle_positive[:, 1:].any() and not angle_positive[:, 1:].all()
    assert torch.equal(data["action"], angle_positive)
