"""Rendering costs, compiled: the frames of every row vs the step, and the pixel chain vs the
bare pixel env.

Two measurements, each after a warm-up (compile times are printed apart, never timed):

- ``render``: CartPole at ``--render-batch`` envs: one compiled ``step_and_maybe_reset`` step
  (``env.compile()``, per step of a ``--steps`` run) against one compiled ``render`` of every
  row (``torch.compile`` of the drawing on the same batch's state). The frames are 600x400x3
  bytes per row, written to memory: the render is bound by that write.
- ``pipeline``: ``make("CartPole-v1", from_pixels=True)`` at ``--pipeline-batch`` envs, compiled
  rollouts of ``--steps`` steps, bare and with ``ToTensorImage, Resize(84), GrayScale,
  CatFrames(4)`` on ``"pixels"``.

Each contender is timed ``--repeats`` times (the 4096-row render ``--render-repeats`` times) in
turns; the best run is reported.

Usage::

    python benchmarks/bench_render.py [--device cpu] [--render-batch 4096] [--pipeline-batch 8]
        [--steps 20] [--repeats 3] [--render-repeats 1] [--parts render pipeline]

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


def render_vs_step(batch: int, steps: int, repeats: int, device: str, render_repeats: int = 1) -> None:
    from tensordict import TensorDict

    import gpusim as gs
    from gpusim.render.classic_control import draw_cartpole

    env = gs.CartPoleEnv(batch_size=[batch], seed=0, device=device)
    runner = env.compile(verbose=False)
    root = env.reset()
    _warm("step", lambda: runner.run(steps, root), device)
    step_s = _best(lambda: runner.run(steps, root), repeats, device) / steps

    state = root["state"]
    draw = torch.compile(lambda s: draw_cartpole(env, TensorDict({"state": s}, s.shape[:-1])), fullgraph=True)
    _warm("render", lambda: draw(state), device)
    render_s = _best(lambda: draw(state), render_repeats, device)
    frame_bytes = batch * 400 * 600 * 3
    print(
        f"CartPole, {batch} envs, compiled on {device}: step {step_s * 1e6:.1f} us "
        f"({batch / step_s / 1e6:.1f} M env-steps/s); render of every row {render_s * 1e3:.1f} ms "
        f"({frame_bytes / 1e9:.2f} GB of frames, {frame_bytes / render_s / 1e9:.2f} GB/s, "
        f"{batch / render_s:.0f} frames/s); render / step = {render_s / step_s:.0f}x"
    )


def pipeline_vs_bare(batch: int, steps: int, repeats: int, device: str) -> None:
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
        runner = env.compile(verbose=False)
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
    parser.add_argument("--parts", nargs="+", default=["render", "pipeline"], choices=["render", "pipeline"])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    if "render" in args.parts:
        render_vs_step(args.render_batch, args.steps, args.repeats, args.device, args.render_repeats)
    if "pipeline" in args.parts:
        pipeline_vs_bare(args.pipeline_batch, args.steps, args.repeats, args.device)


if __name__ == "__main__":
    main()
