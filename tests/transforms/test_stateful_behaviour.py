"""Documented behaviour of each stateful transform: StepCounter truncation, RewardSum /
TargetReturn / Reward2GoTransform values, InitTracker, CatFrames (online == offline, padding,
specs), VecNorm (exact statistics, state_dict, sharing, freezing), primers, end-of-life, noop
resets and frame skipping; bad arguments raise at construction."""

from __future__ import annotations

import multiprocessing as mp

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import EnvBase
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms import (
    CatFrames,
    Compose,
    EndOfLifeTransform,
    FrameSkipTransform,
    InitTracker,
    NoopResetEnv,
    Reward2GoTransform,
    RewardSum,
    StepCounter,
    TargetReturn,
    TensorDictPrimer,
    TimeMaxPool,
    TransformedEnv,
    VecNorm,
    gSDENoise,
)
from tests.envs.toy_envs import CountingEnv, StatelessCounter
from tests.transforms._stateful_envs import LivesEnv, TickEnv


def _const_policy(value):
    def policy(td):
        td["action"] = torch.full(td.batch_size, value, dtype=torch.long)
        return td

    return policy


# ---------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: StepCounter(max_steps=0), "max_steps"),
        (lambda: StepCounter(max_steps=-3), "max_steps"),
        (lambda: CatFrames(3, dim=0), "dim"),
        (lambda: CatFrames(3, dim=1), "dim"),
        (lambda: CatFrames(0, dim=-1), "N"),
        (lambda: CatFrames(2, dim=-1, padding="reflect"), "padding"),
        (lambda: VecNorm(decay=0.0), "decay"),
        (lambda: VecNorm(decay=1.5), "decay"),
        (lambda: VecNorm(eps=0.0), "eps"),
        (lambda: VecNorm(in_keys=["a"], shapes=[(1,), (2,)]), "shapes"),
        (lambda: TimeMaxPool(T=0), "T"),
        (lambda: NoopResetEnv(noops=-1), "noops"),
        (lambda: FrameSkipTransform(0), "frame_skip"),
        (lambda: TargetReturn(1.0, mode="grow"), "mode"),
        (lambda: TensorDictPrimer({"a": 3.0}), "TensorSpec"),
    ],
)
def test_bad_arguments_raise_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ---------------------------------------------------------------------------------- StepCounter
@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
def test_step_counter_truncates_at_max_steps_and_updates_done(batch):
    env = TransformedEnv(StatelessCounter(batch_size=batch, max_count=100), StepCounter(max_steps=3))
    td = env.rollout(7, _const_policy(0), break_when_any_done=False)
    count = td["next", "step_count"].reshape(-1, 7)
    assert (count == torch.tensor([1, 2, 3, 1, 2, 3, 1])).all()
    trunc = td["next", "truncated"].reshape(-1, 7)
    assert (trunc == (count == 3)).all()
    assert torch.equal(td["next", "done"], td["next", "truncated"])  # the env itself never ends
    assert not td["next", "terminated"].any()


def test_step_counter_rows_reset_independently_and_existing_truncated_kept():
    # rows end (terminated) at different steps; the counter restarts for each row on its own
    env = TransformedEnv(StatelessCounter(batch_size=(3,), max_count=2), StepCounter(max_steps=4))
    actions = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0], [1, 0, 1, 1, 1]])

    i = iter(range(5))

    def policy(td):
        td["action"] = actions[:, next(i)]
        return td

    td = env.rollout(5, policy, break_when_any_done=False)
    assert td["next", "step_count"][..., 0].tolist() == [[1, 2, 1, 2, 1], [1, 2, 3, 4, 1], [1, 2, 3, 1, 2]]
    assert td["next", "truncated"][..., 0].tolist() == [[False] * 5, [False, False, False, True, False], [False] * 5]
    assert td["next", "done"][..., 0].tolist() == [
        [False, True, False, True, False],
        [False, False, False, True, False],
        [False, False, True, False, True],
    ]
    # update_done=False leaves done alone
    env = TransformedEnv(StatelessCounter(batch_size=(2,), max_count=100), StepCounter(2, update_done=False))
    td = env.rollout(2, _const_policy(0))
    assert td["next", "truncated"][:, -1].all() and not td["next", "done"].any()


# ---------------------------------------------------------------------------------- RewardSum & co
def test_reward_sum_is_the_running_episode_return():
    env = TransformedEnv(StatelessCounter(batch_size=(4,), max_count=3), RewardSum())
    torch.manual_seed(0)
    td = env.rollout(12, break_when_any_done=False)
    reward, done = td["next", "reward"], td["next", "done"]
    expected, acc = torch.zeros_like(reward), torch.zeros_like(reward[:, 0])
    for t in range(12):
        acc = acc + reward[:, t]
        expected[:, t] = acc
        acc = torch.where(done[:, t], torch.zeros_like(acc), acc)
    assert torch.equal(td["next", "episode_reward"], expected)
    assert "episode_reward" in env.observation_keys and "episode_reward" in env.state_keys


def test_reward_sum_custom_keys_and_missing_key():
    env = TransformedEnv(StatelessCounter(batch_size=(2,)), RewardSum(in_keys=["reward"], out_keys=["ret"]))
    assert "ret" in env.observation_keys
    with pytest.raises(KeyError, match="nope"):
        TransformedEnv(StatelessCounter(batch_size=(2,)), RewardSum(in_keys=["nope"]))


def test_target_return_reduce_and_constant():
    for mode, expected in (("reduce", [9.0, 7.0, 4.0]), ("constant", [10.0, 10.0, 10.0])):
        env = TransformedEnv(StatelessCounter(batch_size=(1,), max_count=100), TargetReturn(10.0, mode=mode))
        td = env.rollout(3, _const_policy(1))
        assert td["next", "target_return"].flatten().tolist() == expected
        assert td["target_return"][0, 0].item() == 10.0


def test_reward2go_matches_documented_values():
    reward = torch.ones(1, 10, 1)
    done = torch.zeros(1, 10, 1, dtype=torch.bool)
    done[:, [3, 7]] = True
    td = TensorDict({"next": {"reward": reward, "done": done}}, [1, 10])
    out = Reward2GoTransform(gamma=0.99, out_keys=["reward_to_go"]).inv(td)
    expected = torch.tensor([3.9404, 2.9701, 1.9900, 1.0, 3.9404, 2.9701, 1.9900, 1.0, 1.9900, 1.0])
    torch.testing.assert_close(out["reward_to_go"].flatten(), expected, atol=1e-4, rtol=0)
    assert "reward_to_go" not in td.keys()  # inv works on a copy
    trunc = torch.zeros_like(done)
    trunc[:, 5] = True
    td["next", "truncated"] = trunc
    out = Reward2GoTransform(gamma=1.0).inv(td)
    assert out["next", "reward"].flatten().tolist() == [4, 3, 2, 1, 2, 1, 2, 1, 2, 1]
    assert Reward2GoTransform()(td) is td  # forward: unchanged
    with pytest.raises(ValueError, match="replay") as err:
        TransformedEnv(StatelessCounter(), Reward2GoTransform())
    assert str(err.value) == Reward2GoTransform.ENV_ERR  # the documented message attribute
    with pytest.raises(KeyError, match="Could not find the reward entry"):  # the reward lives under "next"
        Reward2GoTransform().inv(TensorDict({"reward": reward, "next": {"done": done}}, [1, 10]))
    with pytest.raises(ValueError, match=Reward2GoTransform.ENV_ERR):  # usable as a pattern
        TransformedEnv(StatelessCounter(), Compose(Reward2GoTransform()))


# ---------------------------------------------------------------------------------- InitTracker
def test_init_tracker_marks_first_steps():
    env = TransformedEnv(StatelessCounter(batch_size=(2,), max_count=2), InitTracker())
    td = env.rollout(4, _const_policy(1), break_when_any_done=False)
    assert td["is_init"][..., 0].tolist() == [[True, False, True, False]] * 2
    assert not td["next", "is_init"].any()
    assert "is_init" in env.observation_keys


# ---------------------------------------------------------------------------------- CatFrames
@pytest.mark.parametrize("padding", ["same", "constant"])
def test_cat_frames_online_equals_offline(padding):
    torch.manual_seed(0)
    kw = dict(padding=padding, padding_value=-1.0)
    base = StatelessCounter(batch_size=(4,), max_count=3)
    online = TransformedEnv(
        StatelessCounter(batch_size=(4,), max_count=3),
        CatFrames(3, dim=-1, in_keys=["observation"], out_keys=["stack"], **kw),
    )
    g = torch.Generator().manual_seed(1)
    actions = torch.randint(0, 2, (4, 12), generator=g)
    it = iter(range(12))
    it2 = iter(range(12))

    def p1(td):
        td["action"] = actions[:, next(it)]
        return td

    def p2(td):
        td["action"] = actions[:, next(it2)]
        return td

    td_on = online.rollout(12, p1, break_when_any_done=False)
    offline = CatFrames(
        3, dim=-1, in_keys=["observation", ("next", "observation")], out_keys=["stack", ("next", "stack")], **kw
    )
    td_off = offline(base.rollout(12, p2, break_when_any_done=False))
    assert td_on["next", "done"].any()  # episodes restart inside the data
    assert torch.equal(td_on["stack"], td_off["stack"])
    assert torch.equal(td_on["next", "stack"], td_off["next", "stack"])


def test_cat_frames_specs_and_image_dim():
    env = TransformedEnv(StatelessCounter(batch_size=(2,)), CatFrames(4, dim=-1, in_keys=["observation"]))
    assert env.observation_spec["observation"].shape == (2, 4)
    img = TensorDict({"pixels": torch.arange(2 * 3 * 1 * 2 * 2.0).reshape(2, 3, 1, 2, 2)}, [2, 3], names=[None, "time"])
    img["next", "done"] = torch.zeros(2, 3, 1, dtype=torch.bool)
    pix = img["pixels"].clone()
    out = CatFrames(2, dim=-3)(img)
    assert out["pixels"].shape == (2, 3, 2, 2, 2)
    assert torch.equal(out["pixels"][:, 1, 0], pix[:, 0, 0])  # older frame first
    assert torch.equal(out["pixels"][:, 1, 1], pix[:, 1, 0])
    assert torch.equal(out["pixels"][:, 0, 0], out["pixels"][:, 0, 1])  # "same" padding
    b = Bounded(-1.0, 1.0, shape=(2, 3))
    from gpusim.transforms.cat_frames import _cat_spec

    s = _cat_spec(b, 2, -1, "constant", -5.0)
    assert s.shape == (2, 6) and s.low.min().item() == -5.0 and s.high.max().item() == 1.0


def test_cat_frames_buffer_preallocated_and_updated_in_place():
    t = CatFrames(2, dim=-1, in_keys=["observation"])
    env = TransformedEnv(StatelessCounter(batch_size=(3,)), t)
    buf = t._cat_buffers_observation
    assert buf.shape == (3, 2)
    td = env.rollout(3, _const_policy(1))
    assert t._cat_buffers_observation is buf  # same storage after steps and resets
    assert torch.equal(buf, td["next", "observation"][:, -1])
    assert t.clone()._cat_buffers_observation is buf


# ---------------------------------------------------------------------------------- VecNorm
def _all_seen(td0, batch):
    """Every observation fed to VecNorm: the first reset, each step, the reset of done rows
    (a non-stop rollout does not reset after its last step, as in TorchRL)."""
    obs = [torch.zeros(batch, 1)]
    for t in range(td0.shape[-1]):
        obs.append(td0["next", "observation"][:, t])
        if t < td0.shape[-1] - 1:
            obs.append(torch.zeros(int(td0["next", "done"][:, t].sum()), 1))
    return torch.cat(obs)


def test_vecnorm_decay_one_is_exact_running_mean_and_biased_std():
    env = TransformedEnv(
        StatelessCounter(batch_size=(5,), max_count=3), VecNorm(in_keys=["observation"], decay=1.0, eps=1e-8)
    )
    base = StatelessCounter(batch_size=(5,), max_count=3)
    torch.manual_seed(0)
    td = env.rollout(15, break_when_any_done=False)
    torch.manual_seed(0)
    td0 = base.rollout(15, break_when_any_done=False)
    seen = _all_seen(td0, 5)
    vn = env.transform
    torch.testing.assert_close(vn.loc["observation"], seen.mean(0))
    torch.testing.assert_close(vn.scale["observation"], seen.std(0, unbiased=False))
    # the last normalized observation uses the statistics after that step's update
    last = td["next", "observation"][:, -1]
    assert last.shape == (5, 1) and torch.isfinite(last).all()


def test_vecnorm_state_dict_roundtrip_and_freeze():
    env = TransformedEnv(StatelessCounter(batch_size=(4,), max_count=3), VecNorm(in_keys=["observation"]))
    env.rollout(5, break_when_any_done=False)
    vn = env.transform
    sd = env.state_dict()
    fresh = TransformedEnv(StatelessCounter(batch_size=(4,), max_count=3), VecNorm(in_keys=["observation"]))
    fresh.load_state_dict(sd)
    assert torch.equal(fresh.transform.stats["observation_sum"], vn.stats["observation_sum"])
    stats = vn.stats.clone()
    vn.freeze()
    env.rollout(3, break_when_any_done=False)
    assert (vn.stats == stats).all()
    vn.unfreeze()
    assert not vn.training  # added to an env: eval mode, which does not freeze the statistics
    env.rollout(2, break_when_any_done=False)
    assert not (vn.stats == stats).all()
    frozen = vn.frozen_copy()  # follows the statistics (same tensors) without updating them
    assert frozen.frozen and frozen.stats["observation_sum"] is vn.stats["observation_sum"]
    before = vn.stats.clone()
    frozen(TensorDict({"observation": torch.randn(4, 1)}, [4]))
    assert (vn.stats == before).all()
    norm = vn.to_observation_norm()
    x = torch.randn(4, 1)
    torch.testing.assert_close(
        norm(TensorDict({"observation": x}, [4]))["observation"], (x - vn.loc["observation"]) / vn.scale["observation"]
    )


def _worker(td, n):
    vn = VecNorm(in_keys=["observation"], shared_td=td, decay=1.0)
    for _ in range(n):
        vn(TensorDict({"observation": torch.ones(3, 1)}, [3]))


def test_vecnorm_shared_statistics_across_envs_and_processes():
    base = StatelessCounter(batch_size=(3,))
    shared = VecNorm.build_td_for_shared_vecnorm(base, keys=["observation"])
    assert shared.is_shared()
    a = TransformedEnv(StatelessCounter(batch_size=(3,)), VecNorm(in_keys=["observation"], shared_td=shared, decay=1.0))
    b = TransformedEnv(StatelessCounter(batch_size=(3,)), VecNorm(in_keys=["observation"], shared_td=shared, decay=1.0))
    a.reset()
    b.reset()
    assert shared["observation_count"].item() == 6.0  # both envs updated the same statistics
    proc = mp.get_context("fork").Process(target=_worker, args=(shared, 2))
    proc.start()
    proc.join(300)  # (a hang guard)
    assert proc.exitcode == 0
    assert shared["observation_count"].item() == 12.0 and shared["observation_sum"].item() == 6.0
    assert a.transform.stats["observation_count"].item() == 12.0
    with pytest.raises(ValueError, match="reward_sum"):
        VecNorm(in_keys=["reward"], shared_td=shared)


def test_vecnorm_partial_reset_adds_only_reset_rows():
    vn = VecNorm(in_keys=["observation"], decay=1.0)
    env = TransformedEnv(TickEnv(batch_size=(4,)), vn)
    td = env.reset()  # 4 rows of 0
    td["action"] = torch.zeros(4, 1)
    td = env.step(td)["next"].clone()  # 4 rows of 1
    td["_reset"] = torch.tensor([[True], [False], [False], [True]])
    env.reset(td)  # adds 2 rows of 0
    assert vn.stats["observation_count"].item() == 10.0
    assert vn.stats["observation_sum"].item() == 4.0


# ---------------------------------------------------------------------------------- primers
def test_primer_values_carry_and_random():
    env = TransformedEnv(
        StatelessCounter(batch_size=(3,)),
        TensorDictPrimer(
            {"h": Unbounded((2,)), ("nested", "c"): Unbounded((3, 1))},
            default_value={"h": 2.0, ("nested", "c"): lambda: torch.tensor(7.0)},
        ),
    )
    assert env.observation_spec["h"].shape == (3, 2) and ("nested", "c") in env.state_keys
    td = env.reset()
    assert (td["h"] == 2.0).all() and (td["nested", "c"] == 7.0).all()
    td["h"] = torch.full((3, 2), 4.0)
    td["action"] = torch.zeros(3, dtype=torch.long)
    assert (env.step(td)["next", "h"] == 4.0).all()
    env = TransformedEnv(StatelessCounter(batch_size=(500,)), gSDENoise(state_dim=3, action_dim=2))
    eps = env.reset()["_eps_gSDE"]
    assert eps.shape == (500, 2, 3) and 0.8 < eps.std().item() < 1.2


# ---------------------------------------------------------------------------------- end of life
def test_end_of_life_from_data_and_from_attribute():
    env = TransformedEnv(LivesEnv(batch_size=(2,), lives=3, period=2), EndOfLifeTransform())
    td = env.rollout(6, break_when_any_done=False)
    assert td["next", "end-of-life"][0, :, 0].tolist() == [False, True, False, True, False, True]
    assert td["next", "done"][0, :, 0].tolist() == [False] * 5 + [True]
    assert "end-of-life" in env.done_keys
    env = TransformedEnv(LivesEnv(lives=2, period=1, as_attribute=True), EndOfLifeTransform(eol_attribute="ale_lives"))
    td = env.rollout(2)
    assert td["next", "lives"].flatten().tolist() == [1, 0]
    assert td["next", "end-of-life"].flatten().tolist() == [True, True]

    class Loss:
        def set_keys(self, **kw):
            self.keys = kw

    loss = Loss()
    EndOfLifeTransform().register_keys(loss)
    assert loss.keys == {"done": "end-of-life", "terminated": "end-of-life"}


# ---------------------------------------------------------------------------------- noops, frame skip
def test_noop_reset_runs_noops_on_reset_rows_only():
    env = TransformedEnv(TickEnv(batch_size=(6,)), NoopResetEnv(noops=4, random=False))
    td = env.reset()
    assert (td["state"] == 4).all()
    env = TransformedEnv(TickEnv(batch_size=(200,)), NoopResetEnv(noops=4))
    env.set_seed(0)
    td = env.reset()
    assert td["state"].min() >= 1 and td["state"].max() <= 4 and len(td["state"].unique()) == 4
    td["_reset"] = (torch.arange(200) % 2 == 0).unsqueeze(-1)
    before = td["state"].clone()
    out = env.reset(td)
    assert torch.equal(out["state"][1::2], before[1::2])
    # noops that always end the episode: each row is reset and retried, then reset raises
    env = TransformedEnv(TickEnv(batch_size=(3,), max_count=3), NoopResetEnv(noops=5, random=False))
    with pytest.raises(RuntimeError, match="done or truncated before the 5 noops"):
        env.reset()


def test_noop_reset_retries_rows_whose_episode_ended():
    from gpusim.envs.native import CartPoleEnv

    # 15 random CartPole steps end some episodes: those rows are reset and retried
    env = TransformedEnv(CartPoleEnv(batch_size=(16,), seed=0), NoopResetEnv(noops=15, random=False))
    td = env.reset()
    assert not td["done"].any() and not td["terminated"].any()
    # a MASKED env stays sync-free: such a row keeps its last state before the end, no raise
    env = TransformedEnv(
        CartPoleEnv(batch_size=(16,), seed=0, auto_reset_mode="masked"), NoopResetEnv(200, random=False)
    )
    assert not env.reset()["done"].any()
    env = TransformedEnv(
        CartPoleEnv(batch_size=(16,), seed=0, auto_reset_mode="masked"),
        NoopResetEnv(200, random=False),
        run_type_checks=True,
    )
    with pytest.raises(RuntimeError, match="before the 200 noops"):
        env.reset()  # debug mode checks


def test_frame_skip_sums_rewards_and_stops_in_done_rows():
    env = TransformedEnv(StatelessCounter(batch_size=(2,), max_count=4), FrameSkipTransform(3))
    td = env.reset()
    td["action"] = torch.tensor([1, 0])
    nxt = env.step(td)["next"]
    assert nxt["state"].flatten().tolist() == [3.0, 0.0]
    assert nxt["reward"].flatten().tolist() == [6.0, 0.0]
    td = env._step_mdp(env.step(td))
    td["action"] = torch.tensor([1, 1])
    nxt = env.step(td)["next"]
    # row 0: 3 -> 4 (done): stops after one step; row 1: 0 -> 1, 2, 3
    assert nxt["state"].flatten().tolist() == [4.0, 3.0]
    assert nxt["reward"].flatten().tolist() == [4.0, 6.0]
    assert nxt["done"].flatten().tolist() == [True, False]


def test_counting_env_with_composition_rollout_matches_manual_counts():
    env = TransformedEnv(CountingEnv(batch_size=(3,), max_count=4), Compose(StepCounter(), InitTracker(), RewardSum()))
    td = env.rollout(10, break_when_any_done=False)
    # every step gives reward 1: the episode return equals the step count
    assert torch.equal(td["next", "episode_reward"].long(), td["next", "step_count"])
    starts = td["is_init"][..., 0]
    assert torch.equal(starts[:, 1:], td["next", "done"][:, :-1, 0])


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize(
    "frame_shape, dim, dtype",
    [
        ((7, 4), -1, torch.float32),
        ((7, 3), -1, torch.float64),
        ((5, 2, 3, 3), -3, torch.uint8),
        ((4, 3, 5), -1, torch.int16),
    ],
)
def test_cat_frames_cpu_row_refill_matches_reference(frame_shape, dim, dtype, padding):
    from gpusim.kernels import masked_fill_rows_

    t = CatFrames(3, dim=dim, padding=padding, padding_value=2)
    g = torch.Generator().manual_seed(0)
    frame = (torch.rand(frame_shape, generator=g) * 100).to(dtype)
    shape = list(frame_shape)
    shape[dim] *= 3
    buf = (torch.rand(shape, generator=g) * 100).to(dtype)
    mask = torch.rand(frame_shape[:1], generator=g) < 0.5
    mask[0], mask[-1] = True, False
    expected = buf.clone()
    masked_fill_rows_([expected], [t._refill(frame)], [mask])
    t._refill_rows_cpu_(buf, frame, mask)
    assert torch.equal(buf, expected)


@pytest.mark.parametrize("batch", [1, 255, 256, 8191, 8192])
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_vecnorm_partial_reset_statistics_sum_the_reset_rows_only(batch, backend):
    """Both backends of the VecNorm reset update add exactly the reset rows to the sums."""
    from gpusim.kernels import force_backend

    g = torch.Generator().manual_seed(batch)
    x = torch.randn(batch, 3, generator=g)
    mask = torch.rand(batch, generator=g) < 0.4
    mask[0] = True
    stats = [torch.zeros(3), torch.zeros(3), torch.zeros(())]
    with force_backend(backend):
        VecNorm._reset_update(x, *stats, mask, 1)
    xr = x[mask]
    torch.testing.assert_close(stats[0], xr.sum(0), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(stats[1], (xr * xr).sum(0), rtol=1e-5, atol=1e-4)
    assert float(stats[2]) == float(mask.sum())


def test_step_counter_lists_its_keys_per_done_level():
    from tests.envs.toy_envs import NestedCountingEnv

    assert StepCounter().step_count_keys == ["step_count"]  # no parent: the root key
    env = TransformedEnv(NestedCountingEnv(), StepCounter(5))
    assert env.transform.step_count_keys == ["step_count", ("agents", "step_count")]
    assert env.transform.truncated_keys == ["truncated", ("agents", "truncated")]
    assert env.transform.all_truncated_keys == env.transform.truncated_keys
    assert env.transform.done_keys == env.transform.all_done_keys == ["done", ("agents", "done")]
    td = env.rollout(2)  # batch (): the time dim leads
    for key in env.transform.step_count_keys:
        assert td["next", key][0].eq(1).all() and td["next", key][1].eq(2).all()


def test_primer_composite_values_empty_primers_and_expand_specs():
    from gpusim.specs import Bounded, Composite

    env = TransformedEnv(
        CountingEnv(batch_size=(2,)),
        TensorDictPrimer(memory=Composite(b=Bounded(-3, 3, (4,))), default_value=1.0),
    )
    td = env.reset()
    assert td["memory", "b"].shape == (2, 4) and (td["memory", "b"] == 1).all()
    assert ("memory", "b") in env.state_keys
    assert TensorDictPrimer().out_keys == []  # no primer: a no-op transform
    stacked = TensorDictPrimer(Composite(h=Unbounded((2, 4)), shape=(2,)), expand_specs=False)
    assert TransformedEnv(CountingEnv(batch_size=(2,)), stacked).reset()["h"].shape == (2, 4)
    with pytest.raises(ValueError, match=r"primer 'h' has shape \[4\].*expand_specs=False"):
        TransformedEnv(CountingEnv(batch_size=(2,)), TensorDictPrimer(h=Unbounded((4,)), expand_specs=False))


def test_reward_sum_offline_reward_spec_and_key_errors():
    td = TensorDict({"next": {"reward": torch.tensor([[1.0], [2.0], [3.0]])}}, [3])
    t = RewardSum(in_keys=[("next", "reward")], out_keys=[("next", "episode_reward")])
    with pytest.raises(ValueError, match="named 'time'"):
        t(td)
    td.names = ["time"]
    assert t(td)["next", "episode_reward"].flatten().tolist() == [1.0, 3.0, 6.0]
    with pytest.raises(KeyError, match="reward"):
        RewardSum(in_keys=["reward"], out_keys=["s"])(td)
    with pytest.raises(ValueError, match="same number of input and output keys"):
        RewardSum(in_keys=["a", "b"], out_keys=["s"])
    with pytest.raises(ValueError, match=r"Could not match the env reset_keys \['_reset'\] with the in_keys"):
        RewardSum(in_keys=["a", "b"], reset_keys=["_reset"])._reset(td, td.empty())
    with pytest.raises(ValueError, match="Could not match the env reset_keys"):
        TransformedEnv(CountingEnv(batch_size=(2,)), RewardSum(reset_keys=[("some", "_reset")]))
    env = TransformedEnv(CountingEnv(batch_size=(2,)), RewardSum(reward_spec=True))
    assert "episode_reward" in env.reward_keys and "episode_reward" not in env.observation_spec.keys()
    out = env.rollout(3)
    assert torch.equal(out["next", "episode_reward"], out["next", "reward"].cumsum(1))


def test_init_tracker_lists_its_keys_per_done_level():
    from tests.envs.toy_envs import NestedCountingEnv

    assert InitTracker(init_key="first").init_keys == ["first"]
    env = TransformedEnv(NestedCountingEnv(), InitTracker())
    assert env.transform.init_keys == ["is_init", ("agents", "is_init")]
    td = env.reset()
    assert all(td[key].all() for key in env.transform.init_keys)


@pytest.mark.parametrize(
    "call, error, phrase",
    [
        (lambda: StepCounter()(TensorDict()), NotImplementedError, "StepCounter cannot be called independently"),
        (
            lambda: TimeMaxPool(in_keys=["o"])(TensorDict()),
            NotImplementedError,
            "TimeMaxPool cannot be called independently",
        ),
        (lambda: InitTracker()(TensorDict()), NotImplementedError, "InitTracker cannot be executed without a parent"),
        (lambda: TargetReturn(1.0)(TensorDict()), NotImplementedError, "cannot be executed without a parent"),
        (lambda: FrameSkipTransform(-1), ValueError, "frame_skip should have a value greater or equal to one"),
        (
            lambda: FrameSkipTransform(2)._step(TensorDict({"next": {}}), TensorDict()),
            RuntimeError,
            "parent not found for FrameSkipTransform",
        ),
        (lambda: InitTracker(init_key=("a", "b")), ValueError, "init_key can only be of type str"),
        (lambda: Compose().pop(), IndexError, "index -1 is out of range"),
    ],
)
def test_errors_carry_torchrl_phrases(call, error, phrase):
    # TorchRL users match these phrases; the messages keep them (and say more)
    with pytest.raises(error, match=phrase):
        call()


class _HeldCounter(EnvBase):
    """A single env whose count lives in the env object (its step is not functional)."""

    def __init__(self, max_count: int):
        super().__init__()
        self.max_count = max_count
        self.observation_spec = Composite(count=Unbounded((1,)))
        self.action_spec = Unbounded((1,))
        self.count = 0

    def _reset(self, td):
        self.count = 0
        return TensorDict({"count": torch.zeros(1)}, [])

    def _step(self, td):
        self.count += 1
        return TensorDict(
            {
                "count": torch.full((1,), float(self.count)),
                "reward": torch.zeros(1),
                "done": torch.tensor([self.count >= self.max_count]),
            },
            [],
        )

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("noops", [3, 7])
def test_noop_reset_of_a_stateful_env_never_steps_past_its_end(noops):
    base = _HeldCounter(max_count=5)
    env = TransformedEnv(base, NoopResetEnv(noops=noops, random=False))
    if noops < 5:
        assert env.reset()["count"].item() == noops and base.count == noops
    else:
        with pytest.raises(RuntimeError, match=f"before the {noops} noops"):
            env.reset()
        assert base.count == 5  # each trial stopped at the end of the episode
