"""``set_auto_unwrap_transformed_env`` / ``auto_unwrap_transformed_env`` and ``TransformedEnv``'s
``base_env`` argument; ``auto_reset=True`` (``AutoResetEnv`` + ``AutoResetTransform``)."""

from __future__ import annotations

import os

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.specs import Categorical, Composite, Unbounded
from tests.envs.toy_envs import StatelessCounter


def test_auto_unwrap_switch():
    assert gs.auto_unwrap_transformed_env() is True
    assert gs.auto_unwrap_transformed_env(allow_none=True) in (None, True)
    inner = gs.TransformedEnv(StatelessCounter(), gs.StepCounter())
    assert isinstance(gs.TransformedEnv(inner, gs.InitTracker()).base_env, StatelessCounter)
    with gs.set_auto_unwrap_transformed_env(False):
        assert gs.auto_unwrap_transformed_env() is False
        assert os.environ["AUTO_UNWRAP_TRANSFORMED_ENV"] == "False"  # worker processes see it
        assert gs.TransformedEnv(inner, gs.InitTracker()).base_env is inner
        # an explicit argument wins over the switch
        assert isinstance(gs.TransformedEnv(inner, gs.InitTracker(), auto_unwrap=True).base_env, StatelessCounter)
    assert gs.auto_unwrap_transformed_env() is True

    @gs.set_auto_unwrap_transformed_env(False)
    def build():
        return gs.TransformedEnv(inner, gs.InitTracker())

    assert build().base_env is inner
    with pytest.raises(TypeError, match="bool"):
        gs.set_auto_unwrap_transformed_env("no")


def test_subclasses_are_never_unwrapped():
    class MyEnv(gs.TransformedEnv):
        pass

    inner = MyEnv(StatelessCounter(), gs.StepCounter())
    assert gs.TransformedEnv(inner, gs.InitTracker()).base_env is inner


def test_base_env_keyword_and_settable_is_closed():
    env = gs.TransformedEnv(base_env=StatelessCounter(), transform=gs.StepCounter())
    assert isinstance(env.base_env, StatelessCounter)
    env.is_closed = True
    assert env.base_env.is_closed


class _Loop(gs.EnvBase):
    """Counts up by its action; when the count passes ``limit`` it starts over by itself."""

    def __init__(self, limit: int = 3, batch_size=()):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        self.limit = limit
        self.observation_spec = Composite(count=Unbounded((*B, 1)), shape=B)
        self.action_spec = Categorical(2, shape=(*B, 1))
        self.count = torch.zeros(*B, 1)

    def _reset(self, td):
        if td is not None and "_reset" in td.keys():
            raise RuntimeError("an auto-resetting env is never reset partially")
        self.count.zero_()
        return TensorDict({"count": self.count.clone()}, self.batch_size)

    def _step(self, td):
        self.count += td["action"]
        done = self.count > self.limit
        out = TensorDict(
            {"count": self.count.clone(), "reward": torch.ones_like(self.count), "done": done}, self.batch_size
        )
        self.count[done] = 0
        out["count"] = torch.where(done, self.count, out["count"])  # the next episode's first observation
        return out

    def _set_seed(self, seed):
        pass


def test_auto_reset_kwarg():
    env = _Loop(3, auto_reset=True)
    assert isinstance(env, gs.AutoResetEnv) and isinstance(env.transform, gs.AutoResetTransform)
    policy = lambda td: td.set("action", torch.ones(1, dtype=torch.long))  # noqa: E731
    r = env.rollout(10, policy, break_when_any_done=False)
    done = r["next", "done"].squeeze(-1)
    assert done.sum() == 2
    assert r["next", "count"][done].isnan().all()  # not an observation of the ending episode
    assert (r["count"][1:][done[:-1]] == 0).all()  # the next step starts from the new episode
    r = env.rollout(10, policy)
    assert r["next", "done"].sum() == 1 and not r["done"].any()


def test_auto_reset_batched_and_transformed():
    env = gs.TransformedEnv(_Loop(2, batch_size=(3,), auto_reset=True), gs.StepCounter())
    policy = lambda td: td.set("action", torch.tensor([[1], [0], [1]]))  # noqa: E731
    r = env.rollout(7, policy, break_when_any_done=False)
    assert r["next", "done"][1].sum() == 0 and r["next", "done"][0].sum() == 2
    assert r["next", "step_count"][0].flatten().tolist() == [1, 2, 3, 1, 2, 3, 1]
    serial = gs.SerialEnv(2, lambda: _Loop(2, auto_reset=True))
    r = serial.rollout(7, lambda td: td.set("action", torch.ones(2, 1, dtype=torch.long)), break_when_any_done=False)
    assert r["next", "done"].sum() == 4


def test_auto_reset_transform_needs_its_env():
    env = gs.TransformedEnv(_Loop(2), gs.AutoResetTransform())
    with pytest.raises(RuntimeError, match="AutoResetEnv"):
        env.rollout(3, lambda td: td.set("action", torch.ones(1, dtype=torch.long)))


def test_module_internals_are_not_read_from_the_base_env():
    env = gs.TransformedEnv(StatelessCounter(), gs.StepCounter())
    for name in (
        "_parameters",
        "_buffers",
        "_modules",
        "_backward_hooks",
        "_forward_hooks",
        "_non_persistent_buffers_set",
        "__weakref__",
    ):
        with pytest.raises(AttributeError):
            env.__getattr__(name)
    env.base_env._sentinel = "marker"
    assert env._sentinel == "marker"  # other private attributes still come from the base env
