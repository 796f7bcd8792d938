"""MinAtar Seaquest, batched on device.

Environment card
----------------
Source:
    ``minatar.environments.seaquest`` of the ``minatar`` package (Young and Tian 2019),
    gymnasium ids ``MinAtar/Seaquest-v0`` and ``-v1`` (both 6 actions: the minimal set is full).
Observation (``"observation"``, bool ``[*B, 10, 10, 10]``):
    channels ``sub_front``, ``sub_back``, ``friendly_bullet``, ``trail`` (behind every enemy and
    diver), ``enemy_bullet``, ``enemy_fish``, ``enemy_sub``, ``oxygen_guage`` and
    ``diver_guage`` (bars on row 9), ``diver``.
State:
    the player: ``sub_x``, ``sub_y``, ``sub_right`` (facing right), ``oxygen``, ``diver_count``,
    ``surface`` (was on the surface last frame), ``shot_timer``; the spawner and difficulty:
    ``e_spawn_speed``, ``e_spawn_timer``, ``d_spawn_timer``, ``move_speed``, ``ramp_index``;
    ``frame`` (a frame counter that stamps spawns). Objects live in fixed slot tensors with
    alive masks and spawn stamps (``birth``: the package's list order): 32 enemy slots
    ``en_*`` (fish or subs: ``alive``, ``x``, ``y``, ``right``, ``sub``, ``timer``, ``shot``,
    ``birth``), 4 diver slots ``dv_*``, 4 friendly-bullet slots ``fb_*``; enemy bullets are the
    two bool grids ``eb_right`` and ``eb_left`` (``[*B, 10, 10]``, one per direction).
Action (``"action"``, int64 ``[*B]``): no-op, left, up, right, down, fire.
Rules:
    the package's, frame by frame: enemy and diver spawns (an enemy is not spawned into a row
    where another moves the other way); the player moves or fires (every 5 frames at most);
    friendly bullets fly and hit the first fish, else the first sub, of their cell (+1);
    divers move and are picked up (6 at most); subs move, may meet a bullet (+1) and fire every
    11 frames; enemy bullets and fish move. Touching an enemy or an enemy bullet, running out
    of oxygen or surfacing without a diver ends the episode. Surfacing with divers refills the
    oxygen and costs one diver; with 6 it empties the bar and gives ``oxygen * 10 // 200``.
    With ramping every surfacing speeds the spawns up (and, every other time, the enemies).
    Several objects on one cell are resolved in the package's list order (the newest bullet or
    diver first, the oldest enemy first), from the spawn stamps, down to the package's
    removal by value (a bullet hitting where an older twin of it still sits removes the twin).
Reward (``"reward"``, float32 ``[*B, 1]``): ``+1`` per enemy shot, plus the surfacing bonus.
Start state:
    the sub at (5, 0) facing left on the surface, 200 oxygen, no diver, no object; enemy
    spawns every 20 frames, divers every 30. Deterministic.
Episode end:
    terminated as listed in the rules. No time limit.
Arguments:
    ``sticky_action_prob=0.1``, ``difficulty_ramping=True``, ``use_minimal_action_set``.
Differences from the package:
    its object lists are unbounded; the slots hold every object that can be alive at once
    (at most one enemy spawns per frame and an enemy crosses in at most 30 frames at the
    highest difficulty; divers and friendly bullets: 2 at most), so no reachable state
    overflows them. Two enemy bullets on one cell moving the same way are one bullet here (no
    observable difference). Randomness comes from the env's counter-based stream.

Examples:
    >>> env = SeaquestEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 10, 10, 10])
"""

from __future__ import annotations

import torch

from gpusim.envs.native.minatar._common import (
    DOWN,
    FIRE,
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
    shift_grid,
)

__all__ = ["SeaquestEnv"]

RAMP_INTERVAL = 100
MAX_OXYGEN = 200
INIT_SPAWN_SPEED = 20
DIVER_SPAWN_SPEED = 30
INIT_MOVE_INTERVAL = 5
SHOT_COOL_DOWN = 5
ENEMY_SHOT_INTERVAL = 10
DIVER_MOVE_INTERVAL = 5
ENEMIES, DIVERS, BULLETS = 32, 4, 4
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _rank(cell: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """``[*B, N]``: how many slots of the same cell come before each slot (smaller ``key``;
    keys are distinct within a cell). Sorted by ``(cell, key)`` with two stable sorts, a slot's
    rank is its position minus that of its cell's first slot: ``O(N log N)``, not pairwise.

    Examples:
        >>> _rank(torch.tensor([[4, 7, 4, 4]]), torch.tensor([[5, 0, 2, 9]])).tolist()
        [[1, 0, 0, 2]]
    """
    by_key = key.argsort(dim=-1, stable=True)
    cells, by_cell = cell.gather(-1, by_key).sort(dim=-1, stable=True)
    order = by_key.gather(-1, by_cell)
    first = torch.searchsorted(cells, cells)
    positions = torch.arange(cell.shape[-1], device=cell.device).expand_as(cell)
    return torch.empty_like(positions).scatter(-1, order, positions - first)


def _match(rank_a: torch.Tensor, cell_a: torch.Tensor, rank_b: torch.Tensor, cell_b: torch.Tensor) -> torch.Tensor:
    """``[*B, A, B]``: the ``k``-th object of a cell in one list meets the ``k``-th of the
    other (cells of ``-1`` are nobody's)."""
    same = (cell_a.unsqueeze(-1) == cell_b.unsqueeze(-2)) & (cell_a >= 0).unsqueeze(-1)
    return same & (rank_a.unsqueeze(-1) == rank_b.unsqueeze(-2))


def _grid(x: torch.Tensor, y: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """``[*B, 10, 10]`` bool of the cells ``(y, x)`` of the present slots (``[*B, N]``; cells
    outside the board mark nothing)."""
    inside = present & (x >= 0) & (x < GRID) & (y >= 0) & (y < GRID)
    cell = torch.where(inside, y * GRID + x, GRID * GRID)  # absent: a spare cell, dropped
    flat = torch.zeros((*x.shape[:-1], GRID * GRID + 1), dtype=torch.bool, device=x.device)
    flat = flat.scatter(-1, cell, True)
    return flat[..., : GRID * GRID].unflatten(-1, (GRID, GRID))


def _meet(
    movers: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    birth: torch.Tensor,
    fb_alive: torch.Tensor,
    fb_x: torch.Tensor,
    fb_y: torch.Tensor,
    fb_birth: torch.Tensor,
) -> torch.Tensor:
    """``[*B, E, F]``: the ``k``-th moving enemy of a cell (the package's turn order: newest
    first) meets the ``k``-th friendly bullet of the cell (its search order: oldest first)."""
    cell = torch.where(movers, y * GRID + x, -1)
    rank = _rank(cell, -birth)
    b_cell = torch.where(fb_alive, fb_y * GRID + fb_x, -1)
    b_rank = _rank(b_cell, fb_birth)
    return _match(rank, cell, b_rank, b_cell)


def _heir_birth(
    birth: torch.Tensor, old: torch.Tensor, survives: torch.Tensor, new: torch.Tensor, killed: torch.Tensor
) -> torch.Tensor:
    """The package removes a hit object from its list by value (``list.remove``): when an older
    object of the list still holds, before its own turn, exactly the values the hit one moved
    to, the older one is removed instead and the hit one takes its place (it then does what the
    older one would have done). The outcome differs only in list order: the survivor takes the
    hit object's place, i.e. its spawn stamp. This happens to friendly bullets (two following
    each other one cell apart); an enemy met by a bullet after moving never has such an older
    twin (the twin would hold the bullet's cell, where the bullets' own pass already removed
    every enemy before any bullet could stay).

    Args:
        birth: ``[*B, N]`` spawn stamps.
        old: ``[*B, N]`` each object's values before its turn, packed in one integer.
        survives: ``[*B, N]`` objects alive at the end of the phase.
        new: ``[*B, N]`` each object's values after it moved, packed the same way.
        killed: ``[*B, N]`` objects removed by a hit in the phase.
    """
    same = old.unsqueeze(-1) == new.unsqueeze(-2)  # [*B, older a, hit o]
    heir = same & survives.unsqueeze(-1) & killed.unsqueeze(-2) & (birth.unsqueeze(-1) < birth.unsqueeze(-2))
    inherited = torch.where(heir, birth.unsqueeze(-2), -1).amax(-1)
    return torch.where(inherited >= 0, inherited, birth)


def _pack(x: torch.Tensor, y: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """A friendly bullet's values ``(x in [-1, 10], y, direction)`` as one integer."""
    return ((x + 1) * GRID + y) * 2 + right.long()


def _first_free(alive: torch.Tensor) -> torch.Tensor:
    """``[*B, N]`` one-hot of the first free slot (all False when none is free)."""
    free = ~alive
    return free & (free.long().cumsum(-1) == 1)


class SeaquestEnv(MinAtarEnv):
    """Batched MinAtar Seaquest (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the counter-based stream.

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        sticky_action_prob: probability that a step repeats the previous action.
        difficulty_ramping: every surfacing speeds the enemies up.
        use_minimal_action_set: accepted (Seaquest's minimal set is the full set).

    Examples:
        >>> env = SeaquestEnv(batch_size=[2], seed=0)
        >>> td = env.reset()
        >>> td["oxygen"].tolist(), td["en_alive"].any(-1).tolist()
        ([200, 200], [False, False])
    """

    game = "seaquest"
    channels = (
        "sub_front", "sub_back", "friendly_bullet", "trail", "enemy_bullet",
        "enemy_fish", "enemy_sub", "oxygen_guage", "diver_guage", "diver",
    )  # fmt: skip
    minimal_actions = (NOOP, LEFT, UP, RIGHT, DOWN, FIRE)
    step_draws = 5  # enemy spawn: side, kind, row; diver spawn: side, row

    @classmethod
    def state_layout(cls) -> dict:
        E, D, F = (ENEMIES,), (DIVERS,), (BULLETS,)
        return {
            "sub_x": int_spec(0, 9, ()),
            "sub_y": int_spec(0, 8, ()),
            "sub_right": bool_spec(()),
            "oxygen": int_spec(-1, MAX_OXYGEN, ()),
            "diver_count": int_spec(_INT_MIN, 6, ()),
            "surface": bool_spec(()),
            "shot_timer": int_spec(0, SHOT_COOL_DOWN, ()),
            "e_spawn_speed": int_spec(1, INIT_SPAWN_SPEED, ()),
            "e_spawn_timer": int_spec(0, INIT_SPAWN_SPEED, ()),
            "d_spawn_timer": int_spec(0, DIVER_SPAWN_SPEED, ()),
            "move_speed": int_spec(1, INIT_MOVE_INTERVAL, ()),
            "ramp_index": int_spec(0, _INT_MAX, ()),
            "frame": int_spec(0, 2**62, ()),
            "en_alive": bool_spec(E),
            "en_x": int_spec(-1, 10, E),
            "en_y": int_spec(0, 9, E),
            "en_right": bool_spec(E),
            "en_sub": bool_spec(E),
            "en_timer": int_spec(0, INIT_MOVE_INTERVAL, E),
            "en_shot": int_spec(0, ENEMY_SHOT_INTERVAL, E),
            "en_birth": int_spec(0, 2**62, E),
            "dv_alive": bool_spec(D),
            "dv_x": int_spec(-1, 10, D),
            "dv_y": int_spec(0, 9, D),
            "dv_right": bool_spec(D),
            "dv_timer": int_spec(0, DIVER_MOVE_INTERVAL, D),
            "dv_birth": int_spec(0, 2**62, D),
            "fb_alive": bool_spec(F),
            "fb_x": int_spec(-1, 10, F),
            "fb_y": int_spec(0, 9, F),
            "fb_right": bool_spec(F),
            "fb_birth": int_spec(0, 2**62, F),
            "eb_right": bool_spec((GRID, GRID)),
            "eb_left": bool_spec((GRID, GRID)),
        }

    def _start(self, u: torch.Tensor | None) -> dict[str, torch.Tensor]:
        B, dev = self.batch_size, self.device

        def full(value: int, *shape: int) -> torch.Tensor:
            return torch.full((*B, *shape), value, dtype=torch.int64, device=dev)

        def false(*shape: int) -> torch.Tensor:
            return torch.zeros((*B, *shape), dtype=torch.bool, device=dev)

        state = {
            "sub_x": full(5),
            "sub_y": full(0),
            "sub_right": false(),
            "oxygen": full(MAX_OXYGEN),
            "diver_count": full(0),
            "surface": ~false(),
            "shot_timer": full(0),
            "e_spawn_speed": full(INIT_SPAWN_SPEED),
            "e_spawn_timer": full(INIT_SPAWN_SPEED),
            "d_spawn_timer": full(DIVER_SPAWN_SPEED),
            "move_speed": full(INIT_MOVE_INTERVAL),
            "ramp_index": full(0),
            "frame": full(0),
            "eb_right": false(GRID, GRID),
            "eb_left": false(GRID, GRID),
        }
        for prefix, n, fields in (
            ("en", ENEMIES, ("x", "y", "timer", "shot", "birth")),
            ("dv", DIVERS, ("x", "y", "timer", "birth")),
            ("fb", BULLETS, ("x", "y", "birth")),
        ):
            state[f"{prefix}_alive"] = false(n)
            state[f"{prefix}_right"] = false(n)
            for field in fields:
                state[f"{prefix}_{field}"] = full(0, n)
        state["en_sub"] = false(ENEMIES)
        return state

    def _advance(self, s, action, u):
        s = dict(s)
        sub_x, sub_y, frame = s["sub_x"], s["sub_y"], s["frame"]
        move_speed = s["move_speed"]
        reward = torch.zeros_like(sub_x)
        # ---- spawns (an enemy's three draws come first, then a diver's two)
        spawn_enemy = s["e_spawn_timer"] == 0
        right = u[..., 0] < 0.5
        is_sub = u[..., 1] < 1.0 / 3.0
        row = 1 + (u[..., 2] * 8).long()
        en_alive = s["en_alive"]
        blocked = grid_any(en_alive & (s["en_y"] == row.unsqueeze(-1)) & (s["en_right"] != right.unsqueeze(-1)))
        new = _first_free(en_alive) & (spawn_enemy & ~blocked).unsqueeze(-1)
        s["en_alive"] = en_alive | new
        s["en_x"] = torch.where(new, torch.where(right, 0, 9).unsqueeze(-1), s["en_x"])
        s["en_y"] = torch.where(new, row.unsqueeze(-1), s["en_y"])
        s["en_right"] = torch.where(new, right.unsqueeze(-1), s["en_right"])
        s["en_sub"] = torch.where(new, is_sub.unsqueeze(-1), s["en_sub"])
        s["en_timer"] = torch.where(new, move_speed.unsqueeze(-1), s["en_timer"])
        s["en_shot"] = torch.where(new, ENEMY_SHOT_INTERVAL, s["en_shot"])
        s["en_birth"] = torch.where(new, frame.unsqueeze(-1), s["en_birth"])
        e_spawn_timer = torch.where(spawn_enemy, s["e_spawn_speed"], s["e_spawn_timer"])
        spawn_diver = s["d_spawn_timer"] == 0
        d_right = u[..., 3] < 0.5
        d_row = 1 + (u[..., 4] * 8).long()
        new = _first_free(s["dv_alive"]) & spawn_diver.unsqueeze(-1)
        s["dv_alive"] = s["dv_alive"] | new
        s["dv_x"] = torch.where(new, torch.where(d_right, 0, 9).unsqueeze(-1), s["dv_x"])
        s["dv_y"] = torch.where(new, d_row.unsqueeze(-1), s["dv_y"])
        s["dv_right"] = torch.where(new, d_right.unsqueeze(-1), s["dv_right"])
        s["dv_timer"] = torch.where(new, DIVER_MOVE_INTERVAL, s["dv_timer"])
        s["dv_birth"] = torch.where(new, frame.unsqueeze(-1), s["dv_birth"])
        d_spawn_timer = torch.where(spawn_diver, DIVER_SPAWN_SPEED, s["d_spawn_timer"])
        # ---- the player fires (when cooled down) or moves
        fire = (action == FIRE) & (s["shot_timer"] == 0)
        new = _first_free(s["fb_alive"]) & fire.unsqueeze(-1)
        s["fb_alive"] = s["fb_alive"] | new
        s["fb_x"] = torch.where(new, sub_x.unsqueeze(-1), s["fb_x"])
        s["fb_y"] = torch.where(new, sub_y.unsqueeze(-1), s["fb_y"])
        s["fb_right"] = torch.where(new, s["sub_right"].unsqueeze(-1), s["fb_right"])
        s["fb_birth"] = torch.where(new, frame.unsqueeze(-1), s["fb_birth"])
        shot_timer = torch.where(fire, SHOT_COOL_DOWN, s["shot_timer"])
        sub_x = (sub_x - (action == LEFT).long() + (action == RIGHT).long()).clamp(0, 9)
        sub_y = (sub_y - (action == UP).long() + (action == DOWN).long()).clamp(0, 8)
        sub_right = torch.where(action == LEFT, False, torch.where(action == RIGHT, True, s["sub_right"]))
        player = (sub_y * GRID + sub_x).unsqueeze(-1)
        # ---- friendly bullets fly; the k-th of a cell (newest first) hits its k-th enemy
        # (fish before subs, oldest first)
        fb_x = s["fb_x"] + torch.where(s["fb_right"], 1, -1)
        fb_alive = s["fb_alive"] & (fb_x >= 0) & (fb_x <= 9)
        fb_x = torch.where(fb_alive, fb_x, s["fb_x"].clamp(0, 9))
        fb_y, fb_birth = s["fb_y"], s["fb_birth"]
        en_alive, en_x, en_y = s["en_alive"], s["en_x"], s["en_y"]
        en_sub, en_birth = s["en_sub"], s["en_birth"]
        fb_cell = torch.where(fb_alive, fb_y * GRID + fb_x, -1)
        en_cell = torch.where(en_alive, en_y * GRID + en_x, -1)
        fb_rank = _rank(fb_cell, -fb_birth)
        en_rank = _rank(en_cell, en_birth + en_sub.long() * 2**62)
        hits = _match(fb_rank, fb_cell, en_rank, en_cell)
        fb_values = _pack(fb_x, fb_y, s["fb_right"])
        fb_before = _pack(s["fb_x"], fb_y, s["fb_right"])
        fb_hit = grid_any(hits)
        fb_birth = _heir_birth(fb_birth, fb_before, fb_alive & ~fb_hit, fb_values, fb_hit)
        fb_alive = fb_alive & ~fb_hit
        en_alive = en_alive & ~grid_any(hits, -2)
        reward = reward + hits.flatten(-2).sum(-1)
        # ---- divers: picked up where they are or after moving (newest first, 6 at most)
        dv_alive, dv_x, dv_timer = s["dv_alive"], s["dv_x"], s["dv_timer"]
        dv_cell = s["dv_y"] * GRID + dv_x
        before = dv_alive & (dv_cell == player)
        d_moves = dv_alive & (dv_timer == 0)
        dv_x = torch.where(d_moves, dv_x + torch.where(s["dv_right"], 1, -1), dv_x)
        inside = (dv_x >= 0) & (dv_x <= 9)
        after = d_moves & inside & (s["dv_y"] * GRID + dv_x == player)
        candidate = before | after
        order = (candidate.unsqueeze(-2) & (s["dv_birth"].unsqueeze(-2) > s["dv_birth"].unsqueeze(-1))).sum(-1)
        picked = candidate & (s["diver_count"].unsqueeze(-1) + order < 6)
        diver_count = s["diver_count"] + picked.long().sum(-1)
        s["dv_alive"] = dv_alive & ~picked & inside
        s["dv_x"] = dv_x.clamp(-1, 10)
        s["dv_timer"] = torch.where(d_moves, DIVER_MOVE_INTERVAL, (dv_timer - 1).clamp(min=0))
        # ---- enemies move on their own timers: subs, then (after the enemy bullets) fish
        terminal = grid_any(en_alive & (en_cell == player))
        e_moves = en_alive & (s["en_timer"] == 0)
        moved_x = torch.where(e_moves, en_x + torch.where(s["en_right"], 1, -1), en_x)
        leaves = e_moves & ((moved_x < 0) | (moved_x > 9))
        moved_cell = en_y * GRID + moved_x
        meets = e_moves & ~leaves & (moved_cell == player)
        terminal = terminal | grid_any(meets)
        en_timer = torch.where(e_moves, move_speed.unsqueeze(-1), s["en_timer"] - en_alive.long()).clamp(min=0)
        may_hit = e_moves & ~leaves & ~meets
        gone = leaves
        # subs: a moved sub may meet a bullet (+1)
        met = _meet(may_hit & en_sub, moved_x, en_y, en_birth, fb_alive, fb_x, fb_y, fb_birth)
        gone = gone | grid_any(met)
        fb_alive = fb_alive & ~grid_any(met, -2)
        reward = reward + met.flatten(-2).sum(-1)
        # subs fire every 11 frames (a sub that just died still fires), then enemy bullets fly
        shoots = en_alive & en_sub & (s["en_shot"] == 0)
        eb_right = s["eb_right"] | _grid(moved_x, en_y, shoots & s["en_right"])
        eb_left = s["eb_left"] | _grid(moved_x, en_y, shoots & ~s["en_right"])
        en_shot = torch.where(shoots, ENEMY_SHOT_INTERVAL, s["en_shot"] - (en_alive & en_sub).long())
        at_player = cell_grid(sub_y, sub_x)
        terminal = terminal | grid_any(((eb_right | eb_left) & at_player).flatten(-2))
        eb_right, eb_left = shift_grid(eb_right, cols=1), shift_grid(eb_left, cols=-1)
        terminal = terminal | grid_any(((eb_right | eb_left) & at_player).flatten(-2))
        # fish: the same meeting, with the bullets the subs left
        met = _meet(may_hit & ~en_sub, moved_x, en_y, en_birth, fb_alive, fb_x, fb_y, fb_birth)
        gone = gone | grid_any(met)
        fb_alive = fb_alive & ~grid_any(met, -2)
        reward = reward + met.flatten(-2).sum(-1)
        s["en_alive"] = en_alive & ~gone
        s["en_x"] = moved_x.clamp(-1, 10)
        s["en_timer"] = en_timer
        s["en_shot"] = en_shot.clamp(min=0)
        s["fb_alive"], s["fb_x"], s["fb_birth"] = fb_alive, fb_x, fb_birth
        s["eb_right"], s["eb_left"] = eb_right, eb_left
        # ---- timers, oxygen and surfacing
        s["e_spawn_timer"] = (e_spawn_timer - 1).clamp(min=0)
        s["d_spawn_timer"] = (d_spawn_timer - 1).clamp(min=0)
        s["shot_timer"] = (shot_timer - 1).clamp(min=0)
        oxygen = s["oxygen"]
        terminal = terminal | (oxygen <= 0)
        below = sub_y > 0
        surfacing = ~below & ~s["surface"]
        terminal = terminal | (surfacing & (diver_count == 0))
        refill = surfacing & (diver_count != 0)
        full_crew = refill & (diver_count == 6)
        reward = reward + torch.where(full_crew, oxygen * 10 // MAX_OXYGEN, 0)
        diver_count = torch.where(refill, torch.where(full_crew, 0, diver_count) - 1, diver_count)
        oxygen = torch.where(refill, MAX_OXYGEN, oxygen - below.long())
        spawn_speed, ramp_index = s["e_spawn_speed"], s["ramp_index"]
        if self.difficulty_ramping:
            ramp = refill & ((spawn_speed > 1) | (move_speed > 2))
            move_speed = move_speed - (ramp & (move_speed > 2) & (ramp_index % 2 == 1)).long()
            spawn_speed = spawn_speed - (ramp & (spawn_speed > 1)).long()
            ramp_index = ramp_index + ramp.long()
        s.update(
            sub_x=sub_x,
            sub_y=sub_y,
            sub_right=sub_right,
            oxygen=oxygen,
            diver_count=diver_count,
            surface=torch.where(below, False, s["surface"] | refill),
            e_spawn_speed=spawn_speed,
            move_speed=move_speed,
            ramp_index=ramp_index,
            frame=frame + 1,
        )
        return s, reward, terminal

    def _observe(self, s):
        sub_x, sub_y = s["sub_x"], s["sub_y"]
        front = cell_grid(sub_y, sub_x)
        # the package indexes the back cell without a bounds check (-1 is column 9)
        back = cell_grid(sub_y, (sub_x + torch.where(s["sub_right"], -1, 1)) % GRID)
        fb = _grid(s["fb_x"], s["fb_y"], s["fb_alive"])
        en_alive, en_sub = s["en_alive"], s["en_sub"]
        fish = _grid(s["en_x"], s["en_y"], en_alive & ~en_sub)
        subs = _grid(s["en_x"], s["en_y"], en_alive & en_sub)
        divers = _grid(s["dv_x"], s["dv_y"], s["dv_alive"])
        trail = _grid(s["en_x"] - torch.where(s["en_right"], 1, -1), s["en_y"], en_alive) | _grid(
            s["dv_x"] - torch.where(s["dv_right"], 1, -1), s["dv_y"], s["dv_alive"]
        )
        cols = torch.arange(GRID, device=sub_x.device)
        bottom = (cols == GRID - 1).view(GRID, 1)
        bar = s["oxygen"].clamp(min=0) * 10 // MAX_OXYGEN
        oxygen = bottom & (cols < bar[..., None, None])
        count = s["diver_count"][..., None, None]
        divers_bar = bottom & (cols >= 9 - count) & (cols < 9)
        return torch.stack(
            (front, back, fb, trail, s["eb_right"] | s["eb_left"], fish, subs, oxygen, divers_bar, divers), -1
        )
