"""MinAtar Asterix, batched on device.

Environment card
----------------
Source:
    ``minatar.environments.asterix`` of the ``minatar`` package (Young and Tian 2019),
    gymnasium ids ``MinAtar/Asterix-v0`` (6 actions) and ``-v1`` (5 actions).
Observation (``"observation"``, bool ``[*B, 10, 10, 4]``):
    channels ``player``, ``enemy``, ``trail`` (the cell behind each entity), ``gold``.
State:
    ``player_x``, ``player_y``; 8 entity lanes (lane ``i`` on row ``i + 1``, at most one entity
    each): ``ent_alive``, ``ent_x``, ``ent_right`` (moving right), ``ent_gold`` (treasure, not an
    enemy); the timers ``spawn_speed``, ``spawn_timer``, ``move_speed``, ``move_timer``,
    ``ramp_timer`` and ``ramp_index``; ``last_action``.
Action (``"action"``, int64 ``[*B]``):
    the full set ``0..5`` or, with ``use_minimal_action_set=True``, (no-op, left, up, right, down).
Rules:
    every ``spawn_speed`` frames an entity appears in a random free lane at a random side
    (column 0 moving right or column 9 moving left), treasure with probability 1/3. The
    player moves one cell (rows 1-8). Entities move one column every ``move_speed`` frames
    and leave at the edges. Touching treasure (before or after the entities move) collects it
    (+1); touching an enemy ends the episode. With ramping, every 100 frames the spawn
    interval shrinks by one (down to 1) and, every other time, the move interval too.
Reward (``"reward"``, float32 ``[*B, 1]``): ``+1`` per treasure.
Start state:
    the player at (5, 5), no entity; spawn and move intervals 10 and 5.
Episode end:
    terminated when an enemy and the player share a cell. No time limit.
Arguments:
    ``sticky_action_prob=0.1``, ``difficulty_ramping=True``, ``use_minimal_action_set``.
Randomness:
    the counter-based stream of the env (seeded by ``seed``/``set_seed``), not numpy's.

Examples:
    >>> env = AsterixEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 10, 10, 4])
"""

from __future__ import annotations

import torch

from gpusim.envs.native.minatar._common import (
    DOWN,
    GRID,
    LEFT,
    NOOP,
    RIGHT,
    UP,
    MinAtarEnv,
    bool_spec,
    cell_grid,
    grid_any,
    int_spec,
    place_rows,
)

__all__ = ["AsterixEnv"]

LANES = 8
RAMP_INTERVAL = 100
INIT_SPAWN_SPEED = 10
INIT_MOVE_INTERVAL = 5


def lane_grid(x: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """``[*B, 10, 10]`` bool: the cells ``(i + 1, x[..., i])`` of the lanes where ``present``
    (``x`` and ``present`` are ``[*B, 8]``; a column outside the board marks nothing).

    Examples:
        >>> grid = lane_grid(torch.tensor([[3, 0, 0, 0, 0, 0, 0, 10]]), torch.tensor([[True] + [False] * 6 + [True]]))
        >>> grid[0].nonzero().tolist()
        [[1, 3]]
    """
    cols = torch.arange(GRID, device=x.device)
    return place_rows((x.unsqueeze(-1) == cols) & present.unsqueeze(-1), 1)


class AsterixEnv(MinAtarEnv):
    """Batched MinAtar Asterix (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the counter-based stream.

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        sticky_action_prob: probability that a step repeats the previous action.
        difficulty_ramping: speed the game up every 100 frames.
        use_minimal_action_set: actions index (no-op, left, up, right, down).

    Examples:
        >>> env = AsterixEnv(batch_size=[2], seed=0)
        >>> td = env.reset()
        >>> td["player_x"].tolist(), td["ent_alive"].any(-1).tolist()
        ([5, 5], [False, False])
    """

    game = "asterix"
    channels = ("player", "enemy", "trail", "gold")
    minimal_actions = (NOOP, LEFT, UP, RIGHT, DOWN)
    step_draws = 3

    @classmethod
    def state_layout(cls) -> dict:
        return {
            "player_x": int_spec(0, 9, ()),
            "player_y": int_spec(1, 8, ()),
            "ent_alive": bool_spec((LANES,)),
            "ent_x": int_spec(-1, 10, (LANES,)),
            "ent_right": bool_spec((LANES,)),
            "ent_gold": bool_spec((LANES,)),
            "spawn_speed": int_spec(1, INIT_SPAWN_SPEED, ()),
            "spawn_timer": int_spec(-1, INIT_SPAWN_SPEED, ()),
            "move_speed": int_spec(1, INIT_MOVE_INTERVAL, ()),
            "move_timer": int_spec(-1, INIT_MOVE_INTERVAL, ()),
            "ramp_timer": int_spec(-1, RAMP_INTERVAL, ()),
            "ramp_index": int_spec(0, 2**31 - 1, ()),
        }

    def _start(self, u: torch.Tensor | None) -> dict[str, torch.Tensor]:
        B, dev = self.batch_size, self.device
        five = torch.full(B, 5, dtype=torch.int64, device=dev)
        lanes = torch.zeros((*B, LANES), dtype=torch.bool, device=dev)
        return {
            "player_x": five,
            "player_y": five.clone(),
            "ent_alive": lanes,
            "ent_x": torch.zeros((*B, LANES), dtype=torch.int64, device=dev),
            "ent_right": lanes.clone(),
            "ent_gold": lanes.clone(),
            "spawn_speed": torch.full_like(five, INIT_SPAWN_SPEED),
            "spawn_timer": torch.full_like(five, INIT_SPAWN_SPEED),
            "move_speed": torch.full_like(five, INIT_MOVE_INTERVAL),
            "move_timer": torch.full_like(five, INIT_MOVE_INTERVAL),
            "ramp_timer": torch.full_like(five, RAMP_INTERVAL),
            "ramp_index": torch.zeros_like(five),
        }

    def _advance(self, state, action, u):
        alive, x = state["ent_alive"], state["ent_x"]
        right, gold = state["ent_right"], state["ent_gold"]
        spawn_speed, move_speed = state["spawn_speed"], state["move_speed"]
        # spawn: side and kind first, then a uniformly random free lane (none when all are taken)
        spawn = state["spawn_timer"] == 0
        from_left = u[..., 0] < 0.5
        is_gold = u[..., 1] < 1.0 / 3.0
        free = ~alive
        rank = free.long().cumsum(-1) - 1  # index of each free lane among the free lanes
        choice = (u[..., 2] * free.sum(-1)).long()
        new = spawn.unsqueeze(-1) & free & (rank == choice.unsqueeze(-1))
        alive = alive | new
        x = torch.where(new, torch.where(from_left, 0, 9).unsqueeze(-1), x)
        right = torch.where(new, from_left.unsqueeze(-1), right)
        gold = torch.where(new, is_gold.unsqueeze(-1), gold)
        spawn_timer = torch.where(spawn, spawn_speed, state["spawn_timer"])
        # the player
        px = (state["player_x"] - (action == LEFT).long() + (action == RIGHT).long()).clamp(0, 9)
        py = (state["player_y"] - (action == UP).long() + (action == DOWN).long()).clamp(1, 8)
        lane_row = torch.arange(1, LANES + 1, device=px.device)
        in_row = lane_row == py.unsqueeze(-1)
        # contact before the entities move
        touch = alive & in_row & (x == px.unsqueeze(-1))
        collected = touch & gold
        terminal = grid_any(touch & ~gold)
        alive = alive & ~collected
        # the entities move on the move timer, leave at the edges, and may touch the player
        moving = state["move_timer"] == 0
        steps = moving.unsqueeze(-1) & alive
        x = torch.where(steps, x + torch.where(right, 1, -1), x)
        alive = alive & (x >= 0) & (x <= 9)
        touch = steps & alive & in_row & (x == px.unsqueeze(-1))
        collected_after = touch & gold
        terminal = terminal | grid_any(touch & ~gold)
        alive = alive & ~collected_after
        reward = collected.long().sum(-1) + collected_after.long().sum(-1)
        move_timer = torch.where(moving, move_speed, state["move_timer"]) - 1
        spawn_timer = spawn_timer - 1
        # difficulty ramp
        ramp_timer, ramp_index = state["ramp_timer"], state["ramp_index"]
        if self.difficulty_ramping:
            active = (spawn_speed > 1) | (move_speed > 1)
            count_down = active & (ramp_timer >= 0)
            ramp = active & (ramp_timer < 0)
            move_speed = move_speed - (ramp & (move_speed > 1) & (ramp_index % 2 == 1)).long()
            spawn_speed = spawn_speed - (ramp & (spawn_speed > 1)).long()
            ramp_index = ramp_index + ramp.long()
            ramp_timer = torch.where(ramp, RAMP_INTERVAL, ramp_timer - count_down.long())
        state = {
            "player_x": px,
            "player_y": py,
            "ent_alive": alive,
            "ent_x": x.clamp(-1, 10),
            "ent_right": right,
            "ent_gold": gold,
            "spawn_speed": spawn_speed,
            "spawn_timer": spawn_timer,
            "move_speed": move_speed,
            "move_timer": move_timer,
            "ramp_timer": ramp_timer,
            "ramp_index": ramp_index,
        }
        return state, reward, terminal

    def _observe(self, state):
        alive, x, right, gold = state["ent_alive"], state["ent_x"], state["ent_right"], state["ent_gold"]
        player = cell_grid(state["player_y"], state["player_x"])
        enemy = lane_grid(x, alive & ~gold)
        treasure = lane_grid(x, alive & gold)
        trail = lane_grid(x - torch.where(right, 1, -1), alive)
        return torch.stack((player, enemy, trail, treasure), -1)
