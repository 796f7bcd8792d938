"""The multi-agent particle environments (MPE) as native batched envs, with VMAS 1.5's rules.

Each scenario is one module holding its entities, observations and rewards; the physics
(forces, contacts, integration) live once in :mod:`gpusim.envs.native.mpe._world` and the
multi-agent layout (TorchRL's groups, as :class:`~gpusim.envs.libs.vmas.VmasEnv` has them) in
:mod:`gpusim.envs.native.mpe._env`. :func:`gpusim.make` builds them as ``"MPE/<scenario>-v0"``.

Examples:
    >>> from gpusim.envs.native.mpe import SimpleSpreadEnv
    >>> env = SimpleSpreadEnv(batch_size=[16], n_agents=4, seed=0)
    >>> env.rollout(3)["next", "agents", "observation"].shape
    torch.Size([16, 3, 4, 18])
"""

from gpusim.envs.native.mpe._env import MpeEnv
from gpusim.envs.native.mpe.simple import SimpleEnv
from gpusim.envs.native.mpe.simple_adversary import SimpleAdversaryEnv
from gpusim.envs.native.mpe.simple_crypto import SimpleCryptoEnv
from gpusim.envs.native.mpe.simple_push import SimplePushEnv
from gpusim.envs.native.mpe.simple_reference import SimpleReferenceEnv
from gpusim.envs.native.mpe.simple_speaker_listener import SimpleSpeakerListenerEnv
from gpusim.envs.native.mpe.simple_spread import SimpleSpreadEnv
from gpusim.envs.native.mpe.simple_tag import SimpleTagEnv
from gpusim.envs.native.mpe.simple_world_comm import SimpleWorldCommEnv

#: scenario name -> env class (the ``MPE/<name>-v0`` ids of :func:`gpusim.make`)
SCENARIOS = {
    "simple": SimpleEnv,
    "simple_spread": SimpleSpreadEnv,
    "simple_tag": SimpleTagEnv,
    "simple_adversary": SimpleAdversaryEnv,
    "simple_push": SimplePushEnv,
    "simple_reference": SimpleReferenceEnv,
    "simple_speaker_listener": SimpleSpeakerListenerEnv,
    "simple_crypto": SimpleCryptoEnv,
    "simple_world_comm": SimpleWorldCommEnv,
}

__all__ = [
    "SCENARIOS",
    "MpeEnv",
    "SimpleAdversaryEnv",
    "SimpleCryptoEnv",
    "SimpleEnv",
    "SimplePushEnv",
    "SimpleReferenceEnv",
    "SimpleSpeakerListenerEnv",
    "SimpleSpreadEnv",
    "SimpleTagEnv",
    "SimpleWorldCommEnv",
]
