"""The peers of ``gpusim compare``: what each supports, the action sampler, the TorchRL
contender's physics against gpusim's, and a tiny run of every installed peer (the peers that are
not installed here run in CI's peers environment, see .ci/run)."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest
import torch

from gpusim.bench.contenders import GPUSIM_COMPILED, GPUSIM_EAGER, BenchOptions
from gpusim.bench.envs import parse_env_id
from gpusim.bench.peers import (
    BRAX,
    ENVPOOL,
    GYMNASIUM,
    GYMNAX,
    MINATAR,
    PEERS,
    SYNC_VECTOR_MAX_BATCH,
    TORCHRL,
    VMAS,
    gymnax_id,
    minatar_id,
    numpy_action_sampler,
)
from gpusim.envs.native import CartPoleEnv

OPTS = BenchOptions(device="cpu", seed=0, threads=1)


def _installed(contender) -> bool:
    return contender.missing() is None


def test_numpy_action_sampler() -> None:
    sample = numpy_action_sampler(gym.spaces.Discrete(3, start=2), batch=64, seed=0)
    a = sample()
    assert a.shape == (64,) and a.min() >= 2 and a.max() <= 4
    box = gym.spaces.Box(low=np.array([-1.0, 0.0], np.float32), high=np.array([1.0, 3.0], np.float32))
    b = numpy_action_sampler(box, batch=32, seed=0)()
    assert b.shape == (32, 2) and b.dtype == np.float32
    assert (b >= box.low).all() and (b <= box.high).all()
    with pytest.raises(TypeError, match="no random batched actions for the action space MultiBinary"):
        numpy_action_sampler(gym.spaces.MultiBinary(3), batch=2, seed=0)


@pytest.mark.parametrize(
    "contender,env_id,reason",
    [
        (TORCHRL, "Pendulum-v1", "no TorchRL env with the same physics for Pendulum-v1"),
        (GYMNASIUM, "TicTacToe-v0", "no TicTacToe-v0 in gymnasium"),
        (GYMNASIUM, "vmas:simple_spread", "no vmas:simple_spread in gymnasium"),
        (ENVPOOL, "TicTacToe-v0", "no TicTacToe-v0 in EnvPool"),
        (GYMNAX, "gym:CartPole-v1", "no gym:CartPole-v1 in gymnax"),
        (VMAS, "CartPole-v1", "no CartPole-v1 in VMAS (vmas:<scenario> and MPE/<scenario>-v0 only)"),
        (BRAX, "Acrobot-v1", "no Brax counterpart of Acrobot-v1"),
        (GPUSIM_COMPILED, "vmas:simple_spread", "only native envs compile"),
        (GYMNAX, "MinAtar/Breakout-v0", "its MinAtar games have the minimal action set only: the -v1 ids"),
        (GYMNASIUM, "MinAtar/Breakout-v1", "no MinAtar/Breakout-v1 in gymnasium"),
        (MINATAR, "CartPole-v1", "no CartPole-v1 in the minatar package"),
        (MINATAR, "MPE/simple-v0", "no MPE/simple-v0 in the minatar package"),
    ],
)
def test_skip_reasons(contender, env_id, reason) -> None:
    assert reason in contender.skip_reason(parse_env_id(env_id), 8, OPTS)


def test_supported_pairs_and_limits() -> None:
    cartpole = parse_env_id("CartPole-v1")
    for contender in (GPUSIM_EAGER, GPUSIM_COMPILED, TORCHRL, GYMNASIUM, GYMNAX, BRAX):
        assert contender.skip_reason(cartpole, 8, OPTS) is None, contender.name
    pendulum = parse_env_id("Pendulum-v1")  # SyncVectorEnv in gymnasium: large batches skipped
    assert GYMNASIUM.skip_reason(pendulum, 4096, OPTS) is None
    assert "batches above 4096 are skipped" in GYMNASIUM.skip_reason(pendulum, 4097, OPTS)
    with_t = BenchOptions(transforms=("RewardSum",))
    assert GYMNASIUM.skip_reason(cartpole, 8, with_t) == "has no transforms (skipped with --transforms)"
    assert TORCHRL.skip_reason(cartpole, 8, with_t) is None and GPUSIM_EAGER.skip_reason(cartpole, 8, with_t) is None


def test_minatar_ids_of_the_peers() -> None:
    for game in ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"):
        v0, v1 = parse_env_id(f"MinAtar/{game}-v0"), parse_env_id(f"MinAtar/{game}-v1")
        assert minatar_id(v0) == f"MinAtar/{game}-v0" and minatar_id(v1) == f"MinAtar/{game}-v1"
        assert gymnax_id(v1) == f"{game}-MinAtar" and gymnax_id(v0) is None
        assert GYMNAX.skip_reason(v1, 4096, OPTS) is None and MINATAR.skip_reason(v0, 8, OPTS) is None
    breakout = parse_env_id("MinAtar/Breakout-v1")
    assert MINATAR.skip_reason(breakout, SYNC_VECTOR_MAX_BATCH, OPTS) is None
    assert "batches above 4096 are skipped" in MINATAR.skip_reason(breakout, SYNC_VECTOR_MAX_BATCH + 1, OPTS)
    assert gymnax_id(parse_env_id("Acrobot-v1")) == "Acrobot-v1" and minatar_id(parse_env_id("Acrobot-v1")) is None
    assert MINATAR.label(BenchOptions(device="cuda")) == "minatar (cpu)"


def test_host_only_peers_say_where_they_run() -> None:
    cuda = BenchOptions(device="cuda")
    assert GYMNASIUM.label(cuda) == "gymnasium (cpu)" and ENVPOOL.label(cuda) == "envpool (cpu)"
    assert GYMNASIUM.label(OPTS) == "gymnasium" and TORCHRL.label(cuda) == "torchrl"


def test_missing_peer_says_what_to_install() -> None:
    for peer in PEERS:
        line = peer.missing()
        if line is not None:
            assert line.startswith("not installed (") and "pip install" in line


# (the peers that load JAX, EnvPool, gymnax and Brax, run in tests/jax/test_bench_jax_peers.py: a
# process of their own, apart from the tests that fork)
_RUNS = [
    (GYMNASIUM, "CartPole-v1"),
    (GYMNASIUM, "MountainCarContinuous-v0"),
    (VMAS, "vmas:simple_spread"),
    (TORCHRL, "CartPole-v1"),
    (TORCHRL, "vmas:simple_spread"),
    (MINATAR, "MinAtar/Breakout-v1"),
    (MINATAR, "MinAtar/Seaquest-v0"),
]


def run_peer(contender, env_id: str) -> None:
    """A tiny run of ``contender`` on ``env_id`` (skipped when the peer is not installed)."""
    if not _installed(contender):
        pytest.skip(f"{contender.peer} is not installed here ({contender.missing()})")
    runner = contender.build(parse_env_id(env_id), 4, OPTS)
    assert runner.timed(3) > 0 and runner.timed(3) > 0  # the second run reuses what the first compiled
    compiled = runner.compile_seconds()
    assert compiled is None or compiled > 0
    runner.close()


@pytest.mark.parametrize("contender,env_id", _RUNS, ids=[f"{c.peer}-{e}" for c, e in _RUNS])
def test_peer_runs(contender, env_id) -> None:
    run_peer(contender, env_id)


@pytest.mark.skipif(importlib.util.find_spec("torchrl") is None, reason="torchrl is a peer (gpusim[peers])")
def test_torchrl_cartpole_has_gpusims_physics() -> None:
    """The TorchRL contender and gpusim's CartPole step the same states to the same states."""
    from gpusim.bench.torchrl_cartpole import make_torchrl_cartpole

    n = 256
    gen = torch.Generator().manual_seed(0)
    state = (torch.rand(n, 4, generator=gen) - 0.5) * torch.tensor([4.6, 4.0, 0.4, 4.0])
    action = torch.randint(0, 2, (n,), generator=gen)
    mine = CartPoleEnv(batch_size=[n], seed=0)
    td = mine.reset()
    td["state"], td["action"] = state.clone(), action.clone()
    ours = mine.step(td)["next"]
    theirs_env = make_torchrl_cartpole(n, max_steps=None)
    td = theirs_env.reset()
    td["state"], td["action"] = state.clone(), action.clone()
    theirs = theirs_env.step(td)["next"]
    torch.testing.assert_close(ours["observation"], theirs["observation"], rtol=1e-5, atol=1e-6)
    assert torch.equal(ours["terminated"], theirs["terminated"]) and ours["terminated"].any()
    torch.testing.assert_close(ours["reward"], theirs["reward"])
    limited = make_torchrl_cartpole(4)
    assert type(limited.transform).__name__ == "StepCounter" and limited.transform.max_steps == 500
