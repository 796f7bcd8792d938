"""JumanjiEnv/JumanjiWrapper against the real Jumanji (JAX, CPU): TorchRL's documented Snake layout,
stateless steps equal to Jumanji's, partial resets, seeding, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("jax", reason="jax is not installed (pip install 'gpusim[jumanji]')")
pytest.importorskip("jumanji", reason="jumanji is not installed (pip install 'gpusim[jumanji]')")

import jax  # noqa: E402
import jumanji  # noqa: E402

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import JumanjiEnv, JumanjiWrapper  # noqa: E402
from gpusim.specs import Categorical, OneHot  # noqa: E402


@pytest.fixture(scope="module")
def env():
    return JumanjiEnv("Snake-v1", batch_size=[3], seed=0)


def test_snake_layout_matches_torchrl_docs(env):
    # TorchRL's documented Snake layout: observation fields at the root, the state nested
    td = env.rand_step(env.reset())
    assert isinstance(env.action_spec, Categorical) and td["action"].dtype == torch.int32
    nxt = td["next"]
    assert nxt["grid"].shape == (3, 12, 12, 5) and nxt["grid"].dtype == torch.float32
    assert nxt["action_mask"].shape == (3, 4) and nxt["action_mask"].dtype == torch.bool
    assert nxt["step_count"].shape == (3,) and nxt["step_count"].dtype == torch.int32
    assert nxt["reward"].shape == (3, 1) and nxt["done"].shape == (3, 1) and nxt["terminated"].shape == (3, 1)
    state = nxt["state"]
    assert state["body"].shape == (3, 12, 12) and state["body"].dtype == torch.bool
    assert state["fruit_position", "row"].shape == (3,)
    assert state["key"].shape == (3, 2) and state["key"].dtype == torch.int32
    check_env_specs(env, seed=0)


def test_step_equals_jumanji(env):
    raw = jumanji.make("Snake-v1")
    raw_step = jax.jit(jax.vmap(raw.step))  # compiled once (op by op it is slow)
    td = env.reset()
    state = env._state_plan.to_jax(td["state"])
    torch.manual_seed(0)
    for _ in range(6):
        td = env.rand_action(td)
        state, ts = raw_step(state, jax.numpy.asarray(td["action"].numpy()))
        td = env.step(td)
        nxt = td["next"]
        assert np.array_equal(nxt["grid"].numpy(), np.asarray(ts.observation.grid))
        assert np.array_equal(nxt["reward"].squeeze(-1).numpy(), np.asarray(ts.reward))
        assert np.array_equal(nxt["done"].squeeze(-1).numpy(), np.asarray(ts.step_type == 2))
        td = env._step_mdp(td)
        state = env._state_plan.to_jax(td["state"])  # continue from the wrapper's (auto-reset) state


def test_partial_reset_and_seeding(env):
    env.set_seed(1)
    td = env.reset()
    for _ in range(2):
        td = env._step_mdp(env.step(td.set("action", torch.zeros(3, dtype=torch.int32))))
    out = env.reset(td.clone().set("_reset", torch.tensor([[True], [False], [False]])))
    assert torch.equal(out["state", "step_count"], torch.tensor([0, 2, 2], dtype=torch.int32))
    assert torch.equal(out["grid"][1:], td["grid"][1:])

    def run():
        env.set_seed(5)
        torch.manual_seed(0)
        return env.rollout(5, break_when_any_done=False)

    assert (run() == run()).all()


def test_one_hot_actions_and_errors():
    env = JumanjiWrapper(jumanji.make("Snake-v1"), categorical_action_encoding=False, batch_size=[2], seed=0)
    assert isinstance(env.action_spec, OneHot) and env.action_spec.shape == (2, 4)
    assert env.rollout(2, break_when_any_done=False)["next", "grid"].shape == (2, 2, 12, 12, 5)
    with pytest.raises(ValueError, match="unknown Jumanji env"):
        JumanjiEnv("Nope-v0")
    with pytest.raises(TypeError, match="jumanji.Environment"):
        JumanjiWrapper(object())
    with pytest.raises(ValueError, match="integer seed"):
        env.set_seed(None)


@pytest.mark.parametrize("name", ["Snake-v1", "Game2048-v1"])
def test_packed_transfer_equals_per_leaf_reference(name):
    """The default transfer (one buffer per dtype and direction: state, observation, reward and
    done) gives the per-leaf DLPack path's data bit for bit, through auto-resets and a state
    edited in place (the cached JAX buffers are then rebuilt from the tensors)."""
    packed = JumanjiEnv(name, batch_size=[4], seed=0)
    ref = JumanjiEnv(name, batch_size=[4], seed=0)
    ref._set_packed(False)
    outs = []
    for env in (packed, ref):
        torch.manual_seed(0)
        data = env.rollout(25, break_when_any_done=False)
        td = env._step_mdp(data[:, -1])
        td["state", "step_count"].add_(1)  # in place: the cached buffers are stale
        torch.manual_seed(1)
        outs.append((data, env.rand_step(td)))
    for a, b in zip(*outs):
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        for key in b.keys(True, True):
            x, y = a.get(key), b.get(key)
            assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y), key
    assert outs[0][0]["next", "done"].any() or name != "Snake-v1"  # auto-resets were exercised
