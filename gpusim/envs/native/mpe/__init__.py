"""The multi-agent particle environments (MPE) as native batched envs, with VMAS 1.5's rules.

Each scenario is one module holding its entities, observations and rewards; the physics
(forces, contacts, integration) live once in :mod:`gpusim.envs.native.mpe._world` and the
multi-agent layout (TorchRL's groups, as :class:`~gpusim.envs.libs.vmas.VmasEnv` has them) in
:mod:`gpusim.envs.native.mpe._env`. :func:`gpusim.make` builds them as ``"MPE/<scenario>-v0"``.

Examples:
    >>> from gpusim.envs.native.mpe import SimpleSpreadEnv
    >>> env = SimpleSpreadEnv(batch_size=[16], n_agents=4, seed=0)
    >>> env.rollout(3)["next", "agents", "observation"].shape
    torch.Size([16, 3, 4, 20])
"""

from gpusim.envs.native.mpe._env import MpeEnv
from gpusim.envs.native.mpe.simple import SimpleEnv
from gpusim.envs.native.mpe.simple_spread import SimpleSpreadEnv

#: scenario name -> env class (the ``MPE/<name>-v0`` ids of :func:`gpusim.make`)
SCENARIOS = {
    "simple": SimpleEnv,
    "simple_spread": SimpleSpreadEnv,
}

__all__ = ["MpeEnv", "SCENARIOS", "SimpleEnv", "SimpleSpreadEnv"]
