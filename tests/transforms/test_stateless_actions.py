"""ActionMask and DiscreteActionProjection, checked on the actions the base env receives."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.utils import step_mdp
from gpusim.transforms import ActionMask, DiscreteActionProjection, TransformedEnv
from tests.transforms._stateless_envs import MaskedEnv, VectorEnv

BATCHES = [(), (1,), (7,), (3, 4)]


def _index(action, one_hot):
    return action.long().argmax(-1) if one_hot else action


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("one_hot", [False, True])
@pytest.mark.parametrize("grow", [True, False])
def test_action_mask_random_actions_are_legal(batch, one_hot, grow):
    torch.manual_seed(0)
    env = TransformedEnv(MaskedEnv(batch, n=4, grow=grow, one_hot=one_hot), ActionMask())
    td = env.reset()
    for _ in range(12):
        mask = td["action_mask"].clone()
        td = env.rand_action(td)
        stepped, td = env.step_and_maybe_reset(td)
        received = _index(env.base_env.last_input["action"], one_hot)
        assert mask.gather(-1, received.unsqueeze(-1)).all()
        # the spec mask follows the env's latest mask
        assert torch.equal(env.action_spec.mask.expand_as(td["action_mask"]), td["action_mask"])


@pytest.mark.parametrize("batch", [(5,), (2, 3)])
def test_action_mask_partial_reset_keeps_other_rows(batch):
    env = TransformedEnv(MaskedEnv(batch, n=4, grow=False), ActionMask())
    td = env.reset()
    td.set("action", torch.zeros(batch, dtype=torch.long))
    td = env.step(td)
    td = step_mdp(td)
    after_step = td["action_mask"].clone()
    assert not after_step[..., 0].any()
    reset = torch.zeros(*batch, 1, dtype=torch.bool)
    reset.view(-1)[0] = True
    td.set("_reset", reset)
    td = env.reset(td)
    mask = env.action_spec.mask.expand(*batch, 4)
    rows = reset.squeeze(-1)
    assert mask[rows].all()  # the reset row is fresh
    assert torch.equal(mask[~rows], after_step[~rows])  # the others keep their mask


def test_action_mask_errors_when_attached():
    with pytest.raises(TypeError, match="Bounded spec, which cannot be masked"):
        TransformedEnv(VectorEnv((2,)), ActionMask(mask_key="bounded"))
    with pytest.raises(KeyError, match="'legal'"):
        TransformedEnv(MaskedEnv((2,)), ActionMask(mask_key="legal"))
    with pytest.raises(KeyError, match="'act'"):
        TransformedEnv(MaskedEnv((2,)), ActionMask(action_key="act"))


def test_action_mask_without_env_raises():
    with pytest.raises(RuntimeError, match="needs an environment"):
        ActionMask()(TensorDict({"action_mask": torch.ones(3, dtype=torch.bool)}, []))


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("one_hot", [False, True])
def test_discrete_action_projection_base_env_gets_legal_actions(batch, one_hot):
    torch.manual_seed(0)
    env = TransformedEnv(MaskedEnv(batch, n=3, one_hot=one_hot), DiscreteActionProjection(3, 7))
    assert env.action_spec.n == 7
    assert env.action_spec.shape == ((*batch, 7) if one_hot else batch)
    seen = set()
    for a in range(7):
        td = env.reset()
        index = torch.full(batch, a, dtype=torch.long)
        td.set("action", torch.nn.functional.one_hot(index, 7).bool() if one_hot else index)
        env.step(td)
        received = env.base_env.last_input["action"]
        if one_hot:
            assert received.shape == (*batch, 3) and received.sum(-1).eq(1).all()
        idx = _index(received, one_hot)
        assert ((idx >= 0) & (idx < 3)).all()
        if a < 3:
            assert idx.eq(a).all()  # in-range actions are kept
        else:
            seen.update(idx.flatten().tolist())
    assert seen <= {0, 1, 2}


def test_discrete_action_projection_random_replacement_is_uniform():
    torch.manual_seed(0)
    t = DiscreteActionProjection(3, 10, include_forward=False)
    t._one_hot = False
    out = t.inv(TensorDict({"action": torch.full((30000,), 9)}, [30000]))["action"]
    counts = torch.bincount(out, minlength=3).float() / 30000
    assert ((counts - 1 / 3).abs() < 0.02).all()


def test_discrete_action_projection_forward_pads_stored_actions():
    t = DiscreteActionProjection(2, 5)
    td = TensorDict({"action": torch.tensor([[False, True], [True, False]])}, [2])
    out = t(td)["action"]
    assert out.shape == (2, 5) and torch.equal(out.long().argmax(-1), torch.tensor([1, 0]))
    assert DiscreteActionProjection(2, 5, include_forward=False)(TensorDict({"action": torch.ones(2, 2)}, [2]))[
        "action"
    ].shape == (2, 2)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: DiscreteActionProjection(5, 3), "num_actions_effective=5 > max_actions=3"),
        (lambda: DiscreteActionProjection(0, 3), "got 0"),
    ],
)
def test_discrete_action_projection_bad_sizes(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_discrete_action_projection_size_mismatch_when_attached():
    with pytest.raises(ValueError, match="n=4, but num_actions_effective=3"):
        TransformedEnv(MaskedEnv((2,), n=4), DiscreteActionProjection(3, 6))
    with pytest.raises(TypeError, match="Bounded"):
        TransformedEnv(VectorEnv((2,)), DiscreteActionProjection(1, 6))


def test_action_mask_without_env_raises_even_without_a_mask_entry():
    with pytest.raises(RuntimeError, match="parent cannot be None"):
        ActionMask()._call(TensorDict({}, []))
    with pytest.raises(RuntimeError, match="parent cannot be None"):
        ActionMask()(TensorDict({"action_mask": torch.ones(3, dtype=torch.bool)}, []))
