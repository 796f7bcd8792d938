"""The MinAtar games (Young and Tian 2019) as batched tensor programs, with the ``minatar``
package's rules, observations and colours.

``gpusim.make("MinAtar/<Game>-v0")`` builds a game with the full action set of 6,
``"MinAtar/<Game>-v1"`` with the game's minimal action set (the ids of the package's gymnasium
registration, no time limit).

Examples:
    >>> from gpusim.envs.native.minatar import BreakoutEnv
    >>> env = BreakoutEnv(batch_size=[4], seed=0)
    >>> env.reset()["observation"].shape
    torch.Size([4, 10, 10, 4])
"""

from gpusim.envs.native.minatar._common import MinAtarEnv
from gpusim.envs.native.minatar.asterix import AsterixEnv
from gpusim.envs.native.minatar.breakout import BreakoutEnv
from gpusim.envs.native.minatar.freeway import FreewayEnv
from gpusim.envs.native.minatar.seaquest import SeaquestEnv
from gpusim.envs.native.minatar.space_invaders import SpaceInvadersEnv

__all__ = ["AsterixEnv", "BreakoutEnv", "FreewayEnv", "MinAtarEnv", "SeaquestEnv", "SpaceInvadersEnv"]
