"""EnvBase as TorchRL's: shape helpers, spec containers (``specs``, ``*_spec_unbatched``), spec
locking, ``is_closed``, ``close(raise_if_closed=)``, ``any_done``, ``all_actions``,
``append_transform`` on a plain env, ``step_mdp``/``check_env_specs`` methods, ``rollout(actions=)``,
batch-unlocked envs, missing done flags, and partial steps (``"_step"``)."""

from __future__ import annotations

import pickle

import pytest
import torch
from tensordict import TensorDict, TensorDictBase

import gpusim as gs
from gpusim.specs import Categorical, Composite, Unbounded
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv, StatelessCounter


@pytest.mark.parametrize("B", [(), (3,), (2, 3)])
def test_shape_helpers(B):
    env = CountingEnv(batch_size=B)
    assert env.shape == env.batch_size == torch.Size(B)
    assert env.batch_dims == env.ndim == env.ndimension() == len(B)
    assert env.numel() == torch.Size(B).numel()


def test_specs_container():
    env = CountingEnv(batch_size=(3,))
    specs = env.specs
    assert specs.shape == (3,)
    assert specs["output_spec", "full_observation_spec", "count"] == env.observation_spec["count"]
    assert specs["input_spec", "full_action_spec", "action"] == env.action_spec


@pytest.mark.parametrize("B", [(), (4,), (2, 3)])
def test_unbatched_specs_get_and_set(B):
    env = CountingEnv(batch_size=B)
    assert env.full_observation_spec_unbatched.shape == ()
    assert env.full_observation_spec_unbatched["count"].shape == (1,)
    assert env.action_spec_unbatched.shape == ()
    assert env.output_spec_unbatched.shape == () and env.input_spec_unbatched.shape == ()
    assert env.full_done_spec_unbatched["done"].shape == (1,)
    env.observation_spec_unbatched = Composite(count=Unbounded((1,)), extra=Unbounded((5,)))
    assert env.observation_spec["extra"].shape == (*B, 5)
    env.reward_spec_unbatched = Unbounded((2,))
    assert env.reward_spec.shape == (*B, 2)
    env.action_spec_unbatched = Categorical(4)
    assert env.action_spec.shape == B and env.action_spec.n == 4


def test_unbatched_setter_before_init():
    class Late(gs.EnvBase):
        def __init__(self):
            self.observation_spec_unbatched = Composite(x=Unbounded((2,)))  # before super().__init__
            super().__init__(batch_size=(3,))
            self.observation_spec_unbatched = Composite(x=Unbounded((2,)))
            self.action_spec_unbatched = Unbounded((1,))

        def _reset(self, td):
            return TensorDict({"x": torch.zeros(3, 2)}, [3])

        def _step(self, td):
            return TensorDict(
                {"x": torch.ones(3, 2), "reward": torch.zeros(3, 1), "done": torch.zeros(3, 1, dtype=torch.bool)}, [3]
            )

        def _set_seed(self, seed):
            pass

    env = Late()
    assert env.observation_spec["x"].shape == (3, 2)
    assert env.rollout(2).shape == (3, 2)


def test_observation_spec_accepts_a_leaf():
    env = CountingEnv()
    env.observation_spec = Unbounded((1,))
    assert list(env.observation_spec.keys()) == ["observation"]


def test_leaf_done_spec_makes_done_and_terminated():
    class LeafDone(CountingEnv):
        def __init__(self, batch_size):
            super().__init__(batch_size=batch_size)
            self.done_spec = Categorical(2, (*batch_size, 1), dtype=torch.bool)
            assert sorted(self.full_done_spec.keys()) == ["done", "terminated"]
            self.full_done_spec["truncated"] = self.full_done_spec["terminated"].clone()

    env = LeafDone(batch_size=(2,))
    assert sorted(env.done_keys) == ["done", "terminated", "truncated"]
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "terminated"].shape == (2, 3, 1)


def test_spec_lock_kwarg_and_setter():
    env = CountingEnv(spec_locked=False)  # __init__ does not take it: the metaclass does
    assert not env.is_spec_locked and not env.output_spec.is_locked
    env.input_spec["full_action_spec", "action"] = Categorical(3)  # in place, allowed
    assert env.action_spec.n == 3
    env.set_spec_lock_(True)
    assert env.is_spec_locked and env.input_spec.is_locked
    with pytest.raises(RuntimeError, match="lock"):
        env.input_spec["full_action_spec", "action"] = Categorical(2)
    env.is_spec_locked = False
    assert not env.input_spec.is_locked
    assert pickle.loads(pickle.dumps(CountingEnv())).is_spec_locked


def test_is_closed_settable_and_close():
    env = CountingEnv()
    assert not env.is_closed
    env.is_closed = True
    assert env.is_closed
    env.is_closed = False
    env.close()
    env.close()  # closing again does nothing
    with pytest.raises(RuntimeError, match="already closed"):
        env.close(raise_if_closed=True)


def test_any_done_writes_reset_per_level():
    env = NestedCountingEnv(batch_size=(2,), n_agents=3)
    td = env.reset()
    assert not env.any_done(td) and "_reset" not in td.keys()
    td["agents", "done"][1, 2] = True
    assert env.any_done(td)
    assert td["agents", "_reset"][:, :, 0].tolist() == [[False, False, False], [False, False, True]]
    assert not td["_reset"].any()


def test_all_actions():
    env = CountingEnv(batch_size=(3,))
    actions = env.all_actions()
    assert actions.batch_size == (2, 3)
    assert actions["action"].tolist() == [[0, 0, 0], [1, 1, 1]]
    with pytest.raises(TypeError, match="discrete"):
        gs.PendulumEnv().all_actions()


def test_all_actions_combines_entries():
    env = CountingEnv()
    env.action_spec = Composite(a=Categorical(2), b=Categorical(3))
    combos = env.all_actions()
    assert combos.batch_size == (6,)
    assert sorted(zip(combos["a"].tolist(), combos["b"].tolist())) == [(i, j) for i in range(2) for j in range(3)]


def test_append_transform_on_a_plain_env():
    env = CountingEnv(batch_size=(2,))
    transformed = env.append_transform(gs.StepCounter(max_steps=2))
    assert isinstance(transformed, gs.TransformedEnv) and transformed.base_env is env
    assert transformed.rollout(3, break_when_any_done=False)["next", "step_count"][0].flatten().tolist() == [1, 2, 1]


def test_step_mdp_method_keeps_the_action():
    env = CountingEnv(batch_size=(2,))
    td = env.rand_step(env.reset())
    nxt = env.step_mdp(td)
    assert nxt["action"] is td["action"] and (nxt["count"] == td["next", "count"]).all()
    assert "reward" not in nxt.keys() and "next" not in nxt.keys()


def test_check_env_specs_method():
    env = CountingEnv(batch_size=(2,))
    env.check_env_specs()
    env.check_env_specs(break_when_any_done="both")


def test_rollout_actions():
    env = CountingEnv(max_count=100)
    actions = [torch.tensor(1), torch.tensor(0), torch.tensor(1)]
    r = env.rollout(50, actions=actions, break_when_any_done=False)
    assert r.shape == (3,) and r["action"].tolist() == [1, 0, 1]  # a sized iterable caps max_steps
    r = env.rollout(10, actions=iter(actions))  # an iterator that runs out ends the rollout
    assert r.shape == (3,)
    with pytest.raises(ValueError, match="both"):
        env.rollout(3, policy=env.rand_action, actions=actions)
    with pytest.raises(ValueError, match="no action"):
        env.rollout(3, actions=iter([]))
    with pytest.raises(ValueError, match="actions"):
        env.rollout(3, actions=actions, compile=True, break_when_any_done=False)


class _Unlocked(gs.EnvBase):
    """Batch-unlocked: takes any batch of rows when it has no batch dims."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, _batch_locked=False, **kwargs)

    def __init__(self, batch_size=()):
        super().__init__(batch_size=batch_size)
        self.observation_spec = Composite(x=Unbounded((*self.batch_size, 1)), shape=self.batch_size)
        self.action_spec = Unbounded((*self.batch_size, 1))

    def _reset(self, td):
        shape = self.batch_size if td is None else td.batch_size
        return TensorDict({"x": torch.zeros(*shape, 1)}, shape)

    def _step(self, td):
        x = td["x"] + td["action"]
        return TensorDict({"x": x, "reward": x, "done": torch.zeros_like(x, dtype=torch.bool)}, td.batch_size)

    def _set_seed(self, seed):
        pass


def test_batch_unlocked_env_takes_any_batch():
    env = _Unlocked()
    assert not env.batch_locked
    with pytest.raises(RuntimeError, match="read-only"):
        env.batch_locked = True
    td = TensorDict({"x": torch.zeros(4, 1)}, [4])
    out = env.step(env.rand_action(td))
    assert out["action"].shape == (4, 1) and out["next", "x"].shape == (4, 1)
    with pytest.raises(ValueError, match=r"shape \[4, 2\]"):
        env.step(td.set("action", torch.zeros(4, 2)))
    batched = _Unlocked(batch_size=(2,))
    with pytest.raises(RuntimeError, match="Expected a tensordict with shape==env.batch_size"):
        batched.step(TensorDict({"x": torch.zeros(4, 1), "action": torch.zeros(4, 1)}, [4]))


def test_batch_locked_error_is_value_and_runtime_error():
    env = CountingEnv()
    td = env.rand_action(env.reset()).expand(2).clone()
    for cls in (ValueError, RuntimeError):
        with pytest.raises(cls, match=r"batch_size \[2\]"):
            env.step(td)


def test_missing_done_flags_are_false():
    class NoDone(gs.EnvBase):
        def __init__(self):
            super().__init__(batch_size=(2,))
            self.observation_spec = Composite(x=Unbounded((2, 1)), shape=(2,))
            self.action_spec = Unbounded((2, 1))
            self.done_spec = Composite(
                done=Categorical(2, (2, 1), dtype=torch.bool),
                terminated=Categorical(2, (2, 1), dtype=torch.bool),
                truncated=Categorical(2, (2, 1), dtype=torch.bool),
                shape=(2,),
            )

        def _reset(self, td):
            return TensorDict({"x": torch.zeros(2, 1)}, [2])

        def _step(self, td):
            return TensorDict({"x": td["x"] + 1, "reward": torch.ones(2, 1), "terminated": td["x"] > 0}, [2])

        def _set_seed(self, seed):
            pass

    env = NoDone()
    td = env.reset()
    assert not td["done"].any() and not td["truncated"].any() and not td["terminated"].any()
    td = env.step(env.rand_action(td))
    assert not td["next", "truncated"].any() and not td["next", "done"].any()
    td = env.step(env.rand_action(env.step_mdp(td)))
    assert td["next", "done"].all()  # done := terminated | truncated


# ------------------------------------------------------------------ partial steps
@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_partial_step_of_a_functional_env(mode):
    env = StatelessCounter(batch_size=(4,), auto_reset_mode=mode)
    td = env.reset()
    td["action"] = torch.ones(4, dtype=torch.long)
    td["_step"] = torch.tensor([False, True, False, True])
    out = env.step(td)
    assert "_step" not in out.keys()
    assert out["next", "state"].flatten().tolist() == [0.0, 1.0, 0.0, 1.0]
    assert out["next", "reward"][[0, 2]].eq(0).all()  # skipped rows: current data, zero reward
    assert (out["next", "observation"][[0, 2]] == td["observation"][[0, 2]]).all()


def test_partial_step_all_false_and_all_true():
    env = CountingEnv(batch_size=(3,))
    td = env.rand_action(env.reset())
    td["_step"] = torch.zeros(3, dtype=torch.bool)
    out = env.step(td)
    assert (out["next", "count"] == out["count"]).all() and out["next", "reward"].eq(0).all()
    assert out["next", "count"].data_ptr() != out["count"].data_ptr()  # skipped data is a copy
    td = env.rand_action(env.reset())
    td["_step"] = torch.ones(3, 1, dtype=torch.bool)  # a trailing singleton dim is accepted
    assert env.step(td)["next", "reward"].eq(1).all()


def test_partial_step_errors():
    env = CountingEnv(batch_size=(3,))  # stateful (functional_step=False)
    td = env.rand_action(env.reset())
    td["_step"] = torch.tensor([True, False, True])
    with pytest.raises(ValueError, match="cannot step a subset"):
        env.step(td)
    td["_step"] = torch.tensor([1, 0, 1])
    with pytest.raises(TypeError, match="bool"):
        env.step(td)
    td["_step"] = torch.ones(3, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"expected \[3\]"):
        env.step(td)


def test_partial_step_of_a_batch_unlocked_env():
    env = _Unlocked()
    td = TensorDict({"x": torch.arange(3.0).unsqueeze(-1)}, [3])
    td["action"] = torch.ones(3, 1)
    td["_step"] = torch.tensor([True, False, True])
    out = env.step(td)
    assert out["next", "x"].flatten().tolist() == [1.0, 1.0, 3.0]
    assert out["next", "reward"].flatten().tolist() == [1.0, 0.0, 3.0]


# ------------------------------------------------------------------ rollout
def test_rollout_merges_out_of_place_policies_and_takes_tensor_modules():
    env = CountingEnv(batch_size=(2,), max_count=100)
    inplace = env.rollout(3, lambda td: td.set("action", torch.ones(2, dtype=torch.long)))
    outplace = env.rollout(3, lambda td: td.empty().set("action", torch.ones(2, dtype=torch.long)))
    assert (inplace["next", "count"] - inplace["count"] == 2).all()
    assert (outplace == inplace).all()

    class Decide(torch.nn.Module):  # a plain module: called on the observation tensor
        def forward(self, count):
            return (count.squeeze(-1) > 100).long()

    r = env.rollout(3, Decide())
    assert r["action"].eq(0).all()

    class TooMany(torch.nn.Module):
        def forward(self, a, b):
            return a

    with pytest.raises(TypeError, match="observation tensors"):
        env.rollout(2, TooMany())

    class OnTensordict(torch.nn.Module):  # a plain module whose forward takes the tensordict
        def forward(self, td: TensorDictBase) -> TensorDictBase:
            return td.set("action", torch.ones(2, dtype=torch.long))

    r = env.rollout(3, OnTensordict())
    assert r["action"].eq(1).all() and (r["next", "count"] - r["count"] == 2).all()


def test_rollout_continues_from_done_rows_and_stores_on_a_device():
    env = CountingEnv(batch_size=(2,), max_count=100)
    policy = lambda td: td.set("action", torch.ones(2, dtype=torch.long))  # noqa: E731
    td = env.reset()
    td["count"] = torch.full((2, 1), 50.0)
    td["done"] = torch.tensor([[True], [False]])  # row 0 ended its episode
    out = env.rollout(1, policy, auto_reset=False, tensordict=td)
    assert out["count"][0].item() < 3 and out["count"][1].item() == 50.0  # row 0 started over
    assert env.rollout(2, policy, storing_device="cpu").device == torch.device("cpu")


def test_set_truncated_and_add_truncated_keys():
    env = CountingEnv(max_count=100)
    with pytest.raises(RuntimeError, match="set_truncated was set to True"):
        env.rollout(3, set_truncated=True, break_when_any_done=False)
    assert env.add_truncated_keys() is env
    r = env.rollout(3, set_truncated=True, break_when_any_done=False)
    assert r["next", "truncated"][-1].all() and r["next", "done"][-1].all()
    assert not r["next", "truncated"][:-1].any()


def test_make_composite_from_td_options():
    from tensordict import NonTensorData

    data = TensorDict({"obs": torch.zeros(3), "next": {"r": torch.zeros(1)}}, [])
    data["text"] = NonTensorData("hello")
    spec = gs.make_composite_from_td(data)
    assert spec["text"].example_data == "hello" and spec["next", "r"].shape == (1,)
    assert (spec.zero().exclude("text") == data.exclude("text")).all()


def test_rollouts_chain_without_a_reset_after_the_last_step():
    env = CountingEnv(batch_size=(2,), max_count=3)
    policy = lambda td: td.set("action", torch.ones(2, dtype=torch.long))  # noqa: E731
    td = env.reset()
    td["count"] = torch.zeros(2, 1)
    out = env.rollout(2, policy, auto_reset=False, tensordict=td, break_when_any_done=False)
    assert out["next", "done"][:, -1].all()  # the last step ends the episodes...
    nxt = env.step_mdp(out[:, -1])
    assert nxt["count"].eq(4).all()  # ...and is not followed by a reset
    again = env.rollout(1, policy, auto_reset=False, tensordict=nxt, break_when_any_done=False)
    assert (again["count"] < 3).all()  # the next rollout resets the finished rows first


def test_register_collector_is_a_weak_reference_seen_by_the_transforms():
    import gc

    from gpusim.transforms import StepCounter, TransformedEnv

    class Collector:
        pass

    env = TransformedEnv(CountingEnv(), StepCounter())
    assert env.collector is None and env.transform.collector is None
    collector = Collector()
    env.register_collector(collector)
    assert env.collector is collector and env.transform.collector is collector
    del collector
    gc.collect()
    assert env.collector is None  # the env does not keep the collector alive
