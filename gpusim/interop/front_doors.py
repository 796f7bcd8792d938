"""The front doors to other RL stacks: :func:`to_torchrl`.

Each loads its optional library on call (an ``ImportError`` says what to ``pip install``) and
returns an adapter around the same gpusim env: nothing is copied or re-created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusim.envs.common import EnvBase
from gpusim.envs.libs._optional import import_optional

if TYPE_CHECKING:
    from gpusim.interop.torchrl_env import TorchRLEnv

__all__ = ["to_torchrl"]


def _check_env(env: Any, what: str) -> None:
    if not isinstance(env, EnvBase):
        raise TypeError(f"{what} takes a gpusim env (a gpusim.EnvBase), got {type(env).__name__}")


def to_torchrl(env: EnvBase, *, allow_done_after_reset: bool = False) -> "TorchRLEnv":
    """A TorchRL view of a gpusim env: a ``torchrl.envs.EnvBase`` that TorchRL's stack takes as is.

    ``check_env_specs``, collectors (``torchrl.collectors.Collector``), ``TransformedEnv`` and
    TorchRL transforms, ``SerialEnv`` / ``ParallelEnv``, objectives (``GAE``, ``ClipPPOLoss``)
    and replay buffers work on the result. Steps and resets hand the gpusim env's tensors
    through (same tensors, same device); specs are converted once. See
    :class:`~gpusim.interop.torchrl_env.TorchRLEnv` for the details, and why gpusim envs are
    adapted rather than accepted by TorchRL directly.

    Args:
        env: the gpusim env.
        allow_done_after_reset: TorchRL's flag: do not raise when a reset leaves ``done`` set.

    Returns:
        A :class:`~gpusim.interop.torchrl_env.TorchRLEnv` around ``env``.

    Raises:
        ImportError: torchrl is not installed (saying what to ``pip install``).
        TypeError: ``env`` is not a gpusim env, or it has a spec with no TorchRL equivalent.

    Examples:
        >>> import gpusim as gs
        >>> from gpusim.interop import to_torchrl  # also gpusim.to_torchrl
        >>> from torchrl.collectors import Collector
        >>> env = to_torchrl(gs.make("CartPole-v1", num_envs=4, seed=0))
        >>> collector = Collector(env, policy=None, frames_per_batch=32, total_frames=64)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([4, 8]), torch.Size([4, 8])]
        >>> collector.shutdown()
    """
    _check_env(env, "to_torchrl")
    import_optional("torchrl", "torchrl", what="gpusim.to_torchrl (tested with torchrl 0.14.1)")
    from gpusim.interop.torchrl_env import TorchRLEnv

    return TorchRLEnv(env, allow_done_after_reset=allow_done_after_reset)

