"""Compiled rollouts (``rollout(compile=True)``, ``env.compile()``) match eager rollouts."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs.native import CartPoleEnv
from tests.envs.toy_envs import NestedCountingEnv, StatelessCounter


def _balance(td):
    return td.set("action", (td["observation"][..., 2] > 0).long())


def _eager_loop(env, root, steps, policy=_balance):
    """``steps`` eager ``step_and_maybe_reset`` calls from ``root``: ``(data [*B, steps], next root)``."""
    data = []
    for _ in range(steps):
        stepped, root = env.step_and_maybe_reset(policy(root))
        data.append(stepped)
    return torch.stack(data, dim=-1), root


def _assert_close(eager, compiled, tol=1e-5):
    assert eager.shape == compiled.shape
    assert set(eager.keys(True, True)) == set(compiled.keys(True, True))
    for key, value in eager.items(True, True):
        other = compiled.get(key)
        assert other.dtype == value.dtype, key
        torch.testing.assert_close(other, value, rtol=tol, atol=tol, msg=lambda m: f"{key}: {m}")


def test_compiled_cartpole_rollout_matches_eager():
    steps_per_call = 3  # 1 eager step (40 % 3), then 13 fused calls of 3
    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[33], seed=3)
    eager = env.rollout(40, _balance, break_when_any_done=False)
    env.set_seed(3)
    compiled = env.rollout(40, _balance, break_when_any_done=False, compile={"steps_per_call": steps_per_call})
    _assert_close(eager, compiled)
    assert compiled.names[-1] == "time"
    assert eager["next", "done"].any()  # resets happened inside the compiled loop


def test_compiled_cartpole_with_five_transforms_matches_eager():
    """The fused paths of the compiled graph (reset noise hashed by columns, CartPole's columns,
    VecNorm's masked reduction, CatFrames' shift) against the eager step loop, with resets."""
    from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNorm

    def make():
        return TransformedEnv(
            CartPoleEnv(batch_size=[8], seed=5, auto_reset_mode="masked"),
            Compose(
                StepCounter(max_steps=5),
                RewardSum(),
                InitTracker(),
                CatFrames(4, dim=-1, in_keys=["observation"]),
                VecNorm(in_keys=["observation"], decay=0.99),
            ),
        )

    torch._dynamo.reset()
    eager = make().rollout(12, _balance, break_when_any_done=False)
    env = make()
    # one step per call: half the graph of the default 2 at this batch (compile time)
    compiled = env.rollout(12, _balance, break_when_any_done=False, compile={"steps_per_call": 1})
    assert eager["next", "done"].any() and eager["is_init"][:, 1:].any()  # resets inside the graph
    assert compiled["next", "observation"].shape == torch.Size([8, 12, 16])
    for key, value in eager.items(True, True):
        torch.testing.assert_close(compiled.get(key), value, rtol=1e-4, atol=1e-4, msg=lambda m: f"{key}: {m}")


def test_compiled_vecnorm_on_four_features_matches_eager():
    """VecNorm on CartPole's 4 features: the compiled graph sums 16-wide regrouped rows
    (``gpusim.kernels.vecnorm.row_sums``) for the step's statistics and the reset rows' masked
    sums; against the eager step loop, with resets inside the graph."""
    from gpusim.transforms import Compose, StepCounter, TransformedEnv, VecNorm

    def make():
        return TransformedEnv(
            CartPoleEnv(batch_size=[8], seed=7, auto_reset_mode="masked"),
            Compose(StepCounter(max_steps=4), VecNorm(in_keys=["observation"], decay=0.9)),
        )

    torch._dynamo.reset()
    eager = make().rollout(10, _balance, break_when_any_done=False)
    compiled = make().rollout(10, _balance, break_when_any_done=False, compile={"steps_per_call": 1})
    assert eager["next", "done"][:, 1:-1].any()  # resets inside the graph
    for key, value in eager.items(True, True):
        torch.testing.assert_close(compiled.get(key), value, rtol=1e-4, atol=1e-4, msg=lambda m: f"{key}: {m}")


def test_compiled_runner_is_cached_and_reused():
    torch._dynamo.reset()
    env = StatelessCounter(batch_size=(5,), max_count=3)
    policy = lambda td: td.set("action", torch.ones(5, dtype=torch.long))  # noqa: E731
    runner = env.compile(policy, steps_per_call=2)
    assert env.compile(policy, steps_per_call=2) is runner
    a = runner(8)  # 4 calls of 2 steps (the layout learnt from a step of copies)
    b = env.rollout(8, policy, break_when_any_done=False)
    _assert_close(b, a)
    assert runner.compile_seconds > 0
    from torch._dynamo.utils import counters

    compiled_frames = counters["frames"]["ok"]
    runner(8)
    runner(5)
    assert counters["frames"]["ok"] == compiled_frames  # no recompilation on later rollouts
    assert {n for _, n in runner._compiled} == {2}  # remainders run eagerly: one graph


def test_compiled_nested_groups_keep_batch_dims():
    torch._dynamo.reset()
    env = NestedCountingEnv(batch_size=(4,), n_agents=2, max_count=3)
    policy = lambda td: td.set(("agents", "action"), torch.ones(4, 2, dtype=torch.long))  # noqa: E731
    eager = env.rollout(6, policy, break_when_any_done=False)
    compiled = env.rollout(6, policy, break_when_any_done=False, compile=True)
    _assert_close(eager, compiled)
    assert compiled["agents"].batch_size == torch.Size([4, 6, 2])


def test_compiled_rollout_rejects_stopping_modes():
    env = StatelessCounter(batch_size=(2,))
    with pytest.raises(ValueError, match="break_when_any_done"):
        env.rollout(3, compile=True)
    with pytest.raises(ValueError, match="callback"):
        env.rollout(3, callback=lambda e, t: None, break_when_any_done=False, compile=True)


def test_graph_break_in_policy_is_an_error():
    torch._dynamo.reset()
    env = StatelessCounter(batch_size=(2,))

    def syncing_policy(td):
        if td["observation"].sum() > 0:  # a Python branch on device data: a host sync
            return td.set("action", torch.ones(2, dtype=torch.long))
        return td.set("action", torch.zeros(2, dtype=torch.long))

    with pytest.raises(Exception, match="(?i)data-dependent|graph break|Unsupported|guard"):
        env.rollout(3, syncing_policy, break_when_any_done=False, compile=True)


def test_default_compiled_policy_draws_in_spec_and_is_seedable():
    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[64], seed=0)
    torch.manual_seed(1)
    a = env.rollout(6, break_when_any_done=False, compile=True)
    assert env.action_spec.is_in(a["action"][:, 0]) and a["action"].dtype == torch.int64
    frac = a["action"].float().mean()
    assert 0.3 < float(frac) < 0.7
    env2 = CartPoleEnv(batch_size=[64], seed=0)
    torch.manual_seed(1)
    b = env2.rollout(6, break_when_any_done=False, compile=True)
    assert torch.equal(a["action"], b["action"])


def test_hash_random_policy_covers_spec_kinds():
    from tensordict import TensorDict

    from gpusim.envs.random_actions import HashRandomPolicy
    from gpusim.specs import Binary, Bounded, Categorical, Composite, OneHot

    B = (50, 3)
    spec = Composite(
        a=Categorical(4, shape=B),
        b=OneHot(5, shape=(*B, 5)),
        c=Bounded(-2.0, 3.0, shape=(*B, 2)),
        d=Binary(3, shape=(*B, 3)),
        g=Composite(e=Categorical(2, shape=(*B, 4)), shape=B),
        shape=B,
    )
    policy = HashRandomPolicy(spec, torch.Size(B), seed=3)
    td = policy(TensorDict({}, B))
    assert spec.is_in(td)
    assert set(td["a"].unique().tolist()) == {0, 1, 2, 3}
    masked = Composite(a=Categorical(3, shape=B, mask=torch.ones(*B, 3, dtype=torch.bool)), shape=B)
    assert not HashRandomPolicy.supports(masked)
    with pytest.raises(ValueError, match="cannot draw"):
        HashRandomPolicy(masked, torch.Size(B))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 8, 32, 100, 1 << 17])
def test_hash_random_policy_categories_are_uniform(n):
    """Each category count is cut its own way from the shared hashes (1, 2, 4: their bits; others:
    24 bits scaled): every index in range, and the counts over many rows and steps within 5
    standard deviations of uniform."""
    from tensordict import TensorDict

    from gpusim.envs.random_actions import HashRandomPolicy
    from gpusim.specs import Categorical, Composite

    rows, steps = 4099, 8  # not a multiple of 32: the last hash is cut short
    spec = Composite(action=Categorical(n, shape=(rows,)), shape=(rows,))
    policy = HashRandomPolicy(spec, torch.Size([rows]), seed=11)
    draws = torch.cat([policy(TensorDict({}, [rows]))["action"] for _ in range(steps)])
    assert draws.dtype == torch.int64 and int(draws.min()) >= 0 and int(draws.max()) < n
    if n <= 100:
        counts = torch.bincount(draws, minlength=n).double()
        mean, std = draws.numel() / n, (draws.numel() * (1 / n) * (1 - 1 / n)) ** 0.5
        assert float((counts - mean).abs().max()) < 5 * std + 1e-9, counts
    else:
        assert float(draws.double().mean()) == pytest.approx((n - 1) / 2, rel=0.02)


def test_hash_random_policy_cuts_one_hash_across_rows():
    """Two-way actions: bit ``r % 32`` of hash ``r // 32`` is row ``r``'s action, so a step of
    64 rows hashes two lanes; a float leaf takes a hash per number; block draws equal step draws."""
    from tensordict import TensorDict

    from gpusim.envs.random_actions import HashRandomPolicy
    from gpusim.specs import Bounded, Categorical, Composite

    spec = Composite(a=Categorical(2, shape=(64,)), b=Bounded(-1.0, 1.0, shape=(64, 3)), shape=(64,))
    policy = HashRandomPolicy(spec, torch.Size([64]), seed=5)
    assert policy.hashes == 2 + 64 * 3
    h = policy.rng.shared_bits(policy.hashes)
    a, b = policy.actions(h)
    bits = torch.stack([(h[r // 32] >> (r % 32)) & 1 for r in range(64)]).long()
    assert torch.equal(a, bits)
    u = ((h[2:] >> 8) & 0xFFFFFF).float() / 2**24
    torch.testing.assert_close(b, (-1.0 + 2.0 * u).reshape(64, 3))
    td = policy(TensorDict({}, [64]))
    assert torch.equal(td["a"], a) and torch.equal(td["b"], b)
    fresh = HashRandomPolicy(spec, torch.Size([64]), seed=5)
    ahead = fresh.ahead(5)
    again = HashRandomPolicy(spec, torch.Size([64]), seed=5)
    for _ in range(5):
        x, y = ahead(TensorDict({}, [64])), again(TensorDict({}, [64]))
        assert torch.equal(x["a"], y["a"]) and torch.equal(x["b"], y["b"])


def test_many_runners_do_not_share_one_compile_cache():
    """Each runner body has its own code object: more layouts than dynamo's recompile limit
    (8 per code object) still compile under fullgraph=True."""
    torch._dynamo.reset()
    limit = torch._dynamo.config.recompile_limit
    policy = lambda td: td.set("action", torch.ones(td.batch_size, dtype=torch.long))  # noqa: E731
    for batch in range(1, limit + 3):
        env = StatelessCounter(batch_size=(batch,), max_count=2)
        out = env.rollout(3, policy, break_when_any_done=False, compile={"steps_per_call": 1})
        assert out.shape == torch.Size([batch, 3])


def test_bool_leaves_cross_the_cpu_graph_as_uint8_and_come_back_bool():
    """CPU graphs take and give bool leaves as uint8 views (Inductor stores bools bytewise):
    the data, the continued root and its flags are bool and equal the eager loop's, with resets
    inside the graph and the root's done/terminated carried across two runs."""
    from gpusim.envs.compiled import CompiledRollout
    from gpusim.kernels._inductor import pack_bool, unpack_bool

    flags = torch.tensor([[True], [False], [True]])
    packed = pack_bool(flags)
    assert packed.dtype == torch.uint8 and packed.tolist() == [[1], [0], [1]]
    assert torch.equal(unpack_bool(packed), flags)

    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[16], seed=11)
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    assert runner._packs_bools()
    root = env.reset()
    first, root = runner.run(30, root)
    second, root = runner.run(30, root)
    for key in ("done", "terminated"):
        assert root[key].dtype == torch.bool
        assert first[key].dtype == first["next", key].dtype == torch.bool

    env.set_seed(11)
    eager, eager_root = _eager_loop(env, env.reset(), 60)
    both = torch.cat([first, second], dim=-1)
    assert eager["next", "done"].any()  # resets happened inside the graph
    for key in ("done", "terminated", ("next", "done"), ("next", "terminated")):
        assert torch.equal(both.get(key), eager.get(key)), key
    for key in ("done", "terminated", "observation"):
        torch.testing.assert_close(root.get(key), eager_root.get(key), rtol=1e-5, atol=1e-5)


def test_guards_still_checked_at_the_start_of_each_run():
    """The calls of a run after the first two skip Dynamo's guards; each run's first calls keep
    them, so an env constant changed between runs (read while tracing) is seen: the graph is
    recompiled and the data match an eager loop with the new constant. The caller's stance is
    left as it was."""
    from gpusim.envs.compiled import GUARDED_CALLS, CompiledRollout

    torch._dynamo.reset()
    env = CartPoleEnv(batch_size=[8], seed=2)
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    _, root = runner.run(GUARDED_CALLS + 6, env.reset())
    env.force_mag = 3.0  # guarded attribute: a different graph
    start = root.clone()
    data, _ = runner.run(GUARDED_CALLS + 6, root)

    eager_root, steps = start, []
    for _ in range(GUARDED_CALLS + 6):
        stepped, eager_root = env.step_and_maybe_reset(_balance(eager_root))
        steps.append(stepped)
    eager = torch.stack(steps, dim=-1)
    torch.testing.assert_close(data["next", "observation"], eager["next", "observation"], rtol=1e-5, atol=1e-6)
    assert torch._dynamo.eval_frame._stance.skip_guard_eval_unsafe is False


def test_next_root_written_in_place_alternately_and_fresh_per_run():
    """CPU runners write the next root into two sets of buffers made per run (no allocation per
    call): the data and roots match the eager loop (resets inside the graph, odd and even call
    counts), and a root returned by one run is not overwritten by the next run."""
    from gpusim.envs.compiled import PINGPONG, CompiledRollout
    from gpusim.transforms import StepCounter, TransformedEnv

    assert PINGPONG

    def make():
        return TransformedEnv(CartPoleEnv(batch_size=[8], seed=4, auto_reset_mode="masked"), StepCounter(max_steps=3))

    torch._dynamo.reset()
    env = make()
    runner = CompiledRollout(env, _balance, steps_per_call=1, verbose=False)
    assert runner._pingpong
    first, root1 = runner.run(5, env.reset())
    kept = root1.clone()
    second, root2 = runner.run(6, root1)
    for key, value in kept.items(True, True):
        assert torch.equal(root1.get(key), value), key  # the next run wrote elsewhere
        assert root2.get(key).data_ptr() != root1.get(key).data_ptr(), key

    eager_env = make()
    eager, eager_root = _eager_loop(eager_env, eager_env.reset(), 11)
    assert eager["next", "truncated"].any()  # resets happened inside the graph
    _assert_close(eager, torch.cat([first, second], dim=-1))
    _assert_close(eager_root, root2)


@pytest.mark.parametrize("num, bits", [(3, 16), (4, 16), (2, 24)])
def test_compiled_reset_noise_by_columns_equals_eager(num, bits):
    """Compiled graphs hash 16-bit reset noise one column per hash (``rng.COLHASH``): the same
    numbers and episode indices as the eager ``[*B, hashes]`` hash, also for a number of draws
    that leaves half a hash unused (24-bit draws keep the ``[*B, hashes]`` hash)."""
    from gpusim.envs.native import rng as _rng

    assert _rng.COLHASH
    torch._dynamo.reset()
    eager, compiled = (
        _rng.CounterRNG((5,), num=num, seed=7, bits=bits),
        _rng.CounterRNG((5,), num=num, seed=7, bits=bits),
    )
    mask = torch.tensor([True, False, True, True, False])
    draw = torch.compile(lambda m: compiled.reset_uniform_range(-0.05, 0.05, mask=m), fullgraph=True)
    for _ in range(2):
        expected = eager.reset_uniform_range(-0.05, 0.05, mask=mask)
        assert torch.equal(draw(mask), expected)
    assert torch.equal(compiled.episodes, eager.episodes) and eager.episodes.tolist() == [2, 0, 2, 2, 0]


@pytest.mark.parametrize("name", ["PendulumEnv", "MountainCarEnv", "AcrobotEnv"])
def test_compiled_native_envs_with_step_counter_match_eager(name):
    """Compiled vs eager for the native envs whose root done mask goes through the uint8 graph
    buffer (``episode._graph_mask``) and whose reset noise is hashed by columns, with
    truncations (so resets) inside the graph."""
    from gpusim.envs import native
    from gpusim.transforms import StepCounter, TransformedEnv

    def make():
        return TransformedEnv(getattr(native, name)(batch_size=[6], seed=9), StepCounter(max_steps=3))

    action = make().full_action_spec.zero()

    def policy(td):
        return td.update(action.clone())

    torch._dynamo.reset()
    eager = make().rollout(10, policy, break_when_any_done=False)
    compiled = make().rollout(10, policy, break_when_any_done=False, compile={"steps_per_call": 1})
    assert eager["next", "truncated"].any()  # resets inside the graph
    _assert_close(eager, compiled)
