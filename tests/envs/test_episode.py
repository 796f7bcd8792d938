"""The episode core (gpusim/envs/episode.py): mask resolution, auto-reset modes, merges, and what
transforms see during a reset."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.envs.episode import AutoResetMode, EpisodePlan, ResetMasks, merge_rows, reset_mask_for
from gpusim.kernels import force_backend, record_backends, threshold
from gpusim.specs import Categorical, Composite
from gpusim.transforms import (
    CatFrames,
    Compose,
    FrameSkipTransform,
    InitTracker,
    NoopResetEnv,
    RewardSum,
    StepCounter,
    TimeMaxPool,
    Transform,
    TransformedEnv,
    VecNorm,
)


def _balance(td):
    return td.set("action", (td["observation"][..., 2] > 0).long())


def _flag(shape):
    return Categorical(2, shape=shape, dtype=torch.bool)


# ------------------------------------------------------------------------------- the plan
def test_mode_parsing_and_defaults():
    assert gs.CartPoleEnv(batch_size=[2]).auto_reset_mode is AutoResetMode.SPARSE
    assert gs.CartPoleEnv(batch_size=[2], auto_reset_mode="masked").auto_reset_mode is AutoResetMode.MASKED
    assert gs.GymEnv("CartPole-v1", num_envs=2).auto_reset_mode is AutoResetMode.SPARSE
    t = gs.make("CartPole-v1", num_envs=2, auto_reset_mode="masked")
    assert t.auto_reset_mode is AutoResetMode.MASKED  # a TransformedEnv follows its base env
    with pytest.raises(ValueError, match=r"auto_reset_mode must be one of \['masked', 'sparse'\].*got 'lazy'"):
        gs.CartPoleEnv(batch_size=[2], auto_reset_mode="lazy")


def test_root_prevails_over_nested_levels_and_levels_reset_fully_without_entry():
    done = Composite(
        done=_flag((2, 1)),
        agents=Composite(done=_flag((2, 3, 1)), shape=(2, 3)),
        other=Composite(done=_flag((2, 4, 1)), shape=(2, 4)),
        shape=(2,),
    )
    plan = EpisodePlan(done, torch.Size([2]))
    nested = torch.zeros(2, 3, 1, dtype=torch.bool)
    td = TensorDict({"_reset": torch.tensor([[True], [False]]), "agents": {"_reset": nested}}, [2])
    masks = plan.resolve(td)
    assert masks.root.tolist() == [True, False]
    assert masks.for_level(plan.levels[1]).tolist() == [[True] * 3, [False] * 3]  # root broadcast
    td = TensorDict({"agents": {"_reset": nested | True}}, [2])
    masks = plan.resolve(td)
    assert masks.root is None and masks.masks[0] is None  # root level: full
    assert masks.for_level(plan.levels[1]).all() and masks.for_level(plan.levels[2]) is None
    assert masks.env_rows() is None  # the "other" group resets fully: every row is touched
    # transforms ask the same module (root first, then the key's own level)
    assert reset_mask_for(td, ("agents", "obs"), plan.levels, plan.batch_size).shape == (2, 3)
    assert reset_mask_for(td, "obs", plan.levels, plan.batch_size) is None


def test_nested_reset_entries_are_checked_with_their_key():
    done = Composite(done=_flag((2, 1)), agents=Composite(done=_flag((2, 3, 1)), shape=(2, 3)), shape=(2,))
    plan = EpisodePlan(done, torch.Size([2]))
    td = TensorDict({"agents": {"_reset": torch.zeros(2, 3, 1, dtype=torch.uint8)}}, [2])
    with pytest.raises(TypeError, match=r"\('agents', '_reset'\) entry must be a bool tensor of shape \[2, 3, 1\]"):
        plan.resolve(td)


def test_done_masks_read_truncated_and_root_prevails():
    done = Composite(done=_flag((3, 1)), truncated=_flag((3, 1)), shape=(3,))
    plan = EpisodePlan(done, torch.Size([3]))
    td = TensorDict(
        {"done": torch.tensor([[True], [False], [False]]), "truncated": torch.tensor([[False], [True], [False]])}, [3]
    )
    assert plan.done_masks(td).env_rows().tolist() == [True, True, False]
    with pytest.raises(KeyError, match="no 'done' entry"):
        plan.done_masks(TensorDict({}, [3]))


def test_merge_rows_casts_and_skips_marked_leaves():
    new = TensorDict({"a": torch.zeros(3), "b": torch.zeros(3)}, [3])
    old = TensorDict({"a": torch.ones(3, dtype=torch.float64), "b": torch.ones(3)}, [3])
    masks = ResetMasks([], [], torch.tensor([True, False, True]), torch.Size([3]))
    masks.mark_merged(new["b"])
    merge_rows(new, old, masks.root, masks.premerged)
    assert new["a"].tolist() == [0.0, 1.0, 0.0] and new["a"].dtype == torch.float32
    assert new["b"].tolist() == [0.0, 0.0, 0.0]  # marked: kept as it is


# ------------------------------------------------------------- modes give the same results
def _full_chain(batch: int, mode: str, seed: int = 7) -> TransformedEnv:
    base = gs.CartPoleEnv(batch_size=[batch], seed=seed, auto_reset_mode=mode)
    return TransformedEnv(
        base,
        Compose(
            NoopResetEnv(3),
            StepCounter(12),
            RewardSum(),
            InitTracker(),
            CatFrames(4, -1, in_keys=["observation"], out_keys=["stack"]),
            TimeMaxPool(in_keys=["observation"], out_keys=["pooled"], T=3),
            VecNorm(in_keys=["observation"], out_keys=["obs_norm"], decay=0.99),
            FrameSkipTransform(2),
        ),
    )


def _assert_same(a, b, what):
    assert set(a.keys(True, True)) == set(b.keys(True, True)), what
    for key in a.keys(True, True):
        x, y = a[key], b[key]
        if x.is_floating_point() and key in ("obs_norm", ("next", "obs_norm")):
            torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5, msg=lambda m: f"{what} {key}: {m}")
        else:
            assert torch.equal(x, y), (what, key)


@pytest.mark.parametrize("batch", [1, 255, 256])
def test_masked_and_sparse_modes_give_the_same_rollouts_with_every_stateful_transform(batch):
    runs = {}
    for mode in ("sparse", "masked"):
        env = _full_chain(batch, mode)
        runs[mode] = env.rollout(25, _balance, break_when_any_done=False)
    assert runs["sparse"]["next", "done"].any()
    _assert_same(runs["sparse"], runs["masked"], f"batch {batch}")


@pytest.mark.parametrize("batch", [255, 256, 2047, 2048, 8191, 8192, 32767, 32768, 65536])
def test_partial_resets_cross_every_fast_path_threshold(batch):
    """Random partial ``"_reset"`` masks and auto-resets of a transformed native env at batches
    on both sides of each CPU fast path's threshold (sparse draws: 256 rows; row-scatter merge
    and CatFrames: 8192 elements, i.e. 2048 rows of a [B, 4] leaf and 8192 rows of a [B, 1] one;
    the rollout stack: 8 MiB) equal the reference backends and the masked mode. (The packed
    categorical draw is a different stream of the same distribution: its parity test is in
    tests/kernels/test_backend_thresholds.py.)"""
    assert threshold("sparse_reset") == 256 and threshold("masked_merge") == 8192
    steps = 6 if batch < 30000 else 3
    gen = torch.Generator().manual_seed(batch)
    masks = [torch.rand(batch, 1, generator=gen) < 0.3 for _ in range(steps)]
    actions = [torch.randint(0, 2, (batch,), generator=gen) for _ in range(steps)]

    def run(mode):
        env = TransformedEnv(
            gs.CartPoleEnv(batch_size=[batch], seed=1, auto_reset_mode=mode),
            Compose(StepCounter(4), CatFrames(3, -1, in_keys=["observation"], out_keys=["stack"]), InitTracker()),
        )
        td = env.reset()
        out = []
        for mask, action in zip(masks, actions):
            stepped, td = env.step_and_maybe_reset(td.set("action", action.clone()))
            out.append(stepped.exclude("action"))
            td["_reset"] = mask.clone()
            td = env.reset(td)
            out.append(td.clone())
        return out

    with record_backends() as chosen:
        fast = run("sparse")
    with force_backend("reference"):
        ref = run("sparse")
    masked = run("masked")
    used = {op for op, backend in chosen if backend == "cpu"}
    if batch >= 256:
        assert "sparse_reset" in used
    if batch >= 2048:
        assert "masked_merge" in used
    for i, (a, b, c) in enumerate(zip(fast, ref, masked)):
        _assert_same(a, b, f"batch {batch} step {i} fast vs reference")
        _assert_same(a, c, f"batch {batch} step {i} sparse vs masked")


def test_compiled_rollout_equals_both_eager_modes():
    def env(mode):
        return TransformedEnv(
            gs.CartPoleEnv(batch_size=[64], seed=3, auto_reset_mode=mode), Compose(StepCounter(10), RewardSum())
        )

    compiled = env("sparse").rollout(30, _balance, break_when_any_done=False, compile={"steps_per_call": 1})
    for mode in ("sparse", "masked"):
        eager = env(mode).rollout(30, _balance, break_when_any_done=False)
        assert eager["next", "done"].any()
        for key in eager.keys(True, True):
            torch.testing.assert_close(compiled[key], eager[key], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------- no uninitialised memory is seen
class _Spy(Transform):
    """Checks, in every reset, that the rows not being reset hold the previous data and that
    everything is finite."""

    def __init__(self):
        super().__init__()
        self.resets = 0
        self.partial = 0

    def _reset(self, tensordict, tensordict_reset):
        self.resets += 1
        for key, value in tensordict_reset.items(True, True):
            if value.is_floating_point():
                assert torch.isfinite(value).all(), f"non-finite values in {key} during reset"
        mask = tensordict.get("_reset", None)
        if mask is not None and "state" in tensordict.keys():
            keep = ~mask.squeeze(-1)
            if keep.any():
                self.partial += 1
            for key in ("observation", "state", "done", "terminated"):
                assert torch.equal(tensordict_reset[key][keep], tensordict[key][keep]), key
        return tensordict_reset


@pytest.mark.parametrize("batch", [1024, 70000])
@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_transforms_see_previous_data_in_rows_not_reset(batch, mode):
    spy = _Spy()
    env = TransformedEnv(
        gs.CartPoleEnv(batch_size=[batch], seed=0, auto_reset_mode=mode), Compose(spy, VecNorm(in_keys=["observation"]))
    )
    td = env.reset()
    for _ in range(15):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
    assert spy.partial > 0
    for key, value in td.items(True, True):
        if value.is_floating_point():
            assert torch.isfinite(value).all(), key


def test_rollout_callback_sees_finite_data():
    seen = []
    env = _full_chain(300, "sparse")
    env.rollout(
        10,
        _balance,
        callback=lambda e, td: seen.append(
            all(torch.isfinite(v).all() for v in td.values(True, True) if v.is_floating_point())
        ),
        break_when_any_done=False,
    )
    assert seen and all(seen)


# -------------------------------------------------------------------- NoopResetEnv
def test_noop_reset_is_rejected_on_a_batched_host_backed_env():
    venv = gs.GymEnv("CartPole-v1", num_envs=3)
    env = TransformedEnv(venv, NoopResetEnv(3))  # attaching is allowed (as in TorchRL); resetting is not
    with pytest.raises(
        ValueError, match=r"batch-size is non-null \(\[3\]\) .* the parent GymEnv cannot step some rows"
    ):
        env.reset()
    serial = TransformedEnv(gs.SerialEnv(2, lambda: gs.GymEnv("CartPole-v1")), NoopResetEnv(3))
    with pytest.raises(ValueError, match="the parent SerialEnv cannot step some rows"):
        serial.reset()
    serial.close()
    single = TransformedEnv(gs.GymEnv("CartPole-v1"), NoopResetEnv(3, random=False))
    single.set_seed(0)
    assert single.reset()["observation"].shape == (4,)


def test_noop_reset_keys_its_draws_by_episode_not_by_reset_calls():
    """A row's no-op count does not depend on how many resets the other rows had."""
    a = TransformedEnv(gs.CartPoleEnv(batch_size=[8], seed=2), NoopResetEnv(5))
    b = TransformedEnv(gs.CartPoleEnv(batch_size=[8], seed=2), NoopResetEnv(5))
    ta, tb = a.reset(), b.reset()
    assert torch.equal(ta["state"], tb["state"])
    mask = torch.zeros(8, 1, dtype=torch.bool)
    mask[3] = True
    for _ in range(3):  # only row 3 resets, three times, in env b
        tb = b.reset(tb.set("_reset", mask.clone()))
    full_a, full_b = a.reset(), b.reset()
    keep = ~mask.squeeze(-1)
    # rows other than 3 start their second episode in both envs: same state
    assert torch.equal(full_a["state"][keep], full_b["state"][keep])
    assert not torch.equal(full_a["state"][3], full_b["state"][3])


def test_selects_rows_tells_row_resets_from_whole_env_resets():
    from gpusim.envs.episode import selects_rows

    td = TensorDict({"agents": {"_reset": torch.zeros(2, 3, 1, dtype=torch.bool)}}, [2])
    assert selects_rows(td)  # nested levels count
    assert selects_rows(TensorDict({"_reset": torch.ones(2, 1, dtype=torch.bool)}, [2]))
    assert not selects_rows(TensorDict({"observation": torch.zeros(2, 4)}, [2]))
    assert not selects_rows(None)
