"""Per-env parameters and domain randomization of the MinAtar and MPE families (the same
``params`` machinery as classic control: :mod:`gpusim.envs.native.params`)."""

from __future__ import annotations

import pytest
import torch

import gpusim as gs
from gpusim.determinism import _TablePolicy, _tables

RANDOMIZE = {
    "MinAtar/Breakout-v1": {"sticky_action_prob": gs.uniform(0.0, 0.5)},
    "MinAtar/Seaquest-v0": {"sticky_action_prob": gs.choice([0.0, 0.25])},
    "MPE/simple_spread-v0": {"drag": gs.uniform(0.1, 0.4), "dt": gs.uniform(0.05, 0.15)},
    "MPE/simple_tag-v0": {"collision_force": gs.log_uniform(50.0, 200.0), "contact_margin": gs.normal(1e-3, 1e-4)},
}
PARAMS = {
    "MinAtar": ("sticky_action_prob",),
    "MPE": ("dt", "drag", "collision_force", "contact_margin", "mass_scale", "force_scale"),
}


def _run(env, steps=30, seed=3):
    return env.rollout(steps, _TablePolicy(_tables(env, steps, seed)), break_when_any_done=False)


@pytest.mark.parametrize("env_id", [i for i in gs.registered_ids() if i.split("/")[0] in PARAMS])
def test_every_minatar_and_mpe_env_names_its_parameters(env_id):
    env = gs.make(env_id, num_envs=2, seed=0, max_episode_steps=None)
    assert env.params == PARAMS[env_id.split("/")[0]]
    assert "params" not in env.reset().keys()  # numbers: no entry, today's data


@pytest.mark.parametrize("env_id", sorted(RANDOMIZE))
def test_randomized_parameters_pass_check_env_specs_and_the_determinism_check(env_id):
    env = gs.make(env_id, num_envs=4, seed=0, randomize=RANDOMIZE[env_id])
    gs.check_env_specs(env)
    assert sorted(env.state_spec["params"].keys()) == sorted(RANDOMIZE[env_id])
    report = gs.check_determinism(
        env_id, num_envs=3, large=12, steps=40, compile=False, batched=False, randomize=RANDOMIZE[env_id]
    )
    report.raise_if_failed()


@pytest.mark.parametrize(
    ("env_id", "name", "default"),
    [("MinAtar/Asterix-v1", "sticky_action_prob", 0.1), ("MPE/simple_tag-v0", "drag", 0.25)],
)
def test_the_default_given_as_a_tensor_gives_the_same_data(env_id, name, default):
    scalar = _run(gs.make(env_id, num_envs=3, seed=0, max_episode_steps=None))
    tensor = _run(gs.make(env_id, num_envs=3, seed=0, max_episode_steps=None, **{name: torch.full((3,), default)}))
    assert torch.equal(tensor["next", "params", name], torch.full((3, 30), default))
    assert (scalar == tensor.exclude("params", ("next", "params"))).all()


def test_sticky_probability_per_env():
    p = torch.tensor([0.0, 1.0])  # row 0 never repeats its action, row 1 always does
    env = gs.make("MinAtar/Breakout-v1", num_envs=2, seed=0, sticky_action_prob=p)
    data = _run(env, steps=40)
    taken = data["next", "last_action"]
    assert torch.equal(taken[0], env._action_set[data["action"][0]])
    assert not taken[1].any()  # the first last action (no-op) forever


def test_mpe_constants_per_env_match_an_env_built_with_each_number():
    values = torch.tensor([0.05, 0.1, 0.2])
    batched = _run(gs.make("MPE/simple_spread-v0", num_envs=3, seed=0, dt=values), steps=20)
    for i, dt in enumerate(values.tolist()):
        single = _run(gs.make("MPE/simple_spread-v0", num_envs=3, seed=0, dt=dt), steps=20)
        torch.testing.assert_close(batched["next", "state", "pos"][i], single["next", "state", "pos"][i])
    moved = (batched["next", "state", "pos"][:, -1] - batched["state", "pos"][:, 0]).norm(dim=-1).sum(-1)
    assert moved[0] < moved[1] < moved[2]  # a longer step moves the agents further


def test_exposed_mpe_parameters_are_observations_and_curricula_change_the_next_draws():
    env = gs.make("MPE/simple-v0", num_envs=4, seed=0, randomize={"drag": gs.uniform(0.1, 0.2)}, expose_params=True)
    assert ("params", "drag") in env.observation_keys
    env.set_ranges(drag=(0.5, 0.5))
    assert torch.equal(env.reset()["params", "drag"], torch.full((4,), 0.5))


def test_bad_parameter_input_is_named():
    with pytest.raises(ValueError, match=r"sticky_action_prob must be in \[0, 1\], got \[0.5, 2.0\]"):
        gs.make("MinAtar/Breakout-v1", num_envs=2, sticky_action_prob=torch.tensor([0.5, 2.0]))
    with pytest.raises(ValueError, match=r"drag must be in \[0, 1\], got 1.5"):
        gs.make("MPE/simple-v0", num_envs=2, drag=1.5)
    with pytest.raises(ValueError, match=r"dt must be a finite number > 0, got 0.0"):
        gs.make("MPE/simple_spread-v0", num_envs=2, dt=0.0)
    with pytest.raises(KeyError, match=r"randomize names \['mass'\].*parameters are \['dt', 'drag'"):
        gs.make("MPE/simple-v0", num_envs=2, randomize={"mass": gs.uniform(1.0, 2.0)})
    with pytest.raises(ValueError, match=r"per-env value of 'collision_force' must have the batch shape \[2\]"):
        gs.make("MPE/simple_tag-v0", num_envs=2, collision_force=torch.ones(3))


def test_randomized_mpe_constants_are_deterministic_compiled():
    # the draws at reset and the per-env float constants inside a compile=True graph (one id: a
    # compile takes about a minute on a CPU)
    env_id = "MPE/simple_spread-v0"
    report = gs.check_determinism(env_id, num_envs=3, large=6, steps=12, batched=False, randomize=RANDOMIZE[env_id])
    report.raise_if_failed()
    assert "same seed, compiled" in [r.name for r in report.results]


def _first_velocity(**kwargs):
    env = gs.make("MPE/simple-v0", num_envs=2, seed=0, **kwargs)
    td = env.reset()
    td["agents", "action"] = torch.tensor([1.0, -0.5]).expand(2, 1, 2).clone()
    return env.step(td)["next", "state", "vel"][:, 0]  # the agent's velocity, from rest


def test_mass_and_force_scales_per_env():
    base = _first_velocity()
    torch.testing.assert_close(
        _first_velocity(mass_scale=torch.tensor([1.0, 2.0])), base * torch.tensor([[1.0], [0.5]])
    )
    torch.testing.assert_close(
        _first_velocity(force_scale=torch.tensor([1.0, 3.0])), base * torch.tensor([[1.0], [3.0]])
    )
    torch.testing.assert_close(_first_velocity(mass_scale=2.0, force_scale=2.0), base)  # F / m unchanged
    assert bool((base.abs() > 0).all())
