"""What the five MinAtar games share: the 10x10 grid, sticky actions, action sets, specs, colours.

A game subclasses :class:`MinAtarEnv` and writes its rules once, as three pure functions of
tensors with the env batch dims:

* ``_start(u)``: the start state (a dict of tensors) from the reset uniforms ``u``
  (``[*B, reset_draws]``, from the reset stream of each row's episode);
* ``_advance(state, action, u)``: one frame: ``(next_state, reward, terminal)`` from the state
  dict, the full-set action (``0..5``: no-op, left, up, right, down, fire) and the step
  uniforms ``u`` (``[*B, step_draws]``, from the env's step stream ``self.rng``);
* ``_observe(state)``: the bool observation ``[*B, 10, 10, C]``.

The base class draws the uniforms from the counter-based stream, applies sticky actions, maps
the minimal action set to the full one, and colours frames like the ``minatar`` package.

Examples:
    >>> [round(255 * c) for c in cubehelix_palette(4)[0]]
    [22, 61, 78]
    >>> cell_grid(torch.tensor([1]), torch.tensor([2])).nonzero().tolist()
    [[0, 1, 2]]
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native._base import NativeEnv, done_spec
from gpusim.envs.native._checks import check_probability
from gpusim.envs.native.rng import ResetRows
from gpusim.kernels._inductor import in_cpu_graph, realized
from gpusim.render.raster import check_size
from gpusim.specs import Binary, Bounded, Categorical, Composite

__all__ = [
    "GRID",
    "MinAtarEnv",
    "bool_spec",
    "cell_grid",
    "cubehelix_palette",
    "grid_any",
    "int_spec",
    "place_rows",
    "shift_grid",
]

#: the side of the square board
GRID = 10
#: the full action set, in the package's order
ACTIONS = ("noop", "left", "up", "right", "down", "fire")
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)

# matplotlib's default cubehelix map (Green 2011, "A colour scheme for the display of
# astronomical intensity images": start 0.5, rotations -1.5, hue 1, gamma 1), the one seaborn's
# ``color_palette("cubehelix", n)`` samples; per channel, the coefficients of cos and sin
_HELIX = ((-0.14861, 1.78277), (-0.29227, -0.90649), (1.97294, 0.0))
_LUT_SIZE = 256  # matplotlib tabulates a colormap at 256 points


def _helix(x: float) -> tuple[float, float, float]:
    amp = x * (1.0 - x) / 2.0
    phi = 2.0 * math.pi * (0.5 / 3.0 - 1.5 * x)
    return tuple(min(1.0, max(0.0, x + amp * (c * math.cos(phi) + s * math.sin(phi)))) for c, s in _HELIX)


def cubehelix_palette(n: int) -> list[tuple[float, float, float]]:
    """The ``n`` colours (RGB in ``[0, 1]``) the ``minatar`` package gives its ``n`` channels.

    They are seaborn's ``color_palette("cubehelix", n)``: the map sampled at ``n`` evenly spaced
    interior points of ``[0, 1]``, each read from the 256-entry table matplotlib builds.

    Examples:
        >>> len(cubehelix_palette(6))
        6
    """
    colours = []
    for k in range(1, n + 1):
        index = min(int(k / (n + 1) * _LUT_SIZE), _LUT_SIZE - 1)
        colours.append(_helix(index / (_LUT_SIZE - 1)))
    return colours


def cell_grid(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[*B, 10, 10]`` bool, true at row ``y``, column ``x`` of each row (``[*B]`` ints; a
    coordinate outside the board marks nothing).

    Examples:
        >>> cell_grid(torch.tensor([0, 3]), torch.tensor([9, 10])).sum((-2, -1)).tolist()
        [1, 0]
    """
    cells = torch.arange(GRID * GRID, device=y.device).view(GRID, GRID)
    inside = (y >= 0) & (y < GRID) & (x >= 0) & (x < GRID)
    flat = realized(torch.where(inside, y * GRID + x, -1))
    return cells == flat[..., None, None]


def grid_any(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``x.any(dim)`` of bool ``x``; in a CPU graph as the ``uint8`` max, which GCC vectorizes
    (Inductor writes ``any`` as a short-circuit ``||`` reduction: [4096, 100] took 110 us
    against 22 us, scalar C++ with GCC's loop vectorizer).

    Examples:
        >>> grid_any(torch.tensor([[False, True], [False, False]])).tolist()
        [True, False]
    """
    if in_cpu_graph(x):
        return x.to(torch.uint8).amax(dim) != 0
    return x.any(dim)


def _pad_bool(grid: torch.Tensor, pad: tuple[int, int, int, int]) -> torch.Tensor:
    # through uint8: Inductor's C++ backend (torch 2.13) emits C++ that does not compile
    # ("operands to '?:' have different types VecMask<int,1> and VecMask<float,1>") for a
    # padded or slice-assigned bool computed by a comparison, e.g. ``F.pad(x > 0, (0, 0, 1, 1))``
    # of an int64 ``[B, 8, 10]`` compiled on CPU with vectorization on; uint8 compiles
    return torch.nn.functional.pad(grid.to(torch.uint8), pad).bool()


def place_rows(rows: torch.Tensor, first: int) -> torch.Tensor:
    """``[*B, 10, 10]`` bool holding ``rows`` (``[*B, R, 10]`` bool) at board rows
    ``first .. first + R - 1``; the other rows empty.

    Examples:
        >>> place_rows(torch.ones(1, 2, 10, dtype=torch.bool), 3).any(-1).long().tolist()
        [[0, 0, 0, 1, 1, 0, 0, 0, 0, 0]]
    """
    return _pad_bool(rows, (0, 0, first, GRID - first - rows.shape[-2]))


def shift_grid(grid: torch.Tensor, rows: int = 0, cols: int = 0) -> torch.Tensor:
    """``[*B, 10, 10]`` bool ``grid`` moved ``rows`` rows down and ``cols`` columns right
    (negative: up, left); what leaves the board is dropped, what comes in is empty.

    Examples:
        >>> shift_grid(cell_grid(torch.tensor([0]), torch.tensor([9])), rows=1, cols=-2).nonzero().tolist()
        [[0, 1, 7]]
        >>> shift_grid(cell_grid(torch.tensor([0]), torch.tensor([9])), cols=1).any().item()
        False
    """
    top, left = max(-rows, 0), max(-cols, 0)
    padded = _pad_bool(grid, (max(cols, 0), left, max(rows, 0), top))
    return padded[..., top : top + GRID, left : left + GRID]


def int_spec(low: int, high: int, shape: tuple[int, ...]) -> Bounded:
    """A ``Bounded`` int64 spec ``[low, high]`` (batch dims and device set by :class:`MinAtarEnv`).

    Examples:
        >>> int_spec(0, 9, (8,)).shape
        torch.Size([8])
    """
    return Bounded(low, high, shape=shape, dtype=torch.int64)


def bool_spec(shape: tuple[int, ...]) -> Categorical:
    """A bool spec of ``shape`` (batch dims and device set by :class:`MinAtarEnv`).

    Examples:
        >>> bool_spec((10, 10)).dtype
        torch.bool
    """
    return Categorical(2, shape=shape, dtype=torch.bool)


class MinAtarEnv(NativeEnv):
    """Base of the batched MinAtar games (see the module docstring for the game hooks).

    Subclasses set ``game`` (the package's module name), ``channels``, ``minimal_actions``,
    ``reset_draws`` and ``step_draws`` (uniforms per row), and ``state_layout()`` (name -> spec
    without batch dims).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the counter-based stream (spawns, sticky actions, start states).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        sticky_action_prob: probability that a step repeats the previous action instead: a
            number, or a ``[*B]`` tensor (one probability per env).
        difficulty_ramping: whether the game speeds up as it goes on (games that ramp).
        use_minimal_action_set: actions index the game's minimal action set instead of all 6.
        randomize: ``{"sticky_action_prob": distribution}``, re-drawn for the rows that reset
            (see :mod:`gpusim.envs.native.params`; keep the draws in ``[0, 1]``).
        expose_params: put the per-env parameters in the observation spec too.

    The per-env parameter (``params``) is ``sticky_action_prob``: the games' integer timers
    (spawn and move intervals, the ramp interval) bound the state specs and stay constants.

    Examples:
        >>> from gpusim.envs.native.minatar import SpaceInvadersEnv
        >>> env = SpaceInvadersEnv(batch_size=[2], seed=0, use_minimal_action_set=True)
        >>> env.action_set  # (no-op, left, right, fire) in the full set's numbering
        (0, 1, 3, 5)
        >>> sorted(env.state_spec.keys())[:3]
        ['alien_dir', 'alien_move_timer', 'alien_shot_timer']
    """

    game: str = ""
    #: Inductor options of compiled runners on CPU (``env.compile()``, ``rollout(compile=True)``):
    #: scalar C++ loops. Inductor's vectorized code runs the 10x10 grid loops as partial 16-lane
    #: vectors with per-lane mask conversions (``perf annotate``: ``VecMask::from`` element
    #: loops); scalar loops measured 3-17x faster, 4096 envs, 1 thread, shared 2-core CPU
    #: (``benchmarks/results/minatar-cpu.md``, 2026-11-29: Breakout 55 k -> 173 k env-steps/s,
    #: Asterix 57 k -> 447 k, Freeway 13 k -> 221 k, SpaceInvaders 44 k -> 165 k)
    cpu_inductor_options: dict[str, Any] = {"cpp.simdlen": 0}
    #: and GCC's loop vectorizer on for those scalar loops (Inductor turns it off; see
    #: :func:`gpusim._torch_internals.gcc_loop_vectorizer`): the byte passes over the observations
    #: (copies, reset merges) and the grid loops GCC can vectorize. Compiled rollouts at 4096
    #: envs, 1 thread, quiet 2-core CPU, 2026-11-29: Breakout 1.01 -> 1.54 M env-steps/s,
    #: Asterix 1.44 -> 2.02 M, Freeway 0.97 -> 1.43 M, SpaceInvaders 0.53 -> 0.75 M, Seaquest
    #: 153 -> 174 k (``benchmarks/bench_minatar_layouts.py`` has the formulations tried)
    cpu_loop_vectorize: bool = True
    channels: tuple[str, ...] = ()
    minimal_actions: tuple[int, ...] = ()
    reset_draws: int = 0
    step_draws: int = 0
    params = ("sticky_action_prob",)

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        sticky_action_prob: float = 0.1,
        difficulty_ramping: bool = True,
        use_minimal_action_set: bool = False,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        sticky_action_prob = check_probability("sticky_action_prob", sticky_action_prob)
        for name, flag in (
            ("difficulty_ramping", difficulty_ramping),
            ("use_minimal_action_set", use_minimal_action_set),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        self.sticky_action_prob = sticky_action_prob
        self.difficulty_ramping = difficulty_ramping
        self.use_minimal_action_set = use_minimal_action_set
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            num_noise=1 + self.step_draws,
            randomize=randomize,
            expose_params=expose_params,
        )
        B, dev = self.batch_size, self.device
        self.action_set = tuple(self.minimal_actions) if use_minimal_action_set else tuple(range(len(ACTIONS)))
        self.register_buffer("_action_set", torch.tensor(self.action_set, device=dev), persistent=False)
        C = len(self.channels)
        self.observation_spec = Composite(
            observation=Binary(n=C, shape=(*B, GRID, GRID, C), dtype=torch.bool, device=dev), shape=B, device=dev
        )
        state = {
            name: (spec.expand(*B, *spec.shape) if B else spec).to(dev) for name, spec in self.state_layout().items()
        }
        # the names, kept here: building the layout's specs inside a compiled step would trace
        # their value checks (data-dependent branches) when no eager step ran first
        self._state_keys = tuple(state)
        state["last_action"] = Bounded(0, len(ACTIONS) - 1, shape=B, dtype=torch.int64, device=dev)
        self.state_spec = Composite(state, shape=B, device=dev)
        self.action_spec = Categorical(len(self.action_set), shape=B, device=dev)
        self.reward_spec = Bounded(0.0, 100.0, shape=(*B, 1), dtype=torch.float32, device=dev)
        self.full_done_spec = done_spec(B, dev)
        colours = [(0.0, 0.0, 0.0), *cubehelix_palette(C)]
        palette = torch.tensor([[round(255 * c) for c in rgb] for rgb in colours], dtype=torch.uint8, device=dev)
        self.register_buffer("_palette", palette, persistent=False)
        self.register_buffer("_channel_index", torch.arange(1, C + 1, dtype=torch.uint8, device=dev), persistent=False)

    # ------------------------------------------------------------------ game hooks
    @classmethod
    def state_layout(cls) -> dict[str, Any]:
        """The game's state entries: name -> spec without batch dims.

        Examples:
            >>> from gpusim.envs.native.minatar import BreakoutEnv
            >>> BreakoutEnv.state_layout()["bricks"].shape
            torch.Size([10, 10])
        """
        raise NotImplementedError

    def _start(self, u: torch.Tensor | None) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _advance(
        self, state: dict[str, torch.Tensor], action: torch.Tensor, u: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def _observe(self, state: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    # ------------------------------------------------------------------ env API
    def _state_names(self) -> tuple[str, ...]:
        return self._state_keys

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        u = rows.uniform(0.0, 1.0, n=self.reset_draws) if self.reset_draws else None
        state = self._start(u)
        # the package keeps the last action across episodes (sticky actions may repeat it)
        last = None if tensordict is None else tensordict.get("last_action", None)
        if last is None or last.shape != self.batch_size:
            last = torch.zeros(self.batch_size, dtype=torch.int64, device=self.device)
        done, terminated = self._flags()
        _, echo = self.physics(tensordict, rows)
        return self._out(
            observation=self._observe(state), **state, last_action=last, done=done, terminated=terminated, **echo
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # one draw per step: the sticky-action uniform, then the game's
        u = self.rng.uniform(0.0, 1.0, n=1 + self.step_draws)
        action = self._action_set[tensordict["action"]]
        p, echo = self.physics(tensordict)
        sticky = u[..., 0] < p["sticky_action_prob"]
        action = torch.where(sticky, tensordict["last_action"], action)
        state = {name: tensordict[name] for name in self._state_names()}
        state, reward, terminal = self._advance(state, action, u[..., 1:])
        terminated = terminal.unsqueeze(-1)
        return self._out(
            observation=self._observe(state),
            **state,
            last_action=action,
            reward=reward.to(torch.float32).unsqueeze(-1),
            done=terminated.clone(),
            terminated=terminated,
            **echo,
        )

    def render(self, tensordict: TensorDictBase, *, size: tuple[int, int] | None = None) -> torch.Tensor:
        """The package's colour frame of every row: ``[*B, 10, 10, 3]`` uint8 (``[*B, H, W, 3]``
        with ``size=(H, W)``: each cell a block of pixels, nearest-sample).

        Each cell takes the colour of its highest active channel (black when none is), from
        the cubehelix palette the ``minatar`` package draws with (see :func:`cubehelix_palette`).

        Args:
            tensordict: data holding the ``"observation"`` of the rows (e.g. what ``reset`` or
                ``step`` returned, or its ``"next"``), or else their state entries; any leading
                shape.

        Examples:
            >>> from gpusim.envs.native.minatar import BreakoutEnv
            >>> env = BreakoutEnv(batch_size=[3], seed=0)
            >>> frame = env.render(env.reset())
            >>> frame.shape, frame.dtype
            (torch.Size([3, 10, 10, 3]), torch.uint8)
            >>> env.render(env.reset(), size=(40, 40)).shape
            torch.Size([3, 40, 40, 3])
        """
        obs = tensordict.get("observation", None)
        keys = set(tensordict.keys())
        if obs is None and keys.issuperset(self._state_keys):  # the state alone (e.g. from_pixels' probe)
            obs = self._observe({name: tensordict.get(name) for name in self._state_keys})
        shape = (GRID, GRID, len(self.channels))
        if obs is None or tuple(obs.shape[-3:]) != shape or obs.dtype != torch.bool:
            got = None if obs is None else (tuple(obs.shape), obs.dtype)
            raise ValueError(
                f"render needs 'observation' of shape [..., {', '.join(map(str, shape))}] and dtype torch.bool "
                f"(or the state entries {list(self._state_keys)}), got {got}"
            )
        index = (obs.to(torch.uint8) * self._channel_index).amax(-1)
        if size is not None:
            height, width = check_size(size)
            rows = torch.arange(height, device=obs.device) * GRID // height
            cols = torch.arange(width, device=obs.device) * GRID // width
            index = index[..., rows, :][..., cols]
        return self._palette[index.long()]
