"""Construction wraps an env that stores a frame_skip it does not apply in a FrameSkipTransform."""

import torch
from tensordict import TensorDict

from gpusim.envs import EnvBase, ParallelEnv, SerialEnv
from gpusim.envs.native import CartPoleEnv
from gpusim.specs import Categorical, Composite, Unbounded
from gpusim.transforms import FrameSkipTransform, TransformedEnv


class _Count(EnvBase):
    """Counts its steps; stores ``frame_skip`` without repeating steps itself."""

    def __init__(self, frame_skip: int = 1):
        super().__init__(batch_size=[2])
        self.observation_spec = Composite(count=Unbounded((2, 1)), shape=(2,))
        self.action_spec = Categorical(2, (2,))
        self.frame_skip = frame_skip

    def _reset(self, td):
        return TensorDict({"count": torch.zeros(2, 1)}, [2])

    def _step(self, td):
        return TensorDict(
            {"count": td["count"] + 1, "reward": torch.ones(2, 1), "done": torch.zeros(2, 1, dtype=torch.bool)}, [2]
        )

    def _set_seed(self, seed):
        pass


class _Native(_Count):
    _has_frame_skip = True


def test_an_env_that_does_not_skip_frames_itself_is_wrapped():
    assert type(_Count(frame_skip=1)) is _Count
    env = _Count(frame_skip=3)
    assert isinstance(env, TransformedEnv) and type(env.base_env) is _Count
    assert isinstance(env.transform, FrameSkipTransform) and env.transform.frame_skip == 3
    td = env.step(env.reset().set("action", torch.zeros(2, dtype=torch.long)))
    assert td["next", "count"].flatten().tolist() == [3.0, 3.0]
    assert td["next", "reward"].flatten().tolist() == [3.0, 3.0]  # summed over the skipped frames
    assert type(_Native(frame_skip=3)) is _Native  # it repeats its own steps


def test_batched_envs_are_not_started_or_wrapped():
    for cls in (SerialEnv, ParallelEnv):
        env = cls(2, CartPoleEnv)
        assert type(env) is cls and not env.is_started and env.is_closed  # lazy until first use
        assert env[0:1].rollout(2).shape == (1, 2)  # a view starts its (not yet started) parent
        assert env.reset().shape == (2,) and not env.is_closed
        env.close()
        assert env.is_closed
