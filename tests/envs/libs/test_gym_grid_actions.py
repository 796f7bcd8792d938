"""GymWrapper: a ``MultiDiscrete`` action whose legal moves come as one ``"action_mask"`` of
shape ``nvec`` (a board's cells) becomes one flat choice, masked by ``ActionMask``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from gpusim.envs.libs import GymWrapper
from gpusim.envs.libs.gym_specs import flat_multi_discrete
from gpusim.specs import Categorical, MultiCategorical, OneHot
from gpusim.transforms import ActionMask, TransformedEnv


class ClaimCells(gym.Env):
    """A 2x3 board: each step claims the cell ``(row, col)``; claimed cells leave the mask; the
    episode ends when the board is full. Claiming a claimed cell is an error (so a move the
    mask forbids, or a wrongly decoded action, is caught)."""

    def __init__(self, rows=2, cols=3, start=(0, 0)):
        super().__init__()
        self.shape = (rows, cols)
        self.action_space = gym.spaces.MultiDiscrete([rows, cols], start=list(start))
        self.start = np.asarray(start)
        self.observation_space = gym.spaces.Dict(
            {
                "board": gym.spaces.Box(0, 1, (rows, cols), dtype=np.int64),
                "action_mask": gym.spaces.Box(0, 1, (rows, cols), dtype=bool),
            }
        )
        self.moves = []

    def _obs(self):
        return {"board": self.board.copy(), "action_mask": self.board == 0}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.board = np.zeros(self.shape, dtype=np.int64)
        return self._obs(), {}

    def step(self, action):
        row, col = (np.asarray(action) - self.start).tolist()
        self.moves.append((row, col))
        if self.board[row, col]:
            raise RuntimeError(f"cell {(row, col)} claimed twice")
        self.board[row, col] = 1
        return self._obs(), 1.0, bool(self.board.all()), False, {}


@pytest.mark.parametrize("categorical", [True, False])
def test_grid_mask_gives_a_flat_action(categorical):
    env = GymWrapper(ClaimCells(), categorical_action_encoding=categorical)
    spec = env.action_spec
    if categorical:
        assert isinstance(spec, Categorical) and spec.n == 6 and spec.shape == ()
    else:
        assert isinstance(spec, OneHot) and spec.shape == (6,) and spec.dtype == torch.bool
    env = TransformedEnv(env, ActionMask())
    td = env.rollout(10)  # random legal moves until the board is full
    assert td.batch_size == (6,) and bool(td["next", "done"][-1])
    moves = env.base_env.env.unwrapped.moves
    assert sorted(moves) == [(r, c) for r in range(2) for c in range(3)]  # every cell once
    index = td["action"] if categorical else td["action"].long().argmax(-1)
    assert [divmod(int(i), 3) for i in index] == moves  # flat index i is cell divmod(i, 3)


def test_grid_actions_honour_the_space_start():
    env = GymWrapper(ClaimCells(start=(1, 10)), categorical_action_encoding=True)
    td = env.reset().set("action", torch.tensor(5))
    env.step(td)
    assert env.env.unwrapped.moves == [(1, 2)]


def test_mask_of_another_shape_keeps_the_multi_discrete_spec():
    class Independent(ClaimCells):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Dict({"action_mask": gym.spaces.Box(0, 1, (5,), dtype=bool)})

        def _obs(self):
            return {"action_mask": np.ones(5, dtype=bool)}

    env = GymWrapper(Independent(), categorical_action_encoding=True)
    assert isinstance(env.action_spec, MultiCategorical)


def test_flat_multi_discrete_round_trip():
    leaf = flat_multi_discrete(gym.spaces.MultiDiscrete([3, 4, 2]), (5,), None, True, ("action",))
    flat = torch.arange(24).reshape(-1)[torch.tensor([0, 7, 13, 22, 23])]
    multi = leaf.to_numpy(flat)
    assert multi.shape == (5, 3)
    assert multi.tolist() == [list(np.unravel_index(int(i), (3, 4, 2))) for i in flat]
    assert torch.equal(leaf.to_torch(multi), flat)


def test_a_grid_mask_masks_a_flat_spec_row_by_row():
    spec = Categorical(6, shape=(2,))
    mask = torch.zeros(2, 2, 3, dtype=torch.bool)
    mask[0, 1, 2] = True  # row 0: only cell (1, 2) = flat 5
    mask[1, 0, 1] = True  # row 1: only cell (0, 1) = flat 1
    spec.update_mask(mask)
    assert spec.rand().tolist() == [5, 1]
    with pytest.raises(ValueError, match=r"mask of shape \(2, 2, 2\) does not broadcast to \(2, 6\)"):
        spec.update_mask(torch.ones(2, 2, 2, dtype=torch.bool))
