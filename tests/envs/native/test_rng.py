"""The counter-based generator: exact hash, range, uniformity, independence, determinism, compile."""

from __future__ import annotations

import random

import pytest
import torch

from gpusim.envs.native._rng import CounterRNG, hash32, seed_to_key


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
    from gpusim.envs.native._rng import _GOLDEN, _MASK32

    rng = CounterRNG((257,), num=6, seed=12345)
    for _ in range(3):
        counter = int(rng.counter)
        base = int(hash32(torch.tensor(int(rng.key) ^ ((counter * _GOLDEN) & _MASK32))))
        lanes = torch.arange(257 * 3, dtype=torch.int64).reshape(257, 3)
        expected = hash32(lanes ^ base)
        got = rng.bits32().to(torch.int64) & _MASK32
        assert torch.equal(got, expected)


def test_row_restricted_draw_matches_full_draw_on_those_rows() -> None:
    a = CounterRNG((300,), num=4, seed=5)
    b = CounterRNG((300,), num=4, seed=5)
    rows = torch.tensor([0, 7, 123, 299])
    full = a.uniform()
    part = b.only_rows(rows).uniform()
    b.only_rows(None)
    assert torch.equal(part[rows], full[rows])
    others = torch.ones(300, dtype=torch.bool)
    others[rows] = False
    assert part[others].eq(0).all()
    assert torch.equal(a.uniform(), b.uniform())  # the streams stay aligned afterwards


def test_sparse_eager_resets_equal_masked_resets() -> None:
    """Large CPU batches hash only the reset rows; the rollout equals the masked path's."""
    from gpusim.envs.native import CartPoleEnv

    def policy(td):
        return td.set("action", (td["observation"][..., 2] > 0).long())

    sparse_env = CartPoleEnv(batch_size=[300], seed=11)
    masked_env = CartPoleEnv(batch_size=[300], seed=11)
    masked_env._may_branch = lambda: False  # the accelerator / compiled path: all rows, masks
    a = sparse_env.rollout(60, policy, break_when_any_done=False)
    b = masked_env.rollout(60, policy, break_when_any_done=False)
    assert a["next", "done"].any()
    assert torch.equal(a["state"], b["state"]) and torch.equal(a["next", "state"], b["next", "state"])


def test_sparse_reset_without_previous_values_draws_every_row() -> None:
    """A partial ``"_reset"`` on an input without the state/observation entries has nothing to
    merge over: every row takes its reset draw, as with a full draw (never left unfilled)."""
    from tensordict import TensorDict

    from gpusim.envs.native import CartPoleEnv, PendulumEnv

    for cls in (CartPoleEnv, PendulumEnv):
        sparse_env, full_env = cls(batch_size=[400], seed=3), cls(batch_size=[400], seed=3)
        mask = torch.zeros(400, 1, dtype=torch.bool)
        mask[::7] = True
        out = sparse_env.reset(TensorDict({"_reset": mask}, [400]))
        ref = full_env.reset()
        for key in ("observation", "state"):
            assert torch.equal(out[key], ref[key]), (cls.__name__, key)
        # with previous values, the rows not reset keep them (the unfilled rows are merged over)
        prev = sparse_env.reset()
        prev["_reset"] = mask
        before = prev["state"].clone()
        after = sparse_env.reset(prev)
        assert torch.equal(after["state"][~mask[:, 0]], before[~mask[:, 0]])
        assert not torch.equal(after["state"][mask[:, 0]], before[mask[:, 0]])
        assert torch.isfinite(after["observation"]).all()


@pytest.mark.parametrize("name", ["CartPoleEnv", "PendulumEnv", "MountainCarEnv", "MountainCarContinuousEnv", "AcrobotEnv"])
def test_sparse_partial_resets_equal_masked_resets_every_env(name: str) -> None:
    """Random partial ``"_reset"`` masks on a large CPU batch: the sparse eager reset (rows only,
    other rows merged over) gives the same data as the mask-based path, for every native env."""
    import gpusim.envs.native as native
    from gpusim.envs.utils import step_mdp

    cls = getattr(native, name)
    sparse_env, masked_env = cls(batch_size=[300], seed=5), cls(batch_size=[300], seed=5)
    masked_env._may_branch = lambda: False
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
