"""The native MPE envs have VmasEnv's multi-agent layout, pass check_env_specs, trace as one
graph and are built by ``make`` with VMAS's keyword arguments."""

from __future__ import annotations

import pytest
import torch

from gpusim import make
from gpusim.envs import check_env_specs
from gpusim.envs.libs.vmas import VmasEnv
from gpusim.envs.native.mpe import SCENARIOS
from gpusim.envs.native.rng import ResetRows

# (scenario, kwargs) pairs exercised for every test below
CASES = [
    ("simple", {}),
    ("simple_spread", {}),
    ("simple_spread", {"n_agents": 5, "obs_agents": False}),
    ("simple_tag", {}),
    ("simple_tag", {"num_good_agents": 3, "num_adversaries": 2, "observe_same_team": False, "observe_vel": False}),
    ("simple_adversary", {"n_agents": 4, "n_adversaries": 2}),
    ("simple_push", {}),
    ("simple_reference", {}),
    ("simple_speaker_listener", {}),
    ("simple_crypto", {"dim_c": 3}),
    ("simple_world_comm", {}),
    ("simple_world_comm", {"num_adversaries": 1, "num_forests": 3, "num_food": 1}),
]
_ids = [f"{s}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for s, kw in CASES]


def _leaves(spec):
    return {key: (type(leaf).__name__, tuple(leaf.shape), leaf.dtype) for key, leaf in spec.items(True, True)}


@pytest.mark.parametrize(
    ("continuous", "categorical"),
    [(True, True), (False, True), (False, False)],
    ids=["continuous", "categorical", "onehot"],
)
@pytest.mark.parametrize(("scenario", "kwargs"), CASES, ids=_ids)
def test_specs_match_vmas_env(scenario, kwargs, continuous, categorical) -> None:
    ref = VmasEnv(
        scenario, num_envs=3, continuous_actions=continuous, categorical_actions=categorical, seed=0, **kwargs
    )
    env = make(
        f"MPE/{scenario}-v0",
        num_envs=3,
        seed=0,
        continuous_actions=continuous,
        categorical_actions=categorical,
        **kwargs,
    )
    assert env.group_map == ref.group_map
    for name in ("full_observation_spec", "full_action_spec", "full_reward_spec", "full_done_spec"):
        assert _leaves(getattr(env, name)) == _leaves(getattr(ref, name)), name
    if continuous:
        for key in env.full_action_spec.keys(True, True):
            torch.testing.assert_close(env.full_action_spec[key].space.low, ref.full_action_spec[key].space.low)
            torch.testing.assert_close(env.full_action_spec[key].space.high, ref.full_action_spec[key].space.high)


@pytest.mark.parametrize(("scenario", "kwargs"), CASES, ids=_ids)
def test_vmas_policy_runs_unchanged(scenario, kwargs) -> None:
    ref = VmasEnv(scenario, num_envs=4, seed=0, **kwargs)

    def policy(td):  # written against VmasEnv's keys: observation in, action out, per group
        for group in ref.group_map:
            obs = td[group, "observation"]
            space = ref.full_action_spec[group, "action"].space
            gate = torch.sigmoid(obs.sum(-1, keepdim=True))  # in (0, 1): inside the action box
            td[group, "action"] = space.low + (space.high - space.low) * gate
        return td

    ref_roll = ref.rollout(3, policy)
    env = make(f"MPE/{scenario}-v0", num_envs=4, seed=0, **kwargs)
    roll = env.rollout(3, policy)
    for key in ref_roll.keys(True, True):
        assert roll[key].shape == ref_roll[key].shape, key


@pytest.mark.parametrize("batch_size", [[], [1], [7], [2, 3]], ids=str)
@pytest.mark.parametrize("continuous", [True, False])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_check_env_specs(scenario, continuous, batch_size) -> None:
    env = SCENARIOS[scenario](batch_size=batch_size, seed=0, continuous_actions=continuous, max_steps=4)
    check_env_specs(env, seed=1)
    roll = env.rollout(10, break_when_any_done=False)
    truncated = roll["next", "truncated"].reshape(-1, 10)
    assert truncated[:, 3].all() and not truncated[:, :3].any() and not truncated[:, 4:7].any()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_step_and_reset_trace_as_one_graph(scenario) -> None:
    """``fullgraph=True`` tracing: no host sync, no Python branch on tensor values."""
    torch._dynamo.reset()  # every scenario shares MpeEnv._step's code object: a fresh recompile budget
    env = SCENARIOS[scenario](batch_size=[8], seed=0, continuous_actions=False)
    td = env.rand_action(env.reset())
    mask = torch.tensor([True, False] * 4)
    env.set_seed(3)
    expected_step = env._step(td)
    expected_reset = env._reset(None, ResetRows.start(env.rng, mask))
    env.set_seed(3)
    step = torch.compile(env._step, fullgraph=True, backend="eager")
    reset = torch.compile(lambda m: env._reset(None, ResetRows.start(env.rng, m)), fullgraph=True, backend="eager")
    assert (step(td) == expected_step).all()
    assert (reset(mask) == expected_reset).all()


def test_tag_respawn_at_catch_moves_caught_agents() -> None:
    env = SCENARIOS["simple_tag"](batch_size=[2], seed=0, respawn_at_catch=True, num_landmarks=0)
    td = env.reset()
    pos = td["state", "pos"].clone()
    pos[0, 3] = pos[0, 0]  # the good agent of row 0 sits on adversary 0 (coincident: no contact force)
    pos[1, 3] = pos[1, 0] + 1.0
    pos[1, 1:3] = pos[1, 0] + torch.tensor([[-1.0, 0.0], [0.0, -1.0]])  # nobody near row 1's agent
    td["state", "pos"] = pos.clamp(-1, 1)
    td["adversary", "action"] = torch.zeros(2, 3, 2)
    td["agent", "action"] = torch.zeros(2, 1, 2)
    nxt = env.step(td)["next"]
    assert nxt["agent", "reward"][0].item() == -10.0 and nxt["agent", "reward"][1].item() == 0.0
    moved = (nxt["state", "pos"][:, 3] - td["state", "pos"][:, 3]).norm(dim=-1)
    assert moved[0] > 0.05 and moved[1] < 0.05  # row 0's agent respawned; row 1's barely moved
    assert nxt["state", "vel"][0, 3].abs().sum() == 0


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_sparse_and_masked_auto_resets_agree(scenario) -> None:
    """Truncated rows restart with the same draws whether only they or all rows are reset."""
    rolls = []
    for mode in ("sparse", "masked"):
        env = SCENARIOS[scenario](batch_size=[6], seed=2, max_steps=3, auto_reset_mode=mode, continuous_actions=False)
        td = env.reset()
        out = []
        for t in range(8):
            for group in env.group_map:
                n = env.full_action_spec[group, "action"].space.n
                td[group, "action"] = (
                    torch.arange(6).unsqueeze(-1) * 7 + t * 3 + torch.arange(len(env.group_map[group]))
                ) % n
            _, td = env.step_and_maybe_reset(td)
            out.append(td.clone())
        rolls.append(torch.stack(out))
    assert (rolls[0] == rolls[1]).all()
    starts = rolls[0]["state", "pos"]
    assert not torch.equal(starts[2], starts[5])  # each episode starts somewhere new


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_reset_is_seeded_and_varied(scenario) -> None:
    a = SCENARIOS[scenario](batch_size=[16], seed=5).reset()
    b = SCENARIOS[scenario](batch_size=[16], seed=5).reset()
    c = SCENARIOS[scenario](batch_size=[16], seed=6).reset()
    assert (a["state"] == b["state"]).all()
    assert not torch.equal(a["state", "pos"], c["state", "pos"])
    assert a["state", "pos"].std(0).gt(0.1).all()  # rows differ


def test_make_rejects_unknown_kwargs() -> None:
    with pytest.raises(TypeError, match="n_agent"):
        make("MPE/simple_spread-v0", num_envs=2, n_agent=3)
    with pytest.raises(ValueError, match="n_agents must be an int >= 1, got 0"):
        make("MPE/simple_spread-v0", num_envs=2, n_agents=0)
    with pytest.raises(ValueError, match="max_steps"):
        make("MPE/simple-v0", num_envs=2, max_steps=0)


def test_compiled_rollout_matches_eager_and_keeps_the_env_layout() -> None:
    """The compiled runner (Inductor) gives the eager rollout's data, episode restarts included,
    and stores each entry in the env's memory order (the batch innermost for the state and
    observations: no transpose per step)."""
    from gpusim.envs.compiled import CompiledRollout, dim_order

    env = make("MPE/simple_spread-v0", num_envs=4, seed=5, max_steps=3)
    eager = env.rollout(7, break_when_any_done=False)
    env.set_seed(5)
    compiled = CompiledRollout(env, steps_per_call=1, verbose=False)(7)
    assert compiled["next", "truncated"].any()  # restarts inside the compiled steps
    for key in [("agents", "action"), ("next", "state", "steps"), ("next", "truncated")]:
        assert torch.equal(compiled[key], eager[key]), key
    for key in [("agents", "observation"), ("next", "agents", "observation"), ("next", "agents", "reward")]:
        torch.testing.assert_close(compiled[key], eager[key], rtol=1e-5, atol=1e-5)
    step_obs = env.step(env.rand_action(env.reset()))["next", "agents", "observation"]
    assert dim_order(step_obs) == (1, 2, 0)  # [B, n, d] views of [n, d, B] columns
    assert dim_order(compiled["next", "agents", "observation"][:, 0]) == dim_order(step_obs)


def test_no_horizon_plans_no_auto_reset_and_a_horizon_restores_it() -> None:
    """Without ``max_steps`` no row can end (``ends_episodes`` is False): the step pipeline plans
    no auto-reset, and the data equal those of the reset-planning pipeline (whose resets under an
    all-false mask change nothing). Setting ``max_steps`` re-plans: rows restart at the horizon.
    A ``TransformedEnv`` plans resets (its transforms may end episodes)."""
    from gpusim.envs import pipeline
    from gpusim.transforms import StepCounter, TransformedEnv

    env = make("MPE/simple_spread-v0", num_envs=8, seed=3)
    assert not env.ends_episodes and env.step_pipeline.maybe_reset is pipeline._no_reset
    planned = make("MPE/simple_spread-v0", num_envs=8, seed=3)
    planned.step_pipeline.maybe_reset = planned.step_pipeline.reset_done  # resets planned, as before
    a = env.rollout(30, break_when_any_done=False)
    b = planned.rollout(30, break_when_any_done=False)
    assert (a == b).all() and not a["next", "done"].any()

    env.max_steps = 4
    assert env.ends_episodes and env.step_pipeline.maybe_reset is not pipeline._no_reset
    steps = env.rollout(9, break_when_any_done=False)["next", "state", "steps"][0, :, 0]
    assert steps.tolist() == [1, 2, 3, 4, 1, 2, 3, 4, 1]
    with pytest.raises(ValueError, match="max_steps"):
        env.max_steps = 0

    counted = TransformedEnv(make("MPE/simple_spread-v0", num_envs=8, seed=3), StepCounter(max_steps=3))
    assert counted.ends_episodes
    out = counted.rollout(7, break_when_any_done=False)
    assert out["next", "step_count"][0, :, 0].tolist() == [1, 2, 3, 1, 2, 3, 1]
