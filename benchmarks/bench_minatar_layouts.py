"""Why compiled MinAtar runs scalar C++ on CPU: Inductor's cost of bool grids, and Breakout's step
written four ways, each compiled with scalar and with vectorized C++.

Two measurements at ``--batch`` rows (default 4096), one thread, each function compiled with
``fullgraph=True`` and timed as the best of ``--repeats`` runs of ``--calls`` calls:

- ``stores``: one ``[B, 400]`` grid (a Breakout observation's bytes) written as ``bool`` from a
  compare, copied as ``bool``, written as ``uint8`` through ``int32`` (how gpusim's CPU graphs
  pack bool leaves), and as ``uint8`` arithmetic without any compare;
- ``breakout``: Breakout's step (``_advance`` + ``_observe``: next state and observation) as the
  env writes it (bool ``[B, 10, 10]`` grids), as a bitboard (the bricks a 30-bit integer per
  row, the observation one expression over its 400 flat bytes), as ``uint8`` 0/1 arithmetic on
  the same grids (one-hot cells by ``xor``/``min``), and batch-innermost (``[10, 10, B]``
  ``int32`` 0/1 grids). Every formulation's observation, bricks, reward and terminal are checked
  equal to the env's before it is timed.

The options compared are Inductor's defaults (vectorized C++: on this CPU 16 lanes),
``{"cpp.simdlen": 0}`` (scalar loops, which ``MinAtarEnv.cpu_inductor_options`` picks) and the
same scalar code built with GCC's loop vectorizer on (``gpusim._torch_internals.
gcc_loop_vectorizer``, which ``MinAtarEnv.cpu_loop_vectorize`` adds; Inductor turns it off).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_minatar_layouts.py [--batch 4096] [--parts stores breakout]

Examples:
    ``--help`` runs anywhere:

    >>> import subprocess, sys
    >>> out = subprocess.run([sys.executable, "benchmarks/bench_minatar_layouts.py", "--help"],
    ...                      capture_output=True, text=True).stdout
    >>> "--parts" in out
    True
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time

import torch

SCALAR_GCC = "scalar, GCC loop vectorizer"
OPTIONS = {"vectorized": {}, "scalar": {"cpp.simdlen": 0}, SCALAR_GCC: {"cpp.simdlen": 0}}


def compiled_in(mode: str, fn, args: tuple):
    """``fn`` compiled under ``mode`` (its first call, the compilation, made here) and its output."""
    from gpusim._torch_internals import gcc_loop_vectorizer

    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, options=OPTIONS[mode])
    with gcc_loop_vectorizer() if mode == SCALAR_GCC else contextlib.nullcontext():
        out = compiled(*args)
    return compiled, out


LEFT, RIGHT = 1, 3


def best_seconds(fn, args, calls: int, repeats: int) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


# ---------------------------------------------------------------------------- stores
def store_compare_bool(x):
    return x > 0


def store_copy_bool(b):
    return b.clone()


def store_compare_packed(x):
    return (x > 0).to(torch.int32).to(torch.uint8)


def store_uint8_arithmetic(x):
    return torch.clamp(x, 0, 1).to(torch.uint8)


STORES = {
    "compare -> bool": store_compare_bool,
    "bool copy": store_copy_bool,
    "compare -> uint8 via int32": store_compare_packed,
    "uint8 arithmetic": store_uint8_arithmetic,
}


# ---------------------------------------------------------------------------- Breakout, four ways
def _ball(state, action):
    """The per-row part every formulation shares: paddle and ball moves before any brick."""
    pos = (state["pos"] - (action == LEFT).long() + (action == RIGHT).long()).clamp(0, 9)
    x, y, d = state["ball_x"], state["ball_y"], state["ball_dir"]
    nx = x + torch.where((d == 1) | (d == 2), 1, -1)
    ny = y + torch.where(d >= 2, 1, -1)
    side = (nx < 0) | (nx > 9)
    nx = nx.clamp(0, 9)
    d = torch.where(side, d ^ 1, d)
    ceiling = ny < 0
    ny = ny.clamp(0, 9)
    d = torch.where(ceiling, 3 - d, d)
    return pos, nx, ny, d, ceiling


def _bounce(state, pos, nx, ny, d, ceiling, hit, breaks, empty):
    """The per-row part after the bricks: ``(d, ny, bottom, terminal, refill)``."""
    x, y = state["ball_x"], state["ball_y"]
    d = torch.where(breaks, 3 - d, d)
    ny = torch.where(breaks, y, ny)
    bottom = ~ceiling & ~hit & (ny == 9)
    refill = bottom & empty
    back = bottom & (x == pos)
    aside = bottom & ~back & (nx == pos)
    d = torch.where(back, 3 - d, torch.where(aside, d ^ 2, d))
    ny = torch.where(back | aside, y, ny)
    return d, ny, bottom & ~back & ~aside, refill


def _next(state, pos, nx, ny, d, hit, **grid):
    """The next state (every formulation returns all of it, as the env's step does: what a
    compiled step outputs is computed once per row, not inlined into each grid cell)."""
    nxt = {"ball_x": nx, "ball_y": ny, "ball_dir": d, "pos": pos, "strike": hit}
    return {**nxt, "last_x": state["ball_x"], "last_y": state["ball_y"], **grid}


def make_env_step(env):
    def env_step(state, action):
        nxt, reward, terminal = env._advance({k: state[k] for k in env._state_names()}, action, None)
        return env._observe(nxt), nxt, reward, terminal

    return env_step


BIT = torch.arange(400) >> 2  # cell of each observation byte
CHANNEL = torch.arange(400) & 3
ROWS_BITS = (1 << 30) - 1  # bricks on cells 10..39 (rows 1-3), bit = cell - 10


def bitboard_step(state, action):
    bits = state["bits"]
    pos, nx, ny, d, ceiling = _ball(state, action)
    flat = ny * 10 + nx
    shift = (flat - 10).clamp(0, 29)
    hit = ~ceiling & (flat >= 10) & (flat < 40) & (((bits >> shift) & 1) != 0)
    breaks = hit & ~state["strike"]
    bits = torch.where(breaks, bits & ~(1 << shift), bits)
    d, ny, terminal, refill = _bounce(state, pos, nx, ny, d, ceiling, hit, breaks, bits == 0)
    bits = torch.where(refill, ROWS_BITS, bits)
    targets = torch.stack((90 + pos, ny * 10 + nx, state["ball_y"] * 10 + state["ball_x"]), -1)
    pick = torch.where(CHANNEL == 0, targets[:, 0:1], torch.where(CHANNEL == 1, targets[:, 1:2], targets[:, 2:3]))
    brick = (BIT >= 10) & (BIT < 40) & (((bits[:, None] >> (BIT - 10).clamp(0, 29)) & 1) != 0)
    obs = torch.where(CHANNEL == 3, brick, BIT == pick)
    return obs, _next(state, pos, nx, ny, d, hit, bits=bits), breaks.long(), terminal


CELLS_U8 = torch.arange(100, dtype=torch.uint8).view(10, 10)
ROWS_U8 = torch.zeros(10, 10, dtype=torch.uint8)
ROWS_U8[1:4] = 1


def _one_hot_u8(y, x):
    return 1 - torch.clamp(CELLS_U8 ^ (y * 10 + x).to(torch.uint8)[:, None, None], max=1)


def uint8_step(state, action):
    grid = state["bricks_u8"]
    pos, nx, ny, d, ceiling = _ball(state, action)
    hit = ~ceiling & (grid.flatten(-2).gather(-1, (ny * 10 + nx)[:, None])[:, 0] != 0)
    breaks = hit & ~state["strike"]
    grid = grid & (1 - breaks.to(torch.uint8)[:, None, None] * _one_hot_u8(ny, nx))
    d, ny2, terminal, refill = _bounce(state, pos, nx, ny, d, ceiling, hit, breaks, grid.flatten(-2).amax(-1) == 0)
    grid = grid | (refill.to(torch.uint8)[:, None, None] * ROWS_U8)
    paddle = _one_hot_u8(torch.full_like(pos, 9), pos)
    obs = torch.stack((paddle, _one_hot_u8(ny2, nx), _one_hot_u8(state["ball_y"], state["ball_x"]), grid), -1)
    return obs, _next(state, pos, nx, ny2, d, hit, bricks_u8=grid), breaks.long(), terminal


CELLS_I32 = torch.arange(100, dtype=torch.int32).view(10, 10, 1)
ROWS_I32 = ROWS_U8.to(torch.int32).view(10, 10, 1)


def _one_hot_i32(flat):
    return 1 - torch.clamp((CELLS_I32 - flat.to(torch.int32)).abs(), max=1)


def batch_innermost_step(state, action):
    grid = state["bricks_t"].to(torch.int32)  # [10, 10, B]
    pos, nx, ny, d, ceiling = _ball(state, action)
    cell = _one_hot_i32(ny * 10 + nx)
    hit = ~ceiling & ((grid * cell).amax(0).amax(0) != 0)
    breaks = hit & ~state["strike"]
    grid = grid * (1 - breaks.to(torch.int32) * cell)
    d, ny2, terminal, refill = _bounce(state, pos, nx, ny, d, ceiling, hit, breaks, grid.amax(0).amax(0) == 0)
    grid = torch.maximum(grid, refill.to(torch.int32) * ROWS_I32)
    paddle = _one_hot_i32(90 + pos)
    trail = _one_hot_i32(state["ball_y"] * 10 + state["ball_x"])
    obs = torch.stack((paddle, _one_hot_i32(ny2 * 10 + nx), trail, grid), 2)  # [10, 10, 4, B]
    return (
        obs.to(torch.uint8),
        _next(state, pos, nx, ny2, d, hit, bricks_t=grid.to(torch.uint8)),
        breaks.long(),
        terminal,
    )


def breakout_states(batch: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random Breakout states: bricks on rows 1-3 (every reachable state has them there only)."""
    g = torch.Generator().manual_seed(seed)
    bricks = torch.zeros(batch, 10, 10, dtype=torch.bool)
    bricks[:, 1:4] = torch.rand(batch, 3, 10, generator=g) < 0.5
    state = {
        "ball_x": torch.randint(0, 10, (batch,), generator=g),
        "ball_y": torch.randint(0, 10, (batch,), generator=g),
        "ball_dir": torch.randint(0, 4, (batch,), generator=g),
        "pos": torch.randint(0, 10, (batch,), generator=g),
        "last_x": torch.randint(0, 10, (batch,), generator=g),
        "last_y": torch.randint(0, 10, (batch,), generator=g),
        "strike": torch.rand(batch, generator=g) < 0.2,
        "bricks": bricks,
    }
    weights = 1 << torch.arange(30)
    state["bits"] = (bricks[:, 1:4].flatten(1).long() * weights).sum(-1)
    state["bricks_u8"] = bricks.to(torch.uint8)
    state["bricks_t"] = bricks.permute(1, 2, 0).to(torch.uint8).contiguous()
    return state


def _as_reference(name: str, out, batch: int):
    """A formulation's (obs [B, 400], bricks [B, 10, 10], reward, terminal) in the env's form."""
    obs, nxt, reward, terminal = out
    bricks = nxt[next(k for k in ("bricks", "bits", "bricks_u8", "bricks_t") if k in nxt)]
    if name == "bitboard":
        grid = torch.zeros(batch, 10, 10, dtype=torch.bool)
        grid[:, 1:4] = ((bricks[:, None] >> torch.arange(30)) & 1).bool().view(batch, 3, 10)
        return obs.bool(), grid, reward, terminal
    if name == "batch-innermost":
        return obs.permute(3, 0, 1, 2).reshape(batch, 400).bool(), bricks.permute(2, 0, 1).bool(), reward, terminal
    return obs.reshape(batch, 400).bool(), bricks.bool(), reward, terminal


def run_breakout(batch: int, calls: int, repeats: int) -> list[tuple[str, str, float]]:
    import gpusim as gs

    env = gs.make("MinAtar/Breakout-v1", num_envs=batch)
    state = breakout_states(batch)
    action = torch.randint(0, 6, (batch,), generator=torch.Generator().manual_seed(1))
    steps = {
        "env (bool grids)": make_env_step(env),
        "bitboard": bitboard_step,
        "uint8 arithmetic": uint8_step,
        "batch-innermost": batch_innermost_step,
    }
    reference = _as_reference("env", steps["env (bool grids)"](state, action), batch)
    rows = []
    for name, fn in steps.items():
        for mode in OPTIONS:
            compiled, out = compiled_in(mode, fn, (state, action))
            got = _as_reference(name, out, batch)
            for a, b, what in zip(got, reference, ("observation", "bricks", "reward", "terminal")):
                if not torch.equal(a, b):
                    raise AssertionError(f"{name} ({mode}): {what} differs from the env's")
            rows.append((name, mode, best_seconds(compiled, (state, action), calls, repeats)))
    return rows


def run_stores(batch: int, calls: int, repeats: int) -> list[tuple[str, str, float]]:
    x = torch.randint(-5, 5, (batch, 400), dtype=torch.int32, generator=torch.Generator().manual_seed(0))
    rows = []
    for name, fn in STORES.items():
        arg = x > 0 if name == "bool copy" else x
        for mode in OPTIONS:
            compiled, out = compiled_in(mode, fn, (arg,))
            if not torch.equal(out, fn(arg)):
                raise AssertionError(f"{name} ({mode}) differs from eager")
            rows.append((name, mode, best_seconds(compiled, (arg,), calls, repeats)))
    return rows


def table(title: str, rows: list[tuple[str, str, float]]) -> str:
    head = " | ".join(f"{mode} (us)" for mode in OPTIONS)
    lines = [f"### {title}", "", f"| | {head} |", "| --- |" + " ---: |" * len(OPTIONS)]
    cost = {(name, mode): s for name, mode, s in rows}
    for name in dict.fromkeys(name for name, _, _ in rows):
        lines.append(f"| {name} | " + " | ".join(f"{cost[(name, mode)] * 1e6:.0f}" for mode in OPTIONS) + " |")
    return "\n".join(lines + [""])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", nargs="+", default=["stores", "breakout"], choices=["stores", "breakout"])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# bench_minatar_layouts: torch {torch.__version__}, {platform.processor() or platform.machine()}, "
        f"1 thread, batch {args.batch}, load {load:.2f}\n"
    )
    if "stores" in args.parts:
        rows = run_stores(args.batch, args.calls, args.repeats)
        print(table(f"A [{args.batch}, 400] grid written once", rows))
    if "breakout" in args.parts:
        rows = run_breakout(args.batch, args.calls, args.repeats)
        print(table(f"Breakout's step at {args.batch} rows (next state and observation)", rows))


if __name__ == "__main__":
    main()
