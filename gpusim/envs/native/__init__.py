"""Native batched environments: tensor programs that run on the env device.

Classic control with gymnasium's dynamics (``CartPoleEnv``, ``PendulumEnv``, ``MountainCarEnv``,
``MountainCarContinuousEnv``, ``AcrobotEnv``), the two-player ``TicTacToeEnv`` and the MinAtar
games of :mod:`gpusim.envs.native.minatar`;
:func:`gpusim.make` builds them from gymnasium ids with gymnasium's time limits.

Every env is stateless: the physical state travels in the tensordict under ``"state"`` and
``_step`` is a pure function of its input; reset noise comes from a counter-based hash
(:class:`~gpusim.envs.native._rng.CounterRNG`), so rollouts are reproducible and compile.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[16], seed=0)
    >>> env.rollout(3)["next", "reward"].shape
    torch.Size([16, 3, 1])
"""

from gpusim.envs.native.acrobot import AcrobotEnv
from gpusim.envs.native.cartpole import CartPoleEnv
from gpusim.envs.native.mountain_car import MountainCarContinuousEnv, MountainCarEnv
from gpusim.envs.native.pendulum import PendulumEnv
from gpusim.envs.native.minatar import AsterixEnv, BreakoutEnv, FreewayEnv
from gpusim.envs.native.tictactoe import TicTacToeEnv

__all__ = [
    "AcrobotEnv",
    "AsterixEnv",
    "BreakoutEnv",
    "CartPoleEnv",
    "FreewayEnv",
    "MountainCarContinuousEnv",
    "MountainCarEnv",
    "PendulumEnv",
    "TicTacToeEnv",
]
