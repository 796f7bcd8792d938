"""Rendering costs, compiled: the frames of every row vs the step, and the pixel chain vs the
bare pixel env.

Three measurements, each after a warm-up (compile times are printed apart, never timed):

- ``render``: CartPole at ``--render-batch`` envs: one compiled ``step_and_maybe_reset`` step
  (``env.compile()``, per step of a ``--steps`` run) against one compiled ``render`` of every
  row (``torch.compile`` of the drawing on the same batch's state) at each of ``--sizes``
  (default gymnasium's 600x400), next to a ``fill_`` of as many bytes (the memory's write
  speed: the frames are H x W x 3 bytes per row, written to memory).
- ``pixels``: ``make("CartPole-v1", from_pixels=True, render_size=size)`` at ``--render-batch``
  envs, compiled rollouts of ``--steps`` steps, at each of ``--pixel-sizes``: the step with the
  frames of every row (the next state's, and the root's after the resets; the rollout keeps
  both), against the step alone.
- ``pipeline``: ``make("CartPole-v1", from_pixels=True)`` at ``--pipeline-batch`` envs, compiled
  rollouts of ``--steps`` steps, bare and with ``ToTensorImage, Resize(84), GrayScale,
  CatFrames(4)`` on ``"pixels"``.

Each contender is timed ``--repeats`` times (the 4096-row render ``--render-repeats`` times) in
turns; the best run is reported.

Usage::

    python benchmarks/bench_render.py [--device cpu] [--render-batch 4096] [--pipeline-batch 8]
        [--steps 20] [--repeats 3] [--render-repeats 1] [--sizes 400x600 84x84 ...]
        [--pixel-sizes 32x32 64x64 84x84] [--steps-per-call K] [--parts render pixels pipeline]

Examples:
    ``--help`` runs anywhere:

    >>> import subprocess, sys
    >>> out = subprocess.run([sys.executable, "benchmarks/bench_render.py", "--help"],
    ...                      capture_output=True, text=True).stdout
    >>> "--render-batch" in out
    True
"""

from __future__ import annotations

import argparse
import time

import torch


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _best(fn, repeats: int, device: str) -> float:
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def _warm(label: str, fn, device: str) -> None:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    print(f"  {label}: warm-up (compile) {time.perf_counter() - start:.1f} s", flush=True)


def _size(text: str) -> tuple[int, int]:
    h, w = text.lower().split("x")
    return int(h), int(w)


def render_vs_step(
    batch: int, steps: int, repeats: int, device: str, render_repeats: int = 1, sizes=((400, 600),)
) -> float:
    """The compiled step, then the compiled render of every row at each frame size."""
    from tensordict import TensorDict

    import gpusim as gs
    from gpusim.render.classic_control import draw_cartpole

    env = gs.CartPoleEnv(batch_size=[batch], seed=0, device=device)
    runner = env.compile(verbose=False)
    root = env.reset()
    _warm("step", lambda: runner.run(steps, root), device)
    step_s = _best(lambda: runner.run(steps, root), repeats, device) / steps
    print(
        f"CartPole, {batch} envs, compiled on {device}: step {step_s * 1e6:.1f} us "
        f"({batch / step_s / 1e6:.1f} M env-steps/s)",
        flush=True,
    )
    state = root["state"]
    for size in sizes:
        draw = torch.compile(
            lambda s, size=size: draw_cartpole(env, TensorDict({"state": s}, s.shape[:-1]), size=size), fullgraph=True
        )
        _warm(f"render {size[1]}x{size[0]}", lambda: draw(state), device)
        render_s = _best(lambda: draw(state), render_repeats, device)
        frame_bytes = batch * size[0] * size[1] * 3
        # the same bytes written by a fill: what the memory takes at best
        # (into a buffer kept, and into a fresh one, as the render's frames are: past 32 MB glibc
        # maps fresh pages for each, and their first writes fault them in)
        out = torch.empty(frame_bytes, dtype=torch.uint8, device=device)
        fill_s = _best(lambda: out.fill_(7), render_repeats, device)
        out = None  # frees the bytes
        fresh_s = _best(lambda: torch.empty(frame_bytes, dtype=torch.uint8, device=device).fill_(7), 3, device)
        print(
            f"  render of every row at {size[1]}x{size[0]}: {render_s * 1e3:.2f} ms "
            f"({frame_bytes / 1e6:.0f} MB of frames, {frame_bytes / render_s / 1e9:.2f} GB/s; a fill of "
            f"as many bytes {fill_s * 1e3:.2f} ms, {frame_bytes / fill_s / 1e9:.2f} GB/s, of fresh ones "
            f"{fresh_s * 1e3:.2f} ms, {frame_bytes / fresh_s / 1e9:.2f} GB/s; "
            f"{batch / render_s / 1e6:.2f} M frames/s); render / step = {render_s / step_s:.2f}x",
            flush=True,
        )
    return step_s


def pixels_vs_step(
    batch: int, steps: int, repeats: int, device: str, sizes, step_s: float | None = None, options: dict | None = None
) -> None:
    """Compiled rollouts of ``make("CartPole-v1", from_pixels=True, render_size=size)``: the step
    with the frames of every row (the next state's and, after resets, the root's)."""
    import gpusim as gs

    if step_s is None:
        env = gs.CartPoleEnv(batch_size=[batch], seed=0, device=device)
        runner, root = env.compile(verbose=False), env.reset()
        _warm("step", lambda: runner.run(steps, root), device)
        step_s = _best(lambda: runner.run(steps, root), repeats, device) / steps
        print(f"CartPole, {batch} envs, compiled on {device}: step {step_s * 1e6:.1f} us", flush=True)
    for size in sizes:
        env = gs.make("CartPole-v1", num_envs=batch, seed=0, device=device, from_pixels=True, render_size=size)
        runner, root = env.compile(verbose=False, **(options or {})), env.reset()
        _warm(f"step + pixels {size[1]}x{size[0]}", lambda: runner.run(steps, root), device)
        t = _best(lambda: runner.run(steps, root), repeats, device) / steps
        print(
            f"  step + render of every row at {size[1]}x{size[0]} (from_pixels rollout): {t * 1e3:.2f} ms/step "
            f"({batch / t / 1e6:.3f} M env-steps/s) = step + {(t - step_s) / step_s:.1f}x the step",
            flush=True,
        )
        runner = root = env = None  # frees the frames


def pipeline_vs_bare(batch: int, steps: int, repeats: int, device: str, options: dict | None = None) -> None:
    import gpusim as gs
    from gpusim.transforms import CatFrames, Compose, GrayScale, Resize, ToTensorImage

    def make(chain: bool):
        env = gs.make("CartPole-v1", num_envs=batch, seed=0, device=device, from_pixels=True)
        if chain:
            env = env.append_transform(Compose(ToTensorImage(), Resize(84, 84), GrayScale(), CatFrames(4, dim=-3)))
        return env

    times = {}
    runners = {}
    for label, chain in (("bare pixel env", False), ("+ ToTensorImage, Resize(84), GrayScale, CatFrames(4)", True)):
        env = make(chain)
        runner = env.compile(verbose=False, **(options or {}))
        root = env.reset()
        _warm(label, lambda: runner.run(steps, root), device)
        runners[label] = (runner, root)
    for _ in range(repeats):  # in turns
        for label, (runner, root) in runners.items():
            t = _best(lambda: runner.run(steps, root), 1, device) / steps
            times[label] = min(times.get(label, float("inf")), t)
    bare = times["bare pixel env"]
    for label, t in times.items():
        print(
            f"CartPole-v1 from_pixels, {batch} envs, compiled on {device}: {label}: {t * 1e3:.2f} ms/step ({t / bare:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--render-batch", type=int, default=4096)
    parser.add_argument("--pipeline-batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--render-repeats", type=int, default=1, help="timed renders (each writes every frame)")
    parser.add_argument("--sizes", nargs="+", default=["400x600"], help="frame sizes HxW of the render part")
    parser.add_argument(
        "--pixel-sizes", nargs="+", default=["32x32", "64x64", "84x84"], help="frame sizes HxW of the pixels part"
    )
    parser.add_argument(
        "--steps-per-call",
        type=int,
        default=None,
        help="the compiled rollouts' steps per graph call (pixels and pipeline parts)",
    )
    parser.add_argument("--parts", nargs="+", default=["render", "pipeline"], choices=["render", "pixels", "pipeline"])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    step_s = None
    options = {} if args.steps_per_call is None else {"steps_per_call": args.steps_per_call}
    if "render" in args.parts:
        sizes = [_size(s) for s in args.sizes]
        step_s = render_vs_step(args.render_batch, args.steps, args.repeats, args.device, args.render_repeats, sizes)
    if "pixels" in args.parts:
        sizes = [_size(s) for s in args.pixel_sizes]
        pixels_vs_step(args.render_batch, args.steps, args.repeats, args.device, sizes, step_s, options)
    if "pipeline" in args.parts:
        pipeline_vs_bare(args.pipeline_batch, args.steps, args.repeats, args.device, options)


if __name__ == "__main__":
    main()
