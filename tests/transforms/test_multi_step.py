"""MultiStepTransform: n-step returns against a frame-by-frame reference, streaming, partial resets."""

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import Compose, MultiStepTransform, StepCounter, TransformedEnv


def _data(batch, T, seed, reward_tail=(1,)):
    g = torch.Generator().manual_seed(seed)
    done = torch.rand(*batch, T, 1, generator=g) < 0.2
    return TensorDict(
        {
            "obs": torch.randn(*batch, T, 3, generator=g),
            "next": {
                "obs": torch.randn(*batch, T, 3, generator=g),
                "reward": torch.randn(*batch, T, *reward_tail, generator=g),
                "done": done,
                "terminated": done.clone(),
                "agents": TensorDict({"pos": torch.randn(*batch, T, 2, 4, generator=g)}, [*batch, T, 2]),
            },
        },
        [*batch, T],
    )


def _reference(data, n, gamma):
    """Frame by frame, row by row: walk ahead until n transitions or a done."""
    flat = data.reshape(-1, data.shape[-1])
    rows = []
    for row in flat.unbind(0):
        frames = []
        T = row.shape[0]
        for t in range(T - n):
            m, ret = 0, 0.0
            while True:
                ret = ret + gamma**m * row["next", "reward"][t + m]
                m += 1
                if m == n or row["next", "done"][t + m - 1].item():
                    break
            frames.append((m, ret, t + m - 1, not row["next", "done"][t + m - 1].item()))
        rows.append(frames)
    return rows


@pytest.mark.parametrize("batch,reward_tail", [((3,), (1,)), ((2, 2), (2, 1))])
@pytest.mark.parametrize("n", [1, 3])
def test_matches_frame_by_frame_reference(batch, reward_tail, n):
    gamma = 0.9
    data = _data(batch, 12, seed=n, reward_tail=reward_tail)
    out = MultiStepTransform(n, gamma).inv(data)
    assert out.shape == torch.Size([*batch, 12 - n])
    flat_out, flat_in = out.reshape(-1, 12 - n), data.reshape(-1, 12)
    for r, frames in enumerate(_reference(data, n, gamma)):
        for t, (m, ret, last, nonterminal) in enumerate(frames):
            o = flat_out[r, t]
            assert o["steps_to_next_obs"].item() == m and o["nonterminal"].item() == nonterminal
            assert o["gamma"].item() == pytest.approx(gamma**m)
            torch.testing.assert_close(o["next", "reward"], ret)
            torch.testing.assert_close(o["next", "original_reward"], flat_in[r, t]["next", "reward"])
            torch.testing.assert_close(o["next", "obs"], flat_in[r, last]["next", "obs"])
            torch.testing.assert_close(o["next", "agents", "pos"], flat_in[r, last]["next", "agents", "pos"])
            # done entries are left as they were; root entries too
            assert torch.equal(o["next", "done"], flat_in[r, t]["next", "done"])
            assert torch.equal(o["obs"], flat_in[r, t]["obs"])


def test_output_does_not_depend_on_how_the_stream_is_cut():
    data = _data((2,), 30, seed=0)
    whole = MultiStepTransform(4, 0.95).inv(data)
    t = MultiStepTransform(4, 0.95)
    parts = [t.inv(chunk) for chunk in data.split([2, 1, 9, 3, 15], -1)]
    assert parts[0] is None and parts[1] is None  # 3 frames held: not yet more than n_steps
    streamed = torch.cat([p for p in parts if p is not None], -1)
    assert (streamed == whole).all()


def test_changing_n_steps_keeps_the_output_contiguous():
    steps = torch.arange(40)
    data = TensorDict(
        {
            "steps": steps,
            "next": {"steps": steps + 1, "reward": torch.ones(40, 1), "done": torch.zeros(40, 1, dtype=torch.bool)},
        },
        [40],
    )
    t = MultiStepTransform(2, 1.0)
    seen = []
    for chunk in data.split(10):
        out = t.inv(chunk)
        seen.append(out["steps"])
        assert (out["next", "steps"] == out["steps"] + t.n_steps).all()
        assert (out["next", "reward"].flatten() == t.n_steps).all()
        t.n_steps += 1
    assert torch.equal(torch.cat(seen), torch.arange(len(torch.cat(seen))))


def test_partial_resets_of_a_batched_env():
    # rows end their episodes at different steps (StepCounter limit + CartPole failures)
    env = TransformedEnv(CartPoleEnv(batch_size=[5], seed=1), StepCounter(4))
    rollout = env.rollout(25, break_when_any_done=False)
    out = MultiStepTransform(3, 0.5).inv(rollout)
    ahead = out["next", "step_count"] - out["step_count"]
    # the bootstrap state is m steps ahead in the same episode, never in the next one
    assert torch.equal(ahead.squeeze(-1), out["steps_to_next_obs"])
    assert (out["steps_to_next_obs"] < 3).any() and (out["steps_to_next_obs"] == 3).any()
    ended = ~out["nonterminal"]
    assert torch.equal(ended, out["next", "step_count"].squeeze(-1) == 4)  # all CartPole rows ran 4 steps
    expected = torch.tensor([1.0, 1.5, 1.75])[out["steps_to_next_obs"] - 1]
    assert torch.equal(out["next", "reward"].squeeze(-1), expected)


def test_mask_marks_frames_invalid():
    data = _data((2,), 8, seed=3)
    data["mask"] = torch.ones(2, 8, dtype=torch.bool)
    data["mask"][1, 2] = False
    out = MultiStepTransform(2, 0.9).inv(data)
    assert not out["nonterminal"][1, 2]


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="n_steps must be an int >= 1, got 0"):
        MultiStepTransform(0, 0.9)
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\], got 1.5"):
        MultiStepTransform(2, 1.5)
    with pytest.raises(ValueError, match="cannot be part of an environment"):
        TransformedEnv(CartPoleEnv(), MultiStepTransform(2, 0.9))
    env = TransformedEnv(CartPoleEnv(), Compose(StepCounter()))
    with pytest.raises(ValueError, match="cannot be part of an environment"):
        env.append_transform(MultiStepTransform(2, 0.9))
    t = MultiStepTransform(2, 0.9)
    t.inv(_data((2,), 4, seed=0))
    with pytest.raises(ValueError, match=r"expected \[2\], received \[3\]"):
        t.inv(_data((3,), 4, seed=0))
    with pytest.raises(ValueError, match="missing.*'obs'"):
        t.inv(_data((2,), 4, seed=0).exclude("obs"))
    with pytest.raises(ValueError, match="needs a time dimension"):
        MultiStepTransform(2, 0.9).inv(TensorDict({}, []))
    bad = _data((2,), 4, seed=0)
    bad["next", "done"] = torch.zeros(2, 4, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"must have shape \[2, 4\] or \[2, 4, 1\], received \[2, 4, 2\]"):
        MultiStepTransform(2, 0.9).inv(bad)
