"""Batched rendering of the native envs: gymnasium's ``rgb_array`` frames of the same states.

Parity bound (per frame, against gymnasium's frame of the injected state): at least 99% of the
pixels equal, a mean absolute difference under 0.5 (of 255, per channel), and every differing
pixel within 2 pixels of a shape edge. Why: gymnasium draws each shape twice with pygame, a
hard-edged fill (which the rasterizer repeats: same vertices truncated to integers, same
scanline rounding, same integer circles) and an anti-aliased rim (``aapolygon``/``aacircle``/
``aalines``) that blends a one-pixel border with the background; the rasterizer draws no rims
(MountainCar's track excepted), so the differences are those borders: a few hundred pixels
per frame (0.06-0.15% for CartPole, Pendulum and Acrobot), about 1,400 for MountainCar whose
600-pixel-long anti-aliased track rounds some inks one level apart (0.6%). A shifted, rotated,
mis-sized or mis-coloured shape fails the edge or the mean bound, and a shape one pixel off fails
the pure-colour bound: gymnasium's pixels that are not anti-aliased blends (a colour that the
drawing uses) must be ours too, but for at most ``MAX_PURE_MISMATCH`` of them (rims that happen
to be opaque).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from tensordict import TensorDict

import gpusim as gs

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
gym = pytest.importorskip("gymnasium")
pytest.importorskip("pygame", reason="gymnasium's classic-control frames are drawn by pygame (test extra)")

N_STATES = 6
# pixels of a pure colour in gymnasium's frame that differ in ours: at most 28 measured over
# these states; the same frames shifted by one pixel give 81 to 650
MAX_PURE_MISMATCH = 40


def _cartpole(rng):
    return [rng.uniform(-2.4, 2.4), rng.normal(), rng.uniform(-1.0, 1.0), rng.normal()]


def _pendulum(rng):
    return [rng.uniform(-2 * math.pi, 2 * math.pi), rng.normal()]


def _mountain(rng):
    return [rng.uniform(-1.2, 0.6), rng.uniform(-0.07, 0.07)]


def _acrobot(rng):
    return [rng.uniform(-math.pi, math.pi), rng.uniform(-math.pi, math.pi), rng.normal(), rng.normal()]


CASES = {
    "CartPole-v1": (gs.CartPoleEnv, _cartpole, {}),
    "CartPole-v1/length": (gs.CartPoleEnv, _cartpole, {"length": 0.8, "x_threshold": 3.0}),
    "Pendulum-v1": (gs.PendulumEnv, _pendulum, {}),
    "MountainCar-v0": (gs.MountainCarEnv, _mountain, {}),
    "MountainCarContinuous-v0": (gs.MountainCarContinuousEnv, _mountain, {}),
    "Acrobot-v1": (gs.AcrobotEnv, _acrobot, {}),
    "Acrobot-v1/link": (gs.AcrobotEnv, _acrobot, {"link_length_1": 0.7}),
}
# gymnasium's attribute names of the constants the drawings use
_GYM_NAMES = {"length": "length", "x_threshold": "x_threshold", "link_length_1": "LINK_LENGTH_1"}


def _gym_frame(gym_env, state) -> np.ndarray:
    gym_env.unwrapped.state = np.asarray(state, dtype=np.float64)
    if hasattr(gym_env.unwrapped, "last_u"):
        gym_env.unwrapped.last_u = None  # Pendulum's torque arrow is not part of the state
    return gym_env.render()


def _edges(frame: np.ndarray) -> np.ndarray:
    """Pixels within 2 of a colour change (in either frame)."""
    change = np.zeros(frame.shape[:2], dtype=bool)
    change[1:] |= (frame[1:] != frame[:-1]).any(-1)
    change[:-1] |= (frame[1:] != frame[:-1]).any(-1)
    change[:, 1:] |= (frame[:, 1:] != frame[:, :-1]).any(-1)
    change[:, :-1] |= (frame[:, 1:] != frame[:, :-1]).any(-1)
    near = change.copy()
    for _ in range(2):
        grown = near.copy()
        grown[1:] |= near[:-1]
        grown[:-1] |= near[1:]
        grown[:, 1:] |= near[:, :-1]
        grown[:, :-1] |= near[:, 1:]
        near = grown
    return near


@pytest.mark.parametrize("case", list(CASES))
def test_frames_match_gymnasium(case):
    env_cls, draw_state, constants = CASES[case]
    gym_id = case.split("/")[0]
    rng = np.random.default_rng(sum(map(ord, case)))
    states = np.array([draw_state(rng) for _ in range(N_STATES)], dtype=np.float32)
    env = env_cls(batch_size=[N_STATES], **constants)
    # every row in one call
    frames = env.render(TensorDict({"state": torch.as_tensor(states)}, [N_STATES])).numpy()
    gym_env = gym.make(gym_id, render_mode="rgb_array")
    gym_env.reset(seed=0)
    for name, value in constants.items():
        setattr(gym_env.unwrapped, _GYM_NAMES[name], value)
    for i, state in enumerate(states):
        ref = _gym_frame(gym_env, state.astype(np.float64))
        ours = frames[i]
        assert ours.shape == ref.shape and ours.dtype == ref.dtype == np.uint8
        diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
        differing = diff.max(-1) > 0
        equal = 1.0 - differing.mean()
        assert equal >= 0.99, f"{case} state {state}: {equal:.4%} of the pixels equal"
        assert diff.mean() < 0.5, f"{case} state {state}: mean abs diff {diff.mean():.3f}"
        off_edge = differing & ~(_edges(ref) | _edges(ours))
        assert not off_edge.any(), f"{case} state {state}: {off_edge.sum()} differing pixels away from any edge"
        # where gymnasium's pixel is a pure colour of the drawing (not an anti-aliased blend),
        # ours is the same colour, but for a few pixels where a rim happens to be opaque
        colours, counts = np.unique(ours.reshape(-1, 3), axis=0, return_counts=True)
        pure = (ref[..., None, :] == colours[counts >= 20]).all(-1).any(-1)
        assert (differing & pure).sum() <= MAX_PURE_MISMATCH, (
            f"{case} state {state}: {(differing & pure).sum()} pixels of a pure colour differ"
        )
    gym_env.close()


def test_render_batch_dims_and_rows_are_independent():
    env = gs.AcrobotEnv(batch_size=[2, 3], seed=0)
    data = env.rollout(3, break_when_any_done=False)
    frames = env.render(data["next"])
    assert frames.shape == (2, 3, 3, 500, 500, 3) and frames.dtype == torch.uint8
    one = env.render(data["next"][1, 2, 0])
    assert torch.equal(frames[1, 2, 0], one)


def test_render_without_data_draws_the_last_reset_and_step():
    env = gs.CartPoleEnv(batch_size=[4], seed=1)
    with pytest.raises(RuntimeError, match="reset the env first"):
        env.render()
    td = env.reset()
    assert torch.equal(env.render(), env.render(td))
    td = env.step(env.rand_action(td))
    assert torch.equal(env.render(), env.render(td["next"]))
    # a partial reset: the reset rows are new, the others keep their state
    root = env.step_mdp(td)
    root["_reset"] = torch.tensor([[True], [False], [False], [True]])
    root = env.reset(root)
    assert torch.equal(env.render(), env.render(root))


def test_render_through_transformed_env_tracks_resets():
    env = gs.make("CartPole-v1", num_envs=3, seed=0)
    data = env.rollout(30, break_when_any_done=False)
    assert data["next", "done"].any()  # episodes ended and were reset
    root = env.reset()
    assert torch.equal(env.render(), env.render(root))


def test_render_errors_name_the_problem():
    env = gs.CartPoleEnv(batch_size=[2])
    with pytest.raises(KeyError, match="no 'state' entry"):
        env.render(TensorDict({"observation": torch.zeros(2, 4)}, [2]))


def test_tictactoe_board_marks():
    env = gs.TicTacToeEnv(batch_size=[2], seed=0)
    td = env.reset()
    moves = [[4, 0], [0, 8], [8, 4]]  # per step, one move per row
    for move in moves:
        td = env.step(td.set("action", torch.tensor(move).unsqueeze(-1)))
        td = env.step_mdp(td)
    frames = env.render(td)
    assert frames.shape == (2, 96, 96, 3)
    red, blue, white = [220, 50, 50], [50, 90, 220], [255, 255, 255]
    # player 0 played the first and third moves, player 1 the second
    for row in range(2):
        marks = {moves[0][row]: red, moves[1][row]: blue, moves[2][row]: red}
        for cell in range(9):
            r, c = divmod(cell, 3)
            centre = frames[row, r * 32 + 16, c * 32 + 16].tolist()
            ring = frames[row, r * 32 + 16, c * 32 + 16 + 10].tolist()  # on a ring, off a cross
            if marks.get(cell) == red:
                assert centre == red, (row, cell)
            elif marks.get(cell) == blue:
                assert centre == white and ring == blue, (row, cell)
            else:
                assert centre == white and ring == white, (row, cell)


# frames drawn at a fifth of the size: each pixel's centre is a pixel of the full frame
# (surface coordinate 5 i + 2), so they match the full frame subsampled there, but for the
# one-pixel lines (a line on a surface row that is not sampled moves to the nearest one)
SMALL = {
    "CartPole-v1": (gs.CartPoleEnv, _cartpole, (80, 120)),
    "Pendulum-v1": (gs.PendulumEnv, _pendulum, (100, 100)),
    "MountainCar-v0": (gs.MountainCarEnv, _mountain, (80, 120)),
    "Acrobot-v1": (gs.AcrobotEnv, _acrobot, (100, 100)),
}


@pytest.mark.parametrize("case", list(SMALL))
def test_render_size_draws_the_full_frame_sampled_at_pixel_centres(case):
    env_cls, draw_state, size = SMALL[case]
    rng = np.random.default_rng(7)
    states = torch.tensor([draw_state(rng) for _ in range(N_STATES)], dtype=torch.float32)
    env = env_cls(batch_size=[N_STATES])
    data = TensorDict({"state": states}, [N_STATES])
    small = env.render(data, size=size)
    assert small.shape == (N_STATES, *size, 3) and small.dtype == torch.uint8
    sampled = env.render(data)[:, 2::5, 2::5]
    differ = (small != sampled).any(-1)  # [N, H, W]
    for i, d in enumerate(differ):
        # all on one row (a horizontal line moved) and one column (a vertical one)
        row, col = d.sum(-1).argmax(), d.sum(-2).argmax()
        d[row, :] = False
        d[:, col] = False
        assert not d.any(), f"{case} state {i}: {int(d.sum())} pixels differ off the lines"


def test_render_size_lines_stay_one_pixel_wide():
    env = gs.CartPoleEnv(batch_size=[1])
    frame = env.render(TensorDict({"state": torch.zeros(1, 4)}, [1]), size=(64, 64))[0]
    black_rows = (frame == 0).all(-1).all(-1)  # the rail: a full black row
    assert black_rows.sum() == 1


def test_render_size_errors():
    env = gs.CartPoleEnv(batch_size=[2])
    td = env.reset()
    with pytest.raises(ValueError, match=r"\(height, width\), two positive ints, got 64"):
        env.render(td, size=64)
    with pytest.raises(ValueError, match=r"one frame size, \(96, 96\); got size=\(32, 32\)"):
        gs.TicTacToeEnv(batch_size=[2]).render(gs.TicTacToeEnv(batch_size=[2]).reset(), size=(32, 32))


# compiled, the canvas paints the frame's bytes directly (a different program than the eager
# colour indices): the frames must be the same, bit for bit, for every drawing that paints
COMPILED = {
    "CartPole-v1": (gs.CartPoleEnv, _cartpole, None),
    "Pendulum-v1": (gs.PendulumEnv, _pendulum, (100, 100)),
    "MountainCar-v0": (gs.MountainCarEnv, _mountain, (80, 120)),
    "Acrobot-v1": (gs.AcrobotEnv, _acrobot, (64, 64)),
}


@pytest.mark.parametrize("case", list(COMPILED))
def test_compiled_render_is_the_eager_render(case):
    env_cls, draw_state, size = COMPILED[case]
    rng = np.random.default_rng(11)
    states = torch.tensor([draw_state(rng) for _ in range(N_STATES)], dtype=torch.float32)
    data = TensorDict({"state": states}, [N_STATES])
    eager = env_cls(batch_size=[N_STATES]).render(data, size=size)
    fresh = env_cls(batch_size=[N_STATES])  # no cached static layers: the graph draws them too
    compiled = torch.compile(lambda s: fresh.render(TensorDict({"state": s}, [N_STATES]), size=size), fullgraph=True)
    frames = compiled(states)
    assert frames.shape == eager.shape and frames.dtype == torch.uint8
    assert torch.equal(frames, eager), f"{case}: {int((frames != eager).any(-1).sum())} pixels differ"
    cached = fresh.render(data, size=size)  # eager: caches the static layers, which the graph then reads
    assert torch.equal(compiled(states), cached)


def test_compiled_tictactoe_render_is_the_eager_render():
    env = gs.TicTacToeEnv(batch_size=[8], seed=3)
    data = env.rollout(5, break_when_any_done=False)["next"][:, -1]
    eager = env.render(data)
    compiled = torch.compile(lambda td: env.render(td), fullgraph=True)
    assert torch.equal(compiled(data), eager)


def _half_planes(canvas, xs, ys, clockwise):
    """The per-pixel polygon test (each pixel against every edge), the reference of the runs."""
    vx = [torch.trunc(v)[:, None, None] for v in xs]
    vy = [torch.trunc(v)[:, None, None] for v in ys]
    inside = None
    for i in range(len(vx)):
        ax, ay, ex, ey = vx[i], vy[i], vx[(i + 1) % 4] - vx[i], vy[(i + 1) % 4] - vy[i]
        rows, cols = ex * (canvas.y - ay), ey * (canvas.x - ax)
        slack = 0.5 * ey.abs() + 1e-3
        test = rows - slack <= cols if clockwise else rows + slack >= cols
        inside = test if inside is None else inside & test
    return inside


@pytest.mark.parametrize("size", [None, (64, 64), (37, 81)])
def test_polygon_runs_are_the_per_pixel_half_plane_tests(size):
    from gpusim.render.raster import Canvas, rotate

    gen = torch.Generator().manual_seed(5)
    n = 256
    cx, cy = torch.rand(n, generator=gen) * 700 - 50, torch.rand(n, generator=gen) * 500 - 50
    angle = torch.rand(n, generator=gen) * 2 * math.pi
    angle[:8] = torch.tensor([0.0, math.pi / 2, math.pi, -math.pi / 2, 1e-4, math.pi / 4, 3.0, -1e-7])
    half_w, half_h = torch.rand(n, generator=gen) * 60 + 0.2, torch.rand(n, generator=gen) * 120 + 0.2
    canvas = Canvas(torch.Size([n]), 400, 600, size=size)
    xs, ys = [], []
    for px, py in ((-1, -1), (-1, 1), (1, 1), (1, -1)):  # clockwise (y up)
        rx, ry = rotate(px * half_w, py * half_h, angle)
        xs.append(rx + cx)
        ys.append(ry + cy)
    expected = _half_planes(canvas, xs, ys, clockwise=True)
    assert expected.sum() > 1000  # shapes are drawn
    assert torch.equal(canvas.polygon(xs, ys, clockwise=True), expected)
    ccw = _half_planes(canvas, xs[::-1], ys[::-1], clockwise=False)
    assert torch.equal(canvas.polygon(xs[::-1], ys[::-1], clockwise=False), ccw)


@pytest.mark.parametrize("size", [None, (64, 64), (37, 81)])
def test_disk_and_line_runs_are_the_per_pixel_tests(size):
    from gpusim.render.raster import Canvas

    gen = torch.Generator().manual_seed(6)
    n = 256
    cx = torch.trunc(torch.rand(n, generator=gen) * 700 - 50)
    cy = torch.trunc(torch.rand(n, generator=gen) * 500 - 50)
    radius = torch.trunc(torch.rand(n, generator=gen) * 40)
    canvas = Canvas(torch.Size([n]), 400, 600, size=size)
    dx, dy = canvas.x - cx[:, None, None], canvas.y - cy[:, None, None]
    r = radius[:, None, None]
    disk = dy * dy - (r * r + r) <= -(dx * dx)  # gfxdraw's integer circle, pixel by pixel
    assert disk.sum() > 1000
    assert torch.equal(canvas.disk(cx, cy, radius), disk)
    x0, x1 = torch.rand(n, generator=gen) * 300 - 20, torch.rand(n, generator=gen) * 400 + 250
    y = cy + 0.3
    line = ((canvas.y - y[:, None, None]).abs() < canvas._half_y) & (canvas.x >= x0[:, None, None])
    line = line & (canvas.x <= x1[:, None, None])
    assert line.sum() > 1000
    assert torch.equal(canvas.hline(y, x0, x1), line)
