"""Custom environments that wrap a host library rather than being tensor programs: ``ChessEnv``
(python-chess) and ``LLMHashingEnv`` (token chains identified by hashes).

Examples:
    >>> from gpusim.envs.custom import ChessEnv
    >>> ChessEnv().rollout(4).shape
    torch.Size([4])
"""

from gpusim.envs.custom.chess import ChessEnv
from gpusim.envs.custom.llm_hashing import LLMHashingEnv
from gpusim.envs.custom.vla import ToyVLAEnv

__all__ = ["ChessEnv", "LLMHashingEnv", "ToyVLAEnv"]
