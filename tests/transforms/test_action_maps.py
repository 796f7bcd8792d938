"""ActionScaling, FlattenAction and ActionDiscretizer: specs, what the base env receives, offline
maps, errors, batched envs and check_env_specs."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.checks import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.specs import Bounded, Categorical, Composite, MultiCategorical, MultiOneHot, OneHot, Unbounded
from gpusim.transforms import ActionDiscretizer, ActionScaling, Compose, FlattenAction, StepCounter, TransformedEnv

BATCHES = [(), (3,), (2, 2)]


class ShapedActionEnv(EnvBase):
    """A Bounded action of any shape (``action_shape``) under ``action_key``; records it."""

    def __init__(self, batch_size=(), action_shape=(3, 5), low=-2.0, high=4.0, action_key="action", spec=None):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        leaf = spec if spec is not None else Bounded(low, high, shape=(*B, *action_shape))
        self.__dict__["_akey"] = action_key
        if isinstance(action_key, tuple):
            self.action_spec = Composite({action_key: leaf}, shape=B)
        else:
            self.action_spec = leaf
        self.observation_spec = Composite(observation=Unbounded((*B, 2)), shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=Categorical(2, shape=(*B, 1), dtype=torch.bool), shape=B)
        self.last = None

    def _out(self):
        B = self.batch_size
        return TensorDict({"observation": torch.zeros(*B, 2), "done": torch.zeros(*B, 1, dtype=torch.bool)}, B)

    def _reset(self, td):
        return self._out()

    def _step(self, td):
        self.__dict__["last"] = td.get(self.__dict__["_akey"]).clone()
        return self._out().set("reward", torch.zeros(*self.batch_size, 1))

    def _set_seed(self, seed):
        pass


def _step_with(env, key, value):
    td = env.reset()
    td.set(key, value)
    env.step(td)
    return env.base_env.last


# ---------------------------------------------------------------------------------- ActionScaling
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("standard_normal", [True, False])
def test_action_scaling_from_bounds(batch, standard_normal):
    env = TransformedEnv(ShapedActionEnv(batch, (4,)), ActionScaling(standard_normal=standard_normal))
    spec = env.action_spec
    lo = -1.0 if standard_normal else 0.0
    assert torch.equal(spec.space.low.expand(spec.shape), torch.full((*batch, 4), lo))
    assert torch.equal(spec.space.high.expand(spec.shape), torch.ones(*batch, 4))
    t = env.transform
    assert torch.equal(t.loc, torch.ones(*batch, 4)) and torch.equal(t.scale, torch.full((*batch, 4), 3.0))
    check_env_specs(env)
    assert torch.equal(_step_with(env, "action", torch.full((*batch, 4), lo)), torch.full((*batch, 4), -2.0))
    assert torch.equal(_step_with(env, "action", torch.ones(*batch, 4)), torch.full((*batch, 4), 4.0))
    r = env.rollout(5)
    assert ((r["action"] >= lo) & (r["action"] <= 1)).all()


def test_action_scaling_explicit_stats_map_the_spec_and_unbounded_stays_unbounded():
    t = ActionScaling.from_stats(mean=torch.zeros(3), std=torch.full((3,), 2.0))
    env = TransformedEnv(ShapedActionEnv((2,), (3,), low=-1.0, high=1.0), t)
    assert torch.allclose(env.action_spec.space.low, torch.full((2, 3), -0.5))
    check_env_specs(env)
    t2 = ActionScaling.from_stats(mean=torch.full((3,), 1.0), std=torch.full((3,), 3.0))
    env2 = TransformedEnv(ShapedActionEnv((2,), spec=Unbounded((2, 3))), t2)
    assert isinstance(env2.action_spec, Unbounded)
    assert torch.equal(_step_with(env2, "action", torch.ones(2, 3)), torch.full((2, 3), 4.0))
    check_env_specs(env2)


def test_action_scaling_offline_maps_and_forward_only():
    t = ActionScaling(loc=2.0, scale=3.0)
    assert torch.equal(t.denormalize(torch.tensor([1.0, -1.0, 0.0])), torch.tensor([5.0, -1.0, 2.0]))
    out = t(TensorDict({"action": torch.tensor([5.0, -1.0])}, [2]))
    assert torch.equal(out["action"], torch.tensor([1.0, -1.0]))
    low_high = ActionScaling.from_stats(low=torch.tensor([-2.0, 0.0]), high=torch.tensor([2.0, 10.0]))
    assert torch.equal(low_high.normalize(torch.tensor([[-2.0, 10.0]])), torch.tensor([[-1.0, 1.0]]))
    assert torch.isfinite(
        ActionScaling.from_stats(mean=torch.ones(1), std=torch.zeros(1)).normalize(torch.ones(1))
    ).all()
    forward_only = ActionScaling(in_keys_inv=[], loc=1.0, scale=3.0)
    env = TransformedEnv(ShapedActionEnv((2,), (3,), low=-1.0, high=1.0), forward_only)
    assert torch.equal(_step_with(env, "action", torch.full((2, 3), 0.5)), torch.full((2, 3), 0.5))
    check_env_specs(env)


def test_action_scaling_nested_key():
    key = ("agent", "action")
    env = TransformedEnv(ShapedActionEnv((2,), (3,), action_key=key), ActionScaling(in_keys_inv=[key]))
    assert torch.equal(env.full_action_spec[key].space.high.expand(2, 3), torch.ones(2, 3))
    assert torch.equal(_step_with(env, key, -torch.ones(2, 3)), torch.full((2, 3), -2.0))
    check_env_specs(env)


@pytest.mark.parametrize(
    "spec, match",
    [
        (Unbounded((3,)), "finitely bounded"),
        (Bounded(float("-inf"), 1.0, shape=(3,)), "finite"),
        (Bounded(-2.0, torch.finfo(torch.float32).max, shape=(3,)), "finite"),
        (Categorical(3, shape=()), "finitely bounded"),
    ],
)
def test_action_scaling_rejects_unbounded_or_discrete_specs(spec, match):
    with pytest.raises(RuntimeError, match=match):
        TransformedEnv(ShapedActionEnv(spec=spec), ActionScaling())


def test_action_scaling_argument_errors():
    with pytest.raises(ValueError, match="together"):
        ActionScaling(loc=1.0)
    with pytest.raises(ValueError, match="nonzero"):
        ActionScaling(loc=0.0, scale=0.0)
    with pytest.raises(ValueError, match="single action key"):
        ActionScaling(in_keys_inv=["a", "b"])
    with pytest.raises(ValueError, match="forward-only"):
        ActionScaling(in_keys_inv=[])
    with pytest.raises(ValueError, match="exactly one"):
        ActionScaling.from_stats()
    with pytest.raises(ValueError, match="same shape"):
        ActionScaling.from_stats(mean=torch.zeros(3), std=torch.ones(2))
    with pytest.raises(ValueError, match="does not match"):
        ActionScaling(loc=torch.arange(7.0), scale=torch.ones(7)).normalize(torch.zeros(4, 1))
    with pytest.raises(RuntimeError, match="not initialized"):
        ActionScaling().normalize(torch.zeros(2))


# ---------------------------------------------------------------------------------- FlattenAction
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(
    "shape, first, last, flat",
    [((3, 5), -2, -1, (15,)), ((2, 3, 5), -2, -1, (2, 15)), ((2, 3, 5), -3, -1, (30,)), ((7,), -1, -1, (7,))],
)
def test_flatten_action_spec_and_inverse(batch, shape, first, last, flat):
    env = TransformedEnv(ShapedActionEnv(batch, shape), FlattenAction(first, last))
    assert env.action_spec.shape == (*batch, *flat)
    check_env_specs(env)
    action = torch.arange(torch.Size((*batch, *flat)).numel(), dtype=torch.float32).reshape(*batch, *flat)
    received = _step_with(env, "action", action)
    assert torch.equal(received, action.reshape(*batch, *shape))
    assert env.rollout(3)["action"].shape == (*batch, 3, *flat)


def test_flatten_action_offline_positive_dims_nested_and_errors():
    t = FlattenAction(-2, -1, action_shape=(3, 5))
    flat = t._apply_transform(torch.arange(15.0).reshape(3, 5))
    assert torch.equal(flat, torch.arange(15.0)) and t._inv_apply_transform(flat).shape == (3, 5)
    env = TransformedEnv(ShapedActionEnv((2,), (3, 5)), FlattenAction(0, 1, allow_positive_dim=True))
    assert env.action_spec.shape == (2, 15)
    assert _step_with(env, "action", torch.zeros(2, 15)).shape == (2, 3, 5)
    key = ("nested", "action")
    env = TransformedEnv(ShapedActionEnv((2,), (3, 5), action_key=key), FlattenAction(-2, -1, in_keys_inv=[key]))
    assert _step_with(env, key, torch.zeros(2, 15)).shape == (2, 3, 5)
    check_env_specs(env)
    with pytest.raises(ValueError, match="first_dim"):
        FlattenAction(0, -1)
    with pytest.raises(ValueError, match="first_dim"):
        FlattenAction(-1, -2)
    with pytest.raises(RuntimeError, match="disambiguate"):
        FlattenAction(-2, -1, in_keys_inv=["a", "b"], action_shape=(3, 5))._inv_apply_transform(torch.zeros(15))
    with pytest.raises(RuntimeError, match="unflatten shape"):
        FlattenAction(-2, -1)._inv_apply_transform(torch.zeros(15))


# ---------------------------------------------------------------------------------- ActionDiscretizer
SAMPLING = list(ActionDiscretizer.SamplingStrategy)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("categorical", [True, False])
@pytest.mark.parametrize("shape", [(3,), (1,), ()])
def test_action_discretizer_specs_and_rollouts(batch, categorical, shape):
    for sampling in SAMPLING:
        for out_key in ("action", "action_disc"):
            base = ShapedActionEnv(batch, shape, low=-1.0, high=1.0)
            n = shape[0] if shape else 1
            counts = torch.arange(4, 4 + n)
            env = TransformedEnv(
                base, ActionDiscretizer(counts, out_action_key=out_key, categorical=categorical, sampling=sampling)
            )
            spec = env.full_action_spec[out_key]
            expected = {
                (True, True): Categorical,
                (False, True): OneHot,
                (True, False): MultiCategorical,
                (False, False): MultiOneHot,
            }
            assert type(spec) is expected[(categorical, shape == ())]
            check_env_specs(env)
            r = env.rollout(4)
            if out_key != "action":  # the continuous action is recorded (state spec)
                assert r["action"].dtype == torch.float32 and r["action"].shape == (*batch, 4, *shape)
                if sampling != ActionDiscretizer.SamplingStrategy.HIGH:
                    assert (r["action"] < 1).all()
                if sampling != ActionDiscretizer.SamplingStrategy.LOW:
                    assert (r["action"] > -1).all()


@pytest.mark.parametrize(
    "sampling, expected",
    [("MEDIAN", [-1.5, -0.5, 0.5, 1.5]), ("LOW", [-2.0, -1.0, 0.0, 1.0]), ("HIGH", [-1.0, 0.0, 1.0, 2.0])],
)
def test_action_discretizer_values(sampling, expected):
    strategy = ActionDiscretizer.SamplingStrategy[sampling]
    for categorical in (True, False):
        env = TransformedEnv(
            ShapedActionEnv((4,), (2,), low=-2.0, high=2.0),
            ActionDiscretizer(4, sampling=strategy, categorical=categorical),
        )
        idx = torch.arange(4).unsqueeze(-1).expand(4, 2)
        action = idx if categorical else torch.nn.functional.one_hot(idx, 4).reshape(4, 8).bool()
        received = _step_with(env, "action", action)
        assert torch.equal(received, torch.tensor(expected).unsqueeze(-1).expand(4, 2))


def test_action_discretizer_uneven_counts_one_hot_and_random_jitter():
    env = TransformedEnv(
        ShapedActionEnv((2,), (2,), low=0.0, high=1.0), ActionDiscretizer(torch.tensor([2, 4]), categorical=False)
    )
    onehot = torch.tensor([[1, 0, 0, 0, 0, 1], [0, 1, 1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(_step_with(env, "action", onehot), torch.tensor([[0.25, 0.875], [0.75, 0.125]]))
    rnd = ActionDiscretizer(2, sampling=ActionDiscretizer.SamplingStrategy.RANDOM)
    env = TransformedEnv(ShapedActionEnv((1000,), (1,), low=0.0, high=1.0), rnd)
    got = _step_with(env, "action", torch.ones(1000, 1, dtype=torch.long))
    assert (got >= 0.5).all() and (got < 1.0).all() and got.std() > 0.1


def test_action_discretizer_errors_and_composition():
    with pytest.raises(TypeError, match="Bounded"):
        TransformedEnv(ShapedActionEnv(spec=Unbounded((3,))), ActionDiscretizer(3))
    with pytest.raises(ValueError, match="entries"):
        TransformedEnv(ShapedActionEnv((), (3,)), ActionDiscretizer(torch.tensor([2, 3])))
    with pytest.raises(ValueError, match="positive"):
        ActionDiscretizer(0)
    env = TransformedEnv(ShapedActionEnv((2,), (3,)), Compose(StepCounter(5), ActionDiscretizer(5, out_action_key="d")))
    check_env_specs(env)
    assert "action" in env.state_keys and "d" in env.action_keys
