"""The counter-based generator: exact hash, range, uniformity, independence, determinism, compile."""

from __future__ import annotations

import random

import pytest
import torch

from gpusim.envs.native.rng import CounterRNG, hash32, seed_to_key


def _reference_hash(x: int) -> int:
    m = 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & m
    x ^= x >> 12
    x = (x * 0x297A2D39) & m
    return x ^ (x >> 15)


def test_hash32_matches_python_reference_on_full_32bit_range() -> None:
    rnd = random.Random(0)
    xs = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF] + [rnd.getrandbits(32) for _ in range(2000)]
    out = hash32(torch.tensor(xs, dtype=torch.int64))
    assert out.tolist() == [_reference_hash(x) for x in xs]
    assert int(out.min()) >= 0 and int(out.max()) <= 0xFFFFFFFF


def test_hash32_avalanche() -> None:
    """Flipping any input bit flips each output bit with probability close to 1/2."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 2**32, (20000,), generator=g, dtype=torch.int64)
    base = hash32(x)
    bits = torch.arange(32)
    worst = 0.0
    for b in range(32):
        diff = base ^ hash32(x ^ (1 << b))
        p = ((diff.unsqueeze(-1) >> bits) & 1).double().mean(0)
        worst = max(worst, float((p - 0.5).abs().max()))
    assert worst < 0.02, worst


def test_seed_to_key_separates_seeds_and_validates() -> None:
    keys = {seed_to_key(s) for s in [*range(1000), -1, -2, 2**32, 2**40 + 5, 2**100]}
    assert len(keys) == 1005
    assert all(0 <= k < 2**32 for k in keys)
    with pytest.raises(TypeError, match="seed must be an int"):
        seed_to_key(1.5)
    with pytest.raises(TypeError, match="seed must be an int"):
        seed_to_key(True)


@pytest.mark.parametrize("bits", [16, 24])
@pytest.mark.parametrize("num", [1, 3, 4])
def test_range_shape_dtype(bits: int, num: int) -> None:
    rng = CounterRNG((50, 3), num=num, seed=1, bits=bits)
    u = rng.uniform()
    assert u.shape == (50, 3, num) and u.dtype == torch.float32
    assert bool(((u >= 0) & (u < 1)).all())
    x = rng.uniform_range(-0.05, 0.05)
    assert bool(((x >= -0.05) & (x <= 0.05)).all())
    assert int(rng.counter) == 2


@pytest.mark.parametrize("bits", [16, 24])
def test_uniformity_chi_square_and_moments(bits: int) -> None:
    rng = CounterRNG((20000,), num=4, seed=123, bits=bits)
    u = torch.cat([rng.uniform() for _ in range(3)]).reshape(-1, 4)
    n = u.shape[0]
    for lane in range(4):
        counts = torch.histc(u[:, lane], bins=50, min=0.0, max=1.0)
        expected = n / 50
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < 100.0, f"lane {lane}: chi2={chi2:.1f} for 49 degrees of freedom"
        assert abs(float(u[:, lane].mean()) - 0.5) < 0.005
        assert abs(float(u[:, lane].var()) - 1 / 12) < 0.003
    # lanes and consecutive draws are uncorrelated
    corr = torch.corrcoef(u.T)
    off_diag = corr - torch.eye(4)
    assert float(off_diag.abs().max()) < 0.02


def test_envs_and_draws_are_independent() -> None:
    rng = CounterRNG((20000,), num=2, seed=5)
    a, b = rng.uniform(), rng.uniform()
    assert float(torch.corrcoef(torch.stack([a[:, 0], b[:, 0]]))[0, 1].abs()) < 0.03
    # neighbouring envs are not correlated
    assert float(torch.corrcoef(torch.stack([a[:-1, 0], a[1:, 0]]))[0, 1].abs()) < 0.03
    assert not torch.equal(a, b)


def test_same_seed_same_stream_different_seed_different_stream() -> None:
    r1 = CounterRNG((64,), num=4, seed=7)
    r2 = CounterRNG((64,), num=4, seed=7)
    r3 = CounterRNG((64,), num=4, seed=8)
    s1 = [r1.uniform() for _ in range(3)]
    s2 = [r2.uniform() for _ in range(3)]
    s3 = [r3.uniform() for _ in range(3)]
    assert all(torch.equal(x, y) for x, y in zip(s1, s2))
    assert all(not torch.equal(x, y) for x, y in zip(s1, s3))
    r1.manual_seed(7)
    assert int(r1.counter) == 0
    assert torch.equal(r1.uniform(), s1[0])


def test_arguments_are_validated() -> None:
    with pytest.raises(ValueError, match="num must be a positive int, got 0"):
        CounterRNG((2,), num=0)
    with pytest.raises(ValueError, match="bits must be 16 or 24, got 32"):
        CounterRNG((2,), num=1, bits=32)


def test_compiled_fullgraph_matches_eager() -> None:
    """Inductor on CPU: same numbers as eager, and the counter advances inside the graph."""
    rng = CounterRNG((257,), num=3, seed=3, bits=16)
    eager = [rng.uniform_range(-1.0, 2.0) for _ in range(3)]
    rng.manual_seed(3)
    compiled = torch.compile(lambda: rng.uniform_range(-1.0, 2.0), fullgraph=True)
    out = [compiled() for _ in range(3)]
    for e, c in zip(eager, out):
        torch.testing.assert_close(c, e, rtol=0, atol=1e-6)
    assert int(rng.counter) == 3


def test_int32_lane_hash_equals_int64_reference() -> None:
    """The hot path hashes int32 bit patterns; the numbers must be those of ``hash32``."""
    from gpusim.envs.native.rng import _GOLDEN, _MASK32

    rng = CounterRNG((257,), num=6, seed=12345)
    for _ in range(3):
        counter = int(rng.counter)
        base = int(hash32(torch.tensor(int(rng.key) ^ ((counter * _GOLDEN) & _MASK32))))
        lanes = torch.arange(257 * 3, dtype=torch.int64).reshape(257, 3)
        expected = hash32(lanes ^ base)
        got = rng.bits32().to(torch.int64) & _MASK32
        assert torch.equal(got, expected)


def test_reset_draw_rows_match_full_draw_and_mask_draw() -> None:
    """Reset noise keyed by episode index: a row-restricted draw, a masked draw and a full draw
    give the reset rows the same numbers; the other rows are zero (rows) or valid numbers of
    their current episode (mask), never uninitialised."""
    full, part, masked = (CounterRNG((300,), num=4, seed=5) for _ in range(3))
    rows = torch.tensor([0, 7, 123, 299])
    mask = torch.zeros(300, dtype=torch.bool)
    mask[rows] = True
    a = full.reset_uniform_range(-1.0, 1.0)
    b = part.reset_uniform_range(-1.0, 1.0, rows=rows)
    c = masked.reset_uniform_range(-1.0, 1.0, mask=mask)
    assert torch.equal(b[rows], a[rows]) and torch.equal(c[rows], a[rows])
    assert b[~mask].eq(0).all()
    assert torch.isfinite(c).all() and bool(((c >= -1) & (c <= 1)).all())
    assert part.episodes.tolist() == masked.episodes.tolist() == mask.int().tolist()
    # a row's next episode does not depend on how often the other rows were reset
    for _ in range(3):
        full.reset_uniform_range(-1.0, 1.0, mask=~mask)
    nxt_full = full.reset_uniform_range(-1.0, 1.0)
    nxt_part = part.reset_uniform_range(-1.0, 1.0)
    # rows of ``mask``: episode 2 in both; the others: episode 5 (full) vs 1 (part)
    assert torch.equal(nxt_full[rows], nxt_part[rows])
    assert not torch.equal(nxt_full[~mask], nxt_part[~mask])


def test_reset_draws_differ_between_episodes_and_from_step_stream() -> None:
    rng = CounterRNG((1000,), num=2, seed=9)
    first = rng.reset_uniform_range(0.0, 1.0)
    second = rng.reset_uniform_range(0.0, 1.0)
    step = rng.uniform_range(0.0, 1.0)
    assert not torch.equal(first, second) and not torch.equal(first, step)
    assert float(torch.corrcoef(torch.stack([first[:, 0], second[:, 0]]))[0, 1].abs()) < 0.1
    rng.manual_seed(9)
    assert torch.equal(rng.reset_uniform_range(0.0, 1.0), first)


def test_sparse_eager_resets_equal_masked_resets() -> None:
    """Large CPU batches hash only the reset rows; the rollout equals the masked path's."""
    from gpusim.envs.native import CartPoleEnv

    def policy(td):
        return td.set("action", (td["observation"][..., 2] > 0).long())

    sparse_env = CartPoleEnv(batch_size=[300], seed=11)
    masked_env = CartPoleEnv(batch_size=[300], seed=11, auto_reset_mode="masked")  # the GPU / compiled path
    assert sparse_env.auto_reset_mode.value == "sparse"
    a = sparse_env.rollout(60, policy, break_when_any_done=False)
    b = masked_env.rollout(60, policy, break_when_any_done=False)
    assert a["next", "done"].any()
    assert torch.equal(a["state"], b["state"]) and torch.equal(a["next", "state"], b["next", "state"])


def test_sparse_reset_without_previous_values_draws_every_row() -> None:
    """A partial ``"_reset"`` on an input without the state/observation entries has nothing to
    merge over: every row takes a reset draw (the reset rows that of their next episode, the
    others that of their current one), never zeros or uninitialised memory."""
    from tensordict import TensorDict

    from gpusim.envs.native import CartPoleEnv, PendulumEnv

    for cls in (CartPoleEnv, PendulumEnv):
        sparse_env, full_env = cls(batch_size=[400], seed=3), cls(batch_size=[400], seed=3)
        mask = torch.zeros(400, 1, dtype=torch.bool)
        mask[::7] = True
        out = sparse_env.reset(TensorDict({"_reset": mask}, [400]))
        ref = full_env.reset()
        rows = mask[:, 0]
        for key in ("observation", "state"):
            assert torch.equal(out[key][rows], ref[key][rows]), (cls.__name__, key)
            assert torch.isfinite(out[key]).all()
            assert sparse_env.observation_spec[key].is_in(out[key]) if key == "observation" else True
        assert out["state"][~rows].abs().sum() > 0  # drawn, not left at zero
        # with previous values, the rows not reset keep them
        prev = sparse_env.reset()
        prev["_reset"] = mask
        before = prev["state"].clone()
        after = sparse_env.reset(prev)
        assert torch.equal(after["state"][~rows], before[~rows])
        assert not torch.equal(after["state"][rows], before[rows])
        assert torch.isfinite(after["observation"]).all()


@pytest.mark.parametrize(
    "name", ["CartPoleEnv", "PendulumEnv", "MountainCarEnv", "MountainCarContinuousEnv", "AcrobotEnv"]
)
def test_sparse_partial_resets_equal_masked_resets_every_env(name: str) -> None:
    """Random partial ``"_reset"`` masks on a large CPU batch: the sparse eager reset (rows only,
    other rows merged over) gives the same data as the mask-based path, for every native env."""
    import gpusim.envs.native as native
    from gpusim.envs.utils import step_mdp

    cls = getattr(native, name)
    sparse_env, masked_env = cls(batch_size=[300], seed=5), cls(batch_size=[300], seed=5, auto_reset_mode="masked")
    gen = torch.Generator().manual_seed(0)
    a, b = sparse_env.reset(), masked_env.reset()
    for _ in range(12):
        action = sparse_env.full_action_spec.rand()
        a, b = step_mdp(sparse_env.step(a.update(action.clone()))), step_mdp(masked_env.step(b.update(action.clone())))
        mask = torch.rand(300, 1, generator=gen) < 0.3
        a["_reset"], b["_reset"] = mask.clone(), mask.clone()
        a, b = sparse_env.reset(a), masked_env.reset(b)
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        for key in a.keys(True, True):
            assert torch.equal(a[key], b[key]), (name, key)


# ---------------------------------------------------------------- the env author's API
from gpusim.envs.native.rng import ResetRows  # noqa: E402 (the section's own import)


def _draws(rows: ResetRows) -> list[torch.Tensor]:
    """Four reset draws of every kind, in a fixed order."""
    return [
        rows.uniform(-1.0, 2.0, n=3, bits=16),
        rows.uniform(0.0, 1.0, n=2, bits=24),
        rows.randint(-3, 9, n=4),
        rows.bernoulli(0.3, n=5),
    ]


def test_reset_rows_mask_index_and_full_draws_agree_on_reset_rows() -> None:
    """Every kind of reset draw gives the reset rows the same numbers whether every row is
    hashed (full, masked) or only the reset rows (index); later episodes differ."""
    batch = 200
    index = torch.tensor([0, 5, 77, 199])
    mask = torch.zeros(batch, dtype=torch.bool)
    mask[index] = True
    full_rng, mask_rng, index_rng = (CounterRNG((batch,), seed=11) for _ in range(3))
    full = _draws(ResetRows.start(full_rng))
    masked = _draws(ResetRows.start(mask_rng, mask=mask))
    sparse = _draws(ResetRows.start(index_rng, index=index))
    for f, m, s in zip(full, masked, sparse):
        assert torch.equal(f[index], m[index]) and torch.equal(f[index], s[index])
    assert index_rng.episodes.tolist() == mask_rng.episodes.tolist() == mask.int().tolist()
    second = _draws(ResetRows.start(full_rng))  # the next episode of every row
    assert not torch.equal(second[0], full[0]) and not torch.equal(second[2], full[2])


def test_reset_draw_index_separates_streams() -> None:
    """The k-th draw of a reset reads its own stream: equal requests give different numbers,
    and the first draw is the one-draw reset of ``reset_uniform_range``."""
    rows = ResetRows.start(CounterRNG((500,), num=4, seed=3, bits=16))
    a, b = rows.uniform(0.0, 1.0, n=4), rows.uniform(0.0, 1.0, n=4)
    assert not torch.equal(a, b)
    assert abs(float(torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1])) < 0.05
    legacy = CounterRNG((500,), num=4, seed=3, bits=16).reset_uniform_range(0.0, 1.0)
    assert torch.equal(a, legacy)


def test_draw_width_does_not_depend_on_the_cached_lanes() -> None:
    """A draw of ``n`` numbers is the same whether ``n`` is the generator's default (cached
    lane ids) or not (lane ids computed), on both streams and on the sparse path."""
    a, b = CounterRNG((7,), num=5, seed=1, bits=16), CounterRNG((7,), num=1, seed=1, bits=24)
    assert torch.equal(a.uniform(), b.uniform(n=5, bits=16))
    index = torch.tensor([2, 6])
    ra, rb = ResetRows.start(a, index=index), ResetRows.start(b, index=index)
    assert torch.equal(ra.uniform(-1.0, 1.0), rb.uniform(-1.0, 1.0, n=5, bits=16))


@pytest.mark.parametrize("stream", ["step", "reset"])
def test_randint_and_bernoulli_distributions(stream: str) -> None:
    """``randint`` covers ``[low, high)`` uniformly; ``bernoulli`` has mean ``p``; per-row
    tensor parameters broadcast (a row with ``p = 0`` never fires, ``p = 1`` always)."""
    rng = CounterRNG((40000,), seed=9)
    draw = rng if stream == "step" else ResetRows.start(rng)
    x = draw.randint(2, 8, n=1)
    counts = torch.bincount(x.flatten() - 2, minlength=6).double()
    assert x.min() == 2 and x.max() == 7
    chi2 = float(((counts - 40000 / 6) ** 2 / (40000 / 6)).sum())
    assert chi2 < 25.0  # 5 degrees of freedom: p < 1e-4
    p = torch.full((40000, 1), 0.2)
    p[:10] = 0.0
    p[10:20] = 1.0
    fired = draw.bernoulli(p, n=3)
    assert not fired[:10].any() and fired[10:20].all()
    assert abs(float(fired[20:].float().mean()) - 0.2) < 0.01
    high = torch.arange(1, 40001).unsqueeze(-1) % 5 + 1  # per-row ranges [0, 1..5)
    y = draw.randint(0, high, n=2)
    assert bool((y >= 0).all()) and bool((y < high).all())


def test_per_row_parameters_on_the_sparse_path() -> None:
    """Tensor parameters with ``index``: the reset rows get the numbers of a full draw."""
    low = torch.linspace(-5.0, 0.0, 9).unsqueeze(-1)
    index = torch.tensor([1, 4, 8])
    full = ResetRows.start(CounterRNG((9,), seed=2)).uniform(low, low + 1.0, n=2)
    part = ResetRows.start(CounterRNG((9,), seed=2), index=index).uniform(low, low + 1.0, n=2)
    assert torch.equal(full[index], part[index])
    assert bool(((full >= low) & (full < low + 1.0)).all())


def test_draw_arguments_are_checked() -> None:
    rng = CounterRNG((2,))
    with pytest.raises(ValueError, match="n must be a positive int or a tuple of positive ints, got 0"):
        rng.uniform(n=0)
    with pytest.raises(ValueError, match="randint needs low < high"):
        rng.randint(3, 3)
    with pytest.raises(TypeError, match="randint bounds must be ints"):
        rng.randint(0.0, 2)
    with pytest.raises(ValueError, match=r"bernoulli p must be in \[0, 1\], got 1.5"):
        ResetRows.start(rng).bernoulli(1.5)
    with pytest.raises(ValueError, match="uniform needs low <= high"):
        rng.uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="bits must be 16 or 24, got 8"):
        rng.uniform(bits=8)


def test_api_compiles_fullgraph_with_the_numbers_of_eager() -> None:
    """Reset draws (a ResetRows built in the graph) and step draws of every kind, compiled with
    Inductor: the numbers of eager mode, the buffers advanced in the graph."""
    torch._dynamo.reset()
    mask = torch.tensor([True, False, True, True, False, False, True])

    def run(rng: CounterRNG, m: torch.Tensor) -> list[torch.Tensor]:
        out = _draws(ResetRows.start(rng, mask=m))
        return out + [rng.uniform(-2.0, 2.0, n=3), rng.randint(0, 4, n=2), rng.bernoulli(0.5, n=2)]

    eager_rng, compiled_rng = CounterRNG((7,), seed=4), CounterRNG((7,), seed=4)
    compiled = torch.compile(run, fullgraph=True)
    for _ in range(2):
        expected = run(eager_rng, mask)
        got = compiled(compiled_rng, mask)
        for e, g in zip(expected, got):
            assert torch.equal(e, g)
    assert torch.equal(eager_rng.episodes, compiled_rng.episodes) and int(compiled_rng.counter) == 6


def test_env_column_ops_backends_agree() -> None:
    """The eager-CPU column ops (``_ops``) give the reference's numbers exactly."""
    from gpusim.envs.native import _ops
    from gpusim.kernels import force_backend, record_backends

    g = torch.Generator().manual_seed(0)
    state = torch.randn(300, 4, generator=g)
    rates = [torch.randn(300, generator=g) for _ in range(4)]
    with record_backends() as calls:
        fast = (_ops.advance(state, rates, 0.02), _ops.stack_last(rates), *_ops.cos_sin(state[:, 2]))
    assert {b for _, b in calls} == {"cpu"}
    with force_backend("reference", "env_columns"):
        ref = (_ops.advance(state, rates, 0.02), _ops.stack_last(rates), *_ops.cos_sin(state[:, 2]))
    for f, r in zip(fast, ref):
        assert torch.equal(f, r)
    with pytest.raises(ValueError, match="3 rates for a state of 4 columns"):
        _ops.advance(state, rates[:3], 0.1)


def test_tuple_n_shapes_the_numbers_of_a_row() -> None:
    """``n=(a, b)``: the ``a * b`` numbers of a flat draw, reshaped to ``[*B, a, b]``, on both
    streams, the sparse path and with per-row parameters."""
    flat = ResetRows.start(CounterRNG((6,), seed=8)).uniform(-1.0, 1.0, n=12, bits=16)
    shaped = ResetRows.start(CounterRNG((6,), seed=8)).uniform(-1.0, 1.0, n=(3, 4), bits=16)
    assert shaped.shape == (6, 3, 4) and torch.equal(shaped.reshape(6, 12), flat)
    index = torch.tensor([0, 5])
    part = ResetRows.start(CounterRNG((6,), seed=8), index=index).uniform(-1.0, 1.0, n=(3, 4), bits=16)
    assert torch.equal(part[index], shaped[index])
    high = torch.tensor([2, 3, 4, 5, 6, 7]).reshape(6, 1, 1)
    ints = CounterRNG((6,), seed=8).randint(0, high, n=(2, 50))
    assert ints.shape == (6, 2, 50) and bool((ints < high).all()) and ints.max() == 6
    assert CounterRNG((6,), seed=8).bernoulli(0.5, n=(2, 3)).shape == (6, 2, 3)
    with pytest.raises(ValueError, match=r"n must be a positive int or a tuple of positive ints, got \(3, 0\)"):
        CounterRNG((6,)).uniform(n=(3, 0))
