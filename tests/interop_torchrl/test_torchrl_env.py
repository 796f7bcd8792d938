"""``gpusim.to_torchrl``: TorchRL's own stack (check_env_specs, transforms, SerialEnv/ParallelEnv,
Collector, GAE, ClipPPOLoss, replay buffers) on gpusim envs, no copies on the way, and TorchRL's
reset/partial-reset road giving the same data as gpusim's.

Runs where torchrl is installed (``.ci/run`` gives it a virtualenv of its own: torchrl 0.14.1
pins tensordict < 0.15); skipped with that reason elsewhere.
"""

from __future__ import annotations

import functools

import pytest
import torch

torchrl = pytest.importorskip("torchrl", reason="torchrl is not installed (CI runs these tests in its torchrl venv)")

from tensordict import TensorDict  # noqa: E402
from tensordict.nn import TensorDictModule  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import (  # noqa: E402
    CatFrames,
    Compose,
    InitTracker,
    ParallelEnv,
    RewardSum,
    SerialEnv,
    StepCounter,
    TransformedEnv,
)
from torchrl.envs import EnvBase as TorchRLEnvBase  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import gpusim as gs  # noqa: E402
from gpusim.interop import to_torchrl  # noqa: E402
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv, StatelessCounter  # noqa: E402


def cartpole_action(td):
    """A deterministic policy that depends on the observation and the row (varied episodes)."""
    obs = td["observation"]
    rows = torch.arange(obs.shape[0], dtype=obs.dtype)
    return td.set("action", ((obs[..., 2] + 0.01 * rows * obs[..., 0]) > 0).long())


def make_cartpole(num_envs=4, seed=0, **kwargs):
    return to_torchrl(gs.make("CartPole-v1", num_envs=num_envs, seed=seed, **kwargs))


def assert_same_data(a, b, skip=()):
    keys_a = {k for k in a.keys(True, True) if k not in skip}
    keys_b = {k for k in b.keys(True, True) if k not in skip}
    assert keys_a == keys_b
    for key in keys_a:
        assert torch.equal(a[key], b[key]), key


# ---------------------------------------------------------------------------------- specs, API
@pytest.mark.parametrize("env_id", gs.registered_ids())
def test_check_env_specs_on_registered_envs(env_id):
    env = to_torchrl(gs.make(env_id, num_envs=3, seed=0))
    assert isinstance(env, TorchRLEnvBase)
    assert env.batch_size == (3,) and env.device == torch.device("cpu")
    check_env_specs(env)  # TorchRL's checker: fake tensordict from the specs vs a real rollout


def test_check_env_specs_on_nested_and_vmas_envs():
    check_env_specs(to_torchrl(NestedCountingEnv(batch_size=[2])))
    pytest.importorskip("vmas")
    env = to_torchrl(gs.VmasEnv("simple_spread", num_envs=2, seed=0))
    check_env_specs(env)
    assert env.full_action_spec["agents", "action"].shape == (2, 3, 2)


def test_specs_are_torchrl_specs_of_the_same_values():
    base = gs.make("Pendulum-v1", num_envs=2, seed=0)
    env = to_torchrl(base)
    assert type(env.action_spec).__module__.startswith("torchrl.")
    assert torch.equal(env.action_spec.space.high, base.action_spec.high)
    # the state of a stateless gpusim env is also an observation (TorchRL's step_mdp carries
    # observations from "next"); it stays in the state spec too
    assert "state" in env.observation_keys and "state" in env.state_keys


def test_rejects_what_is_not_a_gpusim_env():
    with pytest.raises(TypeError, match="gpusim env"):
        to_torchrl(make_cartpole())  # already a TorchRL env


# ---------------------------------------------------------------------------------- no copies
class RecordingCounter(StatelessCounter):
    """Keeps what its hooks saw and returned."""

    def _step(self, td):
        out = super()._step(td)
        self.seen = (td, out)
        return out

    def _reset(self, td):
        out = super()._reset(td)
        self.reset_out = out
        return out


def test_step_and_reset_hand_the_same_tensors_through():
    base = RecordingCounter(batch_size=[3])
    env = to_torchrl(base)
    td = env.reset()
    assert td["observation"].data_ptr() == base.reset_out["observation"].data_ptr()
    action = torch.ones(3, dtype=torch.long)
    td["action"] = action
    out = env.step(td)
    seen_in, seen_out = base.seen
    assert seen_in is td and seen_in["action"] is action
    for key in ("observation", "state", "reward", "done", "terminated"):
        assert out["next", key].data_ptr() == seen_out[key].data_ptr(), key
    stepped, root = env.step_and_maybe_reset(env.reset().set("action", action))  # the collectors' step
    assert stepped["next", "observation"].data_ptr() == base.seen[1]["observation"].data_ptr()
    assert root["observation"].data_ptr() == stepped["next", "observation"].data_ptr()  # no row was reset
    # the native CartPole's observation and state are one tensor; nothing copied them apart
    cartpole = make_cartpole()
    out = cartpole.rand_step(cartpole.reset())
    assert out["next", "observation"].data_ptr() == out["next", "state"].data_ptr()


# ---------------------------------------------------------------------------------- same data as gpusim
@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_rollout_matches_gpusim_with_transforms_and_resets(mode):
    def make():
        return gs.TransformedEnv(
            gs.make("CartPole-v1", num_envs=8, seed=3, auto_reset_mode=mode),
            gs.Compose(gs.RewardSum(), gs.InitTracker(), gs.CatFrames(3, dim=-1, in_keys=["observation"])),
        )

    ours = make().rollout(100, cartpole_action, break_when_any_done=False)
    theirs = to_torchrl(make()).rollout(100, cartpole_action, break_when_any_done=False)
    assert ours["next", "done"].sum() > 8  # episodes ended and were reset by TorchRL's road
    assert_same_data(ours, theirs)


@pytest.mark.parametrize("mode", ["sparse", "masked"])
@pytest.mark.parametrize("nested", [False, True])
def test_step_and_maybe_reset_gives_torchrl_s_own_data(mode, nested):
    """The adapter's step_and_maybe_reset (gpusim's) against TorchRL's own road on a twin env,
    with entries carried in the root (a policy's outputs, a nested collector entry)."""
    if nested:
        twins = [to_torchrl(NestedCountingEnv(batch_size=[2])) for _ in range(2)]

        def act(td, t):
            return td.set(("agents", "action"), (torch.arange(6).reshape(2, 3) + t) % 2)
    else:
        twins = [make_cartpole(num_envs=6, seed=4, auto_reset_mode=mode) for _ in range(2)]

        def act(td, t):
            return cartpole_action(td)

    produced = {*twins[0].observation_keys, *twins[0].state_keys, *twins[0].done_keys}
    ours, theirs = (env.reset() for env in twins)
    ended = 0
    for t in range(40):
        for td in (ours, theirs):
            act(td, t).set("logits", torch.full((*td.batch_size, 2), float(t)))
            td.set(("collector", "traj_ids"), torch.arange(td.shape[0]))
        step_a, ours = twins[0].step_and_maybe_reset(ours)
        step_b, theirs = TorchRLEnvBase.step_and_maybe_reset(twins[1], theirs)  # TorchRL's own road
        assert_same_data(step_a, step_b)
        assert set(ours.keys(True, True)) == set(theirs.keys(True, True))
        reset = step_a["next", "done"].reshape(ours.shape[0], -1).any(-1)
        ended += int(reset.sum())
        for key in ours.keys(True, True):
            if key in produced:
                assert torch.equal(ours[key], theirs[key]), key
            else:  # carried entries: the same where nothing was reset, kept (not zeroed) where it was
                assert torch.equal(ours[key][~reset], theirs[key][~reset]), key
                assert torch.equal(ours[key][reset], step_a[key][reset]), key
    assert ended > 2


def test_preset_next_entries_take_torchrl_s_road():
    env = make_cartpole()
    td = cartpole_action(env.reset())
    td["next"] = TensorDict({"extra": torch.ones(4, 1)}, [4])  # TorchRL keeps "next" entries the step lacks
    stepped, root = env.step_and_maybe_reset(td)
    assert torch.equal(stepped["next", "extra"], torch.ones(4, 1)) and "observation" in stepped["next"].keys()


def test_nested_rollout_matches_gpusim():
    def policy(td):
        return td.set(("agents", "action"), torch.ones(2, 3, dtype=torch.long))

    ours = NestedCountingEnv(batch_size=[2]).rollout(7, policy, break_when_any_done=False)
    theirs = to_torchrl(NestedCountingEnv(batch_size=[2])).rollout(7, policy, break_when_any_done=False)
    assert ours["next", "done"].any()
    assert_same_data(ours, theirs)


def _stepped_pair(num_envs=6, steps=5):
    ours, theirs = gs.make("CartPole-v1", num_envs=num_envs, seed=1), make_cartpole(num_envs, seed=1)
    a, b = ours.reset(), theirs.reset()
    for _ in range(steps):
        a = ours.step_and_maybe_reset(cartpole_action(a))[1]
        b = theirs.step_and_maybe_reset(cartpole_action(b))[1]
    return ours, theirs, a, b


def test_partial_reset_matches_gpusim():
    ours, theirs, a, b = _stepped_pair()
    mask = torch.tensor([True, False, True, False, False, True]).unsqueeze(-1)
    a["_reset"], b["_reset"] = mask, mask.clone()
    a, b = ours.reset(a), theirs.reset(b)
    assert "_reset" not in a.keys() and "_reset" not in b.keys()
    assert_same_data(a, b, skip=["action"])  # TorchRL's step_and_maybe_reset keeps the action in the root
    assert (a["step_count"][mask.squeeze(-1)] == 0).all() and (a["step_count"][~mask.squeeze(-1)] == 5).all()


def test_nested_partial_reset_matches_gpusim():
    ours, theirs = NestedCountingEnv(batch_size=[2]), to_torchrl(NestedCountingEnv(batch_size=[2]))
    a, b = ours.reset(), theirs.reset()
    act = torch.ones(2, 3, dtype=torch.long)
    a = ours.step_and_maybe_reset(a.set(("agents", "action"), act))[1]
    b = theirs.step_and_maybe_reset(b.set(("agents", "action"), act.clone()))[1]
    agents = torch.tensor([[True, False, True], [False, False, False]]).unsqueeze(-1)
    a["agents", "_reset"], b["agents", "_reset"] = agents, agents.clone()
    assert_same_data(ours.reset(a), theirs.reset(b), skip=[("agents", "action")])


def test_bad_reset_mask_raises_gpusim_error():
    env = make_cartpole()
    td = env.reset()
    td["_reset"] = torch.ones(4, 1)
    with pytest.raises(TypeError, match="'_reset' entry must be a bool tensor"):
        env.reset(td)


def test_seed_gives_gpusim_reset_and_torchrl_next_seed():
    base = gs.make("CartPole-v1", num_envs=4)
    env = to_torchrl(gs.make("CartPole-v1", num_envs=4))
    assert isinstance(env.set_seed(7), int)
    base.set_seed(7)
    assert torch.equal(env.reset()["observation"], base.reset()["observation"])


def test_wrong_action_raises_gpusim_step_error():
    env = make_cartpole()
    td = env.reset().set("action", torch.zeros(4, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="has shape \\[4, 1\\], expected \\[4\\]"):
        env.step(td)


# ---------------------------------------------------------------------------------- partial steps
def test_partial_steps_of_break_when_all_done():
    env = make_cartpole(num_envs=5, seed=2)
    full = gs.make("CartPole-v1", num_envs=5, seed=2).rollout(60, cartpole_action, break_when_any_done=False)
    part = env.rollout(200, cartpole_action, break_when_all_done=True)
    done = part["next", "done"].squeeze(-1)
    assert done.any(-1).all()  # stopped once every env has finished once
    for row in range(5):
        end = int(done[row].nonzero()[0])
        # up to its first end a row is gpusim's rollout; after it, TorchRL repeats its last step
        assert torch.equal(part["next", "observation"][row, : end + 1], full["next", "observation"][row, : end + 1])
        assert (part["next", "observation"][row, end:] == part["next", "observation"][row, end]).all()


def test_partial_steps_need_a_functional_step():
    env = to_torchrl(CountingEnv(batch_size=[3], max_count=4))

    def policy(td):  # row 0 ends two steps before the others: TorchRL then steps rows apart
        action = env.action_spec.zero()
        action[0] = 1
        return td.set("action", action)

    with pytest.raises(NotImplementedError, match="partial steps"):
        env.rollout(20, policy, break_when_all_done=True)


# ---------------------------------------------------------------------------------- TorchRL's stack
def test_torchrl_transforms_on_top():
    env = TransformedEnv(
        make_cartpole(num_envs=4, seed=5),
        Compose(
            StepCounter(step_count_key="trl_steps"),
            RewardSum(),
            InitTracker(),
            CatFrames(4, dim=-1, in_keys=["observation"], out_keys=["frames"]),
        ),
    )
    check_env_specs(env)
    td = env.rollout(80, break_when_any_done=False)
    assert td["next", "done"].sum() > 4
    # CartPole pays 1 per step: TorchRL's running return equals its step count across resets
    assert torch.equal(td["next", "episode_reward"].long(), td["next", "trl_steps"])
    assert torch.equal(td["next", "trl_steps"], td["next", "step_count"])  # and gpusim's StepCounter
    assert td["next", "frames"].shape == (4, 80, 16)


@pytest.mark.parametrize(
    "batched",
    [SerialEnv, functools.partial(ParallelEnv, mp_start_method="fork"), ParallelEnv],
    ids=["serial", "fork", "spawn"],
)
def test_serial_and_parallel_env(batched):
    env = batched(2, functools.partial(make_cartpole, 3, 0))  # spawn (TorchRL's default) imports gpusim in workers
    try:
        check_env_specs(env)
        td = env.rollout(30, break_when_any_done=False)
        assert td.batch_size == (2, 3, 30)
        assert td["next", "done"].any()
    finally:
        env.close()


def test_collector_batches_follow_gpusim_rollout():
    env = make_cartpole(num_envs=4, seed=9)
    policy = TensorDictModule(
        lambda obs: cartpole_action(TensorDict({"observation": obs}, obs.shape[:1]))["action"],
        in_keys=["observation"],
        out_keys=["action"],
    )
    collector = Collector(env, policy, frames_per_batch=4 * 25, total_frames=4 * 75)
    batches = list(collector)
    collector.shutdown()
    assert [b.batch_size for b in batches] == [torch.Size([4, 25])] * 3
    data = torch.cat(batches, dim=1)
    ours = gs.make("CartPole-v1", num_envs=4, seed=9).rollout(75, cartpole_action, break_when_any_done=False)
    assert ours["next", "done"].any()
    assert_same_data(ours, data, skip=[("collector", "traj_ids")])


def test_ppo_update_with_gae_and_replay_buffer():
    from tensordict.nn import NormalParamExtractor  # noqa: F401 (the objectives' own dependency)
    from torchrl.data import LazyTensorStorage, ReplayBuffer
    from torchrl.modules import ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    torch.manual_seed(0)
    env = make_cartpole(num_envs=8, seed=0)
    logits = TensorDictModule(torch.nn.Linear(4, 2), in_keys=["observation"], out_keys=["logits"])
    actor = ProbabilisticActor(
        logits,
        in_keys=["logits"],
        distribution_class=torch.distributions.Categorical,
        spec=env.full_action_spec,
        return_log_prob=True,
    )
    critic = ValueOperator(torch.nn.Linear(4, 1), in_keys=["observation"])
    collector = Collector(env, actor, frames_per_batch=8 * 16, total_frames=8 * 16)
    batch = next(iter(collector))
    collector.shutdown()
    assert batch["action"].dtype == torch.int64 and batch["observation"].device == env.device
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic)
    with torch.no_grad():
        advantage(batch)
    assert batch["advantage"].shape == (8, 16, 1) and torch.isfinite(batch["advantage"]).all()
    buffer = ReplayBuffer(storage=LazyTensorStorage(8 * 16))
    buffer.extend(batch.reshape(-1))
    sample = buffer.sample(32)
    loss_fn = ClipPPOLoss(actor, critic)
    losses = loss_fn(sample)
    total = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
    assert torch.isfinite(total)
    total.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in loss_fn.parameters())


def test_close_and_state_dict():
    base = gs.TransformedEnv(gs.make("CartPole-v1", num_envs=2, seed=0), gs.VecNorm(in_keys=["observation"]))
    env = to_torchrl(base)
    env.rollout(3)
    assert any("vecnorm" in k.lower() or "_extra_state" in k for k in env.state_dict())
    assert env.to("cpu") is env and env.device == base.device
    env.close()
    assert base.is_closed and env.is_closed
