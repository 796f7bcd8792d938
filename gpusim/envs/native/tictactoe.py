"""Tic-tac-toe for two players taking turns, batched on device.

Environment card
----------------
Source:
    the ``TicTacToeEnv`` that TorchRL documents (``torchrl.envs.TicTacToeEnv``): same keys,
    dtypes and ``single_player`` option; written here as a batched, sync-free tensor program.
Observation and state (``full_observation_spec`` == ``full_state_spec``):
    ``"board"``: int32 ``[*B, 3, 3]``, seen by the player to move: ``1`` their stones, ``0``
    the opponent's, ``-1`` empty (cell ``k`` is row ``k // 3``, column ``k % 3``).
    ``"turn"``: int32 ``[*B, 1]``, the player to move (``0`` or ``1``; player 0 starts).
    ``"mask"``: bool ``[*B, 9]``, the legal moves (the empty cells).
Action (``"action"``, ``Categorical(9)``, int64 ``[*B, 1]``):
    the cell the player to move marks. :meth:`TicTacToeEnv.rand_action` draws a uniformly random
    legal move using ``"mask"``; policies should respect the mask and the turn.
Reward (``("player0", "reward")`` and ``("player1", "reward")``, float32 ``[*B, 1]``):
    ``1`` for the player whose move completes a row, column or diagonal, ``0`` otherwise.
Illegal moves:
    marking an occupied cell forfeits the game: the board is left unchanged, the offender
    gets ``-1``, the other player ``+1``, and the episode terminates.
Start state:
    an empty board, ``turn = 0``, every move legal (deterministic).
Episode end:
    terminated on a win, a full board (draw) or an illegal move; ``"truncated"`` is always
    ``False`` (there is no time limit).
Arguments:
    ``single_player=False``: with ``True``, player 1 is played by the env: after each
    non-final move of player 0 it answers with a uniformly random legal move within the same
    step, so the agent always sees ``turn == 0``. Its moves are drawn from the counter-based
    generator seeded by ``seed`` / ``set_seed``.

Examples:
    >>> env = TicTacToeEnv(batch_size=[4], seed=0)
    >>> td = env.rollout(9)
    >>> td["next", "board"].shape[-2:]
    torch.Size([3, 3])
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs.native._base import NativeEnv
from gpusim.envs.native.rng import ResetRows
from gpusim.specs import Bounded, Categorical, Composite, Unbounded

__all__ = ["TicTacToeEnv"]

# the 8 lines of the board, as a [9, 8] 0/1 matrix: own_stones @ LINES counts stones per line
_LINES = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),  # rows
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),  # columns
    (0, 4, 8),
    (2, 4, 6),  # diagonals
)


def _lines_matrix(device: torch.device) -> torch.Tensor:
    m = torch.zeros(9, len(_LINES), dtype=torch.float32, device=device)
    for j, line in enumerate(_LINES):
        m[list(line), j] = 1.0
    return m


class TicTacToeEnv(NativeEnv):
    """Batched two-player tic-tac-toe with action masks (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the random moves (``rand_action`` and the ``single_player`` opponent).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        single_player: the env plays player 1 with random legal moves.

    Examples:
        >>> env = TicTacToeEnv(batch_size=[2], seed=0)
        >>> td = env.reset()
        >>> td["action"] = torch.tensor([[4], [0]])
        >>> nxt = env.step(td)["next"]
        >>> nxt["board"][0].tolist()
        [[-1, -1, -1], [-1, 0, -1], [-1, -1, -1]]
        >>> nxt["turn"].tolist(), nxt["mask"][0, 4].item()
        ([[1], [1]], False)
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        single_player: bool = False,
    ) -> None:
        if not isinstance(single_player, bool):
            raise TypeError(f"single_player must be a bool, got {single_player!r}")
        self.single_player = single_player
        super().__init__(batch_size, device, seed, auto_reset_mode=auto_reset_mode, num_noise=9, noise_bits=24)
        B, dev = self.batch_size, self.device
        self.observation_spec = Composite(
            board=Bounded(-1, 1, shape=(*B, 3, 3), dtype=torch.int32, device=dev),
            turn=Categorical(2, shape=(*B, 1), dtype=torch.int32, device=dev),
            mask=Categorical(2, shape=(*B, 9), dtype=torch.bool, device=dev),
            shape=B,
            device=dev,
        )
        self.state_spec = self.observation_spec.clone()
        self.action_spec = Categorical(9, shape=(*B, 1), device=dev)
        self.full_reward_spec = Composite(
            {
                ("player0", "reward"): Unbounded(shape=(*B, 1), dtype=torch.float32, device=dev),
                ("player1", "reward"): Unbounded(shape=(*B, 1), dtype=torch.float32, device=dev),
            },
            shape=B,
            device=dev,
        )
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=B, device=dev)
        self.register_buffer("_lines", _lines_matrix(dev), persistent=False)
        self.register_buffer("_cells", torch.arange(9, device=dev), persistent=False)

    # ------------------------------------------------------------------ moves
    def _random_move(self, mask: torch.Tensor) -> torch.Tensor:
        """A uniformly random legal cell per row, ``[*B, 1]`` int64 (cell 0 when none is legal)."""
        scores = torch.where(mask, self.rng.uniform(n=9), -1.0)
        return scores.argmax(-1, keepdim=True)

    def _play(self, flat: torch.Tensor, action: torch.Tensor) -> dict[str, torch.Tensor]:
        """One move by the player to move, on ``flat`` boards ``[*B, 9]`` (mover's point of view)."""
        empty = flat == -1
        legal = empty.gather(-1, action)
        hit = (self._cells == action) & legal
        placed = torch.where(hit, 1, flat)
        own = (placed == 1).to(torch.float32)
        win = ((own @ self._lines) > 2.5).any(-1, keepdim=True)
        after_empty = placed == -1
        illegal = ~legal
        done = win | illegal | ~after_empty.any(-1, keepdim=True)
        mover_reward = torch.where(win, 1.0, 0.0) - illegal.to(torch.float32)
        other_reward = illegal.to(torch.float32)
        # hand the board to the other player: swap the 0/1 stones
        next_flat = torch.where(after_empty, -1, 1 - placed)
        return {
            "flat": next_flat,
            "mask": after_empty,
            "done": done,
            "mover_reward": mover_reward,
            "other_reward": other_reward,
        }

    # ------------------------------------------------------------------ env API
    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a uniformly random legal move (from ``"mask"`` when present) as ``"action"``.

        Examples:
            >>> env = TicTacToeEnv(batch_size=[3], seed=1)
            >>> td = env.reset()
            >>> td["mask"][:, :8] = False
            >>> env.rand_action(td)["action"].tolist()
            [[8], [8], [8]]
        """
        if tensordict is None:
            tensordict = self._empty_td()
        mask = tensordict.get("mask", None)
        if mask is None:
            mask = torch.ones((*self.batch_size, 9), dtype=torch.bool, device=self.device)
        tensordict.set("action", self._random_move(mask))
        return tensordict

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        B, dev = self.batch_size, self.device
        done, terminated = self._flags()
        return self._out(
            board=torch.full((*B, 3, 3), -1, dtype=torch.int32, device=dev),
            turn=torch.zeros((*B, 1), dtype=torch.int32, device=dev),
            mask=torch.ones((*B, 9), dtype=torch.bool, device=dev),
            done=done,
            terminated=terminated,
            truncated=torch.zeros_like(done),
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        turn = tensordict["turn"]
        flat = tensordict["board"].flatten(-2, -1)
        first = self._play(flat, tensordict["action"])
        mover_is_0 = turn == 0
        r0 = torch.where(mover_is_0, first["mover_reward"], first["other_reward"])
        r1 = torch.where(mover_is_0, first["other_reward"], first["mover_reward"])
        flat, mask, done, turn = first["flat"], first["mask"], first["done"], 1 - turn
        if self.single_player:
            # player 1 answers (same step) wherever player 0 moved and the game goes on
            answer = mover_is_0 & ~done
            second = self._play(flat, self._random_move(mask))
            r1 = r1 + torch.where(answer, second["mover_reward"], 0.0)
            r0 = r0 + torch.where(answer, second["other_reward"], 0.0)
            flat = torch.where(answer, second["flat"], flat)
            mask = torch.where(answer, second["mask"], mask)
            done = torch.where(answer, second["done"], done)
            turn = torch.where(answer, 1 - turn, turn)
        out = TensorDict(
            {
                "board": flat.reshape(*self.batch_size, 3, 3),
                "turn": turn,
                "mask": mask,
                "player0": {"reward": r0},
                "player1": {"reward": r1},
                "done": done,
                "terminated": done.clone(),
                "truncated": torch.zeros_like(done),
            },
            batch_size=self.batch_size,
            device=self.device,
        )
        return out
