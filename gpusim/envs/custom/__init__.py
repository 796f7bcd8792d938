"""Custom environments that wrap a host library rather than being tensor programs: ``ChessEnv``
(python-chess) and ``LLMHashingEnv`` (token chains identified by hashes); ``ToyVLAEnv`` is
re-exported from :mod:`gpusim.contrib.vla`.

Examples:
    >>> from gpusim.envs.custom import ChessEnv
    >>> ChessEnv().rollout(4).shape
    torch.Size([4])
"""

from gpusim.contrib.vla import ToyVLAEnv  # lives in gpusim.contrib; TorchRL's path is torchrl.envs
from gpusim.envs.custom.chess import ChessEnv
from gpusim.envs.custom.llm_hashing import LLMHashingEnv

__all__ = ["ChessEnv", "LLMHashingEnv", "ToyVLAEnv"]
