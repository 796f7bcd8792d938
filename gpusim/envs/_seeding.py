"""Deterministic seed chaining: ``set_seed`` returns the next seed as a hash of the given one.

Examples:
    >>> from gpusim.envs._seeding import next_seed
    >>> next_seed(0) == next_seed(0) and next_seed(0) != next_seed(1)
    True
"""

from __future__ import annotations

_MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One round of the SplitMix64 mixer on a 64-bit unsigned integer."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def next_seed(seed: int) -> int:
    """The seed that follows ``seed``: a non-negative int below 2**62, fixed for a given seed."""
    return splitmix64(seed & _MASK64) >> 2


def chain_seeds(seed: int, n: int) -> list[int]:
    """``n`` seeds, the first being ``seed``, each the ``next_seed`` of the previous one."""
    seeds = [seed]
    for _ in range(n - 1):
        seeds.append(next_seed(seeds[-1]))
    return seeds
