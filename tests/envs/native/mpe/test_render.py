"""Rendering of the MPE scenarios: frames of every row at once, entity colours at their centres,
one program for any number of rows, and likeness to VMAS's own ``render(mode="rgb_array")``
(the real library, headless through EGL) of the same state."""

from __future__ import annotations

import pytest
import torch
import vmas
from tensordict import TensorDict
from torch.utils._python_dispatch import TorchDispatchMode

import gpusim as gs
from gpusim.envs.native.mpe import SCENARIOS
from gpusim.render.mpe import MPE_VIEWER_SIZE, entity_colours, view_half_width
from tests.envs.native.mpe._parity import inject

SIZE = MPE_VIEWER_SIZE
TEXT_ROWS = 620  # VMAS's message text lines start below this image row


def _centre_pixel(env, pos: torch.Tensor, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Image (row, column) of entity ``i``'s centre in each row."""
    half = view_half_width(env, pos)
    px = pos[..., i, :] * (SIZE / 2.0 / half)[..., None] + SIZE / 2.0
    col = px[..., 0].round().long().clamp(0, SIZE - 1)
    row = (SIZE - 1 - px[..., 1].round().long()).clamp(0, SIZE - 1)
    return row, col


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_frames_of_every_row_with_entity_colours(scenario) -> None:
    env = gs.make(f"MPE/{scenario}-v0", num_envs=3, seed=1)
    td = env.rollout(3)[:, -1]["next"]
    frames = env.render(td)
    assert frames.shape == (3, SIZE, SIZE, 3) and frames.dtype == torch.uint8 and frames.device == env.device
    state = td["state"]
    pos = state["pos"]
    colours = entity_colours(env, state)
    n, E = env.world.n_agents, env.world.n_entities
    radius = env.world.radius
    checked = 0
    for j in range(E):
        # rows where no other entity's disk reaches j's centre: it shows j's colour over white
        # (agents at opacity 0.5: VMAS's blend)
        d = (pos - pos[:, j : j + 1]).norm(dim=-1)  # [3, E]
        near = d <= radius + 0.05
        near[:, j] = False
        free = ~near.any(-1)
        if env.world.x_semidim is not None:  # nor the world's drawn bounds
            free &= ((pos[:, j].abs() - env.world.x_semidim).abs() > 0.03).all(-1)
        want = colours[:, j].float()
        if j < n:
            want = want * 0.5 + 127.5
        row, col = _centre_pixel(env, pos, j)
        seen = frames[torch.arange(3), row, col]
        assert torch.all((seen[free].float() - want[free]).abs() <= 0.5), (j, seen, want)
        checked += int(free.sum())
    assert checked >= E  # most centres are free of other entities
    # the background is white where nothing is (a corner: entities are within the view)
    assert torch.all(frames[:, 0, 0] == 255)


class _OpCount(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def test_one_program_for_any_number_of_rows() -> None:
    """Drawing 1 row or 6 rows runs the same number of tensor ops (nothing loops over rows)."""
    counts = []
    for rows in (1, 6):
        env = gs.make("MPE/simple_reference-v0", num_envs=rows, seed=0)
        td = env.reset()
        with _OpCount() as mode:
            env.render(td)
        counts.append(mode.ops)
    assert counts[0] == counts[1], counts


def test_render_leading_dims_match_rows() -> None:
    env = gs.make("MPE/simple_spread-v0", num_envs=2, seed=0)
    data = env.rollout(2)["next"]  # [2, 2] rows
    frames = env.render(data)
    assert frames.shape == (2, 2, SIZE, SIZE, 3)
    assert torch.equal(frames[1, 0], env.render(data[1, 0]))


def _vmas_goals_into_state(scenario: str, theirs, state) -> None:
    """Copies the goals VMAS drew at its reset (its colours follow them) into the native state."""
    world = theirs.world
    lm = world.landmarks
    if scenario == "simple_adversary":
        state["goal"].fill_(lm.index(world.agents[0].goal))
    elif scenario == "simple_push":
        state["goal"].fill_(lm.index(world.agents[0].goal))
    elif scenario == "simple_reference":
        for i in range(2):
            state["goal"][:, i] = lm.index(world.agents[i].goal_b)
    elif scenario == "simple_speaker_listener":
        state["goal"].fill_(lm.index(world.agents[0].goal_b))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_frame_is_like_vmas_render(scenario) -> None:
    ours = SCENARIOS[scenario](batch_size=[2], seed=3)
    theirs = vmas.make_env(scenario, num_envs=2, device="cpu", seed=3)
    theirs.reset()
    state = ours.rollout(4)[:, -1]["next", "state"].clone()
    _vmas_goals_into_state(scenario, theirs, state)
    inject(ours, theirs, state)
    mine = ours.render(TensorDict({"state": state}, [2]))
    for row in range(2):
        ref = torch.from_numpy(theirs.render(mode="rgb_array", env_index=row).copy())
        assert ref.shape == mine[row].shape
        close = ((mine[row].int() - ref.int()).abs() <= 8).all(-1)
        if ours.world.dim_c:  # VMAS writes the agents' messages as text in the bottom rows: not drawn
            close = close[:TEXT_ROWS]
        # hard-edged disks against VMAS's anti-aliased polygons with outlines: only edges differ
        assert close.float().mean() > 0.98, (row, close.float().mean())
