"""Native auto-reset (``env.native_autoreset``): envs that restart their finished rows inside
``_step``; ``step_and_maybe_reset`` runs no reset, blanks the ended rows' last observations,
hands the first observation of the new episode to the next root, restarts the transforms' state
in those rows only, and clears the done flags."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNormV2


class SelfRestarting(EnvBase):
    """Row ``i`` counts up by its action and restarts from 0 by itself after ``limits[i]`` steps
    (its step returns the new episode's first count, 0, with ``done`` set)."""

    def __init__(self, limits=(2, 3), float_obs=True):
        super().__init__(batch_size=[len(limits)])
        B = self.batch_size
        self.limits = torch.tensor(limits).reshape(-1, 1)
        dtype = torch.float32 if float_obs else torch.int64
        self.observation_spec = Composite(count=Unbounded((*B, 1), dtype=dtype), shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.register_buffer("count", torch.zeros(*B, 1, dtype=torch.int64))
        self.resets = 0
        self.dtype = dtype

    def _reset(self, td, **kwargs):
        self.resets += 1
        self.count.zero_()
        return TensorDict({"count": self.count.to(self.dtype)}, self.batch_size)

    def _step(self, td):
        self.count += 1
        done = self.count >= self.limits
        self.count[done] = 0
        return TensorDict(
            {"count": self.count.to(self.dtype), "done": done, "reward": torch.ones(*self.batch_size, 1)},
            self.batch_size,
        )

    def _set_seed(self, seed):
        pass


def _run(env, steps):
    td = env.reset()
    out = []
    for _ in range(steps):
        td["action"] = torch.ones(env.batch_size, dtype=torch.long)
        data, td = env.step_and_maybe_reset(td)
        out.append((data, td))
    return out


def test_ended_rows_blank_their_last_observation_and_start_the_next_episode():
    env = SelfRestarting()
    env.native_autoreset = True
    (d1, r1), (d2, r2) = _run(env, 2)
    assert env.resets == 1  # only the first reset: the env restarts rows by itself
    assert d1["next", "count"].flatten().tolist() == [1.0, 1.0]
    nxt = d2["next", "count"].flatten()
    assert torch.isnan(nxt[0]) and nxt[1] == 2.0  # row 0 ended: no last observation
    assert d2["next", "done"].flatten().tolist() == [True, False]  # the step data keeps its flags
    assert r2["count"].flatten().tolist() == [0.0, 2.0]  # row 0: first observation of episode 2
    assert not r2["done"].any()


def test_integer_observations_are_zeroed_in_ended_rows():
    env = SelfRestarting(limits=(1, 3), float_obs=False)
    env.native_autoreset = True
    ((d1, r1),) = _run(env, 1)
    assert d1["next", "count"].flatten().tolist() == [0, 1]
    assert r1["count"].flatten().tolist() == [0, 1]


def test_stateful_transforms_restart_in_the_restarted_rows_only():
    env = TransformedEnv(SelfRestarting(), Compose(StepCounter(), RewardSum(), InitTracker()))
    env.native_autoreset = True
    steps = _run(env, 2)
    data, root = steps[-1]
    # every observation entry of an ended row is blanked in "next" (the step count too)
    assert data["next", "step_count"].flatten().tolist() == [0, 2]
    assert root["step_count"].flatten().tolist() == [0, 2]
    assert root["episode_reward"].flatten().tolist() == [0.0, 2.0]
    assert root["is_init"].flatten().tolist() == [True, False]
    assert not root["done"].any()
    data, root = _run(env, 3)[-1]  # row 1 restarts at step 3, row 0 is at step 1 of episode 2
    assert root["step_count"].flatten().tolist() == [1, 0]


def test_cat_frames_restart_from_the_first_frame_of_the_new_episode():
    env = TransformedEnv(SelfRestarting(), CatFrames(N=3, dim=-1, in_keys=["count"]))
    env.native_autoreset = True
    data, root = _run(env, 2)[-1]
    assert root["count"].tolist() == [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]]


def test_the_hook_sees_the_reset_mask_and_stateless_transforms_are_not_reset():
    seen = []

    class Spy(StepCounter):
        def _reset_on_native_autoreset(self, tensordict, tensordict_reset):
            seen.append(tensordict["_reset"].flatten().tolist())
            return super()._reset_on_native_autoreset(tensordict, tensordict_reset)

    vecnorm = VecNormV2(in_keys=["count"])
    calls = []
    original = vecnorm._reset
    vecnorm._reset = lambda td, td_reset: calls.append(1) or original(td, td_reset)
    inner = TransformedEnv(SelfRestarting(), Spy())
    inner.native_autoreset = True
    env = TransformedEnv(inner, vecnorm)
    assert env.native_autoreset  # inherited from the env it wraps
    n_reset_calls = len(calls)
    _run(env, 2)
    assert seen == [[False, False], [True, False]]
    assert len(calls) == n_reset_calls + 1  # the first reset only: no reset on a native auto-reset


def test_torchrl_attribute_name_is_the_same_flag_and_bad_values_raise():
    env = SelfRestarting()
    env._torchrl_native_autoreset = True
    assert env.native_autoreset is True
    with pytest.raises(TypeError, match="native_autoreset must be a bool, got str 'yes'"):
        env.native_autoreset = "yes"


def test_a_non_stop_rollout_runs_no_reset_after_the_first():
    env = SelfRestarting(limits=(2, 3))
    env.native_autoreset = True
    out = env.rollout(6, policy=lambda td: td.set("action", torch.ones(2, dtype=torch.long)), break_when_any_done=False)
    assert env.resets == 1
    assert out["next", "done"].squeeze(-1).sum(-1).tolist() == [3, 2]
    assert out["count"][0].flatten().tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]  # restarted by the env
