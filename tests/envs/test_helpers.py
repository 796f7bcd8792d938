"""Helpers: terminated_or_truncated, make_composite_from_td, RandomPolicy, exploration type,
get_available_libraries and check_env_specs (passing and failing)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.specs import Bounded, Categorical, Composite, OneHot
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv, StatelessCounter


def test_terminated_or_truncated_levels():
    td = TensorDict(
        {
            "done": torch.tensor([[False], [False]]),
            "truncated": torch.tensor([[False], [True]]),
            ("agents", "terminated"): torch.tensor([[[False], [False]], [[False], [False]]]),
        },
        [2],
    )
    assert gs.terminated_or_truncated(td)
    assert td["_reset"].squeeze(-1).tolist() == [False, True]
    # something is done: every level gets its flags, all False where nothing is done there
    assert not td["agents", "_reset"].any() and td["agents", "_reset"].shape == (2, 2, 1)
    quiet = td.exclude("truncated")
    assert not gs.terminated_or_truncated(quiet)  # nothing done: the keys are removed
    assert "_reset" not in quiet.keys() and ("agents", "_reset") not in quiet.keys(True, True)
    assert not gs.terminated_or_truncated(quiet, key="_r", write_full_false=True)
    assert quiet["_r"].shape == (2, 1) and quiet["agents", "_r"].shape == (2, 2, 1)
    spec = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
    td2 = TensorDict({"done": torch.tensor([[True], [False]]), "truncated": torch.ones(2, 1, dtype=torch.bool)}, [2])
    assert gs.terminated_or_truncated(td2, full_done_spec=spec, key="mask")
    assert td2["mask"].squeeze(-1).tolist() == [True, False]  # only the spec's keys are read


def test_make_composite_from_td():
    td = TensorDict({"a": torch.zeros(3, 2), "b": torch.zeros(3, dtype=torch.long), "n": {"c": torch.ones(3, 4)}}, [3])
    spec = gs.make_composite_from_td(td)
    assert spec.shape == torch.Size([3])
    assert spec["a"].shape == torch.Size([3, 2]) and spec["a"].dtype == torch.float32
    assert spec["b"].shape == torch.Size([3, 1]) and spec["b"].dtype == torch.long
    assert spec["n", "c"].shape == torch.Size([3, 4])
    assert gs.make_composite_from_td(td, unsqueeze_null_shapes=False)["b"].shape == torch.Size([3])


def test_random_policy():
    policy = gs.RandomPolicy(OneHot(4, shape=(5, 4)))
    td = policy(TensorDict({}, [5]))
    assert td["action"].sum(-1).eq(1).all()
    composite = Composite(agents=Composite(action=Bounded(-1.0, 1.0, shape=(5, 2, 3)), shape=(5, 2)), shape=(5,))
    td = gs.RandomPolicy(composite)(TensorDict({}, [5]))
    assert td["agents", "action"].abs().le(1).all()
    with pytest.raises(TypeError, match="spec"):
        gs.RandomPolicy("action")


def test_exploration_type_context_and_decorator():
    assert gs.exploration_type() is None
    with gs.set_exploration_type(gs.ExplorationType.MODE):
        assert gs.exploration_type() is gs.ExplorationType.MODE
        with gs.set_exploration_type("random"):
            assert gs.exploration_type() is gs.ExplorationType.RANDOM
        assert gs.exploration_type() is gs.ExplorationType.MODE
    assert gs.exploration_type() is None

    @gs.set_exploration_type("deterministic")
    def f():
        return gs.exploration_type()

    assert f() is gs.ExplorationType.DETERMINISTIC
    with pytest.raises(ValueError, match="'greedy'"):
        gs.set_exploration_type("greedy")


def test_get_available_libraries():
    libs = gs.get_available_libraries()
    assert libs["gymnasium"] is True and set(libs) >= {"gymnasium", "vmas", "triton"}


@pytest.mark.parametrize("B", [(), (1,), (1000,)])
def test_check_env_specs_passes(B):
    gs.check_env_specs(StatelessCounter(batch_size=B))
    gs.check_env_specs(CountingEnv(batch_size=B), seed=0)


def test_check_env_specs_nested():
    gs.check_env_specs(NestedCountingEnv(batch_size=(4,)))


class _BadShape(StatelessCounter):
    def _step(self, td):
        out = super()._step(td)
        out["observation"] = torch.cat([out["observation"], out["observation"]], -1)
        return out


class _BadDtype(StatelessCounter):
    def _step(self, td):
        out = super()._step(td)
        out["reward"] = out["reward"].double()
        return out


class _ExtraKey(StatelessCounter):
    def _step(self, td):
        return super()._step(td).set("surprise", torch.zeros(self.batch_size))


class _OutOfSpec(StatelessCounter):
    def __init__(self):
        super().__init__(batch_size=(2,))
        self.observation_spec = Composite(observation=Bounded(-1.0, 1.0, shape=(2, 1)), shape=(2,))

    def _step(self, td):
        out = super()._step(td)
        out["observation"] = torch.full((2, 1), 5.0)
        return out


@pytest.mark.parametrize(
    "env, match",
    [
        (_BadShape(batch_size=(2,)), r"Shape mismatch for key \('next', 'observation'\)"),
        (_BadDtype(batch_size=(2,)), r"Dtype mismatch for key \('next', 'reward'\)"),
        (_ExtraKey(batch_size=(2,)), r"not in the specs: \[\"\('next', 'surprise'\)\"\]"),
        (_OutOfSpec(), r"\('next', 'observation'\).*outside its spec Bounded"),
    ],
)
def test_check_env_specs_names_the_bad_key(env, match):
    with pytest.raises(AssertionError, match=match):
        gs.check_env_specs(env)
