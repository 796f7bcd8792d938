"""PettingZooEnv/PettingZooWrapper against the real PettingZoo: TorchRL's documented layout, AEC and
parallel APIs, done aggregation, action masks, group maps, seeded rollouts, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pettingzoo = pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (pip install 'gpusim[pettingzoo]')")

from pettingzoo.classic import rps_v2, tictactoe_v3  # noqa: E402

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import MarlGroupMapType, PettingZooEnv, PettingZooWrapper  # noqa: E402
from gpusim.specs import Categorical, OneHot  # noqa: E402


def test_aec_layout_matches_torchrl_docs():
    # TorchRL's documented AEC layout (tictactoe): one group per player, action_mask and mask in
    # each group, per-agent flags (n, 1) and root flags (1,)
    env = PettingZooWrapper(tictactoe_v3.env(), use_mask=True, seed=0)
    assert env.group_map == {"player_1": ["player_1"], "player_2": ["player_2"]}
    td = env.rand_action(env.reset())
    for group in ("player_1", "player_2"):
        assert td[group].batch_size == (1,)
        assert td[group, "action"].shape == (1,) and td[group, "action"].dtype == torch.int64
        assert td[group, "action_mask"].shape == (1, 9) and td[group, "action_mask"].dtype == torch.bool
        assert td[group, "mask"].shape == (1,)
        assert td[group, "observation", "observation"].shape == (1, 3, 3, 2)
        assert td[group, "observation", "observation"].dtype == torch.int8
        for flag in ("done", "terminated", "truncated"):
            assert td[group, flag].shape == (1, 1)
    for flag in ("done", "terminated", "truncated"):
        assert td[flag].shape == (1,)
    assert set(env.done_keys) >= {"done", ("player_1", "done"), ("player_2", "truncated")}
    assert isinstance(env.full_action_spec["player_1", "action"], Categorical)
    check_env_specs(env, seed=0)


def test_parallel_layout_and_data_match_library():
    env = PettingZooWrapper(rps_v2.parallel_env(max_cycles=4), seed=3)
    raw = rps_v2.parallel_env(max_cycles=4)
    obs, _ = raw.reset(seed=3)
    assert env.group_map == {"player": ["player_0", "player_1"]}
    td = env.reset()
    # Discrete observations are one-hot (TorchRL's default for observation spaces)
    assert td["player", "observation"].argmax(-1).tolist() == [int(obs["player_0"]), int(obs["player_1"])]
    for _ in range(4):
        td = env.rand_action(td)
        actions = td["player", "action"].tolist()
        obs, rew, term, trunc, _ = raw.step({"player_0": actions[0], "player_1": actions[1]})
        td = env.step(td)
        nxt = td["next"]
        assert nxt["player", "observation"].argmax(-1).tolist() == [int(obs["player_0"]), int(obs["player_1"])]
        assert nxt["player", "reward"].squeeze(-1).tolist() == [rew["player_0"], rew["player_1"]]
        assert nxt["player", "truncated"].squeeze(-1).tolist() == [trunc["player_0"], trunc["player_1"]]
        assert nxt["done"].item() == (any(trunc.values()) or any(term.values()))
        td = env._step_mdp(td)
    check_env_specs(env, seed=0)


def test_done_aggregation_any_and_all():
    env = PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True, seed=1)
    assert env.done_on_any is False  # AEC default: all agents done
    torch.manual_seed(0)
    data = env.rollout(40, break_when_any_done=False)
    group_done = torch.cat([data["next", g, "done"].reshape(40, -1) for g in env.group_map], -1)
    assert torch.equal(data["next", "done"].squeeze(-1), group_done.all(-1))
    assert bool(data["next", "done"].any())  # at least one game finished in 40 moves
    env = PettingZooEnv("rps_v2", parallel=True, seed=1, max_cycles=3, done_on_any=False)
    data = env.rollout(6, break_when_any_done=False)
    group_done = data["next", "player", "done"].reshape(6, -1)
    assert torch.equal(data["next", "done"].squeeze(-1), group_done.all(-1))
    assert data["next", "done"].squeeze(-1).tolist() == [False, False, True] * 2


def test_action_mask_follows_the_game_and_random_moves_are_legal():
    env = PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True, seed=0, categorical_actions=False)
    assert isinstance(env.full_action_spec["player_1", "action"], OneHot)
    torch.manual_seed(0)
    td = env.reset()
    for _ in range(30):
        agent = env.env.agent_selection
        expected = env.env.observe(agent)["action_mask"].astype(bool)
        assert td[agent, "mask"].tolist() == [True]
        assert td[agent, "action_mask"][0].tolist() == expected.tolist()
        td = env.rand_action(td)
        assert bool(expected[td[agent, "action"][0].argmax()])  # a legal move
        td, td_next = env.step_and_maybe_reset(td)
        assert td["next", "player_1", "reward"].abs().max() <= 1
        td = td_next


def test_group_maps_and_state():
    env = PettingZooEnv("rps_v2", parallel=True, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT, seed=0)
    assert env.group_map == {"player_0": ["player_0"], "player_1": ["player_1"]}
    check_env_specs(env, seed=0)
    env = PettingZooEnv("rps_v2", parallel=True, group_map={"both": ["player_1", "player_0"]}, use_mask=True, seed=0)
    td = env.rollout(3)
    assert td["both", "mask"].all() and td["next", "both", "reward"].shape == (3, 2, 1)


def test_mpe_parallel_heterogeneous_groups():
    pytest.importorskip("mpe2", reason="mpe2 is not installed (pip install mpe2)")
    env = PettingZooEnv("mpe/simple_adversary_v3", parallel=True, return_state=True, seed=0, max_cycles=5)
    assert env.group_map == {"adversary": ["adversary_0"], "agent": ["agent_0", "agent_1"]}
    assert env.observation_spec["agent", "observation"].shape == (2, 10)
    assert env.observation_spec["state"].shape == (28,)
    data = env.rollout(7, break_when_any_done=False)
    assert data["next", "done"].squeeze(-1).tolist() == [False] * 4 + [True] + [False] * 2
    check_env_specs(env, seed=0)


def test_seeded_rollouts_repeat():
    def run():
        env = PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True, seed=7)
        torch.manual_seed(7)
        return env.rollout(25, break_when_any_done=False)

    a, b = run(), run()
    assert (a == b).all()


def test_resets_and_errors():
    env = PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True, seed=0)
    td = env.rand_step(env.reset())
    root = env._step_mdp(td)
    # a root "_reset" that selects nothing leaves the game as it is
    kept = env.reset(root.clone().set("_reset", torch.zeros(1, dtype=torch.bool)))
    assert torch.equal(kept["player_1", "observation", "observation"], root["player_1", "observation", "observation"])
    with pytest.raises(ValueError, match="every agent"):
        env.reset(
            root.clone()
            .set(("player_1", "_reset"), torch.ones(1, 1, dtype=torch.bool))
            .set(("player_2", "_reset"), torch.zeros(1, 1, dtype=torch.bool))
        )
    with pytest.raises(ValueError, match="use_mask=True"):
        PettingZooWrapper(tictactoe_v3.env())
    with pytest.raises(TypeError, match="ParallelEnv or AECEnv"):
        PettingZooWrapper(object())
    with pytest.raises(ValueError, match="unknown PettingZoo task"):
        PettingZooEnv("nope_v0", parallel=True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        PettingZooWrapper(rps_v2.parallel_env(), frame_skip=2)
    with pytest.raises(ValueError, match="reserved"):
        PettingZooWrapper(rps_v2.parallel_env(), group_map={"done": ["player_0", "player_1"]})
    assert np.asarray(env.env.observe("player_1")["observation"]).shape == (3, 3, 2)
