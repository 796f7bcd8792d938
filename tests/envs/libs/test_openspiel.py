"""OpenSpielEnv/OpenSpielWrapper against the real OpenSpiel: TorchRL's documented layout, sequential,
simultaneous and chance games, rewards adding up to returns, legal-move masks, state restore, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pyspiel = pytest.importorskip("pyspiel", reason="open_spiel is not installed (pip install 'gpusim[open_spiel]')")

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import MarlGroupMapType, OpenSpielEnv, OpenSpielWrapper  # noqa: E402
from gpusim.specs import Categorical, OneHot  # noqa: E402


def test_documented_layout():
    env = OpenSpielEnv("tic_tac_toe", return_state=True, seed=0)
    assert env.group_map == {"agents": ["player_0", "player_1"]}
    assert isinstance(env.full_action_spec["agents", "action"], OneHot)
    td = env.rand_step(env.reset())
    assert td["agents", "action"].shape == (2, 9)
    nxt = td["next"]
    assert nxt["agents", "observation"].shape == (2, 3, 3, 3) and nxt["agents", "reward"].shape == (2, 1)
    assert nxt["done"].shape == (1,) and nxt["terminated"].shape == (1,)
    assert nxt["current_player"].shape == () and nxt["current_player"].dtype == torch.int32
    assert isinstance(nxt["state"], str)
    check_env_specs(env, seed=0)
    one = OpenSpielEnv("tic_tac_toe", group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT, categorical_actions=True)
    assert set(one.group_map) == {"player_0", "player_1"}
    assert isinstance(one.full_action_spec["player_1", "action"], Categorical)


def test_sequential_game_matches_pyspiel():
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True, seed=0)
    game = pyspiel.load_game("tic_tac_toe")
    state = game.new_initial_state()
    td = env.reset()
    torch.manual_seed(1)
    while not state.is_terminal():
        player = state.current_player()
        mask = env.full_action_spec["agents", "action"].mask
        assert mask[player].nonzero().squeeze(-1).tolist() == state.legal_actions(player)
        td = env.rand_action(td)
        action = int(td["agents", "action"][player])
        state.apply_action(action)
        td = env.step(td)
        nxt = td["next"]
        obs = np.array([state.observation_tensor(i) for i in range(2)], dtype=np.float32)
        assert np.array_equal(nxt["agents", "observation"].reshape(2, -1).numpy(), obs)
        assert nxt["done"].item() == state.is_terminal()
        td = env._step_mdp(td)
    assert np.array_equal(nxt["agents", "reward"].squeeze(-1).numpy(), np.asarray(state.returns(), dtype=np.float32))


def test_chance_and_simultaneous_games():
    def run(game):
        env = OpenSpielEnv(game, categorical_actions=True, seed=3)
        torch.manual_seed(0)
        return env.rollout(60, break_when_any_done=False)

    poker = run("kuhn_poker")
    assert (poker == run("kuhn_poker")).all()  # chance outcomes from the seeded generator
    assert set(OpenSpielEnv("kuhn_poker").observation_spec["agents"].keys()) == {"observation", "information_state"}
    # rewards of a game add up to its returns: zero-sum per finished game
    assert torch.allclose(poker["next", "agents", "reward"].sum((0, 1)), torch.zeros(1))
    goof = run("goofspiel(num_cards=3)")
    assert OpenSpielEnv("goofspiel(num_cards=3)").parallel and goof["next", "done"].any()
    check_env_specs(OpenSpielEnv("goofspiel(num_cards=3)", seed=0), seed=0)


def test_reset_restores_a_serialized_state():
    env = OpenSpielEnv("tic_tac_toe", return_state=True, seed=0, categorical_actions=True)
    torch.manual_seed(0)
    td = env._step_mdp(env.rand_step(env.reset()))
    saved = td.clone()
    env.rand_step(td)
    restored = env.reset(saved.clone())
    assert restored["state"] == saved["state"]
    assert torch.equal(restored["agents", "observation"], saved["agents", "observation"])


def test_errors():
    with pytest.raises(ValueError, match="unknown OpenSpiel game"):
        OpenSpielEnv("no_such_game")
    with pytest.raises(TypeError, match="pyspiel.State"):
        OpenSpielWrapper(object())
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
    td = env.reset()
    td["agents", "action"] = torch.tensor([4, 0])
    td = env._step_mdp(env.step(td))
    td["agents", "action"] = torch.tensor([0, 4])  # player 1 plays the occupied centre
    with pytest.raises(ValueError, match="not legal"):
        env.step(td)
