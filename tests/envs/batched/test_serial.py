"""SerialEnv: specs, partial resets, seeds, worker attributes, mixed envs, transforms."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs._seeding import next_seed
from gpusim.envs.batched import EnvCreator, SerialEnv
from gpusim.envs.checks import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.envs.libs.gym import GymEnv
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.transforms import Compose, RewardSum, StepCounter, TransformedEnv
from tests.envs.batched._envs import MethodEnv, counting_lambda
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv, StatelessCounter


@pytest.mark.parametrize(
    "factory, sub_batch",
    [
        (CountingEnv, ()),
        (lambda: StatelessCounter(batch_size=[3]), (3,)),
        (lambda: NestedCountingEnv(batch_size=[2]), (2,)),
        (lambda: CartPoleEnv(batch_size=[2]), (2,)),
        (PendulumEnv, ()),
        (lambda: GymEnv("CartPole-v1"), ()),
    ],
    ids=["counting", "stateless", "nested", "cartpole", "pendulum", "gym-cartpole"],
)
def test_specs_are_worker_specs_expanded(factory, sub_batch):
    env = SerialEnv(2, factory)
    single = factory()
    assert env.batch_size == torch.Size([2, *sub_batch])
    assert env.output_spec == single.output_spec.expand(2, *sub_batch)
    assert env.input_spec == single.input_spec.expand(2, *sub_batch)
    assert not env.is_started  # specs come from metadata: no worker yet
    check_env_specs(env)
    check_env_specs(env, break_when_any_done=True)
    td = env.rollout(6, break_when_any_done=False)
    assert td.batch_size == torch.Size([2, *sub_batch, 6])
    assert td.names[-1] == "time"
    env.close()
    assert env.is_closed and not env.is_started


def test_matches_the_worker_envs_run_one_by_one():
    """A seeded SerialEnv of CountingEnv gives what each worker env gives alone."""
    env = SerialEnv(2, CountingEnv)
    env.set_seed(7)
    torch.manual_seed(0)
    td = env.rollout(12, break_when_any_done=False)
    seeds = [7, next_seed(7)]
    for i in range(2):
        single = CountingEnv()
        single.set_seed(seeds[i])
        s = single.reset()
        for t in range(12):
            s.set("action", td["action"][i, t])
            s, s_next = single.step_and_maybe_reset(s)
            assert torch.equal(s["next", "count"], td["next", "count"][i, t])
            assert torch.equal(s["count"], td["count"][i, t])
            s = s_next


def test_partial_reset_only_resets_the_selected_workers():
    env = SerialEnv(3, CountingEnv)
    td = env.reset()
    calls = []
    for i, w in enumerate(env._envs):
        original = w._reset
        w._reset = (lambda orig, i: lambda t, **kw: (calls.append(i), orig(t, **kw))[1])(original, i)
    td["count"] = torch.full((3, 1), 10.0)
    td["_reset"] = torch.tensor([[False], [True], [False]])
    out = env.reset(td)
    assert calls == [1]
    assert out["count"][0].item() == 10.0 and out["count"][2].item() == 10.0
    assert out["count"][1].item() < 3
    assert "_reset" not in out.keys()


def test_partial_reset_inside_a_worker_sub_batch():
    env = SerialEnv(2, lambda: StatelessCounter(batch_size=[2]))
    td = env.reset()
    td = env.step(env.rand_action(td))
    td = env._step_mdp(td)
    td["state"] = torch.full((2, 2, 1), 3.0)
    td["observation"] = torch.full((2, 2, 1), 6.0)
    td["_reset"] = torch.tensor([[[False], [True]], [[False], [False]]])
    out = env.reset(td)
    assert out["state"].flatten().tolist() == [3.0, 0.0, 3.0, 3.0]
    assert out["observation"].flatten().tolist() == [6.0, 0.0, 6.0, 6.0]


def test_nested_reset_masks_reach_the_workers():
    env = SerialEnv(2, lambda: NestedCountingEnv(batch_size=[1], n_agents=2))
    td = env.reset()
    td = env._step_mdp(env.step(env.rand_action(td)))
    before = td["agents", "obs"].clone()
    mask = torch.zeros(2, 1, 2, 1, dtype=torch.bool)
    mask[1, 0, 0] = True
    td["agents", "_reset"] = mask
    out = env.reset(td)
    assert out["agents", "obs"][1, 0, 0].abs().sum() == 0  # the selected agent is reset
    assert torch.equal(out["agents", "obs"][0], before[0])
    assert torch.equal(out["agents", "obs"][1, 0, 1], before[1, 0, 1])


def test_fused_step_and_maybe_reset_matches_the_base_implementation():
    def run(env, fused):
        env.set_seed(3)
        torch.manual_seed(1)
        td = env.reset()
        out = []
        for _ in range(25):
            env.rand_action(td)
            if fused:
                stepped, td = env.step_and_maybe_reset(td)
            else:
                stepped, td = EnvBase.step_and_maybe_reset(env, td)
            out.append(stepped.clone())
        return torch.stack(out, -1)

    for factory in (lambda: CountingEnv(batch_size=[3], max_count=4), lambda: NestedCountingEnv(batch_size=[2])):
        env = SerialEnv(2, factory)
        fused, base = run(env, True), run(env, False)
        assert fused["next", "done"].any()
        assert (fused == base).all()


def test_seeds_are_chained_and_reproducible():
    env = SerialEnv(3, CountingEnv)
    assert env.set_seed(5) == next_seed(next_seed(next_seed(5)))
    assert [w._gen.initial_seed() for w in env._envs] == [5, next_seed(5), next_seed(next_seed(5))]
    assert env.set_seed(5, static_seed=True) == 5

    def rollout(seed):
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(20, break_when_any_done=False)

    a, b, c = rollout(1), rollout(1), rollout(2)
    assert (a == b).all()
    assert not (a["count"] == c["count"]).all()
    native = SerialEnv(2, lambda: CartPoleEnv(batch_size=[2]))
    native.set_seed(0)
    x = native.reset()["observation"]
    native.set_seed(0)
    assert torch.equal(x, native.reset()["observation"])
    assert not torch.equal(x[0], x[1])  # chained seeds: workers differ
    with pytest.raises(TypeError, match="seed"):
        env.set_seed(1.5)


def test_attribute_and_method_access():
    env = SerialEnv(2, PendulumEnv, {"g": 9.81})
    assert not env.is_started
    assert env.g == [9.81, 9.81]  # starts the workers
    assert env.is_started
    assert env.max_torque == [2.0, 2.0]
    # the batched env's own attributes are not dispatched
    assert env.fake_tensordict().batch_size == torch.Size([2])
    assert env.batch_size == torch.Size([2])
    with pytest.raises(AttributeError):
        env.no_such_attribute
    assert not hasattr(env, "no_such_attribute")


def test_worker_methods_return_one_value_per_worker():
    env = SerialEnv(2, [lambda: MethodEnv(max_count=3), lambda: MethodEnv(max_count=4)])
    assert env.max_count == [3, 4]
    assert env.label == ["method-env", "method-env"]
    assert env.scaled(2.0, offset=1.0) == [7.0, 9.0]
    mixed = SerialEnv(2, [MethodEnv, CountingEnv])
    with pytest.raises(AttributeError, match="scaled"):
        mixed.scaled(1.0)


def test_mixed_envs_and_spec_mismatch():
    env = SerialEnv(2, [PendulumEnv, lambda: PendulumEnv(g=3.0)])
    assert env.g == [10.0, 3.0]
    check_env_specs(env)
    env = SerialEnv(2, PendulumEnv, [{"g": 1.0}, {"g": 2.0}])
    assert env.g == [1.0, 2.0]
    with pytest.raises(ValueError, match="worker 1 differs from worker 0"):
        SerialEnv(2, [PendulumEnv, CartPoleEnv])
    with pytest.raises(ValueError, match="batch_size"):
        SerialEnv(2, [CountingEnv, lambda: CountingEnv(batch_size=[2])])


def test_argument_validation():
    with pytest.raises(ValueError, match="num_workers"):
        SerialEnv(0, CountingEnv)
    with pytest.raises(ValueError, match="3 entries"):
        SerialEnv(2, [CountingEnv] * 3)
    with pytest.raises(TypeError, match="callable"):
        SerialEnv(2, [CountingEnv, 1])
    with pytest.raises(TypeError, match="dict"):
        SerialEnv(2, CountingEnv, [1, 2])
    with pytest.raises(ValueError, match="num_sub_threads"):
        SerialEnv(2, CountingEnv, num_sub_threads=0)
    with pytest.raises(KeyError, match="action"):
        env = SerialEnv(2, CountingEnv)
        env.step(env.reset())


def test_transforms_inside_and_outside():
    inside = SerialEnv(2, lambda: TransformedEnv(CountingEnv(max_count=100), StepCounter(3)))
    outside = TransformedEnv(SerialEnv(2, lambda: CountingEnv(max_count=100)), Compose(StepCounter(3), RewardSum()))
    for env in (inside, outside):
        check_env_specs(env)
        td = env.rollout(7, break_when_any_done=False)
        assert td["next", "step_count"][:, :, 0].tolist() == [[1, 2, 3, 1, 2, 3, 1]] * 2
        assert td["next", "truncated"][:, 2].all()
    assert outside.rollout(3, break_when_any_done=False)["next", "episode_reward"][:, -1, 0].tolist() == [3.0, 3.0]


def test_env_creator_lambdas_and_restart_after_close():
    env = SerialEnv(2, EnvCreator(counting_lambda))
    assert env.max_count == [4, 4]
    env.close()
    assert env.rollout(2, break_when_any_done=False).batch_size == torch.Size([2, 2])  # restarted
    assert env.is_started


def test_device_cast_to_meta_device_outputs():
    # no GPU on CI: the 'meta' device exercises the one-transfer-per-step path
    env = SerialEnv(2, CountingEnv, device="meta")
    assert env.device == torch.device("meta")
    assert env.full_observation_spec["count"].device == torch.device("meta")
    out = env.reset()
    assert out.device == torch.device("meta") and out["count"].device == torch.device("meta")


def test_serial_env_of_native_workers_resets_fresh_without_a_set_state_warning():
    """A native env's data always holds its state (so an unspecified ``set_state`` means a fresh
    reset, without TorchRL's transition warning); a batched env of native workers does the same:
    a partial reset with the state entries present restarts the selected row and keeps the rest."""
    import warnings

    from gpusim.envs.batched import SerialEnv
    from gpusim.envs.native import CartPoleEnv

    env = SerialEnv(2, CartPoleEnv, {"batch_size": [3], "seed": 0})
    td = env.reset()
    td = env.step_and_maybe_reset(env.rand_action(td))[1]
    before = td["state"].clone()
    reset = torch.zeros(2, 3, 1, dtype=torch.bool)
    reset[1, 2] = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        out = env.reset(td.set("_reset", reset))
    changed = (out["state"] != before).any(-1)
    assert changed.tolist() == [[False, False, False], [False, False, True]]
    env.close()
