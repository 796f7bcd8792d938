"""Envs whose observations include a chat history that grows every step (a tensorclass of
non-tensor strings with a dynamic ``-1`` spec dim): lazy rollouts by default, check_env_specs,
partial steps that carry the history, and batched workers exchanging it without buffers."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase, tensorclass

from gpusim.envs import SerialEnv, check_env_specs
from gpusim.envs.native import CartPoleEnv
from gpusim.specs import Composite, NonTensor
from gpusim.transforms import ConditionalSkip, StepCounter, Transform, TransformedEnv
from tests.envs.toy_envs import CountingEnv


@tensorclass
class Turn:
    speaker: str
    text: str


class ChatLog(Transform):
    """Starts each episode with two turns and appends one turn ("t<k>") per step."""

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        leaf = {name: NonTensor(shape=(-1,), example_data="?") for name in ("speaker", "text")}
        observation_spec["chat"] = Composite(leaf, shape=(-1,), data_cls=Turn)
        return observation_spec

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        tensordict_reset["chat"] = torch.stack([Turn(speaker="sys", text="t0"), Turn(speaker="user", text="t1")])
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        chat = tensordict["chat"]
        turn = Turn(speaker="bot", text=f"t{len(chat)}", device=chat.device)
        next_tensordict["chat"] = torch.stack([*chat.unbind(0), turn])
        return next_tensordict


def _chat_env(skip: bool = False):
    env = TransformedEnv(CountingEnv(max_count=10), ChatLog())
    if skip:  # skip the base env's step every other outer step
        env = TransformedEnv(env, ConditionalSkip(lambda td: td["outer"] % 2 == 1))
        env = TransformedEnv(env, StepCounter(step_count_key="outer"), auto_unwrap=False)
    return env


def _zeros(td):
    return td.set("action", torch.zeros(td.batch_size, dtype=torch.int64))


def test_dynamic_specs_roll_out_lazily_by_default():
    env = _chat_env()
    assert env._has_dynamic_specs and not CartPoleEnv()._has_dynamic_specs
    check_env_specs(env)
    rollout = env.rollout(3, _zeros)
    assert [len(rollout[t]["next", "chat"]) for t in range(3)] == [3, 4, 5]
    assert rollout[2]["next", "chat"].text == ["t0", "t1", "t2", "t3", "t4"]


def test_skipped_steps_carry_the_history():
    env = _chat_env(skip=True)
    check_env_specs(env)
    rollout = env.rollout(4, _zeros)
    lengths = [len(rollout[t]["next", "chat"]) for t in range(4)]
    texts = [rollout[t]["next", "chat"].text[-1] for t in range(4)]
    assert lengths == [3, 3, 4, 4] and texts == ["t2", "t2", "t3", "t3"]  # never the spec's example "?"


def test_batched_workers_exchange_the_history_without_buffers():
    env = SerialEnv(2, _chat_env)
    try:
        assert not env._use_buffers
        check_env_specs(env)
        td = env.reset()
        td = env.step(_zeros(td))
        assert [h.text for h in td["next", "chat"].unbind(0)] == [["t0", "t1", "t2"]] * 2
    finally:
        env.close()
