"""Counter-based random numbers for batched tensor environments.

A counter-based generator turns ``(seed, counter, lane)`` into random bits with a pure
integer hash, so that the same seed gives the same numbers on every device, in eager mode and
inside ``torch.compile(fullgraph=True)`` graphs (where ``torch.rand`` is an expensive, unfusable
call). The only mutable state is a one-element ``int64`` counter tensor that lives on the env
device and is incremented in place at each draw: no Python value changes between calls, so a
compiled graph is never recompiled and no host-device synchronisation happens.

The hash is a two-round xorshift-multiply bijection of 32-bit integers (shifts 15, 12, 15 and
multipliers ``0x2c1b3c6d``, ``0x297a2d39``, a parameter set from Chris Wellons' hash-prospector
search), written with ``int64`` tensors holding 32-bit values: both multipliers are below
``2**30``, so no product of a 32-bit value overflows 63 bits; every right shift is of a
non-negative value (arithmetic and logical shifts agree); products are masked back to 32 bits.
These integer ops work in eager and compiled mode on CPU and CUDA.

Reset noise is keyed differently (:meth:`CounterRNG.reset_uniform_range`): by ``(seed, env row,
episode index of the row)``, where a row's episode index is a device buffer incremented in place
when that row resets. So the start state of a row's ``k``-th episode does not depend on how often
``reset`` was called for other rows, nor on whether a reset call was skipped because nothing was
done: masked resets (every row drawn, compiled graphs, GPUs) and sparse resets (only the reset
rows drawn, eager CPU) give the same numbers.

Each 32-bit hash yields either two 16-bit uniforms (``bits=16``, the cheap default for reset
noise: one hash per two numbers) or one 24-bit uniform (``bits=24``, the full precision of a
float32 in ``[0, 1)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["CounterRNG", "hash32", "seed_to_key"]

_MASK32 = 0xFFFFFFFF
_MASK16 = 0xFFFF
_SCALE16 = 1.0 / 65536.0  # a 16-bit draw to [0, 1)
_C1 = 0x2C1B3C6D  # < 2**30: x * C1 < 2**62 for any 32-bit x
_C2 = 0x297A2D39  # < 2**30
_GOLDEN = 0x61C88647  # 2**32 - 2**32 / phi (odd, < 2**31): spreads consecutive counters
#: compiled graphs hash the reset noise one ``[*B]`` column per hash (see ``reset_uniform_range``)
COLHASH = True
_EPISODE_SALT = 0x5BD1E995  # separates the reset stream's key from the step stream's


def hash32(x: torch.Tensor) -> torch.Tensor:
    """A bijection of ``[0, 2**32)`` with good avalanche, on ``int64`` tensors.

    Args:
        x: an ``int64`` tensor with values in ``[0, 2**32)``.

    Returns:
        An ``int64`` tensor of the same shape with values in ``[0, 2**32)``.

    Examples:
        >>> import torch
        >>> hash32(torch.tensor([0, 1, 2])).tolist()
        [0, 3979630085, 65356255]
    """
    return _hash32_(x ^ (x >> 15))


def _hash32_(x: torch.Tensor) -> torch.Tensor:
    """The rest of :func:`hash32` after its first xorshift, in place on a fresh tensor ``x``."""
    x.mul_(_C1).bitwise_and_(_MASK32)
    x.bitwise_xor_(x >> 12)
    x.mul_(_C2).bitwise_and_(_MASK32)
    return x.bitwise_xor_(x >> 15)


def _hash32_i32(x: torch.Tensor) -> torch.Tensor:
    """:func:`hash32` on ``int32`` bit patterns (wrapping multiplies, masked logical shifts)."""
    x = x ^ ((x >> 15) & 0x1FFFF)
    x = x * _C1
    x = x ^ ((x >> 12) & 0xFFFFF)
    x = x * _C2
    return x ^ ((x >> 15) & 0x1FFFF)


def seed_to_key(seed: int) -> int:
    """Fold a Python integer seed (any size, any sign) into a 32-bit key.

    Args:
        seed: the user seed.

    Returns:
        An integer in ``[0, 2**32)``; different seeds in ``[0, 2**32)`` give different keys.

    Examples:
        >>> seed_to_key(0) != seed_to_key(1)
        True
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r} of type {type(seed).__name__}")
    key = 0
    value = seed
    words = [value & _MASK32]
    value >>= 32
    while value not in (0, -1):
        words.append(value & _MASK32)
        value >>= 32
    if seed < 0:
        words.append(0x5EED)
    for word in words:
        key = int(hash32(torch.tensor(((key ^ word) + _GOLDEN) & _MASK32, dtype=torch.int64)))
    return key


class CounterRNG(torch.nn.Module):
    """Uniform random numbers from a hash of ``(seed, counter, env index, lane)``.

    The generator is made for a fixed batch: every call to :meth:`uniform` returns a
    ``[*batch_size, num]`` float tensor, one independent stream per batch entry, and increments
    the on-device counter in place. Seeding writes the key buffer in place, so compiled graphs
    that captured the buffers stay valid.

    Args:
        batch_size: the batch dims of the numbers to draw (the env's ``batch_size``).
        num: how many numbers per batch entry each call returns.
        device: where the buffers live.
        seed: the initial seed (``0`` when ``None``).
        bits: ``16`` (two numbers per 32-bit hash) or ``24`` (one number per hash).

    Examples:
        >>> rng = CounterRNG((3,), num=4, seed=7)
        >>> u = rng.uniform()
        >>> u.shape, bool(((u >= 0) & (u < 1)).all())
        (torch.Size([3, 4]), True)
        >>> rng.manual_seed(7)
        >>> torch.equal(rng.uniform(), u)
        True
    """

    def __init__(
        self,
        batch_size: Sequence[int] | torch.Size = (),
        num: int = 1,
        device: torch.device | str | None = None,
        seed: int | None = None,
        bits: int = 16,
    ) -> None:
        super().__init__()
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise ValueError(f"num must be a positive int, got {num!r}")
        if bits not in (16, 24):
            raise ValueError(f"bits must be 16 or 24, got {bits!r}")
        batch_size = torch.Size(batch_size)
        self.batch_size = batch_size
        self.num = num
        self.bits = bits
        per_hash = 2 if bits == 16 else 1
        self._num_hashes = -(-num // per_hash)
        numel = batch_size.numel()
        # lane id of every hash: env index * hashes-per-env + hash index
        lanes = torch.arange(numel * self._num_hashes, dtype=torch.int32, device=device)
        self.register_buffer("lanes", lanes.reshape(*batch_size, self._num_hashes), persistent=False)
        self.register_buffer("key", torch.zeros((), dtype=torch.int64, device=device))
        self.register_buffer("counter", torch.zeros((), dtype=torch.int64, device=device))
        # per env row: the index of its current episode (reset draws are keyed by it)
        self.register_buffer("episodes", torch.zeros(batch_size, dtype=torch.int32, device=device), persistent=False)
        self.register_buffer("reset_key", torch.zeros((), dtype=torch.int32, device=device), persistent=False)
        self.manual_seed(0 if seed is None else seed)

    def manual_seed(self, seed: int) -> None:
        """Reset the stream: set the key from ``seed`` and the counter to zero (in place).

        Args:
            seed: any Python int.
        """
        key = seed_to_key(seed)
        self.key.fill_(key)
        self.counter.zero_()
        self.episodes.zero_()
        reset_key = int(hash32(torch.tensor(key ^ _EPISODE_SALT, dtype=torch.int64)))
        self.reset_key.fill_(reset_key - (1 << 32) if reset_key >= (1 << 31) else reset_key)

    def bits32(self) -> torch.Tensor:
        """Draw raw 32-bit hashes, ``[*batch_size, num_hashes]``, and advance the counter.

        The per-lane hash runs on ``int32`` tensors holding the bit patterns of the 32-bit values
        (multiplications wrap modulo ``2**32``, shifts are masked to act as logical shifts): the
        same numbers as :func:`hash32` on ``int64``, at half the memory traffic and with native
        32-bit vector multiplies on CPU. The result is ``int32`` (the bit pattern; read the
        halves with masks).
        """
        counter = self.counter
        # one scalar per call, from (key, counter); XOR keeps lane ids distinct within a call
        base = hash32(self.key ^ (((counter & _MASK32) * _GOLDEN) & _MASK32)).to(torch.int32)
        counter.add_(1)
        return _hash32_i32(self.lanes ^ base)

    def _draw(self, post: Callable[[torch.Tensor, float], torch.Tensor]) -> torch.Tensor:
        """Integer draws ``[*batch_size, num]`` held in float32 (exact), passed through
        ``post(ints, scale)`` (``scale`` maps the integers to ``[0, 1)``)."""
        return post(*self._ints_of(self.bits32()))

    def _ints_of(self, h: torch.Tensor) -> tuple[torch.Tensor, float]:
        """Integer draws held in float32 from hashes ``h`` (``[..., num_hashes]``), and the scale
        that maps them to ``[0, 1)``. Each hash gives its low then its high 16 bits (``bits=16``),
        or its top 24 bits (``bits=24``)."""
        if self.bits == 24:
            return ((h >> 8) & 0xFFFFFF).to(torch.float32), 1.0 / 16777216.0
        if torch.compiler.is_compiling() or h.device.type != "cpu":
            u = torch.stack((h & _MASK16, (h >> 16) & _MASK16), dim=-1).to(torch.float32)
        else:
            # eager CPU: interleaving with stack/cat along a small last dim costs ~10 elementwise
            # ops; writing each half through a strided ``out=`` view costs about one
            u = torch.empty((*h.shape, 2), dtype=torch.float32, device=h.device)
            torch.bitwise_and(h, _MASK16, out=u[..., 0])
            torch.bitwise_and(h >> 16, _MASK16, out=u[..., 1])
        u = u.flatten(-2)
        if u.shape[-1] != self.num:
            u = u[..., : self.num]
        return u, _SCALE16

    def uniform(self) -> torch.Tensor:
        """Draw ``[*batch_size, num]`` float32 numbers in ``[0, 1)`` and advance the counter.

        Returns:
            A float32 tensor on the generator's device.
        """
        return self._draw(lambda u, scale: u.mul_(scale))

    def uniform_range(self, low: float, high: float) -> torch.Tensor:
        """Draw ``[*batch_size, num]`` float32 numbers uniform in ``[low, high]``.

        Args:
            low: the lower bound (a Python float, the same for every lane).
            high: the upper bound.

        Returns:
            A float32 tensor ``low + (high - low) * u``.

        Examples:
            >>> rng = CounterRNG((2,), num=2)
            >>> x = rng.uniform_range(-0.05, 0.05)
            >>> bool(((x >= -0.05) & (x <= 0.05)).all())
            True
        """
        width = high - low
        return self._draw(lambda u, scale: u.mul_(width * scale).add_(low))

    def episode_uniform(self, salt: int) -> torch.Tensor:
        """``[*batch_size, num]`` float32 uniforms in ``[0, 1)`` keyed by ``(seed, row, current
        episode index of the row, salt)``; nothing advances. For randomness that belongs to an
        episode's start (e.g. no-op starts), drawn the same whether or not other rows reset.

        Examples:
            >>> rng = CounterRNG((3,), num=2, seed=0)
            >>> torch.equal(rng.episode_uniform(1), rng.episode_uniform(1))
            True
            >>> torch.equal(rng.episode_uniform(1), rng.episode_uniform(2))
            False
        """
        if isinstance(salt, bool) or not isinstance(salt, int):
            raise TypeError(f"salt must be an int, got {salt!r}")
        mixed = int(hash32(torch.tensor((salt * _GOLDEN + 0x3C6EF372) & _MASK32, dtype=torch.int64)))
        mixed = mixed - (1 << 32) if mixed >= (1 << 31) else mixed
        x = (self.lanes ^ self.reset_key ^ mixed) + self.episodes.unsqueeze(-1) * _GOLDEN
        u, scale = self._ints_of(_hash32_i32(x))
        return u.mul_(scale)

    def start_episodes(self, mask: torch.Tensor | None = None) -> None:
        """Increments the episode index of the rows of ``mask`` (``None``: every row), in place.

        Examples:
            >>> rng = CounterRNG((3,), num=1)
            >>> rng.start_episodes(torch.tensor([True, False, True]))
            >>> rng.episodes.tolist()
            [1, 0, 1]
        """
        if mask is None:
            self.episodes.add_(1)
        else:
            self.episodes.add_(mask.reshape(self.episodes.shape).to(torch.int32))

    def reset_uniform_range(
        self,
        low: float,
        high: float,
        mask: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Reset noise: ``[*batch_size, num]`` float32 uniforms in ``[low, high]`` for the rows
        being reset, keyed by ``(seed, row, episode index of the row)``.

        The episode index of the reset rows is incremented first (in place; ``mask=None`` and
        ``rows=None``: every row). With ``rows`` (host flat indices, the sparse CPU path) only
        those rows are hashed and the others are zero; otherwise every row is hashed (the rows
        not reset get the numbers of their current episode, discarded by the reset merge). The
        reset rows get the same numbers either way, and they do not depend on how many reset
        calls came before (skipped auto-resets included).

        Args:
            low: the lower bound.
            high: the upper bound.
            mask: bool ``batch_size`` mask of the rows being reset (no host read).
            rows: flat indices of the rows being reset (a CPU tensor).

        Examples:
            >>> a, b = CounterRNG((4,), num=2, seed=0), CounterRNG((4,), num=2, seed=0)
            >>> full = a.reset_uniform_range(0.0, 1.0)
            >>> part = b.reset_uniform_range(0.0, 1.0, rows=torch.tensor([1, 3]))
            >>> torch.equal(part[1], full[1]), bool(part[0].eq(0).all())
            (True, True)
            >>> b.episodes.tolist()
            [0, 1, 0, 1]
        """
        episodes = self.episodes
        lanes = self.lanes
        if rows is not None:
            flat = episodes.view(-1)
            flat[rows] += 1
            lanes = lanes.reshape(-1, self._num_hashes)[rows]
            ep = flat[rows]
        else:
            self.start_episodes(mask)
            ep = episodes
        width = high - low
        if rows is None and COLHASH and self.bits == 16 and torch.compiler.is_compiling():
            # compiled: one ``[*B]`` column per hash (the same numbers), stacked once at the end;
            # Inductor fuses a ``[*B, hashes]`` hash into the step's loop as a short inner loop
            # (2 lanes for CartPole) or a separate strided pass. With the uint8 root mask
            # (``gpusim.envs.episode._graph_mask``), CartPole-v1 at 65536 compiled: 100.2 -> 117.1
            # M env-steps/s (A/B in one process, 2 threads). 16-bit draws only: Pendulum-v1's two
            # 24-bit hashes measured ~5 % slower by columns (92.9 vs 97.5 M at 65536)
            offset = ep * _GOLDEN
            cols = []
            for j in range(self._num_hashes):
                h = _hash32_i32((lanes[..., j] ^ self.reset_key) + offset)
                cols += [h & _MASK16, (h >> 16) & _MASK16]
            u = torch.stack(cols[: self.num], dim=-1).to(torch.float32)
            return u.mul_(width * _SCALE16).add_(low)
        x = (lanes ^ self.reset_key) + ep.unsqueeze(-1) * _GOLDEN
        u, scale = self._ints_of(_hash32_i32(x))
        u = u.mul_(width * scale).add_(low)
        if rows is None:
            return u
        full = torch.zeros((episodes.numel(), self.num), dtype=u.dtype, device=u.device)
        full[rows] = u
        return full.reshape(*episodes.shape, self.num)
