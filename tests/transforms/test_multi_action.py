"""MultiAction: one step of the transformed env plays a chunk of actions."""

import pytest
import torch

from gpusim.envs import SerialEnv
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.transforms import Compose, MultiAction, StepCounter, TransformedEnv


def _pendulum(*transforms, batch=2):
    return TransformedEnv(PendulumEnv(batch_size=[batch], seed=0), Compose(*transforms))


def _one_by_one(actions):
    steps = iter(actions.unbind(1))
    return _pendulum().rollout(actions.shape[1], lambda td: td.set("action", next(steps)), break_when_any_done=False)


def test_chunk_equals_the_same_actions_one_by_one():
    actions = torch.linspace(-2, 2, 12).reshape(1, 12, 1).expand(2, 12, 1).contiguous()
    ref = _one_by_one(actions)
    env = _pendulum(MultiAction())
    chunks = iter(actions.split(4, dim=1))
    data = env.rollout(3, lambda td: td.set("action", next(chunks)), break_when_any_done=False)
    assert data["next", "reward"].shape == (2, 3, 4, 1)
    torch.testing.assert_close(data["next", "reward"].reshape(2, 12, 1), ref["next", "reward"])
    torch.testing.assert_close(data["next", "observation"], ref["next", "observation"][:, 3::4])


def test_stack_observations():
    actions = torch.linspace(-2, 2, 6).reshape(1, 6, 1).expand(2, 6, 1).contiguous()
    ref = _one_by_one(actions)
    env = _pendulum(MultiAction(stack_observations=True, stack_rewards=False))
    assert env.observation_spec["observation"].shape == (2, -1, 3)
    first = env.step(env.reset().set("action", actions[:, :4]))
    assert first["next", "reward"].shape == (2, 1)
    second = env.step(env.step_mdp(first).set("action", actions[:, 4:]))  # the root holds a chunk of 4
    observations = torch.cat([first["next", "observation"], second["next", "observation"]], 1)
    torch.testing.assert_close(observations, ref["next", "observation"])


def test_transforms_before_run_per_action_after_per_chunk():
    env = _pendulum(StepCounter(step_count_key="inner"), MultiAction(), StepCounter(step_count_key="outer"))
    data = env.rollout(2, lambda td: td.set("action", torch.zeros(2, 3, 1)))
    assert data["next", "inner"][0].flatten().tolist() == [3, 6]
    assert data["next", "outer"][0].flatten().tolist() == [1, 2]


def test_rows_that_end_inside_the_chunk_are_skipped():
    # CartPole is functional: rows can be stepped alone; the step limit ends row episodes at 2
    env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), Compose(StepCounter(2), MultiAction()))
    td = env.reset()
    td["step_count"] = torch.tensor([[0], [1]])  # row 1 ends after one action
    out = env.step(td.set("action", torch.ones(2, 3, dtype=torch.long)))["next"]
    assert out["reward"].squeeze(-1).tolist() == [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert out["truncated"].flatten().tolist() == [True, True]
    plain = CartPoleEnv(batch_size=[2], seed=0)
    once = plain.step(plain.reset().set("action", torch.ones(2, dtype=torch.long)))["next", "observation"]
    torch.testing.assert_close(out["observation"][1], once[1])  # the ended row did not move on


def test_every_row_ends_the_chunk_stops_with_one_zero_slot():
    env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), Compose(StepCounter(2), MultiAction()))
    out = env.step(env.reset().set("action", torch.ones(2, 5, dtype=torch.long)))["next"]
    assert out["reward"].squeeze(-1).tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]]
    assert out["done"].all()


def test_around_and_inside_a_batched_env():
    outside = TransformedEnv(SerialEnv(2, CartPoleEnv), MultiAction())
    inside = SerialEnv(2, lambda: TransformedEnv(CartPoleEnv(), MultiAction()))
    try:
        for env in (outside, inside):
            assert env.action_spec.shape == (2, -1)
            td = env.step(env.reset().set("action", torch.zeros(2, 4, dtype=torch.long)))
            assert td["next", "reward"].shape == (2, 4, 1)
    finally:
        outside.close()
        inside.close()
    with pytest.warns(UserWarning, match="dynamic \\(-1\\) dims"):
        SerialEnv(2, lambda: TransformedEnv(CartPoleEnv(), MultiAction()), use_buffers=True)


def test_chunk_key_and_dim():
    env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), MultiAction(chunk_key="plan", stack_rewards=False))
    assert list(env.full_action_spec.keys()) == ["plan"]
    td = env.step(env.reset().set("plan", torch.zeros(2, 3, 1)))
    assert td["next", "reward"].shape == (2, 1)
    env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), MultiAction(dim=2))  # the chunk after the action dim
    assert env.action_spec.shape == (2, 1, -1)
    assert env.step(env.reset().set("action", torch.zeros(2, 1, 3)))["next", "reward"].shape == (2, 1, 3)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="dim must be an int >= 1 .* got 0"):
        MultiAction(dim=0)
    with pytest.raises(KeyError, match="action_key 'force' is not an action of the env"):
        _pendulum(MultiAction(action_key="force"))
    with pytest.raises(ValueError, match=r"dim=3 puts the chunk at dim 3 of 'reward', whose spec has shape \[2, 1\]"):
        _pendulum(MultiAction(dim=3))
    env = _pendulum(MultiAction(chunk_key="plan"))
    with pytest.raises(KeyError, match="no stacked actions at 'plan'"):
        env.transform.inv(env.reset().set("action", torch.zeros(2, 1)))
    with pytest.raises(KeyError, match="the input has no action entry 'plan' \\(expected shape \\[2, -1, 1\\]"):
        env.step(env.reset().set("action", torch.zeros(2, 1)))
    env = _pendulum(MultiAction())
    with pytest.raises(ValueError, match="has shape \\[2, 1, 3, 1\\], expected \\[2, -1, 1\\]"):
        env.step(env.reset().set("action", torch.zeros(2, 1, 3, 1)))
