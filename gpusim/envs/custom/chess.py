"""Chess (one board, two players taking turns) on `python-chess <https://python-chess.readthedocs.io>`_.

Environment card
----------------
Source:
    the ``ChessEnv`` that TorchRL documents (``torchrl.envs.ChessEnv``): the same arguments, keys
    and rewards; the board logic is python-chess's.
Action (``"action"``, ``Categorical(len(san_vocabulary()))``, int64 ``[]``):
    the index of a move in the SAN vocabulary: every move text that standard algebraic notation
    can write (piece moves with every disambiguation, pawn pushes, captures, promotions,
    castling), without the check/mate suffix (``+``/``#`` follow from the move and are kept in
    the ``"san"`` observation). The vocabulary is generated from the rules, sorted, and fixed.
    With ``mask_actions=True`` (default) the action spec's mask follows the legal moves after
    every reset and step, so ``env.rand_action()`` draws legal moves.
Observation (``batch_size=[]``):
    ``"turn"`` bool ``[]`` (``True``: white to move); with ``mask_actions``, ``"action_mask"``
    bool ``[V]``; with ``include_legal_moves``, ``"legal_moves"`` int64 ``[219]`` (the legal
    moves' indices, padded with ``V``); with ``include_fen``/``include_pgn``/``include_san``,
    ``"fen"``/``"pgn"``/``"san"`` as non-tensor text (``"san"`` is the move that led to the
    position, ``"<start>"`` after a reset).
Reward (``"reward"``, float32 ``[1]``):
    ``1`` for the move that checkmates, ``0.5`` when the game ends otherwise (stalemate,
    insufficient material, 75-move rule, fivefold repetition, fifty moves), ``0`` otherwise.
Episode end:
    ``done``/``terminated`` when the game is over; no truncation.
Arguments:
    ``stateful=True``: the board lives in the env. With ``False`` the position is read from the
    input's ``"fen"`` (or ``"pgn"``) on every step, which must then be included; ``reset`` can
    start from a given position with ``reset(td, set_state=True)``.
    ``include_hash`` and ``pixels`` need transforms/renderers gpusim does not have: they raise.

Examples:
    >>> env = ChessEnv(include_fen=True, include_san=True)
    >>> td = env.reset()
    >>> td["fen"]
    'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1'
    >>> int(td["action_mask"].sum())  # twenty legal first moves
    20
    >>> td = env.step(td.set("action", torch.tensor(env.san_moves.index("e4"))))
    >>> td["next", "san"], bool(td["next", "turn"])
    ('e4', False)
"""

from __future__ import annotations

import functools
import io
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.common import EnvBase
from gpusim.envs.libs._optional import import_optional
from gpusim.specs import Bounded, Categorical, Composite, NonTensor, Unbounded

__all__ = ["ChessEnv", "san_vocabulary"]

_MAX_LEGAL = 219  # the documented width of "legal_moves" (218 legal moves at most, plus padding)
_PGN_START = '[Event "?"]\n[Site "?"]\n[Date "????.??.??"]\n[Round "?"]\n[White "?"]\n[Black "?"]\n[Result "*"]\n\n*'


def _import_chess(what: str) -> Any:
    chess = import_optional("chess", "chess", extra="chess", what=what)
    import_optional("chess.pgn", "chess", extra="chess", what=what)
    return chess


@functools.lru_cache(maxsize=1)
def san_vocabulary() -> tuple[str, ...]:
    """Every SAN move text (without ``+``/``#``), sorted: the action space of :class:`ChessEnv`.

    Examples:
        >>> vocab = san_vocabulary()
        >>> "e4" in vocab and "Nbd7" in vocab and "exd8=Q" in vocab and "O-O-O" in vocab
        True
    """
    chess = _import_chess("san_vocabulary")
    files = "abcdefgh"
    names = chess.SQUARE_NAMES
    vocab = {"O-O", "O-O-O"}
    for piece, letter in (
        (chess.KNIGHT, "N"),
        (chess.BISHOP, "B"),
        (chess.ROOK, "R"),
        (chess.QUEEN, "Q"),
        (chess.KING, "K"),
    ):
        for src in chess.SQUARES:
            board = chess.Board(None)
            board.set_piece_at(src, chess.Piece(piece, chess.WHITE))
            hints = (
                [""]
                if piece == chess.KING
                else ["", files[chess.square_file(src)], str(chess.square_rank(src) + 1), names[src]]
            )
            for dst in board.attacks(src):
                for hint in hints:
                    vocab.add(f"{letter}{hint}{names[dst]}")
                    vocab.add(f"{letter}{hint}x{names[dst]}")
    for f, file in enumerate(files):
        for rank in range(2, 8):  # pushes and captures that do not promote land on ranks 2..7
            vocab.add(f"{file}{rank}")
            for g in (f - 1, f + 1):
                if 0 <= g < 8:
                    vocab.add(f"{file}x{files[g]}{rank}")
        for rank in (1, 8):
            for promo in "QRBN":
                vocab.add(f"{file}{rank}={promo}")
                for g in (f - 1, f + 1):
                    if 0 <= g < 8:
                        vocab.add(f"{file}x{files[g]}{rank}={promo}")
    return tuple(sorted(vocab))


@functools.lru_cache(maxsize=1)
def _san_index() -> dict[str, int]:
    return {san: i for i, san in enumerate(san_vocabulary())}


def _text(value: Any) -> str:
    """The string of a non-tensor entry (``NonTensorData`` or a plain string)."""
    return value if isinstance(value, str) else value.data


def _core(san: str) -> str:
    return san.rstrip("+#")


class ChessEnv(EnvBase):
    """A game of chess with TorchRL's ``ChessEnv`` interface (see the module card).

    Args:
        stateful: keep the board in the env (else read it from ``"fen"``/``"pgn"``).
        include_san, include_fen, include_pgn: add the move text / FEN / PGN observations.
        include_legal_moves: add ``"legal_moves"`` (padded indices).
        include_hash: not supported (raises).
        mask_actions: add ``"action_mask"`` and keep the action spec's mask on the legal moves.
        pixels: not supported (raises).
        device: where the tensors live.

    Raises:
        ValueError: ``stateful=False`` without ``include_fen`` or ``include_pgn``; an illegal move
            (naming it and the position); ``include_hash``/``pixels``.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> env = ChessEnv(include_legal_moves=True)
        >>> td = env.rollout(6)
        >>> td["legal_moves"].shape
        torch.Size([6, 219])
        >>> bool(td["action_mask"].gather(-1, td["action"].unsqueeze(-1)).all())  # legal moves only
        True
    """

    #: ``reset(td, set_state=True)`` starts from the position in ``td`` (``fen``/``pgn``)
    _supports_set_state = True

    def __init__(
        self,
        *,
        stateful: bool = True,
        include_san: bool = False,
        include_fen: bool = False,
        include_pgn: bool = False,
        include_legal_moves: bool = False,
        include_hash: bool = False,
        include_hash_inv: bool = False,
        mask_actions: bool = True,
        pixels: bool = False,
        device: torch.device | str | int | None = None,
    ) -> None:
        chess = _import_chess("ChessEnv")
        if include_hash or include_hash_inv:
            raise ValueError("ChessEnv(include_hash=True) needs a Hash transform, which gpusim does not provide")
        if pixels:
            raise ValueError("ChessEnv(pixels=True) needs an SVG renderer (cairosvg), which gpusim does not use")
        if not stateful and not (include_fen or include_pgn):
            raise ValueError(
                "ChessEnv(stateful=False) reads the position from 'fen' or 'pgn': set include_fen or include_pgn"
            )
        super().__init__(device=device, batch_size=[])
        self.__dict__["_chess"] = chess
        self.stateful = stateful
        self.include_san = include_san
        self.include_fen = include_fen
        self.include_pgn = include_pgn
        self.include_legal_moves = include_legal_moves
        self.mask_actions = mask_actions
        self.board = chess.Board()
        vocab = san_vocabulary()
        n = len(vocab)
        dev = self.device
        obs = Composite(turn=Categorical(2, shape=(), dtype=torch.bool, device=dev), device=dev)
        if include_legal_moves:
            obs["legal_moves"] = Bounded(0, n, shape=(_MAX_LEGAL,), dtype=torch.int64, device=dev)
        if include_san:
            obs["san"] = NonTensor(shape=(), device=dev, example_data="Nc6")
        if include_pgn:
            obs["pgn"] = NonTensor(shape=(), device=dev, example_data=_PGN_START)
        if include_fen:
            obs["fen"] = NonTensor(shape=(), device=dev, example_data=chess.STARTING_FEN)
        if mask_actions:
            obs["action_mask"] = Categorical(2, shape=(n,), dtype=torch.bool, device=dev)
        self.observation_spec = obs
        if not stateful:
            self.state_spec = Composite({k: obs[k].clone() for k in ("fen", "pgn") if k in obs.keys()}, device=dev)
        self.action_spec = Categorical(n, shape=(), dtype=torch.int64, device=dev)
        self.reward_spec = Unbounded((1,), dtype=torch.float32, device=dev)
        flag = Categorical(2, shape=(1,), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), device=dev)

    @property
    def san_moves(self) -> tuple[str, ...]:
        """The SAN vocabulary (the action space): an action is an index into it.

        Examples:
            >>> moves = ChessEnv().san_moves
            >>> len(moves), moves.index("e4") < len(moves), "O-O" in moves
            (14006, True, True)
        """
        return san_vocabulary()

    @property
    def lib(self) -> Any:
        """The chess module.

        Examples:
            >>> ChessEnv().lib.__name__
            'chess'
        """
        return self._chess

    # ------------------------------------------------------------------ board helpers
    def _legal(self, board: Any) -> dict[int, Any]:
        """``{vocabulary index: move}`` of the legal moves. The SAN without suffix needs no trial
        push (python-chess's ``_algebraic_without_suffix`` when present, else ``san`` stripped)."""
        index = _san_index()
        plain = getattr(board, "_algebraic_without_suffix", None)
        if plain is not None:
            return {index[plain(m)]: m for m in board.legal_moves}
        return {index[_core(board.san(m))]: m for m in board.legal_moves}

    @staticmethod
    def _is_done(board: Any) -> bool:
        return board.is_game_over() or board.is_fifty_moves()

    def _board_from(self, tensordict: TensorDictBase) -> Any:
        chess = self._chess
        if self.include_fen:
            board = self.board
            board.set_fen(_text(tensordict.get("fen")))
            return board
        game = chess.pgn.read_game(io.StringIO(_text(tensordict.get("pgn"))))
        board = chess.Board()
        for move in game.mainline_moves():
            board.push(move)
        self.board = board
        return board

    def _observe(self, board: Any, san: str | None, legal: dict[int, Any]) -> dict:
        chess = self._chess
        src: dict = {"turn": torch.tensor(board.turn)}
        self.__dict__["_legal_now"] = legal if self.stateful else None
        indices = torch.tensor(sorted(legal), dtype=torch.int64)
        if self.mask_actions:
            mask = torch.zeros(len(san_vocabulary()), dtype=torch.bool)
            mask[indices] = True
            src["action_mask"] = mask
            self.action_spec.update_mask(mask.to(self.device))
        if self.include_legal_moves:
            pad = torch.full((_MAX_LEGAL,), len(san_vocabulary()), dtype=torch.int64)
            pad[: len(indices)] = indices
            src["legal_moves"] = pad
        if self.include_san:
            src["san"] = san
        if self.include_fen:
            src["fen"] = board.fen()
        if self.include_pgn:
            src["pgn"] = str(chess.pgn.Game.from_board(board))
        return src

    def _finish(self, src: dict) -> TensorDictBase:
        text = {k: src.pop(k) for k in ("san", "fen", "pgn") if k in src}
        td = new_td(src, torch.Size([]), None)
        for key, value in text.items():
            td.set_non_tensor(key, value)
        return td if self.device.type == "cpu" else td.to(self.device)

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset(self, tensordict: TensorDictBase | None, set_state: bool = False, **kwargs: Any) -> TensorDictBase:
        if kwargs:
            raise TypeError(f"ChessEnv.reset got unexpected keyword arguments {sorted(kwargs)}")
        if set_state and tensordict is not None and (self.include_fen or self.include_pgn):
            board = self._board_from(tensordict)
            if self._is_done(board):
                raise ValueError(f"ChessEnv.reset: cannot start from a finished game (fen {board.fen()!r})")
        else:
            self.board.reset()
            board = self.board
        san = "<start>"
        if board.move_stack:
            move = board.pop()
            san = board.san(move)
            board.push(move)
        src = self._observe(board, san, self._legal(board))
        flag = torch.zeros(2, 1, dtype=torch.bool)
        src["done"], src["terminated"] = flag[0], flag[1]
        return self._finish(src)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        board = self.board if self.stateful else self._board_from(tensordict)
        action = int(tensordict.get("action"))
        legal = self.__dict__.pop("_legal_now", None)  # the legal moves the last observation showed
        move = None if legal is None else legal.get(action)
        if move is None or not board.is_legal(move):  # no cache, or the board changed since
            move = self._legal(board).get(action)
        if move is None:
            text = san_vocabulary()[action] if 0 <= action < len(san_vocabulary()) else action
            raise ValueError(f"ChessEnv.step: the move {text!r} (action {action}) is not legal in {board.fen()!r}")
        san = board.san(move)
        board.push(move)
        done = self._is_done(board)
        reward = 1.0 if board.is_checkmate() else 0.5 if done else 0.0
        src = self._observe(board, san, {} if done else self._legal(board))
        src["reward"] = torch.tensor([reward], dtype=torch.float32)
        src["done"] = torch.tensor([done])
        src["terminated"] = torch.tensor([done])
        return self._finish(src)

    def _set_seed(self, seed: int | None) -> None:
        """Chess has no randomness: nothing to seed."""

    def get_legal_moves(self, tensordict: TensorDictBase | None = None, uci: bool = False) -> list[str]:
        """The legal moves of the position (SAN, or UCI with ``uci=True``); a stateless env reads
        the position from ``tensordict``.

        Examples:
            >>> len(ChessEnv().get_legal_moves())
            20
        """
        if self.stateful:
            board = self.board
        elif tensordict is None:
            raise ValueError("ChessEnv(stateful=False).get_legal_moves needs the tensordict holding the position")
        else:
            board = self._board_from(tensordict)
        return [board.uci(m) if uci else board.san(m) for m in board.legal_moves]
