"""ModelBasedEnvBase, DreamerEnv and DreamerDecoder: rollouts through a small (untrained) world model,
batched, with the model as the transition; specs, resets from data, gradients, functional params."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from gpusim import PendulumEnv
from gpusim.envs.checks import check_env_specs
from gpusim.envs.model_based import DreamerEnv, ModelBasedEnvBase
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms import DreamerDecoder, TensorDictPrimer, TransformedEnv

B, PRIOR, BELIEF, ACT = 6, 4, 8, 2


class Prior(torch.nn.Module):
    """A tiny RSSM prior: belief <- GRU(state, action); state <- MLP(belief)."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(PRIOR + ACT, BELIEF)
        self.gru = torch.nn.GRUCell(BELIEF, BELIEF)
        self.out = torch.nn.Linear(BELIEF, PRIOR)

    def forward(self, state, belief, action):
        h = torch.relu(self.inp(torch.cat([state, action], -1)))
        belief = self.gru(h, belief)
        return torch.tanh(self.out(belief)), belief


def world_model():
    torch.manual_seed(0)
    prior = TensorDictModule(Prior(), ["state", "belief", "action"], ["state", "belief"])
    reward = TensorDictModule(torch.nn.Linear(PRIOR + BELIEF, 1), ["state_belief"], ["reward"])
    cat = TensorDictModule(lambda s, b: torch.cat([s, b], -1), ["state", "belief"], ["state_belief"])
    return TensorDictSequential(prior, cat, reward)


def dreamer(**kwargs):
    env = DreamerEnv(world_model(), (PRIOR,), (BELIEF,), batch_size=[B], **kwargs)
    env.action_spec = Bounded(-1.0, 1.0, shape=(B, ACT))
    return env


def test_imagination_rollout_runs_the_world_model():
    env = dreamer()
    check_env_specs(env, seed=0)
    start = TensorDict({"state": torch.randn(B, PRIOR), "belief": torch.randn(B, BELIEF)}, [B])
    td = env.reset(start.clone())
    assert torch.equal(td["state"], start["state"]) and not td["done"].any()
    data = env.rollout(12, auto_reset=False, tensordict=td)
    assert data.shape == (B, 12) and not data["next", "done"].any()  # the whole horizon, never done
    assert set(data["next"].keys()) >= {"state", "belief", "reward"} and "state_belief" not in data["next"].keys()
    # step t is the world model applied to step t's inputs
    step = data[:, 3]
    expected = world_model()(step.select("state", "belief", "action").clone())
    assert torch.allclose(data["next", "belief"][:, 3], expected["belief"], atol=1e-6)
    assert torch.allclose(data["next", "reward"][:, 3], expected["reward"], atol=1e-6)
    assert torch.equal(data["state"][:, 4], data["next", "state"][:, 3])
    assert env.maybe_reset(td) is td


def test_gradients_flow_through_imagination():
    env = dreamer()
    policy = TensorDictModule(torch.nn.Linear(PRIOR, ACT), ["state"], ["action"])
    td = env.reset(TensorDict({"state": torch.randn(B, PRIOR), "belief": torch.zeros(B, BELIEF)}, [B]))
    data = env.rollout(5, policy=policy, auto_reset=False, tensordict=td)
    data["next", "reward"].sum().backward()
    assert policy.module.weight.grad is not None and policy.module.weight.grad.abs().sum() > 0


def test_decoder_transform_and_decode_obs():
    decoder = TensorDictModule(torch.nn.Linear(PRIOR + BELIEF, 3 * 4 * 4), ["state_belief"], ["reco"])
    full = TensorDictSequential(
        TensorDictModule(lambda s, b: torch.cat([s, b], -1), ["state", "belief"], ["state_belief"]), decoder
    )
    env = dreamer(obs_decoder=full)
    decoded = env.decode_obs(env.reset())
    assert decoded["reco"].shape == (B, 48)
    again = env.decode_obs(env.rand_action(env.reset()), compute_latents=True)
    assert again["reco"].shape == (B, 48)
    tenv = TransformedEnv(env, DreamerDecoder())
    assert tenv.observation_spec["reco"].shape == (B, 48)
    data = tenv.rollout(3)
    assert data["next", "reco"].shape == (B, 3, 48) and data["reco"].shape == (B, 3, 48)
    with pytest.raises(ValueError, match="obs_decoder"):
        dreamer().decode_obs(env.reset())


def test_specs_from_a_real_env_and_functional_params():
    real = TransformedEnv(
        PendulumEnv(batch_size=[B]),
        TensorDictPrimer(state=Unbounded((B, PRIOR)), belief=Unbounded((B, BELIEF))),
    )
    env = DreamerEnv(world_model(), (PRIOR,), (BELIEF,), batch_size=[B])
    env.set_specs_from_env(real)
    assert env.action_spec.shape == (B, 1) and set(env.state_spec.keys()) == {"state", "belief"}
    with pytest.raises(ValueError, match="batch_size"):
        dreamer().set_specs_from_env(PendulumEnv(batch_size=[2]))

    class Linear(ModelBasedEnvBase):
        def __init__(self, model, **kwargs):
            super().__init__(model, batch_size=[B], **kwargs)
            self.observation_spec = Composite(x=Unbounded((B, 2)), shape=(B,))
            self.state_spec = Composite(x=Unbounded((B, 2)), shape=(B,))
            self.action_spec = Unbounded((B, 2))

        def _reset(self, tensordict=None, **kwargs):
            return TensorDict({"x": torch.ones(B, 2)}, [B])

    lin = torch.nn.Linear(2, 2)
    model = TensorDictModule(lambda x, a: lin(x) + a, ["x", "action"], ["x"])
    td = Linear(model).reset().set("action", torch.zeros(B, 2))
    zeros = {"module.weight": torch.zeros(2, 2), "module.bias": torch.zeros(2)}
    functional = Linear(TensorDictModule(lin, ["x"], ["x"]), params=zeros)
    assert torch.equal(functional.step(td.clone())["next", "x"], torch.zeros(B, 2))
    assert not torch.equal(Linear(TensorDictModule(lin, ["x"], ["x"])).step(td.clone())["next", "x"], torch.zeros(B, 2))
    with_reward = TensorDictModule(lambda x, a: (lin(x) + a, x.sum(-1, keepdim=True)), ["x", "action"], ["x", "reward"])
    check_env_specs(Linear(with_reward), seed=0)
    with pytest.raises(TypeError, match="callable"):
        Linear(3)
