"""MinAtar SpaceInvaders, batched on device.

Environment card
----------------
Source:
    ``minatar.environments.space_invaders`` of the ``minatar`` package (Young and Tian 2019),
    gymnasium ids ``MinAtar/SpaceInvaders-v0`` (6 actions) and ``-v1`` (4 actions).
Observation (``"observation"``, bool ``[*B, 10, 10, 6]``):
    channels ``cannon``, ``alien``, ``alien_left``, ``alien_right`` (the aliens again, in the
    channel of their direction), ``friendly_bullet``, ``enemy_bullet``.
State:
    ``pos`` (the cannon's column, on row 9), the bool grids ``aliens``, ``f_bullets`` and
    ``e_bullets`` (``[*B, 10, 10]``), ``alien_dir`` (``-1`` or ``+1``), the timers
    ``enemy_move_interval``, ``alien_move_timer``, ``alien_shot_timer``, ``shot_timer``, the
    wave counter ``ramp_index``, and ``last_action``.
Action (``"action"``, int64 ``[*B]``):
    the full set ``0..5`` or, with ``use_minimal_action_set=True``, (no-op, left, right, fire).
Rules:
    the cannon moves one column, or fires (every 5 frames at most) a bullet that climbs one row
    per frame. The alien block moves sideways one column every ``min(aliens left, interval)``
    frames, and one row down (turning around) when it reaches a wall. Every 10 frames the
    bottom alien of the column nearest the cannon (the left one on ties) fires a bullet that
    falls one row per frame. A bullet meeting an alien removes both (+1). A cleared wave is
    replaced by a new 4x6 block; with ramping the move interval shrinks by one (down to 6).
Reward (``"reward"``, float32 ``[*B, 1]``): ``+1`` per alien shot.
Start state:
    the cannon at column 5, aliens on rows 0-3 and columns 2-7 moving left; intervals 12
    (moves) and 10 (alien shots). Deterministic.
Episode end:
    terminated when an enemy bullet or an alien reaches the cannon, or the block must go down
    from the bottom row. No time limit.
Arguments:
    ``sticky_action_prob=0.1``, ``difficulty_ramping=True``, ``use_minimal_action_set``.
Randomness:
    only the sticky actions (the counter-based stream of the env).

Examples:
    >>> env = SpaceInvadersEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 10, 10, 6])
"""

from __future__ import annotations

import torch

from gpusim.envs.native.minatar._common import (
    FIRE,
    GRID,
    LEFT,
    NOOP,
    RIGHT,
    MinAtarEnv,
    bool_spec,
    cell_grid,
    grid_any,
    int_spec,
    shift_grid,
)

__all__ = ["SpaceInvadersEnv"]

SHOT_COOL_DOWN = 5
ENEMY_MOVE_INTERVAL = 12
ENEMY_SHOT_INTERVAL = 10
MIN_MOVE_INTERVAL = 6


def _wave(like: torch.Tensor) -> torch.Tensor:
    """``[*B, 10, 10]`` bool: a fresh block of aliens on rows 0-3, columns 2-7."""
    i = torch.arange(GRID, device=like.device)
    block = ((i <= 3).view(GRID, 1) & (i >= 2) & (i <= 7)).expand(GRID, GRID)
    return block.expand(*like.shape, GRID, GRID)


class SpaceInvadersEnv(MinAtarEnv):
    """Batched MinAtar SpaceInvaders (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the counter-based stream (sticky actions).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        sticky_action_prob: probability that a step repeats the previous action.
        difficulty_ramping: each new wave moves faster (down to an interval of 6).
        use_minimal_action_set: actions index (no-op, left, right, fire).

    Examples:
        >>> env = SpaceInvadersEnv(batch_size=[2], seed=0)
        >>> td = env.reset()
        >>> td["aliens"].sum((-2, -1)).tolist(), td["pos"].tolist()
        ([24, 24], [5, 5])
    """

    game = "space_invaders"
    channels = ("cannon", "alien", "alien_left", "alien_right", "friendly_bullet", "enemy_bullet")
    minimal_actions = (NOOP, LEFT, RIGHT, FIRE)

    @classmethod
    def state_layout(cls) -> dict:
        return {
            "pos": int_spec(0, 9, ()),
            "aliens": bool_spec((GRID, GRID)),
            "f_bullets": bool_spec((GRID, GRID)),
            "e_bullets": bool_spec((GRID, GRID)),
            "alien_dir": int_spec(-1, 1, ()),
            "enemy_move_interval": int_spec(MIN_MOVE_INTERVAL, ENEMY_MOVE_INTERVAL, ()),
            "alien_move_timer": int_spec(0, ENEMY_MOVE_INTERVAL, ()),
            "alien_shot_timer": int_spec(0, ENEMY_SHOT_INTERVAL, ()),
            "shot_timer": int_spec(0, SHOT_COOL_DOWN, ()),
            "ramp_index": int_spec(0, 2**31 - 1, ()),
        }

    def _start(self, u: torch.Tensor | None) -> dict[str, torch.Tensor]:
        B, dev = self.batch_size, self.device
        pos = torch.full(B, 5, dtype=torch.int64, device=dev)
        empty = torch.zeros((*B, GRID, GRID), dtype=torch.bool, device=dev)
        return {
            "pos": pos,
            "aliens": _wave(pos).clone(),
            "f_bullets": empty,
            "e_bullets": empty.clone(),
            "alien_dir": torch.full_like(pos, -1),
            "enemy_move_interval": torch.full_like(pos, ENEMY_MOVE_INTERVAL),
            "alien_move_timer": torch.full_like(pos, ENEMY_MOVE_INTERVAL),
            "alien_shot_timer": torch.full_like(pos, ENEMY_SHOT_INTERVAL),
            "shot_timer": torch.zeros_like(pos),
            "ramp_index": torch.zeros_like(pos),
        }

    def _advance(self, state, action, u):
        pos, shot_timer = state["pos"], state["shot_timer"]
        aliens, direction = state["aliens"], state["alien_dir"]
        # the cannon fires (when cooled down) or moves
        fire = (action == FIRE) & (shot_timer == 0)
        pos = (pos - (action == LEFT).long() + (action == RIGHT).long()).clamp(0, 9)
        bottom = torch.full_like(pos, 9)
        f_bullets = state["f_bullets"] | (fire[..., None, None] & cell_grid(bottom, pos))
        shot_timer = torch.where(fire, SHOT_COOL_DOWN, shot_timer)
        # bullets: friendly ones climb, enemy ones fall (both leave at the edge)
        f_bullets = shift_grid(f_bullets, rows=-1)
        e_bullets = shift_grid(state["e_bullets"], rows=1)
        cannon = cell_grid(bottom, pos)
        terminal = grid_any((e_bullets & cannon).flatten(-2)) | grid_any((aliens & cannon).flatten(-2))
        # the alien block: sideways, or down and turning at a wall (the bottom row wraps to the top)
        count = aliens.flatten(-2).sum(-1)
        move = state["alien_move_timer"] == 0
        move_timer = torch.where(move, torch.minimum(count, state["enemy_move_interval"]), state["alien_move_timer"])
        cols = grid_any(aliens, -2)  # [*B, 10]: columns holding an alien
        at_wall = (cols[..., 0] & (direction < 0)) | (cols[..., 9] & (direction > 0))
        turn = move & at_wall
        side = move & ~at_wall
        terminal = terminal | (turn & grid_any(aliens[..., 9, :]))
        moved = torch.where(
            turn[..., None, None],
            aliens.roll(1, dims=-2),
            torch.where((direction < 0)[..., None, None], aliens.roll(-1, dims=-1), aliens.roll(1, dims=-1)),
        )
        aliens = torch.where((turn | side)[..., None, None], moved, aliens)
        direction = torch.where(turn, -direction, direction)
        terminal = terminal | (move & grid_any((aliens & cannon).flatten(-2)))
        # an alien shot: the bottom alien of the column nearest the cannon (the left one on ties)
        shoot = state["alien_shot_timer"] == 0
        cols = grid_any(aliens, -2)
        columns = torch.arange(GRID, device=pos.device)
        distance = (columns - pos.unsqueeze(-1)).abs() * GRID + columns
        column = torch.where(cols, distance, 2 * GRID * GRID).argmin(-1)
        in_column = aliens.gather(-1, column[..., None, None].expand(*column.shape, GRID, 1)).squeeze(-1)
        row = torch.where(in_column, columns, -1).amax(-1)
        e_bullets = e_bullets | (shoot[..., None, None] & cell_grid(row, column))
        shot_timer_alien = torch.where(shoot, ENEMY_SHOT_INTERVAL, state["alien_shot_timer"])
        # hits
        kills = aliens & f_bullets
        reward = kills.flatten(-2).sum(-1)
        aliens = aliens & ~kills
        f_bullets = f_bullets & ~kills
        # timers, and a new wave when the block is cleared
        cleared = ~grid_any(aliens.flatten(-2))
        interval, ramp_index = state["enemy_move_interval"], state["ramp_index"]
        if self.difficulty_ramping:
            faster = cleared & (interval > MIN_MOVE_INTERVAL)
            interval = interval - faster.long()
            ramp_index = ramp_index + faster.long()
        aliens = aliens | (cleared[..., None, None] & _wave(pos))
        state = {
            "pos": pos,
            "aliens": aliens,
            "f_bullets": f_bullets,
            "e_bullets": e_bullets,
            "alien_dir": direction,
            "enemy_move_interval": interval,
            "alien_move_timer": move_timer - 1,
            "alien_shot_timer": shot_timer_alien - 1,
            "shot_timer": (shot_timer - 1).clamp(min=0),
            "ramp_index": ramp_index,
        }
        return state, reward, terminal

    def _observe(self, state):
        aliens = state["aliens"]
        left = (state["alien_dir"] < 0)[..., None, None]
        cannon = cell_grid(torch.full_like(state["pos"], 9), state["pos"])
        return torch.stack((cannon, aliens, aliens & left, aliens & ~left, state["f_bullets"], state["e_bullets"]), -1)
