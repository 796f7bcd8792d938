"""The drawing of the MPE scenarios: every entity a filled circle, in VMAS's viewer geometry.

VMAS (1.5, ``Environment.render`` with the shared viewer) draws a ``700 x 700`` frame on white:
the view is centred on the origin with half-width ``max(max_i |p_i| + 2 r_max, zoom^2)``
(``p_i``: the agents' positions, both axes; ``r_max``: the largest agent radius; ``zoom = 1.2``,
so at least ``1.44``), the landmarks are drawn first and the agents over them, each a disk of its
radius and colour (VMAS's ``[0, 1]`` colours times 255; agents at opacity 0.5, blended over
what lies below, landmarks opaque; VMAS's one-pixel polygon outlines are not drawn). Here the
view of each row is computed from that row's positions and all rows are drawn at once: each
entity is one pixel test over every row's frame, with per-row colours, so colours that depend on
the episode (a goal's colour given to the agent that must reach it) are per-row values, not
Python branches.

Per-row colours, as VMAS sets them at reset: ``simple_adversary`` paints the goal landmark green;
``simple_push`` paints the agent grey with ``+0.5`` on its goal's colour channel;
``simple_reference`` gives each agent the colour of the landmark the *other* agent must reach;
``simple_speaker_listener`` gives the listener its goal's colour plus ``0.45``.

Examples:
    >>> import gpusim as gs
    >>> env = gs.make("MPE/simple_spread-v0", num_envs=2, seed=0)
    >>> env.render(env.reset()).shape
    torch.Size([2, 700, 700, 3])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native.mpe import (
    MpeEnv,
    SimpleAdversaryEnv,
    SimplePushEnv,
    SimpleReferenceEnv,
    SimpleSpeakerListenerEnv,
    SimpleTagEnv,
)
from gpusim.render.drawings import register_drawing
from gpusim.render.raster import Canvas

__all__ = ["MPE_VIEWER_SIZE", "draw_mpe", "entity_colours", "view_half_width"]

#: VMAS's ``INITIAL_VIEWER_SIZE`` (pixels) and ``VIEWER_DEFAULT_ZOOM``
MPE_VIEWER_SIZE = 700
_ZOOM = 1.2
#: VMAS draws agents at opacity 0.5 over what lies below them, landmarks opaque
_AGENT_ALPHA = 0.5


def _static_colours(env: MpeEnv) -> torch.Tensor:
    """The bodies' colours, float32 ``[n_entities, 3]`` in ``[0, 1]``."""
    return torch.tensor([b.color for b in env.world.bodies], dtype=torch.float32, device=env.device)


def _goal_colour_of_adversary(env: SimpleAdversaryEnv, state: TensorDictBase, colours: torch.Tensor) -> torch.Tensor:
    n = env.world.n_agents
    landmarks = torch.arange(env.world.n_entities - n, device=env.device)
    is_goal = (landmarks == state.get("goal")).unsqueeze(-1)  # [*B, L, 1]
    green = torch.tensor([0.25, 0.75, 0.25], device=env.device)  # VMAS's Color.GREEN
    return torch.cat([colours[..., :n, :], torch.where(is_goal, green, colours[..., n:, :])], -2)


def _goal_colour_of_push(env: SimplePushEnv, state: TensorDictBase, colours: torch.Tensor) -> torch.Tensor:
    agent = env._agent_colors[state.get("goal")]  # [*B, 1, 3]
    return torch.cat([colours[..., :1, :], agent, colours[..., 2:, :]], -2)


def _goal_colour_of_reference(env: SimpleReferenceEnv, state: TensorDictBase, colours: torch.Tensor) -> torch.Tensor:
    goal_colours = env._landmark_colors[state.get("goal")]  # [*B, 2, 3]: agent i's goal landmark
    return torch.cat([goal_colours.flip(-2), colours[..., 2:, :]], -2)  # agent i wears the other's goal


def _goal_colour_of_listener(
    env: SimpleSpeakerListenerEnv, state: TensorDictBase, colours: torch.Tensor
) -> torch.Tensor:
    listener = env._landmark_colors[state.get("goal")] + 0.45  # [*B, 1, 3]
    return torch.cat([colours[..., :1, :], listener, colours[..., 2:, :]], -2)


_ROW_COLOURS: dict[type, Callable[[Any, TensorDictBase, torch.Tensor], torch.Tensor]] = {
    SimpleAdversaryEnv: _goal_colour_of_adversary,
    SimplePushEnv: _goal_colour_of_push,
    SimpleReferenceEnv: _goal_colour_of_reference,
    SimpleSpeakerListenerEnv: _goal_colour_of_listener,
}


def entity_colours(env: MpeEnv, state: TensorDictBase) -> torch.Tensor:
    """Each entity's colour in each row, uint8 ``[*B, n_entities, 3]`` (VMAS's colour times 255,
    clipped to ``[0, 255]``).

    Examples:
        >>> import gpusim as gs
        >>> env = gs.make("MPE/simple_push-v0", num_envs=3, seed=0)
        >>> entity_colours(env, env.reset()["state"]).shape
        torch.Size([3, 4, 3])
    """
    lead = state.batch_size
    colours = _static_colours(env).expand(*lead, env.world.n_entities, 3)
    for cls in type(env).__mro__:
        fn = _ROW_COLOURS.get(cls)
        if fn is not None:
            colours = fn(env, state, colours)
            break
    return (colours * 255.0).round().clamp(0, 255).to(torch.uint8)


def view_half_width(env: MpeEnv, pos: torch.Tensor) -> torch.Tensor:
    """Half-width (world units) of VMAS's shared view of each row, ``[*B]``:
    ``max(max_agents |p| + 2 r_max, zoom^2)`` over both axes.

    Examples:
        >>> import torch, gpusim as gs
        >>> env = gs.make("MPE/simple_spread-v0")
        >>> float(view_half_width(env, torch.tensor([[2.0, 0.0]] + [[0.0, 0.0]] * 5)))  # 2 + 2 * 0.15
        2.299999952316284
    """
    n = env.world.n_agents
    r_max = max(b.radius for b in env.world.agents)
    fit = pos[..., :n, :].abs().amax((-2, -1)) + 2 * r_max
    return fit.clamp(min=_ZOOM * _ZOOM)


def _outlines(env: MpeEnv) -> list[tuple[float, tuple[float, float, float], float]]:
    """Squares VMAS draws under the entities, ``(half side, colour, half width in pixels)``:
    ``simple_tag``'s arena perimeter (black, 2 px, at the bound plus the adversaries' radius),
    else the world's bounds when it has them (VMAS's ``visualize_semidims``, grey, 1 px;
    ``simple_tag`` turns it off)."""
    world = env.world
    if isinstance(env, SimpleTagEnv):
        return [(env.bound + world.bodies[0].radius, (0.15, 0.15, 0.15), 1.0)]
    if world.x_semidim is not None and world.y_semidim is not None and world.x_semidim == world.y_semidim:
        return [(float(world.x_semidim), (0.25, 0.25, 0.25), 0.5)]
    return []


@register_drawing(MpeEnv, keys=("state",), size=lambda env: (MPE_VIEWER_SIZE, MPE_VIEWER_SIZE))
def draw_mpe(env: MpeEnv, data: TensorDictBase) -> torch.Tensor:
    """Every entity of every row as a filled circle (landmarks first, agents over them).

    Examples:
        >>> import torch, gpusim as gs
        >>> env = gs.make("MPE/simple-v0", seed=0)
        >>> td = env.reset()
        >>> frame = draw_mpe(env, td)
        >>> frame[350, 0].tolist()  # the background
        [255, 255, 255]
    """
    state = data.get("state")
    pos = state.get("pos").to(torch.float32)  # [*B, E, 2]
    size = MPE_VIEWER_SIZE
    half = view_half_width(env, pos)  # [*B]
    scale = (size / 2.0) / half  # pixels per world unit
    px = pos * scale[..., None, None] + size / 2.0  # surface pixels, y up
    n = env.world.n_agents
    order = list(range(n, env.world.n_entities)) + list(range(n))  # VMAS: landmarks, then agents
    radius = env.world.radius.to(torch.float32)  # [E]
    canvas = Canvas(data.batch_size, size, size, env.device)
    colours = entity_colours(env, state).to(torch.float32)  # [*B, E, 3]
    image = torch.full((), 255.0, device=env.device)
    for half_side, colour, width in _outlines(env):  # VMAS's world bounds and arena lines
        ink = torch.tensor([round(c * 255) for c in colour], dtype=torch.float32, device=env.device)
        side = (half_side * scale)[..., None, None]
        dx, dy = (canvas.x - size / 2.0).abs(), (canvas.y - size / 2.0).abs()
        edge = (((dx - side).abs() <= width) & (dy <= side + width)) | (
            ((dy - side).abs() <= width) & (dx <= side + width)
        )
        image = torch.where(edge.unsqueeze(-1), ink, image)
    for i in order:  # entities (a handful), never rows
        r = radius[i] * scale
        dx, dy = canvas.x - px[..., i, 0, None, None], canvas.y - px[..., i, 1, None, None]
        inside = (dx * dx + dy * dy <= (r * r)[..., None, None]).unsqueeze(-1)  # [*B, H, W, 1]
        alpha = _AGENT_ALPHA if i < n else 1.0
        ink = colours[..., i, None, None, :]  # [*B, 1, 1, 3]
        image = torch.where(inside, image * (1.0 - alpha) + ink * alpha, image)
    image = image.expand(*data.batch_size, size, size, 3)
    return image.round().to(torch.uint8)
