"""Checks every MinAtar game passes: specs, ids, arguments, sticky actions, render, compile."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import gpusim as gs
from gpusim.envs import check_env_specs
from gpusim.envs.native.minatar import (
    AsterixEnv,
    BreakoutEnv,
    FreewayEnv,
    SeaquestEnv,
    SpaceInvadersEnv,
)
from gpusim.envs.native.minatar._common import cubehelix_palette

GAMES = {
    "Breakout": BreakoutEnv,
    "Freeway": FreewayEnv,
    "Asterix": AsterixEnv,
    "SpaceInvaders": SpaceInvadersEnv,
    "Seaquest": SeaquestEnv,
}
_ids = list(GAMES)


@pytest.mark.parametrize("batch_size", [[], [7], [2, 3]], ids=str)
@pytest.mark.parametrize("name", _ids)
def test_check_env_specs(name, batch_size) -> None:
    env = GAMES[name](batch_size=batch_size, seed=0)
    check_env_specs(env, seed=1)


@pytest.mark.parametrize("name", _ids)
def test_ids_and_spaces_follow_the_package(name) -> None:
    minatar_gym = pytest.importorskip("minatar.gym")
    minatar_gym.register_envs()
    for version in ("v0", "v1"):
        env_id = f"MinAtar/{name}-{version}"
        ref = gym.make(env_id).unwrapped
        env = gs.make(env_id, num_envs=4, seed=0)
        assert env.action_spec.n == ref.action_space.n
        assert env.action_set == tuple(ref.action_set)
        assert env.observation_spec["observation"].shape == (4, *ref.observation_space.shape)
        assert env.observation_spec["observation"].dtype == torch.bool


@pytest.mark.parametrize("name", _ids)
def test_reset_observation_matches_the_package(name) -> None:
    """The start state (deterministic parts; Breakout's side is one of the package's two)."""
    from minatar import Environment

    ref = Environment(GAMES[name].game)
    starts = set()
    for seed in range(20):
        ref.seed(seed)
        ref.reset()
        starts.add(ref.state().tobytes())
    obs = GAMES[name](batch_size=[64], seed=0).reset()["observation"].numpy()
    ours = {o.tobytes() for o in obs}
    if name == "Breakout":
        assert ours == starts and len(ours) == 2
    else:
        assert ours <= starts or len(starts) > 2


@pytest.mark.parametrize("name", _ids)
def test_arguments_are_checked(name) -> None:
    cls = GAMES[name]
    with pytest.raises(ValueError, match=r"sticky_action_prob must be in \[0, 1\], got 1.5"):
        cls(sticky_action_prob=1.5)
    with pytest.raises(TypeError, match="difficulty_ramping must be a bool, got 1"):
        cls(difficulty_ramping=1)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['sticky'\]"):
        gs.make(f"MinAtar/{name}-v0", sticky=0.1)


@pytest.mark.parametrize("name", _ids)
def test_sticky_actions_repeat_the_previous_action(name) -> None:
    env = GAMES[name](batch_size=[256], seed=0, sticky_action_prob=1.0)
    td = env.reset()
    td["last_action"] = torch.full((256,), 3)
    td = env.step(td.set("action", torch.zeros(256, dtype=torch.int64)))
    assert bool((td["next", "last_action"] == 3).all())  # always the previous one
    env = GAMES[name](batch_size=[4000], seed=0, sticky_action_prob=0.25)
    td = env.reset()
    td["last_action"] = torch.full((4000,), 3)
    td = env.step(td.set("action", torch.zeros(4000, dtype=torch.int64)))
    share = (td["next", "last_action"] == 3).float().mean().item()
    assert abs(share - 0.25) < 4 * (0.25 * 0.75 / 4000) ** 0.5


def test_palette_is_seaborns_cubehelix() -> None:
    sns = pytest.importorskip("seaborn")
    for n in (4, 6, 7, 10):
        np.testing.assert_allclose(
            np.array(cubehelix_palette(n)), np.array(sns.color_palette("cubehelix", n)), atol=1e-12
        )


@pytest.mark.parametrize("name", _ids)
def test_render_is_batched_and_checked(name) -> None:
    env = GAMES[name](batch_size=[2, 3], seed=0)
    td = env.reset()
    frames = env.render(td)
    assert frames.shape == (2, 3, 10, 10, 3) and frames.dtype == torch.uint8
    with pytest.raises(ValueError, match="render needs 'observation' of shape"):
        env.render(td.select("last_action"))
    # no observation: drawn from the state entries
    assert torch.equal(env.render(td.exclude("observation")), frames)
    # size=(H, W): each cell a block of 3x2 pixels
    big = env.render(td, size=(30, 20))
    assert torch.equal(big, frames.repeat_interleave(3, -3).repeat_interleave(2, -2))
    with pytest.raises(ValueError, match="two positive ints"):
        env.render(td, size=(30,))


@pytest.mark.parametrize("name", _ids)
def test_compiled_fullgraph_rollout_matches_eager(name) -> None:
    """No graph break (no host sync) in step and auto-reset; the same data as eager."""
    torch._dynamo.reset()
    eager = GAMES[name](batch_size=[16], seed=3)
    compiled = GAMES[name](batch_size=[16], seed=3, auto_reset_mode="masked")
    masked = GAMES[name](batch_size=[16], seed=3, auto_reset_mode="masked")

    def policy(td):
        # a deterministic policy of the observation (no global generator in the comparison)
        return td.set("action", td["observation"].flatten(-3).sum(-1) % eager.action_spec.n)

    a = eager.rollout(40, policy, break_when_any_done=False)
    b = compiled.rollout(40, policy, break_when_any_done=False, compile={"backend": "eager"})
    c = masked.rollout(40, policy, break_when_any_done=False)
    for key in ("observation", ("next", "observation"), ("next", "reward"), ("next", "done")):
        assert torch.equal(a[key], b[key]), key
        assert torch.equal(a[key], c[key]), key
    if name != "Freeway":  # Freeway's episodes last 2501 frames
        assert bool(a["next", "done"].any())  # auto-resets happened inside the graph


@pytest.mark.parametrize("name", _ids)
def test_first_step_can_be_compiled(name) -> None:
    """A fresh env's first step may run inside the graph (``steps_per_call=1``, no eager step
    before it: what ``gpusim compare`` does at 4096 envs); it used to build the state specs there
    and fail on their data-dependent value check."""
    torch._dynamo.reset()
    env = GAMES[name](batch_size=[4], seed=0)
    data = env.compile(backend="eager", steps_per_call=1, verbose=False)(2)
    assert data["next", "observation"].shape == (4, 2, *env.observation_spec["observation"].shape[1:])


@pytest.mark.parametrize("mode", ["sparse", "masked"])
@pytest.mark.parametrize("name", _ids)
def test_reset_keeps_the_last_action(name, mode) -> None:
    """As in the package, a new episode's first sticky action may repeat the previous episode's
    last action: resetting rows keeps their ``last_action``; a fresh reset starts at no-op."""
    env = GAMES[name](batch_size=[4], seed=0, auto_reset_mode=mode)
    td = env.reset()
    assert torch.equal(td["last_action"], torch.zeros(4, dtype=torch.int64))
    td = env.step(td.set("action", torch.ones(4, dtype=torch.int64)))["next"]
    td["last_action"] = torch.tensor([3, 4, 5, 2])
    rows = torch.tensor([True, False, True, False])
    out = env.reset(td.set("_reset", rows.unsqueeze(-1)))
    assert torch.equal(out["last_action"], torch.tensor([3, 4, 5, 2]))
    if name not in ("Breakout", "Freeway"):  # the other games start deterministically
        assert torch.equal(out["observation"][rows], env.reset()["observation"][rows])


@pytest.mark.parametrize("name", _ids)
def test_make_from_pixels_with_render_size(name) -> None:
    env = gs.make(f"MinAtar/{name}-v1", num_envs=3, seed=0, from_pixels=True, render_size=(20, 20))
    assert env.observation_spec["pixels"].shape == (3, 20, 20, 3)
    gs.check_env_specs(env)
    data = env.rollout(5, break_when_any_done=False)
    assert torch.equal(data["next", "pixels"], env.base_env.render(data["next"], size=(20, 20)))


def test_grid_helpers_compile_with_inductor_vectorized() -> None:
    """``place_rows`` and ``shift_grid`` of bools computed by comparisons compile with Inductor's
    default (vectorized) C++ backend: torch 2.13 emitted C++ that did not compile for the same
    padding done on bool (``F.pad(x > 0, ...)``)."""
    from gpusim.envs.native.minatar._common import place_rows, shift_grid

    def grids(x):
        lanes = place_rows(x.unsqueeze(-1) == torch.arange(10), 1)  # [B, 8] -> rows 1-8
        return shift_grid(lanes, rows=1), shift_grid(lanes, cols=-1), lanes

    torch._dynamo.reset()
    x = torch.randint(-1, 11, (64, 8))
    compiled = torch.compile(grids, fullgraph=True, backend="inductor")(x)
    for got, want in zip(compiled, grids(x)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("name", _ids)
def test_inductor_rollout_with_gcc_loop_vectorizer_matches_eager(name, monkeypatch) -> None:
    """The default compiled runner on CPU builds MinAtar's scalar C++ with GCC's loop vectorizer
    on (``cpu_loop_vectorize``): the compilation ran inside the context, and every leaf of the
    rollout (random actions, auto-resets) is the eager one bit for bit. (GCC 12 at -O3 once
    summed ``uint8`` casts of a negated compare as 255 per element: Inductor's code must be
    checked, not only the traced graph.)"""
    from gpusim import _torch_internals as internals

    entered = []
    real = internals.gcc_loop_vectorizer

    def counted():
        entered.append(True)
        return real()

    monkeypatch.setattr(internals, "gcc_loop_vectorizer", counted)
    torch._dynamo.reset()
    eager = GAMES[name](batch_size=[32], seed=11, auto_reset_mode="masked")
    compiled = GAMES[name](batch_size=[32], seed=11, auto_reset_mode="masked")
    a = eager.rollout(96, break_when_any_done=False)
    b = compiled.rollout(96, break_when_any_done=False, compile={"verbose": False, "steps_per_call": 1})
    assert entered, "the compilation did not run inside gcc_loop_vectorizer()"
    for key in a.keys(True, True):
        assert torch.equal(a[key], b[key]), key
    if name != "Freeway":  # Freeway's episodes last 2501 frames
        assert bool(a["next", "done"].any()) and bool(a["next", "reward"].any())
