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

from gpusim import envs as _envs
from gpusim import specs as _specs
from gpusim import transforms as _transforms
from gpusim.envs import *  # noqa: F401,F403
from gpusim.envs.batched import *  # noqa: F401,F403
from gpusim.envs.libs import *  # noqa: F401,F403
from gpusim.envs.native import *  # noqa: F401,F403
from gpusim.envs.custom import *  # noqa: F401,F403
from gpusim.registry import EnvEntry, make, registered_ids
from gpusim.specs import *  # noqa: F401,F403
from gpusim.transforms import *  # noqa: F401,F403

__version__ = "0.1.0"


def _public(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_") and n[0].isupper()]
    return list(names)


__all__ = sorted(
    {
        *_public(_specs),
        *_public(_envs),
        *_public(_transforms),
        *__import__("gpusim.envs.native", fromlist=["__all__"]).__all__,
        *__import__("gpusim.envs.batched", fromlist=["__all__"]).__all__,
        *__import__("gpusim.envs.libs", fromlist=["__all__"]).__all__,
        *__import__("gpusim.envs.custom", fromlist=["__all__"]).__all__,
        "make",
        "registered_ids",
        "EnvEntry",
    }
)
