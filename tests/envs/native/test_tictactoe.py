"""TicTacToeEnv: keys and specs, turns, board perspective, wins, draws, illegal moves, masks,
the single-player opponent, and a batched rollout against a scalar reference."""

from __future__ import annotations

import random

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native import TicTacToeEnv
from gpusim.specs import Categorical


def _play(env: TicTacToeEnv, moves: list[int]) -> list[TensorDict]:
    """Plays ``moves`` in a single (unbatched) game, returning the ``next`` data of each step."""
    td = env.reset()
    outs = []
    for m in moves:
        td["action"] = torch.tensor([m])
        td = env.step(td)
        outs.append(td["next"].clone())
        td = env._step_mdp(td)
    return outs


def test_keys_and_specs() -> None:
    env = TicTacToeEnv(batch_size=[4])
    assert set(env.observation_spec.keys()) == {"board", "turn", "mask"}
    assert set(env.state_spec.keys()) == {"board", "turn", "mask"}
    assert env.observation_spec["board"].shape == (4, 3, 3) and env.observation_spec["board"].dtype == torch.int32
    assert env.observation_spec["turn"].shape == (4, 1) and env.observation_spec["turn"].dtype == torch.int32
    assert env.observation_spec["mask"].shape == (4, 9) and env.observation_spec["mask"].dtype == torch.bool
    assert isinstance(env.action_spec, Categorical) and env.action_spec.n == 9 and env.action_spec.shape == (4, 1)
    assert set(env.reward_keys) == {("player0", "reward"), ("player1", "reward")}
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    td = env.reset()
    assert (td["board"] == -1).all() and (td["turn"] == 0).all() and td["mask"].all()
    assert not td["done"].any() and not td["truncated"].any()


def test_turns_alternate_and_board_is_seen_by_the_player_to_move() -> None:
    env = TicTacToeEnv()
    out = _play(env, [4, 0])
    # after player 0 marks the centre, player 1 to move sees it as an opponent stone (0)
    assert out[0]["turn"].item() == 1
    assert out[0]["board"].flatten().tolist() == [-1, -1, -1, -1, 0, -1, -1, -1, -1]
    assert out[0]["mask"].tolist() == [True] * 4 + [False] + [True] * 4
    # after player 1 marks a corner, player 0 sees its own centre as 1 and the corner as 0
    assert out[1]["turn"].item() == 0
    assert out[1]["board"].flatten().tolist() == [0, -1, -1, -1, 1, -1, -1, -1, -1]


@pytest.mark.parametrize(
    "moves, winner",
    [
        ([0, 3, 1, 4, 2], 0),  # top row
        ([0, 1, 3, 4, 8, 7], 1),  # middle column for player 1
        ([0, 1, 4, 2, 8], 0),  # diagonal
        ([2, 0, 4, 1, 6], 0),  # anti-diagonal
    ],
)
def test_wins(moves: list[int], winner: int) -> None:
    out = _play(TicTacToeEnv(), moves)
    for step in out[:-1]:
        assert not step["done"].item()
        assert step["player0", "reward"].item() == 0 and step["player1", "reward"].item() == 0
    last = out[-1]
    assert last["done"].item() and last["terminated"].item() and not last["truncated"].item()
    assert last[f"player{winner}", "reward"].item() == 1.0
    assert last[f"player{1 - winner}", "reward"].item() == 0.0


def test_draw_ends_with_zero_rewards() -> None:
    out = _play(TicTacToeEnv(), [0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert [s["done"].item() for s in out] == [False] * 8 + [True]
    assert out[-1]["player0", "reward"].item() == 0 and out[-1]["player1", "reward"].item() == 0
    assert not out[-1]["mask"].any()


def test_illegal_move_forfeits_and_leaves_board_unchanged() -> None:
    out = _play(TicTacToeEnv(), [4, 4])
    last = out[-1]
    assert last["done"].item() and last["terminated"].item()
    assert last["player1", "reward"].item() == -1.0 and last["player0", "reward"].item() == 1.0
    # only the centre stone of player 0; the board is handed over as usual (player 0 to move sees it as 1)
    assert last["board"].flatten().tolist() == [-1, -1, -1, -1, 1, -1, -1, -1, -1]


def test_rand_action_is_legal_and_uniform() -> None:
    env = TicTacToeEnv(batch_size=[6000], seed=3)
    td = env.reset()
    mask = torch.zeros(6000, 9, dtype=torch.bool)
    mask[:, [1, 5, 7]] = True
    td["mask"] = mask
    actions = env.rand_action(td)["action"].squeeze(-1)
    counts = torch.bincount(actions, minlength=9)
    assert counts[[0, 2, 3, 4, 6, 8]].sum() == 0
    assert bool(((counts[[1, 5, 7]] - 2000).abs() < 150).all())


def _reference_game_step(board: list[int], turn: int, action: int):
    """Scalar reference: board in absolute terms (0/1 = player, -1 empty)."""
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
    rewards = [0.0, 0.0]
    if board[action] != -1:
        rewards[turn], rewards[1 - turn] = -1.0, 1.0
        return board, 1 - turn, rewards, True
    board = board.copy()
    board[action] = turn
    win = any(all(board[i] == turn for i in line) for line in lines)
    if win:
        rewards[turn] = 1.0
    return board, 1 - turn, rewards, win or -1 not in board


def test_batched_rollout_matches_scalar_reference() -> None:
    """Random (sometimes illegal) moves in 64 parallel games, checked against a scalar rule book."""
    n = 64
    env = TicTacToeEnv(batch_size=[n], seed=0)
    rnd = random.Random(0)
    td = env.reset()
    boards = [[-1] * 9 for _ in range(n)]
    turns = [0] * n
    for _ in range(40):
        actions = [rnd.randrange(9) for _ in range(n)]
        td["action"] = torch.tensor(actions).unsqueeze(-1)
        td, td_next_root = env.step_and_maybe_reset(td)
        nxt = td["next"]
        for i in range(n):
            board, turn, rewards, done = _reference_game_step(boards[i], turns[i], actions[i])
            assert nxt["done"][i].item() == done
            assert [nxt["player0", "reward"][i].item(), nxt["player1", "reward"][i].item()] == rewards
            assert nxt["turn"][i].item() == turn
            seen = [-1 if c == -1 else int(c == turn) for c in board]
            assert nxt["board"][i].flatten().tolist() == seen
            boards[i], turns[i] = ([-1] * 9, 0) if done else (board, turn)
        td = td_next_root


def test_single_player_opponent_answers_within_the_step() -> None:
    env = TicTacToeEnv(batch_size=[500], seed=0, single_player=True)
    td = env.reset()
    td["action"] = torch.full((500, 1), 4)
    nxt = env.step(td)["next"]
    assert (nxt["turn"] == 0).all()
    flat = nxt["board"].flatten(1)
    # player 0 still owns the centre, player 1 answered with exactly one legal random cell
    assert (flat[:, 4] == 1).all()
    assert ((flat == 0).sum(-1) == 1).all()
    assert ((flat == -1).sum(-1) == 7).all()
    answers = (flat == 0).float().argmax(-1)
    assert set(answers.tolist()) == {0, 1, 2, 3, 5, 6, 7, 8}
    assert not nxt["done"].any()


def test_single_player_full_games_and_reproducibility() -> None:
    def run(seed: int) -> TensorDict:
        env = TicTacToeEnv(batch_size=[300], seed=seed, single_player=True)
        return env.rollout(30, break_when_any_done=False)

    a, b, c = run(1), run(1), run(2)
    assert (a == b).all() and not torch.equal(a["next", "board"], c["next", "board"])
    done = a["next", "done"]
    # the agent always moves; turn flips to 1 only when its own move ended the game
    assert (a["turn"] == 0).all() and ((a["next", "turn"] == 0) | done).all()
    assert (a["next", "turn"] == 1).any()
    r0, r1 = a["next", "player0", "reward"], a["next", "player1", "reward"]
    # rand_action reads the mask: no illegal moves, so no negative rewards; both players win games
    assert (r0 >= 0).all() and (r1 >= 0).all()
    assert r0.sum() > 0 and r1.sum() > 0
    assert ((r0 + r1 > 0) <= done).all()  # a win ends the game
    # no player 0 move lands on an occupied cell
    legal = a["mask"].gather(-1, a["action"])
    assert legal.all()


def test_player0_win_is_not_answered() -> None:
    env = TicTacToeEnv(batch_size=[1], seed=0, single_player=True)
    board = torch.tensor([[1, 1, -1, 0, 0, -1, -1, -1, -1]], dtype=torch.int32).reshape(1, 3, 3)
    td = TensorDict(
        {
            "board": board,
            "turn": torch.zeros(1, 1, dtype=torch.int32),
            "mask": (board == -1).flatten(1),
            "action": torch.tensor([[2]]),
        },
        [1],
    )
    nxt = env.step(td)["next"]
    assert nxt["done"].item() and nxt["player0", "reward"].item() == 1 and nxt["player1", "reward"].item() == 0
    assert (nxt["board"].flatten() == -1).sum() == 4  # no answer was played
