"""ChessEnv on the real python-chess: TorchRL's documented keys, legal-move masks, FEN/SAN/PGN, rewards,
stateless play from FEN/PGN, errors."""

from __future__ import annotations

import pytest
import torch

chess = pytest.importorskip("chess", reason="chess is not installed (pip install 'gpusim[chess]')")

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.custom import ChessEnv  # noqa: E402
from gpusim.envs.custom.chess import san_vocabulary  # noqa: E402
from gpusim.specs import Categorical  # noqa: E402


def _play(env, td, san):
    return env.step(td.set("action", torch.tensor(env.san_moves.index(san))))


def test_documented_layout():
    env = ChessEnv(include_fen=True, include_san=True, include_pgn=True, include_legal_moves=True)
    td = env.rand_step(env.reset())
    n = len(san_vocabulary())
    assert isinstance(env.action_spec, Categorical) and env.action_spec.n == n and td["action"].shape == ()
    assert td["action_mask"].shape == (n,) and td["legal_moves"].shape == (219,)
    assert td["turn"].shape == () and td["turn"].dtype == torch.bool and bool(td["turn"])
    assert td["san"] == "<start>" and td["fen"] == chess.STARTING_FEN and td["pgn"].endswith("*")
    nxt = td["next"]
    assert nxt["reward"].shape == (1,) and nxt["done"].shape == (1,) and nxt["terminated"].shape == (1,)
    assert not bool(nxt["turn"])
    check_env_specs(env, seed=0)


def test_vocabulary_covers_every_legal_move_of_random_games():
    torch.manual_seed(0)
    index = {s: i for i, s in enumerate(san_vocabulary())}
    env = ChessEnv(include_legal_moves=True)
    data = env.rollout(400, break_when_any_done=False)
    # every action was legal: its index is in the mask shown before the move
    assert bool(data["action_mask"].gather(-1, data["action"].unsqueeze(-1)).all())
    legal = data["legal_moves"]
    assert bool((data["action_mask"].sum(-1) == (legal < len(index)).sum(-1)).all())
    board = chess.Board()
    for move in board.legal_moves:  # and the vocabulary spells python-chess's SAN
        assert board.san(move).rstrip("+#") in index


def test_fools_mate_reward_and_texts():
    env = ChessEnv(include_san=True, include_fen=True, include_pgn=True)
    td = env.reset()
    for san in ("f3", "e5", "g4"):
        td = env._step_mdp(_play(env, td, san))
        assert not td["done"].item()
    out = _play(env, td, "Qh4")["next"]
    assert out["done"].item() and out["terminated"].item() and out["reward"].item() == 1.0
    assert out["san"] == "Qh4#" and "Qh4#" in out["pgn"]
    assert chess.Board(out["fen"]).is_checkmate()


def test_stalemate_is_a_draw_worth_half():
    env = ChessEnv(stateful=False, include_fen=True)
    td = env.reset()
    td["fen"] = "k7/8/1K6/8/8/8/8/2Q5 w - - 0 1"
    td = env.reset(td, set_state=True)
    out = _play(env, td, "Qc7")["next"]  # no legal reply for black, not in check
    assert out["done"].item() and out["reward"].item() == 0.5
    assert not out["action_mask"].any()


def test_stateless_steps_read_the_position():
    env = ChessEnv(stateful=False, include_fen=True)
    td = env._step_mdp(_play(env, env.reset(), "e4"))
    after_e4 = td["fen"]
    first = env._step_mdp(_play(env, td.clone(), "e5"))
    again = env._step_mdp(_play(env, td.clone(), "c5"))  # the same position, another reply
    assert first["fen"] != again["fen"] and chess.Board(again["fen"]).fullmove_number == 2
    assert td["fen"] == after_e4
    check_env_specs(env, seed=0)
    pgn = ChessEnv(stateful=False, include_pgn=True)
    td = pgn._step_mdp(_play(pgn, pgn.reset(), "d4"))
    assert "1. d4" in td["pgn"]
    assert pgn.get_legal_moves(td).count("d5") == 1


def test_errors():
    env = ChessEnv()
    td = env.reset()
    with pytest.raises(ValueError, match="not legal"):
        _play(env, td, "e5")  # a black move on white's turn
    with pytest.raises(ValueError, match="include_fen or include_pgn"):
        ChessEnv(stateful=False)
    with pytest.raises(ValueError, match="Hash"):
        ChessEnv(include_hash=True)
    with pytest.raises(ValueError, match="pixels"):
        ChessEnv(pixels=True)
