"""Per-env parameters, domain randomization and state save/restore/fork of the native envs."""

from __future__ import annotations

import pytest
import torch

import gpusim as gs
from gpusim.envs.batched import ParallelEnv, SerialEnv
from gpusim.transforms import CatFrames, RewardSum, TransformedEnv

PARAMS = {
    "CartPole-v1": {"length": gs.uniform(0.3, 0.9), "masspole": gs.log_uniform(0.05, 0.5)},
    "Pendulum-v1": {"g": gs.normal(10.0, 0.5), "m": gs.choice([0.5, 1.0, 2.0])},
    "MountainCar-v0": {"force": gs.uniform(0.0008, 0.0012)},
    "MountainCarContinuous-v0": {"power": gs.uniform(0.001, 0.002)},
    "Acrobot-v1": {"link_mass_2": gs.uniform(0.8, 1.2), "dt": gs.uniform(0.15, 0.25)},
}


@pytest.mark.parametrize("env_id", gs.registered_ids())
def test_scalar_parameters_add_no_entry(env_id):
    env = gs.make(env_id, num_envs=3, seed=0)
    assert "params" not in env.state_spec.keys()
    assert "params" not in env.reset().keys()


@pytest.mark.parametrize("env_id", sorted(PARAMS))
def test_randomized_parameters_pass_check_env_specs_and_the_determinism_check(env_id):
    env = gs.make(env_id, num_envs=4, seed=0, randomize=PARAMS[env_id])
    gs.check_env_specs(env)
    assert sorted(env.state_spec["params"].keys()) == sorted(PARAMS[env_id])
    report = gs.check_determinism(
        env_id, num_envs=4, large=16, steps=60, compile=False, batched=False, randomize=PARAMS[env_id]
    )
    report.raise_if_failed()


def test_values_are_redrawn_for_exactly_the_rows_that_reset():
    env = gs.make("CartPole-v1", num_envs=16, seed=1, randomize=PARAMS["CartPole-v1"])
    data = env.rollout(200, break_when_any_done=False)
    length = data["next", "params", "length"]  # [16, 200]
    done = data["next", "done"][..., 0]
    assert bool(((length >= 0.3) & (length <= 0.9)).all())
    changed = length[:, 1:] != length[:, :-1]
    assert torch.equal(changed, done[:, :-1])  # a row draws anew on its reset, and only then
    assert int(done.sum()) > 50


def test_per_env_tensors_give_each_row_its_own_dynamics():
    g = torch.tensor([4.0, 10.0, 16.0])
    batched = gs.PendulumEnv(batch_size=[3], seed=0, g=g)
    push = lambda td: td.set("action", torch.ones(3, 1))  # noqa: E731
    out = batched.rollout(30, push, break_when_any_done=False)
    for i, value in enumerate(g.tolist()):
        single = gs.PendulumEnv(batch_size=[3], seed=0, g=value).rollout(30, push, break_when_any_done=False)
        torch.testing.assert_close(out["next", "state"][i], single["next", "state"][i], atol=1e-5, rtol=1e-5)
    assert torch.equal(batched.g, g)


def test_exposed_parameters_are_observations():
    env = gs.make("CartPole-v1", num_envs=2, randomize={"length": gs.uniform(0.5, 1.0)}, expose_params=True)
    assert "params" in env.observation_keys or ("params", "length") in env.observation_keys


def test_bad_parameter_input_is_named():
    with pytest.raises(KeyError, match=r"randomize names \['lenght'\].*parameters are \['gravity'"):
        gs.make("CartPole-v1", num_envs=2, randomize={"lenght": gs.uniform(0.1, 0.2)})
    with pytest.raises(ValueError, match=r"per-env value of 'g' must have the batch shape \[3\].*got shape \[2\]"):
        gs.PendulumEnv(batch_size=[3], g=torch.ones(2))
    with pytest.raises(ValueError, match=r"masspole must hold finite numbers > 0, got \[0.1, -1.0\]"):
        gs.CartPoleEnv(batch_size=[2], masspole=torch.tensor([0.1, -1.0], dtype=torch.float64))
    with pytest.raises(TypeError, match=r"randomize\['length'\] must be a distribution"):
        gs.CartPoleEnv(batch_size=[2], randomize={"length": (0.1, 0.2)})
    with pytest.raises(ValueError, match="expose_params=True but no parameter is per-env"):
        gs.CartPoleEnv(batch_size=[2], expose_params=True)
    with pytest.raises(ValueError, match="uniform: low must be <= high, got low=2.0, high=1.0"):
        gs.uniform(2.0, 1.0)
    env = gs.CartPoleEnv(batch_size=[2], randomize={"length": gs.uniform(0.1, 0.2)})
    with pytest.raises(KeyError, match=r"'gravity' is not randomized; randomized parameters: \['length'\]"):
        env.set_ranges(gravity=(9.0, 10.0))
    with pytest.raises(ValueError, match="drawn from a uniform distribution, got a normal one"):
        env.set_ranges(length=gs.normal(0.5, 0.1))


def test_set_ranges_changes_the_next_draws_and_each_env_owns_its_ranges():
    randomize = {"length": gs.uniform(0.3, 0.4)}
    a = gs.CartPoleEnv(batch_size=[4], seed=0, randomize=randomize)
    b = gs.CartPoleEnv(batch_size=[4], seed=0, randomize=randomize)
    a.set_ranges(length=(0.8, 0.9))
    la, lb = a.reset()["params", "length"], b.reset()["params", "length"]
    assert bool(((la >= 0.8) & (la <= 0.9)).all()) and bool(((lb >= 0.3) & (lb <= 0.4)).all())


def test_a_curriculum_between_compiled_runs_does_not_recompile():
    env = gs.make("CartPole-v1", num_envs=8, seed=0, randomize={"length": gs.uniform(0.3, 0.4)})
    runner = env.compile()
    first, root = runner.run(50, env.reset())
    env.base_env.set_ranges(length=(1.5, 1.6))
    with torch.compiler.set_stance("fail_on_recompile"):
        second, root = runner.run(200, root)
    length = second["next", "params", "length"]
    ended = second["next", "done"][..., 0].any(-1)
    assert bool(ended.any())
    assert bool((length[ended, -1] >= 1.5).all())  # rows that reset after the change drew from it


def test_eager_and_compiled_draw_the_same_parameters():
    def run(compile):
        env = gs.make("Pendulum-v1", num_envs=6, seed=3, randomize={"g": gs.uniform(8.0, 12.0)})
        push = lambda td: td.set("action", torch.full((6, 1), 0.5))  # noqa: E731
        return env.rollout(220, push, break_when_any_done=False, compile=compile)

    eager, compiled = run(False), run(True)
    assert torch.equal(eager["next", "params", "g"], compiled["next", "params", "g"])
    torch.testing.assert_close(eager["next", "state"], compiled["next", "state"], atol=1e-4, rtol=1e-4)


def _replay(env, root, steps=40):
    actions = torch.randint(0, 2, (steps, *env.batch_size), generator=torch.Generator().manual_seed(0))
    return env.rollout(steps, actions=list(actions), auto_reset=False, tensordict=root, break_when_any_done=False)


def test_replaying_from_a_saved_state_is_bit_identical():
    env = TransformedEnv(
        gs.make("CartPole-v1", num_envs=8, seed=0, randomize=PARAMS["CartPole-v1"]),
        RewardSum(),
    )
    env.append_transform(CatFrames(3, dim=-1, in_keys=["observation"], out_keys=["stacked"]))
    root = env.rollout(30, break_when_any_done=False)[..., -1]["next"]
    root = env.step_mdp(env.rollout(1, auto_reset=False, tensordict=root.clone())[..., -1])
    state = env.get_state(root)
    assert sorted(state.keys()) == ["data", "rng", "transforms"]
    assert len(state["transforms"].keys()) == 1  # CatFrames' per-row history
    first = _replay(env, root)
    second = _replay(env, env.set_state(state))
    assert (first == second).all()
    assert int(first["next", "done"].sum()) > 0  # resets (and parameter draws) happened in the replay


def test_a_fork_steps_copies_of_one_row_with_their_own_actions():
    env = gs.make("CartPole-v1", num_envs=5, seed=0, randomize=PARAMS["CartPole-v1"])
    root = env.reset()
    state = env.get_state(root)
    fork = gs.make("CartPole-v1", num_envs=3, seed=9, randomize=PARAMS["CartPole-v1"])
    td = fork.set_state(state[torch.tensor([2, 2, 2])])
    assert torch.equal(td["state"], root["state"][2].expand(3, 4))
    assert torch.equal(td["params", "length"], root["params", "length"][2].expand(3))
    td["action"] = torch.tensor([0, 1, 0])
    nxt = fork.step(td)["next"]
    assert torch.equal(nxt["state"][0], nxt["state"][2]) and not torch.equal(nxt["state"][0], nxt["state"][1])
    with pytest.raises(ValueError, match=r"state has batch size \[5\], the env \[3\]"):
        fork.set_state(state)


def test_state_of_4096_rows_round_trips():
    env = gs.make("Acrobot-v1", num_envs=4096, seed=0, randomize=PARAMS["Acrobot-v1"])
    root = env.reset()
    back = env.set_state(env.get_state(root))
    assert (back == root).all()


def test_randomization_under_serial_and_parallel_envs():
    def build(**kwargs):
        return gs.make("CartPole-v1", num_envs=2, randomize={"length": gs.uniform(0.3, 0.9)}, **kwargs)

    serial = SerialEnv(2, build)
    parallel = ParallelEnv(2, build)
    try:
        for env in (serial, parallel):
            env.set_seed(0)
        actions = [torch.ones(2, 2, dtype=torch.long)] * 60
        a = serial.rollout(60, actions=actions, break_when_any_done=False)["next", "params", "length"]
        b = parallel.rollout(60, actions=actions, break_when_any_done=False)["next", "params", "length"]
        assert a.shape == (2, 2, 60) and torch.equal(a, b)
    finally:
        serial.close()
        parallel.close()
