"""gpusim: GPU-first vectorized RL environments with the ``torchrl.envs`` API.

Every public name is importable from here and from its subpackage: specs (``gpusim.specs``),
envs and helpers (``gpusim.envs``), native envs (``gpusim.envs.native``), batched CPU envs
(``gpusim.envs.batched``), wrappers (``gpusim.envs.libs``) and transforms
(``gpusim.transforms``). Optional libraries (gymnasium, vmas, triton) are imported lazily.

Examples:
    >>> import gpusim as gs
    >>> spec = gs.Bounded(-1.0, 1.0, shape=(4, 2))
    >>> spec.rand().shape
    torch.Size([4, 2])
    >>> env = gs.make("CartPole-v1", num_envs=8, seed=0)
    >>> env.rollout(3).shape
    torch.Size([8, 3])
"""

from gpusim import collectors as _collectors
from gpusim import envs as _envs
from gpusim import specs as _specs
from gpusim import transforms as _transforms
from gpusim.collectors import *  # noqa: F401,F403
from gpusim.determinism import DeterminismReport, check_determinism
from gpusim.envs import *  # noqa: F401,F403
from gpusim.envs.batched import *  # noqa: F401,F403
from gpusim.envs.custom import *  # noqa: F401,F403
from gpusim.envs.libs import *  # noqa: F401,F403
from gpusim.envs.native import *  # noqa: F401,F403
from gpusim.interop import to_gymnasium, to_sb3, to_torchrl
from gpusim.registry import EnvEntry, make, register, registered_ids
from gpusim.specs import *  # noqa: F401,F403
from gpusim.transforms import *  # noqa: F401,F403

__version__ = "0.1.0"


def _torchrl_paths() -> None:
    """TorchRL's import paths of the transforms: ``gpusim.envs.<Transform>`` and the modules
    ``gpusim.envs.transforms`` / ``gpusim.envs.transforms.transforms`` are aliases of
    :mod:`gpusim.transforms` (installed here: ``gpusim.envs`` never imports the transforms)."""
    import sys
    import types

    for name, value in vars(_transforms).items():
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and not hasattr(_envs, name):
            setattr(_envs, name, value)
    _envs.transforms = _transforms
    sys.modules.setdefault("gpusim.envs.transforms", _transforms)
    sys.modules.setdefault("gpusim.envs.transforms.transforms", _transforms)


def _public(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_") and n[0].isupper()]
    return list(names)


__all__ = sorted(
    {
        *_public(_collectors),
        *_public(_specs),
        *_public(_envs),
        *_public(_transforms),
        *__import__("gpusim.envs.native", fromlist=["__all__"]).__all__,
        *__import__("gpusim.envs.batched", fromlist=["__all__"]).__all__,
        *__import__("gpusim.envs.libs", fromlist=["__all__"]).__all__,
        *__import__("gpusim.envs.custom", fromlist=["__all__"]).__all__,
        "make",
        "register",
        "registered_ids",
        "EnvEntry",
        "to_torchrl",
        "to_gymnasium",
        "to_sb3",
        "check_determinism",
        "DeterminismReport",
    }
)
_torchrl_paths()
