"""The rollout's final stack: huge-page backed output for large CPU rollouts, same result as
``torch.stack``."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from gpusim.envs._rollout_stack import MIN_FAST_BYTES, stack_steps
from gpusim.envs.native import CartPoleEnv


def _steps(n_steps: int, rows: int, seed: int = 0) -> list[TensorDict]:
    gen = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(n_steps):
        nxt = TensorDict(
            {
                "obs": torch.randn(rows, 4, generator=gen),
                "agents": TensorDict({"pos": torch.randn(rows, 3, 2, generator=gen)}, [rows, 3]),
                "done": torch.rand(rows, 1, generator=gen) > 0.5,
            },
            [rows],
            device="cpu",
        )
        steps.append(
            TensorDict(
                {
                    "action": torch.randint(0, 5, (rows,), generator=gen),
                    "obs": torch.randn(rows, 4, generator=gen),
                    "next": nxt,
                },
                [rows],
                device="cpu",  # (the CPU path is chosen from the steps' device, as an env's data has it)
            )
        )
    return steps


@pytest.fixture
def cpu_path_calls(monkeypatch) -> list:
    """Counts the calls of the eager-CPU stack (so that a test cannot pass on the reference alone)."""
    from gpusim.envs import _rollout_stack

    calls = []
    real = _rollout_stack.stack_steps_cpu
    monkeypatch.setattr(_rollout_stack, "stack_steps_cpu", lambda steps, dim: calls.append(dim) or real(steps, dim))
    return calls


def _assert_same(a: TensorDict, b: TensorDict) -> None:
    assert type(a) is type(b)
    assert a.batch_size == b.batch_size
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    assert a["next", "agents"].batch_size == b["next", "agents"].batch_size
    for key in a.keys(True, True):
        x, y = a.get(key), b.get(key)
        assert x.dtype == y.dtype and x.shape == y.shape and x.is_contiguous(), key
        assert torch.equal(x, y), key


def test_large_stack_matches_torch_stack(cpu_path_calls):
    steps = _steps(9, rows=40_000)
    size = sum(v.numel() * v.element_size() for v in steps[0].values(True, True)) * len(steps)
    assert size >= MIN_FAST_BYTES
    for _ in range(2):  # the second time from reused (dirty) cached buffers
        _assert_same(stack_steps(steps, 1), torch.stack(steps, 1))
    assert cpu_path_calls == [1, 1]


def test_wide_element_interleave_is_bit_exact(cpu_path_calls):
    rows, gen = 30_000, torch.Generator().manual_seed(4)
    steps = []
    for _t in range(12):
        nan_bits = torch.randint(-(2**31), 2**31 - 1, (rows, 4), generator=gen, dtype=torch.int32)
        base = torch.randn(rows + 1, 6, generator=gen)
        steps.append(
            TensorDict(
                {
                    "nan_payloads": nan_bits.view(torch.float32),  # arbitrary bit patterns, NaNs included
                    "odd_width": torch.randn(rows, 3, generator=gen, dtype=torch.float64),
                    "unaligned": base.view(-1)[1 : 1 + rows * 4].view(rows, 4),  # 4-byte storage offset
                    "transposed": torch.randn(5, rows, generator=gen).t(),  # non-contiguous
                    "bytes": torch.randint(0, 255, (rows, 6), generator=gen, dtype=torch.uint8),
                },
                [rows],
                device="cpu",
            )
        )
    out, ref = stack_steps(steps, 1), torch.stack(steps, 1)
    assert cpu_path_calls == [1]
    for key in ref.keys():
        a, b = out.get(key), ref.get(key)
        assert a.shape == b.shape, key
        if key == "transposed":  # a permuted step keeps its layout, the step outermost (one block a step)
            assert a.stride() == (1, 5 * rows, rows), a.stride()
        else:
            assert a.is_contiguous(), key
        assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)), key


def test_small_stack_and_leading_dim():
    steps = _steps(3, rows=5)
    _assert_same(stack_steps(steps, 1), torch.stack(steps, 1))
    _assert_same(stack_steps(steps, 0), torch.stack(steps, 0))


@pytest.mark.parametrize("rows", [40_000, 2])  # the CPU path and the leaf-wise small path
def test_mismatched_steps_fall_back_to_torch_stack(rows):
    steps = _steps(4, rows=rows)
    steps[2].set("extra", torch.zeros(rows))
    with pytest.raises(RuntimeError):
        torch.stack(steps, 1)
    with pytest.raises(RuntimeError):  # the same error as torch.stack, no silent drop of "extra"
        stack_steps(steps, 1)
    steps = _steps(4, rows=rows)
    steps[1].set("obs", torch.zeros(rows, 5))
    with pytest.raises(RuntimeError):
        stack_steps(steps, 1)


def test_lazy_steps_fall_back():
    halves = [_steps(4, rows=20_000, seed=s) for s in (1, 2)]
    lazy = [LazyStackedTensorDict.lazy_stack([a, b], 0) for a, b in zip(*halves)]  # [2, 20000]
    out, ref = stack_steps(lazy, 2), torch.stack(lazy, 2)
    assert type(out) is type(ref) and out.batch_size == ref.batch_size == (2, 20_000, 4)
    assert all(torch.equal(out.get(k), ref.get(k)) for k in ref.keys(True, True))


def test_cartpole_rollout_large_batch_is_contiguous_and_seeded():
    env = CartPoleEnv(batch_size=[20_000], seed=3)
    torch.manual_seed(0)  # random actions come from torch's generator
    a = env.rollout(30, break_when_any_done=False)
    env.set_seed(3)
    torch.manual_seed(0)
    b = env.rollout(30, break_when_any_done=False, return_contiguous=False).contiguous()
    assert a.batch_size == (20_000, 30) and a.names == [None, "time"]
    _assert_flat_same(a, b)


def _assert_flat_same(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert a.get(key).is_contiguous(), key
        assert torch.equal(a.get(key), b.get(key)), key


def test_leaves_requiring_grad_keep_autograd():
    """``out=`` stacking does not support autograd: such steps go through ``torch.stack``."""
    w = torch.ones(4, requires_grad=True)
    steps = [
        TensorDict({"logits": torch.randn(40_000, 4) * w, "obs": torch.randn(40_000, 4)}, [40_000]) for _ in range(3)
    ]
    out = stack_steps(steps, 1)
    assert out["logits"].requires_grad and out["logits"].grad_fn is not None
    out["logits"].sum().backward()
    assert w.grad is not None and w.grad.shape == (4,)
    assert torch.equal(out["obs"], torch.stack([s["obs"] for s in steps], 1))


def _uint8_steps(n_steps: int, rows: int, width: int) -> list[TensorDict]:
    gen = torch.Generator().manual_seed(rows)
    return [TensorDict({"x": torch.randint(0, 255, (rows, width), generator=gen, dtype=torch.uint8)}, [rows],
                       device="cpu") for _ in range(n_steps)]  # fmt: skip


@pytest.mark.parametrize(
    "n_steps, rows, width",
    [(1, 47, 178481), (8, 65536, 16), (4, 65536, 64)],  # 8 MiB - 1 byte (47 * 178481), 8 MiB, 16 MiB
)
def test_backend_at_the_threshold(n_steps, rows, width):
    """From ``threshold("rollout_stack")`` output bytes the CPU path stacks (recorded as the "cpu"
    backend), one byte below ``torch.stack`` does; both equal ``torch.stack``."""
    from gpusim.kernels import record_backends, threshold

    assert MIN_FAST_BYTES == threshold("rollout_stack")
    steps = _uint8_steps(n_steps, rows, width)
    nbytes = n_steps * rows * width
    with record_backends() as calls:
        out = stack_steps(steps, 1)
    assert calls[0] == ("rollout_stack", "cpu" if nbytes >= MIN_FAST_BYTES else "reference")
    assert nbytes in (MIN_FAST_BYTES - 1, MIN_FAST_BYTES, 2 * MIN_FAST_BYTES)
    ref = torch.stack(steps, 1)
    assert out.batch_size == ref.batch_size and out["x"].is_contiguous()
    assert torch.equal(out["x"], ref["x"])


def test_forced_reference_is_torch_stack():
    from gpusim.kernels import force_backend, record_backends

    steps = _uint8_steps(8, 65536, 16)
    with force_backend("reference"), record_backends() as calls:
        out = stack_steps(steps, 1)
    assert calls == [("rollout_stack", "reference")]
    assert torch.equal(out["x"], torch.stack(steps, 1)["x"])


def test_small_stack_is_leafwise_and_equals_torch_stack_in_the_odd_cases():
    """Below the threshold plain steps are stacked leaf by leaf (``stack_plain``); anything else
    (names, non-tensor leaves, other keys) gets ``torch.stack``'s result or error."""
    from tensordict import NonTensorData

    from gpusim.envs._fasttd import stack_plain

    steps = _steps(5, rows=1)
    assert stack_plain(steps, 1) is not None
    _assert_same(stack_steps(steps, 1), torch.stack(steps, 1))
    named = [td.clone() for td in _steps(3, rows=2)]
    for td in named:
        td.names = ["env"]
    assert stack_plain(named, 1) is None
    out, ref = stack_steps(named, 1), torch.stack(named, 1)
    assert out.names == ref.names == ["env", None]
    text = [TensorDict({"x": torch.zeros(2), "s": NonTensorData("a", batch_size=[2])}, [2]) for _ in range(3)]
    assert stack_plain(text, 0) is None and stack_steps(text, 0).batch_size == (3, 2)
    extra = _steps(3, rows=2)
    extra[1].set("extra", torch.zeros(2))
    assert stack_plain(extra, 1) is None  # (errors: test_mismatched_steps_fall_back_to_torch_stack)


def test_batch1_rollout_stack_equals_torch_stack():
    env = CartPoleEnv(batch_size=[1], seed=0)
    torch.manual_seed(0)
    a = env.rollout(40, break_when_any_done=False)
    env.set_seed(0)
    torch.manual_seed(0)
    b = env.rollout(40, break_when_any_done=False, return_contiguous=False)
    ref = torch.stack(list(b.unbind(1)), 1)
    assert type(a) is TensorDict and a.batch_size == ref.batch_size == (1, 40) and a.names == [None, "time"]
    _assert_flat_same(a, ref)


def _carried_steps(n_steps: int, rows: int, seed: int = 0) -> list[TensorDict]:
    """Steps chained like ``step_mdp`` does: each root ``obs``/``agents``/``done`` leaf is the very
    tensor the step before held under ``"next"``."""
    steps = _steps(n_steps, rows, seed)
    steps[0].set("done", torch.ones(rows, 1, dtype=torch.bool))
    steps[0].set("agents", TensorDict({"pos": torch.full((rows, 3, 2), -1.0)}, [rows, 3]))
    for prev, cur in zip(steps, steps[1:]):
        cur.set("obs", prev.get(("next", "obs")))
        cur.set("agents", TensorDict({"pos": prev.get(("next", "agents", "pos"))}, [rows, 3]))
        cur.set("done", prev.get(("next", "done")))
    return steps


def test_carried_leaves_are_copied_from_the_next_output_exactly():
    """Root leaves that are the step before's ``"next"`` tensors are filled from the stacked
    ``"next"`` output shifted by one step: same data as ``torch.stack``, at both stacking dims."""
    from gpusim.envs._rollout_stack import _carried_keys, stack_steps_cpu

    steps = _carried_steps(5, rows=7)
    keys = set(steps[0].keys(True, True))
    assert _carried_keys(steps, keys) == {("obs",), ("agents", "pos"), ("done",)}
    _assert_same(stack_steps_cpu(steps, 1), torch.stack(steps, 1))
    _assert_same(stack_steps_cpu(steps, 0), torch.stack(steps, 0))
    steps[3].set("obs", steps[2].get(("next", "obs")).clone())  # equal values, another tensor
    assert ("obs",) not in _carried_keys(steps, keys)
    _assert_same(stack_steps_cpu(steps, 1), torch.stack(steps, 1))
    assert _carried_keys(steps[:1], keys) == set()


def test_carried_leaves_keep_torch_stack_errors_and_autograd():
    """Carried ``"next"`` leaves that would only broadcast into the first root leaf's shape raise
    as ``torch.stack`` does (``copy_`` would broadcast them); a first leaf that requires grad
    keeps its graph."""
    from gpusim.envs._rollout_stack import stack_steps_cpu

    steps = _carried_steps(4, rows=6)
    for t, step in enumerate(steps):  # "next" obs of width 1 carried on; the first root obs of width 4
        narrow = torch.zeros(6, 1)
        step.set(("next", "obs"), narrow)
        if t + 1 < len(steps):
            steps[t + 1].set("obs", narrow)
    with pytest.raises(RuntimeError):
        torch.stack(steps, 1)
    with pytest.raises(RuntimeError):
        stack_steps_cpu(steps, 1)
    steps = _carried_steps(4, rows=6)
    w = torch.ones(4, requires_grad=True)
    steps[0].set("obs", steps[0].get("obs") * w)
    out = stack_steps_cpu(steps, 1)
    assert "Stack" in type(out["obs"].grad_fn).__name__  # torch.stack's graph, not a copy into a cached buffer
    assert torch.equal(out["obs"].detach(), torch.stack(steps, 1)["obs"].detach())


def test_permuted_steps_stack_in_their_own_layout_with_the_step_outermost():
    """Batch-innermost leaves (the MPE worlds' layout) stack into an output laid out like them,
    each step one contiguous block (the compiled runner's layout): the values are
    ``torch.stack``'s, the memory is not row-major. A leaf that is no permutation of a dense
    tensor (an expanded one) and a contiguous leaf keep the row-major output."""
    rows, steps = 4096, 12
    made = [
        TensorDict(
            {
                "obs": torch.randn(2, 10, rows).permute(2, 0, 1),  # [rows, 2, 10], batch innermost
                "flat": torch.randn(rows, 3),
                "expanded": torch.randn(rows, 1).expand(rows, 4),
                "next": {"obs": torch.randn(2, 10, rows).permute(2, 0, 1)},
            },
            [rows],
            device="cpu",
        )
        for _ in range(steps)
    ]
    for t in range(1, steps):  # the root obs carried from the step before
        made[t]["obs"] = made[t - 1]["next", "obs"]
    assert sum(v.numel() * v.element_size() for v in made[0].values(True, True)) * steps >= MIN_FAST_BYTES
    out = stack_steps(made, 1)
    ref = torch.stack(made, 1)
    for key in ref.keys(True, True):
        assert torch.equal(out[key], ref[key]), key
    for key in ("obs", ("next", "obs")):
        assert out[key].shape == (rows, steps, 2, 10) and not out[key].is_contiguous()
        assert out[key].stride() == (1, 2 * 10 * rows, 10 * rows, rows)  # [steps, 2, 10, rows] in memory
    assert out["flat"].is_contiguous() and out["expanded"].is_contiguous()


@pytest.mark.parametrize("lead", [(4096,), (64, 64)], ids=["rows", "two-batch-dims"])
def test_long_rollouts_of_narrow_rows_stack_through_one_transpose(lead, monkeypatch):
    """At least 64 steps of one-element rows of at most 8 bytes and 64 KiB a step are stacked
    step-major, then transposed once: the same bits as ``torch.stack``, bool to int64, with the
    rows' leading dims kept."""
    from gpusim.envs import _rollout_stack

    calls = []
    real = _rollout_stack._stack_transposed
    monkeypatch.setattr(_rollout_stack, "_stack_transposed", lambda s, t: calls.append(t.dtype) or real(s, t))
    gen = torch.Generator().manual_seed(5)
    steps = []
    for _ in range(70):
        leaves = {
            "flag": torch.rand(*lead, 1, generator=gen) > 0.5,
            "reward": torch.randn(*lead, 1, generator=gen),
            "count": torch.randint(-(2**40), 2**40, (*lead, 1), generator=gen),
            "small": torch.randint(0, 7, (*lead, 2), generator=gen, dtype=torch.int16),  # 4 bytes: int32
            "obs": torch.randn(*lead, 8, generator=gen),  # 32 bytes a row: interleaved, as before
        }
        steps.append(TensorDict(leaves, list(lead), device="cpu"))
    dim = len(lead)
    out, ref = stack_steps(steps, dim), torch.stack(steps, dim)
    assert sorted(map(str, calls)) == ["torch.bool", "torch.float32", "torch.int32", "torch.int64"]
    for key in ref.keys():
        a, b = out.get(key), ref.get(key)
        assert a.shape == b.shape == (*lead, 70, b.shape[-1]) and a.is_contiguous(), key
        assert torch.equal(a, b), key
