"""ToyVLAEnv: the VLA data layout, the echo and tracking modes, grouped targets, partial resets,
seeding, rendering, batched workers with different instructions, and bad arguments."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs import SerialEnv, ToyVLAEnv, check_env_specs


def test_layout_and_echo_mode():
    env = ToyVLAEnv(batch_size=[3], seed=0)
    check_env_specs(env)
    td = env.reset()
    assert td["observation", "image"].shape == (3, 3, 16, 16) and td["observation", "image"].dtype == torch.uint8
    assert td["observation", "state"].abs().sum() == 0
    assert list(td["language_instruction"]) == ["push the T-shaped block onto the target"] * 3
    action = torch.tensor([[0.5, -0.5, 0.0, 1.0]]).expand(3, 4)
    out = env.step(td.set("action", action))["next"]
    torch.testing.assert_close(out["observation", "state"][:, :4], action)
    torch.testing.assert_close(out["reward"], -action.norm(dim=-1, keepdim=True))
    assert not out["done"].any()


def test_tracking_oracle_succeeds_and_a_bad_policy_does_not():
    env = ToyVLAEnv(action_dim=2, state_dim=4, success_steps=3, batch_size=[2], seed=1)
    check_env_specs(env)
    td = env.reset()
    target = td["observation", "state"][:, 2:4]
    assert (target.abs() <= 0.5).all()
    for t in range(3):
        out = env.step(td.set("action", target.clone()))["next"]
        assert out["success"].flatten().tolist() == [t == 2] * 2
        td = out
    assert out["terminated"].all() and out["reward"].eq(0).all()
    # far from the target: the streak never starts
    td = env.reset()
    far = -torch.sign(td["observation", "state"][:, 2:4])
    for _ in range(4):
        td = env.step(td.set("action", far))["next"]
    assert not td["success"].any()


def test_partial_reset_keeps_the_other_rows_target_and_seeding_repeats():
    env = ToyVLAEnv(action_dim=2, state_dim=4, success_steps=2, batch_size=[2], seed=3)
    td = env.reset()
    before = td["observation", "state"][:, 2:4].clone()
    td = env.reset(td.set("_reset", torch.tensor([[True], [False]])))
    after = td["observation", "state"][:, 2:4]
    assert torch.equal(after[1], before[1]) and not torch.equal(after[0], before[0])
    a = ToyVLAEnv(batch_size=[2], seed=7).reset()
    b = ToyVLAEnv(batch_size=[2], seed=7).reset()
    assert torch.equal(a["observation", "image"], b["observation", "image"])


def test_group_repeats_replay_targets_and_stamp_ids():
    env = ToyVLAEnv(action_dim=2, state_dim=4, success_steps=1, group_repeats=2, group_id_offset=10, seed=0)
    targets, groups = [], []
    for _ in range(4):
        td = env.reset()
        targets.append(td["observation", "state"][2:4].clone())
        groups.append(int(td["group_id"]))
    assert groups == [10, 10, 11, 11]
    assert torch.equal(targets[0], targets[1]) and not torch.equal(targets[1], targets[2])


def test_pixels_draw_the_action_marker():
    env = ToyVLAEnv(action_dim=2, state_dim=4, success_steps=2, from_pixels=True, render_size=21, seed=0)
    check_env_specs(env)
    td = env.reset()
    frame = env.step(td.set("action", torch.tensor([1.0, 1.0])))["next", "pixels"]
    assert frame.shape == (21, 21, 3)
    assert frame[20, 20].tolist() == [220, 60, 60] and frame[0, 20].tolist() == [30, 30, 30]


def test_workers_with_different_instructions():
    def make(text):
        return lambda: ToyVLAEnv(action_dim=2, state_dim=2, instruction=text)

    env = SerialEnv(2, [make("pick up the apple"), make("pick up the pear")])
    try:
        rollout = env.rollout(2)
        assert rollout["language_instruction"][0][0] == "pick up the apple"
        assert rollout["language_instruction"][1][1] == "pick up the pear"
    finally:
        env.close()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"action_dim": 4, "state_dim": 3}, "state_dim must be >= 4"),
        ({"action_dim": 2, "state_dim": 3, "success_steps": 1}, "state_dim must be >= 4"),
        ({"success_steps": 0, "state_dim": 8}, "success_steps must be >= 1, got 0"),
        ({"success_steps": 1, "state_dim": 8, "success_tol": 0.7}, r"success_tol must be in \(0, 0.5\]"),
        ({"group_repeats": 2}, "group_repeats needs the tracking mode"),
        ({"group_repeats": 2, "success_steps": 1, "state_dim": 8, "batch_size": [2]}, "batch_size=\\[2\\]"),
        ({"render_size": 0}, "render_size must be >= 1"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ToyVLAEnv(**kwargs)


def test_partial_steps_freeze_the_skipped_rows_streak():
    env = ToyVLAEnv(action_dim=2, state_dim=4, success_steps=3, batch_size=[2], seed=2)
    td = env.reset()
    oracle = td["observation", "state"][:, 2:4].clone()
    td = env.step(td.set("action", oracle))["next"]  # streaks 1, 1
    td = td.set("action", oracle).set("_step", torch.tensor([True, False]))
    out = env.step(td)["next"]  # streaks 2, 1 (row 1 skipped)
    assert out["reward"][1].item() == 0.0
    assert torch.equal(out["observation", "state"][1], td["observation", "state"][1])  # the skipped row holds
    out = env.step(out.exclude("_step").set("action", oracle))["next"]  # streaks 3, 2
    assert out["success"].flatten().tolist() == [True, False]
