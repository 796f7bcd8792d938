"""MinAtar Breakout, batched on device.

Environment card
----------------
Source:
    ``minatar.environments.breakout`` of the ``minatar`` package (Young and Tian 2019, "MinAtar:
    An Atari-inspired testbed for thorough and reproducible reinforcement learning
    experiments"), gymnasium ids ``MinAtar/Breakout-v0`` (6 actions) and ``-v1`` (3 actions).
Observation (``"observation"``, bool ``[*B, 10, 10, 4]``):
    channels ``paddle``, ``ball``, ``trail`` (the ball's previous cell), ``brick``.
State:
    ``ball_x``, ``ball_y``, ``ball_dir`` (``0``: up-left, ``1``: up-right, ``2``: down-right,
    ``3``: down-left), ``pos`` (paddle column), ``last_x``, ``last_y`` (the trail), ``strike``
    (the ball hit a brick last frame), ``bricks`` (bool ``[*B, 10, 10]``), ``last_action``.
Action (``"action"``, int64 ``[*B]``):
    the full set ``0..5`` (no-op, left, up, right, down, fire) or, with
    ``use_minimal_action_set=True``, ``0..2`` for (no-op, left, right).
Rules:
    the paddle moves one column per step; the ball moves diagonally one cell per step and is
    reflected by the walls, the ceiling and bricks; a brick hit breaks the brick (+1), except
    on the frame right after another hit, when the ball passes through. At the bottom row the
    ball bounces back up if the paddle is under its old column, sideways if under its new one;
    the three brick rows come back when all were broken and the ball reaches the bottom.
Reward (``"reward"``, float32 ``[*B, 1]``): ``+1`` per broken brick.
Start state:
    bricks on rows 1-3, paddle at column 4, the ball on row 3 at column 0 moving down-right or
    at column 9 moving down-left (even odds).
Episode end:
    terminated when the ball reaches the bottom row away from the paddle. No time limit.
Arguments:
    ``sticky_action_prob=0.1`` (a step repeats the previous action with this probability),
    ``difficulty_ramping=True`` (accepted; Breakout does not ramp), ``use_minimal_action_set``.
Randomness:
    the counter-based stream of the env (seeded by ``seed``/``set_seed``), not numpy's.

Examples:
    >>> env = BreakoutEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 10, 10, 4])
"""

from __future__ import annotations

import torch

from gpusim.envs.native.minatar._common import (
    GRID,
    LEFT,
    NOOP,
    RIGHT,
    MinAtarEnv,
    bool_spec,
    cell_grid,
    grid_any,
    int_spec,
)

__all__ = ["BreakoutEnv"]


def _brick_rows(like: torch.Tensor) -> torch.Tensor:
    """``[*B, 10, 10]`` bool: bricks on rows 1-3."""
    rows = torch.arange(GRID, device=like.device).view(GRID, 1)
    full = ((rows >= 1) & (rows <= 3)).expand(GRID, GRID)
    return full.expand(*like.shape, GRID, GRID)


class BreakoutEnv(MinAtarEnv):
    """Batched MinAtar Breakout (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the counter-based stream.

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        sticky_action_prob: probability that a step repeats the previous action.
        difficulty_ramping: accepted for the package's signature (Breakout does not ramp).
        use_minimal_action_set: actions index (no-op, left, right).

    Examples:
        >>> env = BreakoutEnv(batch_size=[2], seed=0, use_minimal_action_set=True)
        >>> env.action_spec.n
        3
        >>> td = env.reset()
        >>> td["bricks"].sum((-2, -1)).tolist()
        [30, 30]
    """

    game = "breakout"
    channels = ("paddle", "ball", "trail", "brick")
    minimal_actions = (NOOP, LEFT, RIGHT)
    reset_draws = 1

    @classmethod
    def state_layout(cls) -> dict:
        return {
            "ball_x": int_spec(0, 9, ()),
            "ball_y": int_spec(0, 9, ()),
            "ball_dir": int_spec(0, 3, ()),
            "pos": int_spec(0, 9, ()),
            "last_x": int_spec(0, 9, ()),
            "last_y": int_spec(0, 9, ()),
            "strike": bool_spec(()),
            "bricks": bool_spec((GRID, GRID)),
        }

    def _start(self, u: torch.Tensor) -> dict[str, torch.Tensor]:
        right_side = u[..., 0] >= 0.5  # the package's randint(2) == 1
        ball_x = torch.where(right_side, 9, 0)
        ball_y = torch.full_like(ball_x, 3)
        return {
            "ball_x": ball_x,
            "ball_y": ball_y,
            "ball_dir": torch.where(right_side, 3, 2),
            "pos": torch.full_like(ball_x, 4),
            "last_x": ball_x.clone(),
            "last_y": ball_y.clone(),
            "strike": torch.zeros_like(right_side),
            "bricks": _brick_rows(ball_x).clone(),
        }

    def _advance(self, state, action, u):
        pos = (state["pos"] - (action == LEFT).long() + (action == RIGHT).long()).clamp(0, 9)
        ball_x, ball_y, d = state["ball_x"], state["ball_y"], state["ball_dir"]
        bricks = state["bricks"]
        # directions 1, 2 move right; 2, 3 move down. Reflections: x flips d ^ 1 (0<->1, 2<->3),
        # y flips 3 - d (0<->3, 1<->2), the paddle's side bounce d ^ 2 (0<->2, 1<->3)
        new_x = ball_x + torch.where((d == 1) | (d == 2), 1, -1)
        new_y = ball_y + torch.where(d >= 2, 1, -1)
        side = (new_x < 0) | (new_x > 9)
        new_x = new_x.clamp(0, 9)
        d = torch.where(side, d ^ 1, d)
        ceiling = new_y < 0
        # (past a termination the ball would leave the board: it stays on the bottom row)
        new_y = new_y.clamp(0, 9)
        d = torch.where(ceiling, 3 - d, d)
        # the cell the ball enters
        flat = (new_y * GRID + new_x).unsqueeze(-1)
        hit = ~ceiling & bricks.flatten(-2).gather(-1, flat).squeeze(-1)
        breaks = hit & ~state["strike"]
        bricks = bricks & ~(breaks[..., None, None] & cell_grid(new_y, new_x))
        d = torch.where(breaks, 3 - d, d)
        new_y = torch.where(breaks, ball_y, new_y)
        bottom = ~ceiling & ~hit & (new_y == 9)
        refill = bottom & ~grid_any(bricks.flatten(-2))
        bricks = bricks | (refill[..., None, None] & _brick_rows(pos))
        back = bottom & (ball_x == pos)
        aside = bottom & ~back & (new_x == pos)
        d = torch.where(back, 3 - d, torch.where(aside, d ^ 2, d))
        new_y = torch.where(back | aside, ball_y, new_y)
        terminal = bottom & ~back & ~aside
        state = {
            "ball_x": new_x,
            "ball_y": new_y,
            "ball_dir": d,
            "pos": pos,
            "last_x": ball_x,
            "last_y": ball_y,
            "strike": hit,
            "bricks": bricks,
        }
        return state, breaks.long(), terminal

    def _observe(self, state):
        paddle = cell_grid(torch.full_like(state["pos"], 9), state["pos"])
        ball = cell_grid(state["ball_y"], state["ball_x"])
        trail = cell_grid(state["last_y"], state["last_x"])
        return torch.stack((paddle, ball, trail, state["bricks"]), -1)
