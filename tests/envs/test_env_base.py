"""EnvBase rules: specs and locking, done completion, reset/_reset, step, step_mdp,
step_and_maybe_reset, rollout, seeding, fake data and errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

import gpusim as gs
from gpusim.envs._seeding import next_seed
from gpusim.specs import Bounded, Categorical, Composite, Unbounded
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv, StatelessCounter, ZeroEnv

BATCHES = [(), (1,), (7,), (3, 4)]


# ---------------------------------------------------------------- specs and keys
@pytest.mark.parametrize("B", BATCHES)
def test_spec_shapes_include_batch(B):
    env = CountingEnv(batch_size=B)
    assert env.batch_size == torch.Size(B)
    assert env.action_spec.shape == torch.Size(B)
    assert env.reward_spec.shape == torch.Size((*B, 1))
    assert env.observation_spec["count"].shape == torch.Size((*B, 1))
    assert env.full_done_spec["done"].shape == torch.Size((*B, 1))
    assert isinstance(env.input_spec["full_action_spec"], Composite)
    assert set(env.output_spec.keys()) == {"full_observation_spec", "full_reward_spec", "full_done_spec"}


def test_done_completion_adds_terminated():
    env = CountingEnv(batch_size=(2,))
    assert set(env.done_keys) == {"done", "terminated"}
    assert isinstance(env.done_spec, Composite)  # two leaves -> composite
    td = env.rollout(10, break_when_any_done=True)
    assert torch.equal(td["next", "terminated"], td["next", "done"])


def test_key_properties():
    env = CountingEnv(batch_size=(2,))
    assert env.action_keys == ["action"] and env.action_key == "action"
    assert env.reward_keys == ["reward"] and env.reward_key == "reward"
    assert env.reset_keys == ["_reset"]
    nested = NestedCountingEnv(batch_size=(2,))
    assert nested.action_key == ("agents", "action")
    assert nested.reward_key == ("agents", "reward")
    assert set(nested.reset_keys) == {"_reset", ("agents", "_reset")}
    assert isinstance(nested.action_spec, Categorical)
    assert nested.action_spec.shape == torch.Size([2, 3])


def test_specs_locked_and_setters_relock():
    env = CountingEnv(batch_size=(2,))
    with pytest.raises(RuntimeError, match="locked"):
        env.output_spec["full_observation_spec"]["extra"] = Unbounded((2, 3))
    with pytest.raises(RuntimeError, match="locked"):
        env.observation_spec["extra"] = Unbounded((2, 3))
    before = env.observation_keys
    new_obs = env.observation_spec.clone()
    new_obs["extra"] = Unbounded((2, 3))
    env.observation_spec = new_obs
    assert env.observation_keys == [*before, "extra"]
    assert env.output_spec.is_locked
    env.action_spec = Bounded(-1.0, 1.0, shape=(2, 4))
    assert env.action_spec.shape == torch.Size([2, 4])
    assert env.input_spec.is_locked


def test_spec_setter_rejects_wrong_batch():
    env = CountingEnv(batch_size=(2,))
    with pytest.raises(ValueError, match=r"\[3, 1\].*\[2\]"):
        env.reward_spec = Unbounded((3, 1))


# ---------------------------------------------------------------- reset
def test_reset_root_worked_example():
    env = ZeroEnv()
    data = TensorDict({"val": torch.tensor([1, 1]), "_reset": torch.tensor([False, True])}, [])
    out = env.reset(data)
    assert out is data
    assert data["val"].tolist() == [1, 0]
    assert "_reset" not in data.keys()


def test_reset_nested_worked_example():
    env = ZeroEnv(nested=True)
    data = TensorDict(
        {
            ("agent0", "val"): torch.tensor([1, 1]),
            ("agent0", "_reset"): torch.tensor([False, True]),
            ("agent1", "val"): torch.tensor([2, 2]),
            ("agent1", "_reset"): torch.tensor([True, False]),
        },
        [],
    )
    env.reset(data)
    assert data["agent0", "val"].tolist() == [1, 0]
    assert data["agent1", "val"].tolist() == [0, 2]
    assert "_reset" not in data["agent0"].keys() and "_reset" not in data["agent1"].keys()


def test_reset_root_annihilates_nested():
    env = ZeroEnv(nested=True)
    data = TensorDict(
        {
            "_reset": torch.tensor([True, True]),
            ("agent0", "val"): torch.tensor([1, 1]),
            ("agent0", "_reset"): torch.tensor([False, True]),
            ("agent1", "val"): torch.tensor([2, 2]),
            ("agent1", "_reset"): torch.tensor([True, False]),
        },
        [],
    )
    env.reset(data)
    assert data["agent0", "val"].tolist() == [0, 0]
    assert data["agent1", "val"].tolist() == [0, 0]
    assert "_reset" not in data.keys(True, True) and ("agent0", "_reset") not in data.keys(True, True)


def test_partial_reset_batched_keeps_other_rows():
    env = StatelessCounter(batch_size=(4,))
    td = env.reset()
    td["state"] = torch.arange(4.0).unsqueeze(-1) + 1
    td["observation"] = td["state"] * 2
    td["_reset"] = torch.tensor([[True], [False], [True], [False]])
    out = env.reset(td)
    assert out["state"].squeeze(-1).tolist() == [0.0, 2.0, 0.0, 4.0]
    assert out["observation"].squeeze(-1).tolist() == [0.0, 4.0, 0.0, 8.0]
    assert "_reset" not in out.keys()


def test_reset_rejects_wrong_batch_size():
    env = CountingEnv(batch_size=(4,))
    with pytest.raises(ValueError, match=r"\[4\].*\[3\]"):
        env.reset(TensorDict({}, [3]))
    with pytest.raises(ValueError, match=r"\[4\].*\[2\]"):
        env.step(TensorDict({"action": torch.zeros(2, dtype=torch.long)}, [2]))


# ---------------------------------------------------------------- step / step_mdp
@pytest.mark.parametrize("B", BATCHES)
def test_step_writes_next(B):
    env = StatelessCounter(batch_size=B)
    td = env.reset()
    td["action"] = torch.ones(B, dtype=torch.long)
    out = env.step(td)
    assert out is td
    nxt = td["next"]
    assert set(nxt.keys()) == {"observation", "state", "reward", "done", "terminated"}
    assert torch.equal(nxt["state"], torch.ones(*B, 1))
    assert torch.equal(td["state"], torch.zeros(*B, 1))  # inputs untouched


def test_step_mdp_semantics():
    td = TensorDict(
        {
            "obs": torch.zeros(3),
            "other": torch.full((3,), 7.0),
            "action": torch.ones(3),
            "reward": torch.ones(3),
            "done": torch.zeros(3, dtype=torch.bool),
            "next": {"obs": torch.ones(3), "reward": torch.full((3,), 2.0), "done": torch.ones(3, dtype=torch.bool)},
        },
        [3],
    )
    out = gs.step_mdp(td)
    assert set(out.keys()) == {"obs", "other", "done"}
    assert torch.equal(out["obs"], torch.ones(3)) and torch.equal(out["done"], torch.ones(3, dtype=torch.bool))
    out = gs.step_mdp(td, keep_other=False)
    assert "other" not in out.keys() and "obs" in out.keys()
    out = gs.step_mdp(td, exclude_reward=False, exclude_action=False, exclude_done=True)
    assert set(out.keys()) == {"obs", "other", "action", "reward"}
    assert torch.equal(out["reward"], torch.full((3,), 2.0))
    dest = TensorDict({}, [3])
    assert gs.step_mdp(td, next_tensordict=dest) is dest and "obs" in dest.keys()


def test_step_mdp_nested_keys_do_not_touch_input():
    env = NestedCountingEnv(batch_size=(2,))
    td = env.rand_action(env.reset())
    td["agents", "logits"] = torch.zeros(2, 3, 2)
    env.step(td)
    nxt = env._step_mdp(td)
    assert ("agents", "action") not in nxt.keys(True, True)
    assert ("agents", "logits") in nxt.keys(True, True)
    assert ("agents", "reward") not in nxt.keys(True, True)
    assert ("agents", "action") in td.keys(True, True)  # the input keeps its action


# ---------------------------------------------------------------- step_and_maybe_reset
@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_step_and_maybe_reset_partial(mode):
    env = StatelessCounter(batch_size=(4,), max_count=2, auto_reset_mode=mode)
    assert env.auto_reset_mode.value == mode
    td = env.reset()
    td["state"] = torch.tensor([[1.0], [0.0], [1.0], [0.0]])
    td["action"] = torch.tensor([1, 1, 0, 0])
    stepped, nxt = env.step_and_maybe_reset(td)
    assert stepped["next", "done"].squeeze(-1).tolist() == [True, False, False, False]
    assert nxt["state"].squeeze(-1).tolist() == [0.0, 1.0, 1.0, 0.0]
    assert nxt["done"].squeeze(-1).tolist() == [False, False, False, False]
    assert "_reset" not in nxt.keys()
    assert "action" not in nxt.keys() and "reward" not in nxt.keys()


def test_step_and_maybe_reset_nested_levels():
    env = NestedCountingEnv(batch_size=(2,), n_agents=2, max_count=2)
    td = env.reset()
    td["agents", "obs"] = torch.tensor([[[1.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]]])
    td["agents", "action"] = torch.zeros(2, 2, dtype=torch.long)
    stepped, nxt = env.step_and_maybe_reset(td)
    # env 1: all done -> reset; env 0: the root "_reset" (False) annihilates the agent-level one
    assert stepped["next", "agents", "done"].squeeze(-1).tolist() == [[True, False], [True, True]]
    assert stepped["next", "done"].squeeze(-1).tolist() == [False, True]
    assert nxt["agents", "obs"][..., 0].tolist() == [[2.0, 1.0], [0.0, 0.0]]


# ---------------------------------------------------------------- rollout
@pytest.mark.parametrize("B", BATCHES)
def test_rollout_shape_and_time_dim(B):
    env = StatelessCounter(batch_size=B, max_count=100)
    td = env.rollout(5)
    assert td.batch_size == torch.Size((*B, 5))
    assert td.names[-1] == "time"
    assert torch.equal(td["next", "state"][..., -1, :], td["state"][..., -1, :] + td["action"][..., -1, None].float())


def test_rollout_break_when_any_done_includes_done_step():
    env = StatelessCounter(batch_size=(3,), max_count=3)
    policy = lambda td: td.set("action", torch.ones(3, dtype=torch.long))  # noqa: E731
    td = env.rollout(10, policy)
    assert td.shape == torch.Size([3, 3])
    assert td["next", "done"][:, -1].all() and not td["next", "done"][:, :-1].any()


def test_rollout_non_stop_resets():
    env = StatelessCounter(batch_size=(2,), max_count=2)
    policy = lambda td: td.set("action", torch.ones(2, dtype=torch.long))  # noqa: E731
    td = env.rollout(6, policy, break_when_any_done=False)
    assert td.shape == torch.Size([2, 6])
    assert td["state"][0, :, 0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert td["next", "done"][0, :, 0].tolist() == [False, True] * 3


def test_rollout_break_when_all_done():
    env = StatelessCounter(batch_size=(2,), max_count=3)
    policy = lambda td: td.set("action", torch.tensor([1, 0]))  # noqa: E731
    td = env.rollout(4, policy, break_when_all_done=True)
    assert td.shape == torch.Size([2, 4])  # env 1 never finishes
    fast = lambda td: td.set("action", torch.ones(2, dtype=torch.long))  # noqa: E731
    assert env.rollout(10, fast, break_when_all_done=True).shape == torch.Size([2, 3])


def test_rollout_lazy_and_callback_and_errors():
    env = StatelessCounter(batch_size=(2,), max_count=100)
    seen = []
    td = env.rollout(3, callback=lambda e, t: seen.append(t["next", "state"].clone()), return_contiguous=False)
    assert isinstance(td, LazyStackedTensorDict) and len(seen) == 3
    with pytest.raises(ValueError, match="max_steps"):
        env.rollout(0)
    with pytest.raises(ValueError, match="auto_reset"):
        env.rollout(3, auto_reset=False)
    with pytest.raises(RuntimeError, match="truncated"):
        env.rollout(3, set_truncated=True)


def test_rollout_auto_reset_false_continues():
    env = StatelessCounter(batch_size=(2,), max_count=100)
    start = env.reset()
    start["state"] = torch.full((2, 1), 5.0)
    policy = lambda td: td.set("action", torch.ones(2, dtype=torch.long))  # noqa: E731
    td = env.rollout(2, policy, auto_reset=False, tensordict=start)
    assert td["next", "state"][:, -1, 0].tolist() == [7.0, 7.0]


# ---------------------------------------------------------------- seeding
def test_set_seed_returns_deterministic_next_seed():
    env = CountingEnv(batch_size=(4,))
    assert env.set_seed(3) == next_seed(3) == env.set_seed(3)
    assert env.set_seed(3) != env.set_seed(4)
    assert env.set_seed(3, static_seed=True) == 3
    with pytest.raises(TypeError, match="seed"):
        env.set_seed("3")


def test_same_seed_same_rollout():
    env = CountingEnv(batch_size=(8,), max_count=50)
    env.set_seed(7)
    torch.manual_seed(0)
    a = env.rollout(5)
    env.set_seed(7)
    torch.manual_seed(0)
    b = env.rollout(5)
    env.set_seed(8)
    torch.manual_seed(0)
    c = env.rollout(5)
    assert torch.equal(a["count"], b["count"])
    assert not torch.equal(a["count"], c["count"])


# ---------------------------------------------------------------- fake data / random / repr
@pytest.mark.parametrize("B", BATCHES)
def test_fake_tensordict_and_rand_step(B):
    env = StatelessCounter(batch_size=B)
    fake = env.fake_tensordict()
    assert fake.batch_size == torch.Size(B)
    assert set(fake.keys(True, True)) >= {
        "observation",
        "state",
        "action",
        "done",
        ("next", "reward"),
        ("next", "state"),
    }
    td = env.rand_step()
    assert ("next", "observation") in td.keys(True, True)
    assert env.action_spec.is_in(env.rand_action()["action"])


def test_repr_and_close():
    env = CountingEnv(batch_size=(2,))
    text = repr(env)
    assert "CountingEnv" in text and "batch_size=[2]" in text
    env.close()
    assert env.is_closed


def test_to_device_moves_specs():
    env = StatelessCounter(batch_size=(2,))
    env.to("cpu")
    assert env.device == torch.device("cpu")
    assert env.output_spec.is_locked
