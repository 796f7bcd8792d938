"""FiniteTensorDictCheck, RandomCropTensorDict, KLRewardTransform and the out-of-scope
pretrained-model transforms."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule

from gpusim.transforms import (
    Compose,
    FiniteTensorDictCheck,
    KLRewardTransform,
    ObservationNorm,
    R3MTransform,
    RandomCropTensorDict,
    TransformedEnv,
    VC1Transform,
    VIPRewardTransform,
    VIPTransform,
)
from tests.transforms._stateless_envs import VectorEnv

BATCHES = [(), (1,), (7,), (3, 4)]


# ---------------------------------------------------------------- FiniteTensorDictCheck
@pytest.mark.parametrize("batch", BATCHES)
def test_finite_check_passes_finite_data_and_names_the_bad_key(batch):
    env = TransformedEnv(VectorEnv(batch), FiniteTensorDictCheck())
    env.rollout(3)
    # an observation norm with an infinite scale produces inf at step time
    bad = TransformedEnv(
        VectorEnv(batch), Compose(ObservationNorm(0.0, float("inf"), in_keys=["bounded"]), FiniteTensorDictCheck())
    )
    with pytest.raises(ValueError, match="non-finite values at key 'bounded'"):
        bad.rollout(3)


def test_finite_check_offline_nested_key():
    td = TensorDict({"a": torch.ones(2), "g": {"b": torch.tensor([1.0, float("-inf")])}}, [2])
    with pytest.raises(ValueError, match=r"\('g', 'b'\)"):
        FiniteTensorDictCheck()(td)


# ---------------------------------------------------------------- RandomCropTensorDict
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("sample_dim", [-1, 0])
def test_random_crop_windows_are_contiguous_per_row(batch, sample_dim):
    torch.manual_seed(0)
    T, L = 9, 4
    full = (*batch, T) if sample_dim == -1 else (T, *batch)
    d = len(full) - 1 if sample_dim == -1 else 0
    steps = torch.arange(T).reshape([T if i == d else 1 for i in range(len(full))]).expand(full)
    td = TensorDict({"t": steps, "nested": TensorDict({"x": steps.unsqueeze(-1).expand(*full, 2)}, [*full, 2])}, full)
    out = RandomCropTensorDict(L, sample_dim=sample_dim)(td)
    new = list(full)
    new[d] = L
    assert out.batch_size == torch.Size(new) and out["nested"].batch_size == (*new, 2)
    t = out["t"].movedim(d, -1)
    assert (t[..., 1:] - t[..., :-1]).eq(1).all() and (t >= 0).all() and (t < T).all()
    assert torch.equal(out["nested", "x"][..., 0], out["t"])


def test_random_crop_starts_vary_and_cover_the_range():
    torch.manual_seed(0)
    td = TensorDict({"t": torch.arange(10).expand(2000, 10)}, [2000, 10])
    starts = RandomCropTensorDict(4)(td)["t"][:, 0]
    assert set(starts.tolist()) == set(range(7))


def test_random_crop_with_mask_stays_in_the_valid_part():
    torch.manual_seed(0)
    lengths = torch.tensor([3, 5, 10, 4] * 50)
    mask = torch.arange(10).expand(200, 10) < lengths.unsqueeze(-1)
    td = TensorDict({"t": torch.arange(10).expand(200, 10), "mask": mask}, [200, 10])
    out = RandomCropTensorDict(3, mask_key="mask")(td)
    start = out["t"][:, 0]
    assert (start <= lengths - 3).all() and set(start[lengths == 5].tolist()) == {0, 1, 2}
    assert out["mask"].all()  # only valid steps come back
    # a row with fewer valid steps than the crop cannot give a valid window: refused
    with pytest.raises(RuntimeError, match="the shortest row has 3 valid steps under 'mask'"):
        RandomCropTensorDict(4, mask_key="mask")(td)


def test_random_crop_errors():
    with pytest.raises(ValueError, match="got 0"):
        RandomCropTensorDict(0)
    with pytest.raises(ValueError, match="cannot crop 5 steps from data with 3 steps"):
        RandomCropTensorDict(5)(TensorDict({"t": torch.zeros(2, 3)}, [2, 3]))
    with pytest.raises(RuntimeError, match="cannot be used as an environment transform"):
        TransformedEnv(VectorEnv((2,)), RandomCropTensorDict(2))


# ---------------------------------------------------------------- KLRewardTransform
def _gaussian_actor(loc: float):
    """A tensordict probabilistic module: Normal(loc_param, 1) over the action (independent of
    the observation); ``loc_param`` is a parameter so that the reference copy can be checked."""
    from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModule

    class Loc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = torch.nn.Parameter(torch.tensor(loc))

        def forward(self, obs):
            return self.loc.expand(*obs.shape[:-1], 1), torch.ones(*obs.shape[:-1], 1)

    net = TensorDictModule(Loc(), in_keys=["observation"], out_keys=["loc", "scale"])
    prob = ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=torch.distributions.Normal
    )
    return ProbabilisticTensorDictSequential(net, prob)


@pytest.mark.parametrize("batch", BATCHES)
def test_kl_reward_matches_the_formula(batch):
    actor = _gaussian_actor(0.3)
    coef = 0.5
    env = TransformedEnv(VectorEnv(batch), KLRewardTransform(actor, coef=coef))
    current = torch.distributions.Normal(-0.2, 1.0)

    def policy(td):
        a = current.sample((*batch, 1)).clamp(-2, 2)
        td.set("action", a)
        td.set("sample_log_prob", current.log_prob(a))
        return td

    torch.manual_seed(0)
    td = env.rollout(4, policy, break_when_any_done=False)
    ref = torch.distributions.Normal(0.3, 1.0).log_prob(td["action"])
    reward_raw = -(td["action"] ** 2)
    expected = reward_raw - coef * (td["sample_log_prob"] - ref)
    torch.testing.assert_close(td["next", "reward"], expected)


def test_kl_reference_is_frozen_at_construction():
    actor = _gaussian_actor(0.0)
    t = KLRewardTransform(actor)
    with torch.no_grad():
        actor[0].module.loc.fill_(5.0)
    td = TensorDict({"observation": torch.zeros(3), "action": torch.zeros(1), "sample_log_prob": torch.zeros(1)}, [])
    kl = t.kl(td)
    torch.testing.assert_close(kl, -torch.distributions.Normal(0.0, 1.0).log_prob(torch.zeros(1)))
    assert not any(p.requires_grad for p in t.reference_actor.parameters())


def test_kl_without_log_prob_keeps_the_reward():
    env = TransformedEnv(VectorEnv((3,)), KLRewardTransform(_gaussian_actor(0.0)))
    td = env.rollout(3)
    torch.testing.assert_close(td["next", "reward"], -(td["action"] ** 2))


def test_kl_bad_arguments():
    with pytest.raises(TypeError, match="actor"):
        KLRewardTransform(3)
    with pytest.raises(ValueError, match="coef must not be NaN"):
        KLRewardTransform(_gaussian_actor(0.0), coef=float("nan"))
    with pytest.raises(KeyError, match="'rew'"):
        TransformedEnv(VectorEnv((2,)), KLRewardTransform(_gaussian_actor(0.0), in_keys=["rew"]))


@pytest.mark.parametrize("cls", [R3MTransform, VIPTransform, VIPRewardTransform, VC1Transform])
def test_pretrained_model_transforms_are_out_of_scope(cls):
    with pytest.raises(NotImplementedError, match="out of scope"):
        cls(in_keys=["pixels"], download=True)


def test_random_crop_of_short_data_is_also_a_runtime_error():
    data = TensorDict({"a": torch.zeros(3, 4)}, [3, 4])
    with pytest.raises(RuntimeError, match="Cannot sample trajectories of length 5 from 4 steps"):
        RandomCropTensorDict(5)(data)
    with pytest.raises(ValueError, match="cannot crop 5 steps from data with 4 steps"):
        RandomCropTensorDict(5)(data)
