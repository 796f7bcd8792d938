"""Stateful transforms honour partial ``"_reset"`` row by row (batch shapes x masks), nested
(MARL) done levels, and keep the env's spec contract (``check_env_specs`` at batch 1 and 1000)."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs.checks import check_env_specs
from gpusim.kernels import force_backend
from gpusim.specs import Unbounded
from gpusim.transforms import (
    CatFrames,
    Compose,
    EndOfLifeTransform,
    FrameSkipTransform,
    InitTracker,
    NoopResetEnv,
    RewardSum,
    StepCounter,
    TargetReturn,
    TensorDictPrimer,
    TimeMaxPool,
    TransformedEnv,
    VecNorm,
    gSDENoise,
)
from tests.envs.toy_envs import NestedCountingEnv, StatelessCounter
from tests.transforms._stateful_envs import LivesEnv

BATCHES = [(), (1,), (7,), (3, 4)]
MASKS = ["none", "all", "random"]


def _row_mask(shape, mode: str, seed: int = 0) -> torch.Tensor | None:
    if mode == "none":
        return None
    if mode == "all":
        return torch.ones(shape, dtype=torch.bool)
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(shape, generator=g) < 0.5
    if m.numel() > 1:  # make sure both kinds of rows exist
        flat = m.view(-1)
        flat[0], flat[-1] = True, False
    return m


def _where(mask, a, b):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if mask is None:
        return a.expand(torch.broadcast_shapes(a.shape, b.shape))
    m = mask.reshape(*mask.shape, *([1] * (max(a.ndim, b.ndim) - mask.ndim)))
    return torch.where(m, a, b)


def _flat_env(batch):
    return TransformedEnv(
        StatelessCounter(batch_size=batch, max_count=100),
        Compose(
            StepCounter(),
            RewardSum(),
            InitTracker(),
            CatFrames(3, dim=-1, in_keys=["observation"], out_keys=["stack"]),
            TimeMaxPool(in_keys=["observation"], out_keys=["pool"], T=2),
            TargetReturn(100.0),
            TensorDictPrimer(hidden=Unbounded((2,)), default_value=-1.0),
        ),
    )


def _steps(env, td, n, action=1):
    for _ in range(n):
        shape = env.full_action_spec[env.action_key].shape
        td[env.action_key] = torch.full(shape, action, dtype=torch.long)
        _, td = env.step_and_maybe_reset(td)
    return td


@pytest.mark.parametrize("mode", MASKS)
@pytest.mark.parametrize("batch", BATCHES)
def test_partial_reset_row_by_row(batch, mode):
    env = _flat_env(batch)
    td = _steps(env, env.reset(), 3)  # state 3, obs 2, 4, 6
    td["hidden"] = torch.full((*batch, 2), 5.0)
    mask = _row_mask(torch.Size(batch), mode)
    inp = td.clone()
    if mask is not None:
        inp["_reset"] = mask.unsqueeze(-1)
    out = env.reset(inp)
    assert "_reset" not in out.keys()
    exp = {
        "state": _where(mask, torch.zeros(*batch, 1), torch.full((*batch, 1), 3.0)),
        "step_count": _where(mask, torch.zeros(*batch, 1, dtype=torch.long), torch.full((*batch, 1), 3)),
        "episode_reward": _where(mask, torch.zeros(*batch, 1), torch.full((*batch, 1), 6.0)),
        "is_init": _where(mask, torch.ones(*batch, 1, dtype=torch.bool), torch.zeros(*batch, 1, dtype=torch.bool)),
        "stack": _where(mask, torch.zeros(*batch, 3), torch.tensor([2.0, 4.0, 6.0]).expand(*batch, 3)),
        "pool": _where(mask, torch.zeros(*batch, 1), torch.full((*batch, 1), 6.0)),
        "target_return": _where(mask, torch.full((*batch, 1), 100.0), torch.full((*batch, 1), 94.0)),
        "hidden": _where(mask, torch.full((*batch, 2), -1.0), torch.full((*batch, 2), 5.0)),
    }
    for key, value in exp.items():
        assert torch.equal(out[key], value.to(out[key].dtype)), (key, out[key], value)
    # one more step: the buffers of the rows that were not reset were kept
    out["action"] = torch.ones(batch, dtype=torch.long)
    nxt = env.step(out)["next"]
    exp = {
        "step_count": _where(mask, torch.ones(*batch, 1, dtype=torch.long), torch.full((*batch, 1), 4)),
        "episode_reward": _where(mask, torch.ones(*batch, 1), torch.full((*batch, 1), 10.0)),
        "is_init": torch.zeros(*batch, 1, dtype=torch.bool),
        "stack": _where(
            mask, torch.tensor([0.0, 0.0, 2.0]).expand(*batch, 3), torch.tensor([4.0, 6.0, 8.0]).expand(*batch, 3)
        ),
        "pool": _where(mask, torch.full((*batch, 1), 2.0), torch.full((*batch, 1), 8.0)),
        "target_return": _where(mask, torch.full((*batch, 1), 99.0), torch.full((*batch, 1), 90.0)),
        "hidden": _where(mask, torch.full((*batch, 2), -1.0), torch.full((*batch, 2), 5.0)),
    }
    for key, value in exp.items():
        assert torch.equal(nxt[key], value.to(nxt[key].dtype)), (key, nxt[key], value)


def _nested_env(batch):
    return TransformedEnv(
        NestedCountingEnv(batch_size=batch, n_agents=3, max_count=100),
        Compose(
            StepCounter(),
            RewardSum(),
            InitTracker(),
            CatFrames(3, dim=-1, in_keys=[("agents", "obs")], out_keys=[("agents", "stack")]),
        ),
    )


@pytest.mark.parametrize("level", ["agents", "root"])
@pytest.mark.parametrize("mode", MASKS)
@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_nested_done_levels_partial_reset(batch, mode, level):
    env = _nested_env(batch)
    A = (*batch, 3)
    td = _steps(env, env.reset(), 3, action=0)  # agents obs 3, stack [1,1,2,2,3,3]
    if level == "agents":
        amask = _row_mask(torch.Size(A), mode, seed=1)
        rmask = None if mode == "none" else torch.ones(batch, dtype=torch.bool)  # root level: full
        inp = td.clone()
        if amask is not None:
            inp["agents", "_reset"] = amask.unsqueeze(-1)
    else:
        rmask = _row_mask(torch.Size(batch), mode, seed=2)
        amask = None if rmask is None else rmask.unsqueeze(-1).expand(A)
        inp = td.clone()
        if rmask is not None:
            inp["_reset"] = rmask.unsqueeze(-1)
            inp["agents", "_reset"] = torch.zeros(*A, 1, dtype=torch.bool)  # annihilated
    out = env.reset(inp)
    assert torch.equal(
        out["agents", "step_count"], _where(amask, torch.zeros(*A, 1, dtype=torch.long), torch.full((*A, 1), 3))
    )
    assert torch.equal(
        out["step_count"], _where(rmask, torch.zeros(*batch, 1, dtype=torch.long), torch.full((*batch, 1), 3))
    )
    assert torch.equal(
        out["agents", "is_init"],
        _where(amask, torch.ones(*A, 1, dtype=torch.bool), torch.zeros(*A, 1, dtype=torch.bool)),
    )
    out["agents", "action"] = torch.zeros(A, dtype=torch.long)
    nxt = env.step(out)["next"]
    stack_reset = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 1.0]).expand(*A, 6)
    stack_kept = torch.tensor([2.0, 2.0, 3.0, 3.0, 4.0, 4.0]).expand(*A, 6)
    assert torch.equal(nxt["agents", "stack"], _where(amask, stack_reset, stack_kept))
    assert torch.equal(nxt["agents", "episode_reward"], _where(amask, torch.ones(*A, 1), torch.full((*A, 1), 10.0)))
    assert torch.equal(
        nxt["agents", "step_count"], _where(amask, torch.ones(*A, 1, dtype=torch.long), torch.full((*A, 1), 4))
    )
    assert torch.equal(
        nxt["step_count"], _where(rmask, torch.ones(*batch, 1, dtype=torch.long), torch.full((*batch, 1), 4))
    )


# ---------------------------------------------------------------------------------- spec contract
FACTORIES = {
    "StepCounter": lambda: StepCounter(max_steps=3),
    "RewardSum": RewardSum,
    "InitTracker": InitTracker,
    "CatFrames": lambda: CatFrames(4, dim=-1, in_keys=["observation"]),
    "CatFramesConstant": lambda: CatFrames(
        2, dim=-1, in_keys=["observation"], out_keys=["s"], padding="constant", padding_value=-1.0
    ),
    "VecNorm": lambda: VecNorm(in_keys=["observation", "reward"]),
    "TimeMaxPool": lambda: TimeMaxPool(in_keys=["observation"], T=3),
    "TargetReturn": lambda: TargetReturn(10.0),
    "TensorDictPrimer": lambda: TensorDictPrimer(hidden=Unbounded((2,)), random=True),
    "gSDENoise": lambda: gSDENoise(state_dim=3, action_dim=2),
    "FrameSkipTransform": lambda: FrameSkipTransform(2),
    "NoopResetEnv": lambda: NoopResetEnv(3),
}


@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_check_env_specs(name, batch):
    torch.manual_seed(0)
    env = TransformedEnv(StatelessCounter(batch_size=[batch], max_count=3), FACTORIES[name]())
    check_env_specs(env)


@pytest.mark.parametrize("batch", [1, 1000])
def test_check_env_specs_end_of_life_and_composition(batch):
    check_env_specs(TransformedEnv(LivesEnv(batch_size=[batch]), EndOfLifeTransform()))
    env = TransformedEnv(
        StatelessCounter(batch_size=[batch], max_count=3),
        Compose(
            *[
                FACTORIES[n]()
                for n in ("NoopResetEnv", "StepCounter", "RewardSum", "InitTracker", "CatFrames", "VecNorm")
            ]
        ),
    )
    check_env_specs(env)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_check_env_specs_nested(batch):
    env = TransformedEnv(
        NestedCountingEnv(batch_size=batch),
        Compose(
            StepCounter(max_steps=2),
            RewardSum(),
            InitTracker(),
            CatFrames(2, dim=-1, in_keys=[("agents", "obs")], out_keys=[("agents", "stack")]),
            VecNorm(in_keys=[("agents", "obs")], out_keys=[("agents", "normed")]),
            TimeMaxPool(in_keys=[("agents", "obs")], out_keys=[("agents", "pool")], T=2),
        ),
    )
    check_env_specs(env)


def test_vecnorm_partial_reset_statistics_reference_equals_cpu_rows():
    """The masked reset update (the reference: compiled graphs, devices) adds exactly the reset
    rows, like the eager CPU row gather; values in the rows not reset never reach the sums."""
    x = torch.randn(9, 3, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([True, False, False, True, True, False, False, False, True])
    x[~mask] = float("inf")  # rows not reset may hold anything; they must not leak
    sums = {}
    for backend in ("cpu", "reference"):
        s, ss, c = torch.ones(3), torch.full((3,), 2.0), torch.tensor(2.0)
        with force_backend(backend):
            VecNorm._reset_update(x, s, ss, c, mask, 1)
        sums[backend] = (s, ss, c)
    for got, expected in zip(sums["reference"], sums["cpu"]):
        torch.testing.assert_close(got, expected)
    assert float(sums["reference"][2]) == 2.0 + int(mask.sum())
    assert torch.isfinite(sums["reference"][0]).all()
