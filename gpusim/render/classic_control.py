"""Drawings of the native classic-control envs and TicTacToe: one function per env.

Each classic-control drawing repeats gymnasium's ``render_mode="rgb_array"`` frame of the same
state (``gymnasium/envs/classic_control/*.py``: the same frame size, geometry and colours),
for every row at once, from the ``"state"`` entry. What is not drawn: the anti-aliased rims
that pygame's ``aapolygon``/``aacircle`` blend around shapes (shapes are hard-edged), and
Pendulum's torque arrow (an image of the last action, which is not part of the state).
Static parts (tracks, rails, flags) are drawn once per env and device and cached.

TicTacToe has no reference frame; it is drawn as a 96x96 board: grey grid, player 0's marks
as red crosses, player 1's as blue rings.

Examples:
    >>> import gpusim as gs
    >>> env = gs.MountainCarEnv(batch_size=[3], seed=0)
    >>> env.render(env.reset()).shape
    torch.Size([3, 400, 600, 3])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native import (
    AcrobotEnv,
    CartPoleEnv,
    MountainCarContinuousEnv,
    MountainCarEnv,
    PendulumEnv,
    TicTacToeEnv,
)
from gpusim.render.drawings import register_drawing
from gpusim.render.raster import Canvas, rotate

__all__ = ["draw_cartpole", "draw_pendulum", "draw_mountain_car", "draw_acrobot", "draw_tictactoe"]

BLACK = (0, 0, 0)
WHITE = (255, 255, 255)


def _static(env: Any, name: str, build: Callable[[], Any], size: tuple[int, int] | None = None) -> Any:
    """``build()`` once per env, name, device and frame size (kept on the env; compiled graphs
    that find nothing cached build it in the graph without storing it)."""
    cache = env.__dict__.setdefault("_render_static", {})
    key = (name, str(env.device), size)
    value = cache.get(key)
    if value is None:
        value = build()
        if not torch.compiler.is_compiling():
            cache[key] = value
    return value


def _unbind(data: TensorDictBase, key: str = "state") -> tuple[torch.Tensor, ...]:
    return data.get(key).to(torch.float32).unbind(-1)


# ---------------------------------------------------------------------------------- CartPole
def _size_600x400(env) -> tuple[int, int]:
    """Frame size ``(H, W)`` of CartPole and MountainCar (gymnasium's 600x400); module-level
    functions, not lambdas, so that envs holding their drawing pickle."""
    return (400, 600)


def _size_500x500(env) -> tuple[int, int]:
    """Frame size ``(H, W)`` of Pendulum and Acrobot (gymnasium's 500x500)."""
    return (500, 500)


@register_drawing(CartPoleEnv, keys=("state",), size=_size_600x400, resizable=True)
def draw_cartpole(env: CartPoleEnv, data: TensorDictBase, size: tuple[int, int] | None = None) -> torch.Tensor:
    """CartPole as gymnasium draws it: a black cart on a black rail, a brown pole, a blue axle.

    ``size``: the frame size ``(H, W)`` (default gymnasium's ``(400, 600)``): the same scene
    drawn directly at that size (see :class:`~gpusim.render.raster.Canvas`).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> env = CartPoleEnv()
        >>> frame = draw_cartpole(env, TensorDict({"state": torch.zeros(4)}, []))
        >>> frame[399 - 100, 0].tolist(), frame[399 - 150, 300].tolist()  # the rail, the pole
        ([0, 0, 0], [202, 152, 101])
    """
    x, _, theta, _ = _unbind(data)
    height, width = 400, 600
    scale = width / (env.x_threshold * 2)
    pole_width, pole_len = 10.0, scale * (2 * env.length)
    cart_width, cart_height = 50.0, 30.0
    cart_x = x * scale + width / 2.0
    cart_y = 100.0
    axle = cart_height / 4.0
    canvas = Canvas(data.batch_size, height, width, env.device, size=size)
    left, right, top, bottom = -cart_width / 2, cart_width / 2, cart_height / 2, -cart_height / 2
    canvas.paint(
        canvas.polygon(
            [cart_x + left, cart_x + left, cart_x + right, cart_x + right],
            [cart_y + bottom, cart_y + top, cart_y + top, cart_y + bottom],
            clockwise=True,
        ),
        BLACK,
    )
    left, right, top, bottom = -pole_width / 2, pole_width / 2, pole_len - pole_width / 2, -pole_width / 2
    xs, ys = [], []
    for cx, cy in ((left, bottom), (left, top), (right, top), (right, bottom)):
        rx, ry = rotate(cx, cy, -theta)
        xs.append(rx + cart_x)
        ys.append(ry + cart_y + axle)
    canvas.paint(canvas.polygon(xs, ys, clockwise=True), (202, 152, 101))
    canvas.paint(canvas.disk(torch.trunc(cart_x), int(cart_y + axle), int(pole_width / 2)), (129, 132, 203))
    canvas.paint(canvas.hline(cart_y), BLACK)
    return canvas.frames()


# ---------------------------------------------------------------------------------- Pendulum
@register_drawing(PendulumEnv, keys=("state",), size=_size_500x500, resizable=True)
def draw_pendulum(env: PendulumEnv, data: TensorDictBase, size: tuple[int, int] | None = None) -> torch.Tensor:
    """Pendulum as gymnasium draws it (without the torque arrow): a red rod with round ends
    and a black axle.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> frame = draw_pendulum(PendulumEnv(), TensorDict({"state": torch.zeros(2)}, []))
        >>> frame[499 - 250, 250].tolist(), frame[499 - 300, 250].tolist()  # axle, rod (upright)
        ([0, 0, 0], [204, 77, 77])
    """
    theta, _ = _unbind(data)
    dim = 500
    scale = dim / (2.2 * 2)
    offset = dim // 2
    rod_length, rod_width = 1 * scale, 0.2 * scale
    red = (204, 77, 77)
    canvas = Canvas(data.batch_size, dim, dim, env.device, size=size)
    angle = theta + math.pi / 2
    xs, ys = [], []
    for cx, cy in (
        (0.0, -rod_width / 2),
        (0.0, rod_width / 2),
        (rod_length, rod_width / 2),
        (rod_length, -rod_width / 2),
    ):
        rx, ry = rotate(cx, cy, angle)
        xs.append(rx + offset)
        ys.append(ry + offset)
    canvas.paint(canvas.polygon(xs, ys, clockwise=True), red)
    canvas.paint(canvas.disk(offset, offset, int(rod_width / 2)), red)
    end_x, end_y = rotate(rod_length, 0.0, angle)
    canvas.paint(canvas.disk(torch.trunc(end_x + offset), torch.trunc(end_y + offset), int(rod_width / 2)), red)
    canvas.paint(canvas.disk(offset, offset, int(0.05 * scale)), BLACK)
    return canvas.frames()


# ---------------------------------------------------------------------------------- MountainCar
def _mountain_layers(
    env: MountainCarEnv, size: tuple[int, int] | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The track (background image), and the flag drawn over the car (pole and banner masks)."""
    height, width = 400, 600
    scale = width / (env.max_position - env.min_position)
    canvas = Canvas((), height, width, env.device, size=size)
    xs = torch.linspace(env.min_position, env.max_position, 100, dtype=torch.float64)
    ys = torch.sin(3 * xs) * 0.45 + 0.55
    canvas.blend(canvas.graph_line((xs - env.min_position) * scale, ys * scale), BLACK)
    background = canvas.frames()
    flag_x = int((env.goal_position - env.min_position) * scale)
    flag_y1 = int((math.sin(3 * env.goal_position) * 0.45 + 0.55) * scale)
    flag_y2 = flag_y1 + 50
    pole = canvas.vline(flag_x, flag_y1, flag_y2)
    banner = canvas.polygon([flag_x, flag_x, flag_x + 25], [flag_y2, flag_y2 - 10, flag_y2 - 5])
    return background, pole, banner


def draw_mountain_car(env: MountainCarEnv, data: TensorDictBase, size: tuple[int, int] | None = None) -> torch.Tensor:
    """Mountain Car as gymnasium draws it: the anti-aliased track, a black car with grey wheels
    tilted along the slope, the goal flag.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> frame = draw_mountain_car(MountainCarEnv(), TensorDict({"state": torch.tensor([-0.5, 0.0])}, []))
        >>> frame.shape, frame[0, 0].tolist()
        (torch.Size([400, 600, 3]), [255, 255, 255])
    """
    pos, _ = _unbind(data)
    height, width = 400, 600
    scale = width / (env.max_position - env.min_position)
    car_width, car_height, clearance = 40.0, 20.0, 10.0
    background, flag_pole, banner = _static(env, "mountain", lambda: _mountain_layers(env, size), size)
    canvas = Canvas(data.batch_size, height, width, env.device, background=background, size=size)
    angle = torch.cos(3 * pos)
    base_x = (pos - env.min_position) * scale
    base_y = clearance + (torch.sin(3 * pos) * 0.45 + 0.55) * scale
    left, right, top, bottom = -car_width / 2, car_width / 2, car_height, 0.0
    xs, ys = [], []
    for cx, cy in ((left, bottom), (left, top), (right, top), (right, bottom)):
        rx, ry = rotate(cx, cy, angle)
        xs.append(rx + base_x)
        ys.append(ry + base_y)
    canvas.paint(canvas.polygon(xs, ys, clockwise=True), BLACK)
    for cx in (car_width / 4, -car_width / 4):
        rx, ry = rotate(cx, 0.0, angle)
        canvas.paint(
            canvas.disk(torch.trunc(rx + base_x), torch.trunc(ry + base_y), int(car_height / 2.5)), (128, 128, 128)
        )
    canvas.paint(flag_pole, BLACK)
    canvas.paint(banner, (204, 204, 0))
    return canvas.frames()


for _cls in (MountainCarEnv, MountainCarContinuousEnv):
    register_drawing(_cls, keys=("state",), size=_size_600x400, resizable=True)(draw_mountain_car)


# ---------------------------------------------------------------------------------- Acrobot
def _acrobot_rail(env: AcrobotEnv, size: tuple[int, int] | None) -> torch.Tensor:
    dim = 500
    scale = dim / ((env.link_length_1 + _LINK_LENGTH_2 + 0.2) * 2)
    offset = dim / 2
    canvas = Canvas((), dim, dim, env.device, size=size)
    y = int(1 * scale + offset)
    canvas.paint(canvas.hline(y, int(-2.2 * scale + offset), int(2.2 * scale + offset)), BLACK)
    return canvas.frames()


#: gymnasium's ``AcrobotEnv.LINK_LENGTH_2`` (drawing only; the dynamics ignore it)
_LINK_LENGTH_2 = 1.0


@register_drawing(AcrobotEnv, keys=("state",), size=_size_500x500, resizable=True)
def draw_acrobot(env: AcrobotEnv, data: TensorDictBase, size: tuple[int, int] | None = None) -> torch.Tensor:
    """Acrobot as gymnasium draws it: the target line, two cyan links, yellow joints.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> frame = draw_acrobot(AcrobotEnv(), TensorDict({"state": torch.zeros(4)}, []))
        >>> frame[499 - 250, 250].tolist(), frame[499 - 200, 250].tolist()  # top joint, first link
        ([204, 204, 0], [0, 204, 204])
    """
    theta1, theta2, _, _ = _unbind(data)
    dim = 500
    l1, l2 = env.link_length_1, _LINK_LENGTH_2
    scale = dim / ((l1 + l2 + 0.2) * 2)
    offset = dim / 2
    rail = _static(env, "rail", lambda: _acrobot_rail(env, size), size)
    canvas = Canvas(data.batch_size, dim, dim, env.device, background=rail, size=size)
    joints = (
        (torch.full_like(theta1, offset), torch.full_like(theta1, offset)),
        (l1 * torch.sin(theta1) * scale + offset, -l1 * torch.cos(theta1) * scale + offset),
    )
    angles = (theta1 - math.pi / 2, theta1 + theta2 - math.pi / 2)
    half = 0.1 * scale
    for (jx, jy), angle, length in zip(joints, angles, (l1 * scale, l2 * scale)):
        xs, ys = [], []
        for cx, cy in ((0.0, -half), (0.0, half), (length, half), (length, -half)):
            rx, ry = rotate(cx, cy, angle)
            xs.append(rx + jx)
            ys.append(ry + jy)
        canvas.paint(canvas.polygon(xs, ys, clockwise=True), (0, 204, 204))
        canvas.paint(canvas.disk(torch.trunc(jx), torch.trunc(jy), int(0.1 * scale)), (204, 204, 0))
    return canvas.frames()


# ---------------------------------------------------------------------------------- TicTacToe
_CELL = 32


def _board_grid(env: TicTacToeEnv) -> torch.Tensor:
    size = 3 * _CELL
    canvas = Canvas((), size, size, env.device, flip=False)
    grid = None
    for k in (1, 2):
        for line in (canvas.x - k * _CELL, canvas.y - k * _CELL):
            near = (line >= -1) & (line <= 0)
            grid = near if grid is None else grid | near
    canvas.paint(grid, (160, 160, 160))
    return canvas.frames()


def _size_board(env) -> tuple[int, int]:
    """Frame size ``(H, W)`` of the TicTacToe board."""
    return (3 * _CELL, 3 * _CELL)


@register_drawing(TicTacToeEnv, keys=("board", "turn"), size=_size_board)
def draw_tictactoe(env: TicTacToeEnv, data: TensorDictBase) -> torch.Tensor:
    """The board, 96x96: player 0's marks as red crosses, player 1's as blue rings.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> board = torch.full((3, 3), -1, dtype=torch.int32)
        >>> board[1, 1] = 1  # the centre is the mover's (player 0's, turn 0)
        >>> td = TensorDict({"board": board, "turn": torch.zeros(1, dtype=torch.int32)}, [])
        >>> frame = draw_tictactoe(TicTacToeEnv(), td)
        >>> frame[48, 48].tolist(), frame[5, 5].tolist()  # a red cross in the centre, empty corner
        ([220, 50, 50], [255, 255, 255])
    """
    board = data.get("board")
    turn = data.get("turn")[..., None]  # [*B, 1, 1]
    # the board is seen by the player to move (1: theirs, 0: the opponent's)
    player0 = ((board == 1) & (turn == 0)) | ((board == 0) & (turn == 1))
    player1 = ((board == 1) & (turn == 1)) | ((board == 0) & (turn == 0))
    size = 3 * _CELL
    canvas = Canvas(
        data.batch_size, size, size, env.device, background=_static(env, "grid", lambda: _board_grid(env)), flip=False
    )
    # each pixel's cell and its offset from the cell's centre
    col = torch.div(canvas.x, _CELL, rounding_mode="floor").clamp(max=2).long()
    row = torch.div(canvas.y, _CELL, rounding_mode="floor").clamp(max=2).long()
    cell = (row * 3 + col).expand(size, size)  # [H, W]
    dx = canvas.x - (col * _CELL + (_CELL - 1) / 2)
    dy = canvas.y - (row * _CELL + (_CELL - 1) / 2)
    half = _CELL * 0.3
    cross = ((dx - dy).abs() <= 2.0) | ((dx + dy).abs() <= 2.0)
    cross = cross & (dx.abs() <= half) & (dy.abs() <= half)
    radius = (dx * dx + dy * dy).sqrt()
    ring = (radius <= half + 1.5) & (radius >= half - 1.5)
    flat0 = player0.flatten(-2)  # [*B, 9]
    flat1 = player1.flatten(-2)
    mine0 = flat0[..., cell.flatten()].unflatten(-1, (size, size))  # [*B, H, W]: the pixel's cell is player 0's
    mine1 = flat1[..., cell.flatten()].unflatten(-1, (size, size))
    canvas.paint(mine0 & cross, (220, 50, 50))
    canvas.paint(mine1 & ring, (50, 90, 220))
    return canvas.frames()
