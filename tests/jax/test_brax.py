"""BraxEnv/BraxWrapper against the real Brax (JAX, CPU): TorchRL's documented layout, stateless steps
equal to Brax's, DLPack without copies, partial resets, seeding, gradients through requires_grad."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("jax", reason="jax is not installed (pip install 'gpusim[brax]')")
pytest.importorskip("brax", reason="brax is not installed (pip install 'gpusim[brax]')")

import brax.envs  # noqa: E402
import jax  # noqa: E402

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import BraxEnv, BraxWrapper  # noqa: E402
from gpusim.specs import Bounded  # noqa: E402


@pytest.fixture(scope="module")
def env():
    return BraxEnv("fast", batch_size=[3], seed=0)


def test_layout_matches_torchrl_docs(env):
    td = env.rand_step(env.reset())
    assert isinstance(env.action_spec, Bounded) and env.action_spec.shape == (3, 1)
    assert td["next", "observation"].shape == (3, 2) and td["next", "reward"].shape == (3, 1)
    assert td["next", "done"].shape == (3, 1) and td["next", "terminated"].shape == (3, 1)
    assert set(env.done_keys) == {"done", "terminated"}
    assert ("state", "pipeline_state", "q") in env.state_spec.keys(True, True)
    assert ("state", "obs") in env.observation_spec.keys(True, True)
    assert td["next", "state", "pipeline_state", "x", "pos"].shape == (3, 3)
    check_env_specs(env, seed=0)


def test_step_equals_brax_and_shares_memory(env):
    td = env.reset()
    raw = brax.envs.get_environment("fast")
    action = torch.tensor([[0.5], [-0.5], [1.0]])
    state = jax.vmap(raw.reset)(jax.random.split(jax.random.PRNGKey(0), 3))
    for _ in range(3):
        td = env.step(td.set("action", action))
        state = jax.vmap(raw.step)(state, jax.numpy.asarray(action.numpy()))
        assert np.allclose(td["next", "observation"].numpy(), np.asarray(state.obs))
        assert np.allclose(td["next", "reward"].squeeze(-1).numpy(), np.asarray(state.reward))
        td = env._step_mdp(td)
    # DLPack both ways without copies on the CPU: the tensors alias JAX's buffers
    from gpusim.envs.libs._jax import to_jax, to_torch

    arr = state.obs
    assert to_torch(arr).data_ptr() == arr.unsafe_buffer_pointer()
    t = torch.randn(3, 2)
    assert to_jax(t).unsafe_buffer_pointer() == t.data_ptr()


def test_partial_reset_keeps_other_rows(env):
    td = env.reset()
    for _ in range(3):
        td = env._step_mdp(env.step(td.set("action", torch.ones(3, 1))))
    moved = td["state", "pipeline_state", "x", "pos"].clone()
    assert moved.abs().sum() > 0
    out = env.reset(td.clone().set("_reset", torch.tensor([[False], [True], [False]])))
    pos = out["state", "pipeline_state", "x", "pos"]
    assert torch.equal(pos[[0, 2]], moved[[0, 2]]) and pos[1].abs().sum() == 0
    assert torch.equal(out["observation"][[0, 2]], td["observation"][[0, 2]])


def test_seeding_and_rollouts_repeat():
    a = BraxEnv("fast", batch_size=[2], seed=3)
    torch.manual_seed(7)
    r0 = a.rollout(4)  # the constructor's seed keys rollout()'s random actions
    a.set_seed(3)  # and set_seed with the same seed restarts them
    r1 = a.rollout(4)
    assert (r0 == r1).all()
    a.set_seed(3)
    torch.manual_seed(123)  # no effect on the env's data
    r2 = a.rollout(4)
    assert (r1 == r2).all()
    with pytest.raises(ValueError, match="integer seed"):
        a.set_seed(None)


def test_requires_grad_matches_jax():
    env = BraxEnv("fast", batch_size=[2], seed=0, requires_grad=True)
    td = env.reset()
    vel = td["state", "pipeline_state", "xd", "vel"].clone().requires_grad_(True)
    td["state", "pipeline_state", "xd", "vel"] = vel
    action = torch.ones(2, 1, requires_grad=True)
    out = env.step(td.set("action", action))["next"]
    out2 = env.step(env._step_mdp(td.set("next", out)).set("action", action))["next"]
    loss = out2["observation"].sum()
    loss.backward()

    raw = brax.envs.get_environment("fast")
    step = jax.vmap(raw.step)
    state0 = jax.vmap(raw.reset)(jax.random.split(jax.random.PRNGKey(0), 2))

    def f(v):
        s = state0.replace(pipeline_state=state0.pipeline_state.replace(xd=state0.pipeline_state.xd.replace(vel=v)))
        a = jax.numpy.ones((2, 1))
        return step(step(s, a), a).obs.sum()

    expected = jax.grad(f)(jax.numpy.asarray(vel.detach().numpy()))
    assert np.allclose(vel.grad.numpy(), np.asarray(expected))
    assert vel.grad.abs().sum() > 0
    assert action.grad is not None and action.grad.shape == (2, 1)


def test_errors():
    with pytest.raises(ValueError, match="unknown Brax env"):
        BraxEnv("no_such_env")
    with pytest.raises(TypeError, match="brax.envs.Env"):
        BraxWrapper(object())
    with pytest.raises(TypeError, match="unexpected keyword"):
        BraxWrapper(brax.envs.get_environment("fast"), from_pixels=True)


def _same_data(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in b.keys(True, True):
        x, y = a.get(key), b.get(key)
        assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y), key


def test_packed_transfer_equals_per_leaf_reference():
    """The default transfer (one buffer per dtype and direction) gives the per-leaf DLPack path's
    data bit for bit: rollouts with auto-resets, partial resets, and a state edited in place
    (the cached JAX buffers are then rebuilt from the tensors)."""
    packed = BraxEnv("fast", batch_size=[3], seed=0)
    ref = BraxEnv("fast", batch_size=[3], seed=0)
    ref._set_packed(False)
    assert packed._pack and not ref._pack
    assert not BraxEnv("fast", batch_size=[2], seed=0, requires_grad=True)._pack  # gradients: per leaf
    outs = []
    for env in (packed, ref):
        torch.manual_seed(0)
        data = env.rollout(30, break_when_any_done=False)
        td = env._step_mdp(data[:, -1])
        td = env.reset(td.set("_reset", torch.tensor([[True], [False], [True]])))
        td["state", "pipeline_state", "qd"].add_(0.25)  # in place: the cached buffers are stale
        steps = [env.step(td.set("action", torch.full((3, 1), 0.5)))]
        steps.append(env.step(env._step_mdp(steps[0]).set("action", torch.full((3, 1), -0.5))))
        outs.append((data, *steps))
    for a, b in zip(*outs):
        _same_data(a, b)
