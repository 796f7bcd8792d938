"""A count of the edits made to envs and transforms in this process.

An edit is an attribute set on an env or a transform (``EnvBase.__setattr__``,
``Transform.__setattr__``: a physical constant, a transform's option, a spec assigned), a spec
change made with the specs unlocked, or a switch of the env's reset strategy. A compiled step
that runs its graph past Dynamo's guards (``CompiledRollout.step(..., trusted=True)``, the
gymnasium and SB3 views' compiled steps) reads the count instead: the guards' Python checks
(about 500 for CartPole, 26 us a step at 16 envs) stand for "the env is as it was traced", and
an edit since the last guarded call sends the next call through the guards again.

Examples:
    >>> import gpusim as gs
    >>> env = gs.make("Pendulum-v1", num_envs=2)
    >>> before = edits()
    >>> env.base_env.g = 9.0
    >>> edits() > before
    True
"""

from __future__ import annotations

__all__ = ["edited", "edits"]

_count = 0


def edited() -> None:
    """Counts one edit (see the module docstring).

    Examples:
        >>> before = edits(); edited(); edits() == before + 1
        True
    """
    global _count
    _count += 1


def edits() -> int:
    """The number of edits so far in this process.

    Examples:
        >>> isinstance(edits(), int)
        True
    """
    return _count
