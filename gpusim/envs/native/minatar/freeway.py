"""MinAtar Freeway, batched on device.

Environment card
----------------
Source:
    ``minatar.environments.freeway`` of the ``minatar`` package (Young and Tian 2019),
    gymnasium ids ``MinAtar/Freeway-v0`` (6 actions) and ``-v1`` (3 actions).
Observation (``"observation"``, bool ``[*B, 10, 10, 7]``):
    channels ``chicken``, ``car``, ``speed1`` ... ``speed5`` (a trail behind each car, in the
    channel of its speed: ``speed k`` moves once every ``k`` frames).
State:
    ``pos`` (the chicken's row; its column is 4), ``move_timer``, ``terminate_timer``, and per
    car (8 lanes, car ``i`` on row ``i + 1``) ``car_x``, ``car_timer``, ``car_speed`` (signed:
    ``+`` moves right), plus ``last_action``.
Action (``"action"``, int64 ``[*B]``):
    the full set ``0..5`` or, with ``use_minimal_action_set=True``, (no-op, up, down).
Rules:
    the chicken moves up or down one row when its move timer is 0 (then waits 3 frames).
    Reaching row 0 gives +1, sends it back to row 9 and redraws every car's speed and
    direction. A car at the chicken's cell (before or after the car moves) sends it back to
    row 9. Cars move one column every ``|speed|`` frames and wrap around.
Reward (``"reward"``, float32 ``[*B, 1]``): ``+1`` per crossing.
Start state:
    chicken on row 9, every car at column 0 with a speed uniform in ``1..5`` and a random
    direction; move timer 3, episode timer 2500.
Episode end:
    terminated after 2501 frames (the package's timer going below zero).
Arguments:
    ``sticky_action_prob=0.1``, ``difficulty_ramping=True`` (accepted; Freeway does not ramp),
    ``use_minimal_action_set``.
Randomness:
    the counter-based stream of the env (seeded by ``seed``/``set_seed``), not numpy's.

Examples:
    >>> env = FreewayEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 10, 10, 7])
"""

from __future__ import annotations

import torch

from gpusim.envs.native.minatar._common import (
    DOWN,
    GRID,
    NOOP,
    UP,
    MinAtarEnv,
    cell_grid,
    grid_any,
    int_spec,
    place_rows,
)

__all__ = ["FreewayEnv"]

PLAYER_SPEED = 3
TIME_LIMIT = 2500
CARS = 8


def _speeds(u: torch.Tensor) -> torch.Tensor:
    """Signed car speeds ``[*B, 8]`` from 16 uniforms: ``|speed| = 1 + floor(5 u)`` (lanes
    0-7), right when ``u >= 0.5`` (lanes 8-15; the package's ``sign(u - 0.5)`` also gives a
    speed of 0, with probability ``2**-53``, on which its observation fails)."""
    magnitude = 1 + (u[..., :CARS] * 5).long()
    return torch.where(u[..., CARS : 2 * CARS] < 0.5, -magnitude, magnitude)


class FreewayEnv(MinAtarEnv):
    """Batched MinAtar Freeway (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the counter-based stream.

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        sticky_action_prob: probability that a step repeats the previous action.
        difficulty_ramping: accepted for the package's signature (Freeway does not ramp).
        use_minimal_action_set: actions index (no-op, up, down).

    Examples:
        >>> env = FreewayEnv(batch_size=[2], seed=0)
        >>> td = env.reset()
        >>> td["pos"].tolist(), td["car_x"].tolist()[0]
        ([9, 9], [0, 0, 0, 0, 0, 0, 0, 0])
    """

    game = "freeway"
    channels = ("chicken", "car", "speed1", "speed2", "speed3", "speed4", "speed5")
    minimal_actions = (NOOP, UP, DOWN)
    reset_draws = 2 * CARS
    step_draws = 2 * CARS

    @classmethod
    def state_layout(cls) -> dict:
        return {
            "pos": int_spec(0, 9, ()),
            "move_timer": int_spec(0, PLAYER_SPEED, ()),
            "terminate_timer": int_spec(-1, TIME_LIMIT, ()),
            "car_x": int_spec(0, 9, (CARS,)),
            "car_timer": int_spec(0, 5, (CARS,)),
            "car_speed": int_spec(-5, 5, (CARS,)),
        }

    def _start(self, u: torch.Tensor) -> dict[str, torch.Tensor]:
        speed = _speeds(u)
        pos = torch.full(self.batch_size, 9, dtype=torch.int64, device=self.device)
        return {
            "pos": pos,
            "move_timer": torch.full_like(pos, PLAYER_SPEED),
            "terminate_timer": torch.full_like(pos, TIME_LIMIT),
            "car_x": torch.zeros_like(speed),
            "car_timer": speed.abs(),
            "car_speed": speed,
        }

    def _advance(self, state, action, u):
        pos, move_timer = state["pos"], state["move_timer"]
        ready = move_timer == 0
        up = (action == UP) & ready
        down = (action == DOWN) & ready
        pos = (pos - up.long() + down.long()).clamp(0, 9)
        move_timer = torch.where(up | down, PLAYER_SPEED, move_timer)
        win = pos == 0
        pos = torch.where(win, 9, pos)
        # a crossing redraws every car's speed (positions are kept)
        redraw = win.unsqueeze(-1)
        speed = torch.where(redraw, _speeds(u), state["car_speed"])
        timer = torch.where(redraw, speed.abs(), state["car_timer"])
        car_x = state["car_x"]
        lane = torch.arange(1, CARS + 1, device=pos.device)
        in_lane = lane == pos.unsqueeze(-1)
        hit_before = in_lane & (car_x == 4)
        moves = timer == 0
        timer = torch.where(moves, speed.abs(), timer - 1)
        car_x = torch.where(moves, (car_x + torch.where(speed > 0, 1, -1)) % GRID, car_x)
        hit_after = moves & in_lane & (car_x == 4)
        pos = torch.where(grid_any(hit_before | hit_after), 9, pos)
        terminate_timer = state["terminate_timer"] - 1
        state = {
            "pos": pos,
            "move_timer": (move_timer - 1).clamp(min=0),
            "terminate_timer": terminate_timer,
            "car_x": car_x,
            "car_timer": timer,
            "car_speed": speed,
        }
        return state, win.long(), terminate_timer < 0

    def _observe(self, state):
        car_x, speed = state["car_x"], state["car_speed"]
        rows = torch.arange(GRID, device=car_x.device)
        # [*B, 8, 10] one-hot columns of each car and of its trail (the cell behind it)
        car_cols = car_x.unsqueeze(-1) == rows
        back = (car_x - torch.where(speed > 0, 1, -1)) % GRID
        back_cols = back.unsqueeze(-1) == rows
        # car i is on row i + 1: rows 1-8 of the board
        cars = place_rows(car_cols, 1)
        chicken = cell_grid(state["pos"], torch.full_like(state["pos"], 4))
        channels = [chicken, cars]
        magnitude = speed.abs().unsqueeze(-1)
        for k in range(1, 6):
            channels.append(place_rows(back_cols & (magnitude == k), 1))
        return torch.stack(channels, -1)
