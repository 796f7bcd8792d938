"""Native batched environments: tensor programs that run on the env device.

Classic control with gymnasium's dynamics (``CartPoleEnv``, ``PendulumEnv``, ``MountainCarEnv``,
``MountainCarContinuousEnv``, ``AcrobotEnv``), the two-player ``TicTacToeEnv`` and the MinAtar
games of :mod:`gpusim.envs.native.minatar`;
:func:`gpusim.make` builds them from gymnasium ids with gymnasium's time limits.

Every env is stateless: the physical state travels in the tensordict under ``"state"`` and
``_step`` is a pure function of its input; random numbers come from a counter-based hash
(:class:`~gpusim.envs.native.rng.CounterRNG`), so rollouts are reproducible and compile.

Writing an env: subclass :class:`NativeEnv` (the contract: specs + ``_reset(tensordict, rows)`` +
``_step(tensordict)``, see :mod:`gpusim.envs.native._base` and ``docs/writing_an_env.md``); draw
start states from ``rows`` (:class:`ResetRows`) and step randomness from ``self.rng``
(:class:`CounterRNG`); register an id for :func:`gpusim.make` with :func:`gpusim.register`.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[16], seed=0)
    >>> env.rollout(3)["next", "reward"].shape
    torch.Size([16, 3, 1])
"""

from gpusim.envs.native._base import NativeEnv
from gpusim.envs.native.acrobot import AcrobotEnv
from gpusim.envs.native.cartpole import CartPoleEnv
from gpusim.envs.native.minatar import AsterixEnv, BreakoutEnv, FreewayEnv, SeaquestEnv, SpaceInvadersEnv
from gpusim.envs.native.mountain_car import MountainCarContinuousEnv, MountainCarEnv
from gpusim.envs.native.params import Distribution, choice, log_uniform, normal, uniform
from gpusim.envs.native.pendulum import PendulumEnv
from gpusim.envs.native.rng import CounterRNG, ResetRows
from gpusim.envs.native.tictactoe import TicTacToeEnv

__all__ = [
    "AcrobotEnv",
    "AsterixEnv",
    "BreakoutEnv",
    "CartPoleEnv",
    "CounterRNG",
    "Distribution",
    "FreewayEnv",
    "MountainCarContinuousEnv",
    "MountainCarEnv",
    "NativeEnv",
    "PendulumEnv",
    "ResetRows",
    "SeaquestEnv",
    "SpaceInvadersEnv",
    "TicTacToeEnv",
    "choice",
    "log_uniform",
    "normal",
    "uniform",
]
