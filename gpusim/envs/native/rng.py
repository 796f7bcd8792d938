"""Counter-based random numbers for batched environments: the env author's random-number API.

A native env draws every random number from a :class:`CounterRNG`: a pure integer hash of
``(seed, stream counter, env row, lane)``. The same seed gives the same numbers in eager mode,
inside ``torch.compile(fullgraph=True)`` graphs and on CUDA, with no host-device synchronisation
and no recompilation (the only mutable state is a few device buffers updated in place).
``torch.Generator`` / ``torch.rand(generator=...)`` cannot be traced by ``torch.compile``
(``rollout(..., compile=True)`` fails on them) and its numbers differ between devices: use this.

Two streams, for the two places an env needs randomness:

* **Reset stream** (:class:`ResetRows`, the ``rows`` argument of ``NativeEnv._reset(tensordict,
  rows)``): ``rows.uniform(low, high, n)``, ``rows.randint(low, high, n)``,
  ``rows.bernoulli(p, n)``. The numbers of a row are keyed by ``(seed, row, episode index of the
  row, draw index)``, where the episode index counts the row's resets and the draw index counts
  the draws made by this ``_reset`` call (first draw 0, then 1...). So the start state of a row's
  ``k``-th episode does not depend on which other rows reset, nor on how resets are executed
  (every row hashed under a mask, or only the reset rows on the sparse CPU path).
* **Step stream** (``env.rng``, a :class:`CounterRNG`): ``env.rng.uniform(low, high, n)``,
  ``env.rng.randint(low, high, n)``, ``env.rng.bernoulli(p, n)``: each call returns fresh
  numbers for every row and advances the stream's counter (an on-device scalar, so a compiled
  graph stays valid). For randomness inside ``_step`` (sticky actions, spawns, opponents).

Every draw returns ``[*batch_size, n]`` (``[*batch_size, *n]`` for a tuple ``n``):

* ``uniform``: float32 in ``[low, high)`` (``high`` itself only by the float32 rounding of
  ``low + (high - low) * u``); ``bits=24`` gives 24-bit resolution, the precision of a float32 in
  ``[0, 1)``; ``bits=16`` gives 16 bits, two numbers per hash, cheaper;
* ``randint``: int64 in ``[low, high)`` (24-bit fixed-point scaling: relative bias at most
  ``(high - low) / 2**24``);
* ``bernoulli``: bool, ``True`` with probability ``p`` (to ``2**-24``).

Bounds and probabilities may be Python numbers or tensors broadcastable to the output (per-row
parameters, e.g. domain randomization).

The hash is a two-round xorshift-multiply bijection of 32-bit integers (shifts 15, 12, 15 and
multipliers ``0x2c1b3c6d``, ``0x297a2d39``, a parameter set from Chris Wellons' hash-prospector
search), written with integer tensors: ``int64`` holding 32-bit values (:func:`hash32`: both
multipliers are below ``2**30``, so no product overflows 63 bits) or ``int32`` bit patterns with
wrapping multiplies and masked shifts (the per-lane hot path, same numbers). These integer ops
work in eager and compiled mode on CPU and CUDA.

Examples:
    >>> import torch
    >>> rng = CounterRNG((3,), seed=0)               # the step stream of a 3-row env
    >>> rng.uniform(-1.0, 1.0, n=2).shape
    torch.Size([3, 2])
    >>> rng.randint(0, 10, n=4).dtype, rng.bernoulli(0.25).dtype
    (torch.int64, torch.bool)
    >>> rows = ResetRows.start(rng, mask=torch.tensor([True, False, True]))  # rows 0 and 2 reset
    >>> rows.uniform(0.0, 1.0, n=4).shape, rng.episodes.tolist()
    (torch.Size([3, 4]), [1, 0, 1])
    >>> rows.uniform(-1.0, 1.0, n=(5, 2)).shape                            # e.g. 5 agents in 2-D
    torch.Size([3, 5, 2])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from gpusim.kernels._dispatch import takes_cpu_path

__all__ = ["CounterRNG", "ResetRows", "hash32", "seed_to_key"]

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

    Raises:
        TypeError: ``x`` is not an ``int64`` tensor.

    Examples:
        >>> import torch
        >>> hash32(torch.tensor([0, 1, 2])).tolist()
        [0, 3979630085, 65356255]
    """
    if x.dtype != torch.int64:
        raise TypeError(f"hash32 takes an int64 tensor, got {x.dtype}")
    return _hash32_(torch.bitwise_xor(x, torch.bitwise_right_shift(x, _int_constants(x)[0])))


def _hash32_(x: torch.Tensor) -> torch.Tensor:
    """The rest of :func:`hash32` after its first xorshift, in place on a fresh ``int64`` ``x``."""
    s15, s12, c1, c2, m32 = _int_constants(x)[:5]
    x.mul_(c1).bitwise_and_(m32)
    x.bitwise_xor_(torch.bitwise_right_shift(x, s12))
    x.mul_(c2).bitwise_and_(m32)
    return x.bitwise_xor_(torch.bitwise_right_shift(x, s15))


#: the integer constants of the hashes, per dtype, in the order their users unpack them
_CONSTANT_VALUES = {
    torch.int32: (15, 12, 0x1FFFF, 0xFFFFF, _C1, _C2, _GOLDEN, 16, _MASK16),
    torch.int64: (15, 12, _C1, _C2, _MASK32, _GOLDEN),
}
_CONSTANTS: dict[tuple[torch.device, torch.dtype], tuple] = {}


def _int_constants(x: torch.Tensor) -> tuple:
    """``_CONSTANT_VALUES[x.dtype]`` for ops on ``x``: 0-dim tensors of ``x``'s dtype on its
    device in eager mode (made once per device and dtype), the Python ints themselves inside a
    ``torch.compile`` graph.

    Eager, an integer op with a Python-int operand wraps and converts the number on every call:
    on this project's CPU (one thread, ``[64, 2]`` int32) ``x >> 15`` costs 3.7 us against
    1.3 us with a 0-dim tensor, and the whole hash 30 us against 14 us (the numbers are
    identical: the same integer arithmetic either way). In a graph the ints stay immediates.

    Examples:
        >>> s15 = _int_constants(torch.zeros(2, dtype=torch.int32))[0]
        >>> s15.dtype, s15.ndim, int(s15)
        (torch.int32, 0, 15)
    """
    values = _CONSTANT_VALUES[x.dtype]
    if torch.compiler.is_compiling():
        return values
    key = (x.device, x.dtype)
    constants = _CONSTANTS.get(key)
    if constants is None:
        if x.is_cuda and torch.cuda.is_current_stream_capturing():
            return values  # no host-to-device copy while a CUDA graph is captured
        constants = _CONSTANTS[key] = tuple(torch.tensor(v, dtype=x.dtype, device=x.device) for v in values)
    return constants


def _hash32_i32(x: torch.Tensor) -> torch.Tensor:
    """:func:`hash32` on ``int32`` bit patterns (wrapping multiplies, masked logical shifts)."""
    s15, s12, m17, m20, c1, c2 = _int_constants(x)[:6]
    x = torch.bitwise_xor(x, torch.bitwise_right_shift(x, s15).bitwise_and_(m17))
    x = x.mul_(c1)
    x = x.bitwise_xor_(torch.bitwise_right_shift(x, s12).bitwise_and_(m20))
    x = x.mul_(c2)
    return x.bitwise_xor_(torch.bitwise_right_shift(x, s15).bitwise_and_(m17))


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


def _signed32(x: int) -> int:
    """The ``int32`` bit pattern of ``x`` in ``[0, 2**32)`` as a Python int."""
    return x - (1 << 32) if x >= (1 << 31) else x


def _hash32_int(x: int) -> int:
    """:func:`hash32` of one Python int in ``[0, 2**32)`` (plain integer arithmetic: no tensor,
    and a constant inside a ``torch.compile`` graph)."""
    x ^= x >> 15
    x = (x * _C1) & _MASK32
    x ^= x >> 12
    x = (x * _C2) & _MASK32
    return x ^ (x >> 15)


def _draw_salt(draw: int) -> int:
    """The reset-stream salt of draw ``draw`` of a ``_reset`` call (``0`` for the first draw, so
    that single-draw envs keep the numbers of the first reset stream)."""
    if draw == 0:
        return 0
    return _signed32(_hash32_int((draw * _GOLDEN + 0x7F4A7C15) & _MASK32))


def _check_n(n: object) -> tuple[int, ...]:
    """``n`` (an int, or a tuple of ints: the shape of a row's numbers) as a shape."""
    shape = n if isinstance(n, tuple) else (n,)
    if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        raise ValueError(f"n must be a positive int or a tuple of positive ints, got {n!r}")
    return shape


def _check_bits(bits: object) -> int:
    if bits not in (16, 24):
        raise ValueError(f"bits must be 16 or 24, got {bits!r}")
    return bits  # type: ignore[return-value]


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class _Draw:
    """One kind of draw: how many hashes ``n`` numbers take, and how hashes become numbers."""

    __slots__ = ("a", "b", "bits", "kind", "n", "scalar", "shape")

    def __init__(self, kind: str, shape: tuple[int, ...], bits: int, a: object, b: object) -> None:
        self.kind, self.shape, self.bits, self.a, self.b = kind, shape, bits, a, b
        self.n = math.prod(shape)  # numbers per row
        self.scalar = not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor)

    @property
    def num_hashes(self) -> int:
        return (self.n + 1) // 2 if self.kind == "uniform" and self.bits == 16 else self.n

    @property
    def dtype(self) -> torch.dtype:
        return {"uniform": torch.float32, "randint": torch.int64, "bernoulli": torch.bool}[self.kind]

    def values(self, h: torch.Tensor) -> torch.Tensor:
        """The numbers ``[..., *shape]`` of hashes ``h`` (``int32`` bit patterns, ``[..., num_hashes]``)."""
        lead = h.shape[:-1]
        if self.kind == "uniform":
            u, scale = _uniform_ints(h, self.n, self.bits)
            return self.scaled(u.reshape(*lead, *self.shape), scale)
        top = ((h >> 8) & 0xFFFFFF).reshape(*lead, *self.shape)  # the top 24 bits, in [0, 2**24)
        if self.kind == "randint":
            low, high = self.a, self.b
            return ((top.to(torch.int64) * (high - low)) >> 24) + low
        return top.to(torch.float32) < self.a * 16777216.0  # bernoulli: P = ceil(p 2^24) / 2^24

    def scaled(self, u: torch.Tensor, scale: float) -> torch.Tensor:
        """Uniform integers ``u`` (float32, a fresh tensor) times ``scale`` to ``[low, high)``."""
        low, high = self.a, self.b
        if self.scalar:
            u = u.mul_((high - low) * scale)
            return u if low == 0 else u.add_(low)
        return low + u.mul_(scale) * (high - low)


def _uniform_ints(h: torch.Tensor, n: int, bits: int) -> tuple[torch.Tensor, float]:
    """Integer draws ``[..., n]`` held in float32 (exact) from hashes ``h``, and the scale that
    maps them to ``[0, 1)``. Each hash gives its low then its high 16 bits (``bits=16``), or its
    top 24 bits (``bits=24``)."""
    if bits == 24:
        u = ((h >> 8) & 0xFFFFFF).to(torch.float32)
        return (u if u.shape[-1] == n else u[..., :n]), 1.0 / 16777216.0
    if takes_cpu_path("env_columns", h, h.numel()):
        # eager CPU: interleaving with stack/cat along a small last dim costs ~10 elementwise
        # ops; writing each half through a strided ``out=`` view costs about one
        s16, m16 = _int_constants(h)[7:]
        u = torch.empty((*h.shape, 2), dtype=torch.float32, device=h.device)
        torch.bitwise_and(h, m16, out=u[..., 0])
        torch.bitwise_and(torch.bitwise_right_shift(h, s16), m16, out=u[..., 1])
    else:
        u = torch.stack((h & _MASK16, (h >> 16) & _MASK16), dim=-1).to(torch.float32)
    u = u.flatten(-2)
    return (u if u.shape[-1] == n else u[..., :n]), _SCALE16


class CounterRNG(torch.nn.Module):
    """Random numbers from a hash of ``(seed, counter, env row, lane)``, one stream per row.

    The generator is made for a fixed batch: every draw returns ``[*batch_size, n]`` numbers, and
    the step-stream draws (:meth:`uniform`, :meth:`randint`, :meth:`bernoulli`) increment the
    on-device counter in place. The reset stream (keyed by each row's episode index) is read
    through :class:`ResetRows`. Seeding writes the key buffers in place, so compiled graphs that
    captured them stay valid. The module docstring states the guarantees.

    Args:
        batch_size: the batch dims of the numbers to draw (the env's ``batch_size``).
        num: the default ``n`` (numbers per row) of a draw.
        device: where the buffers live.
        seed: the initial seed (``0`` when ``None``).
        bits: the default resolution of uniform draws, ``16`` (two numbers per 32-bit hash) or
            ``24`` (one number per hash).

    Examples:
        >>> rng = CounterRNG((3,), num=4, seed=7)
        >>> u = rng.uniform()
        >>> u.shape, bool(((u >= 0) & (u < 1)).all())
        (torch.Size([3, 4]), True)
        >>> rng.manual_seed(7)
        >>> torch.equal(rng.uniform(), u)
        True
        >>> rng.randint(1, 7, n=2).shape
        torch.Size([3, 2])
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
        _check_bits(bits)
        batch_size = torch.Size(batch_size)
        self.batch_size = batch_size
        self.num = num
        self.bits = bits
        self._num_hashes = _Draw("uniform", (num,), bits, 0.0, 1.0).num_hashes
        numel = batch_size.numel()
        # lane id of every hash of a default draw: row * hashes-per-row + hash index (draws of
        # another size compute theirs the same way, see _lanes_for)
        lanes = torch.arange(numel * self._num_hashes, dtype=torch.int32, device=device)
        self.register_buffer("lanes", lanes.reshape(*batch_size, self._num_hashes), persistent=False)
        self.register_buffer("key", torch.zeros((), dtype=torch.int64, device=device))
        self.register_buffer("counter", torch.zeros((), dtype=torch.int64, device=device))
        # per env row: the index of its current episode (reset draws are keyed by it)
        self.register_buffer("episodes", torch.zeros(batch_size, dtype=torch.int32, device=device), persistent=False)
        self.register_buffer("reset_key", torch.zeros((), dtype=torch.int32, device=device), persistent=False)
        self._draw_memo: dict[tuple, _Draw] = {}
        self._shared_lanes: dict[int, torch.Tensor] = {}  # shared_bits's lane ids, per count (eager)
        self.manual_seed(0 if seed is None else seed)

    def manual_seed(self, seed: int) -> None:
        """Restart both streams: set the keys from ``seed``, the counter and the episode indices
        to zero (in place).

        Args:
            seed: any Python int.

        Examples:
            >>> rng = CounterRNG((2,), seed=0)
            >>> first = rng.uniform()
            >>> rng.manual_seed(0)
            >>> torch.equal(rng.uniform(), first), int(rng.counter)
            (True, 1)
        """
        key = seed_to_key(seed)
        self.key.fill_(key)
        self.counter.zero_()
        self.episodes.zero_()
        self.reset_key.fill_(_signed32(int(hash32(torch.tensor(key ^ _EPISODE_SALT, dtype=torch.int64)))))

    # ------------------------------------------------------------------ hashes
    def _lanes_for(self, num_hashes: int) -> torch.Tensor:
        """Lane ids ``[*batch_size, num_hashes]`` (int32): ``row * num_hashes + j``.

        Compiled, the ids are computed (``arange``), not read from :attr:`lanes`: index
        arithmetic leaves Inductor free to lay the hash's loops out like their consumers. Read
        from a row-major ``[B, hashes]`` buffer, the reset draws of an env whose state keeps the
        batch innermost (the MPE scenarios) were computed row by row, two lanes per vector: MPE
        ``simple_spread`` at 8192 envs, compiled rollout, one thread: 1.58 -> 2.54 M env-steps/s.
        """
        if num_hashes == self._num_hashes and not torch.compiler.is_compiling():
            return self.lanes
        device = self.lanes.device
        rows = torch.arange(self.batch_size.numel(), dtype=torch.int32, device=device)
        lanes = rows.unsqueeze(-1) * num_hashes + torch.arange(num_hashes, dtype=torch.int32, device=device)
        return lanes.reshape(*self.batch_size, num_hashes)

    def _bases(self, steps: int | None = None) -> torch.Tensor:
        """The ``int32`` key of the current draw (0-dim), or of the next ``steps`` draws
        (``[steps]``): a hash of ``(key, counter)``; lanes are XORed into it."""
        counters = self.counter
        if steps is not None:
            counters = counters + torch.arange(steps, dtype=torch.int64, device=counters.device)
        m32, golden = _int_constants(counters)[4:]
        mixed = torch.bitwise_and(counters, m32).mul_(golden).bitwise_and_(m32)
        return hash32(torch.bitwise_xor(self.key, mixed)).to(torch.int32)

    def _step_hashes(self, num_hashes: int) -> torch.Tensor:
        # one scalar per call, from (key, counter); XOR keeps lane ids distinct within a call
        base = self._bases()
        self.counter.add_(1)
        return _hash32_i32(self._lanes_for(num_hashes) ^ base)

    def shared_bits(self, count: int, steps: int | None = None) -> torch.Tensor:
        """Raw 32-bit hashes of the step stream that belong to no row: ``[count]`` for the
        current draw, or ``[steps, count]`` for the next ``steps`` draws (row ``t`` is what the
        ``t``-th next call without ``steps`` returns). ``int32`` bit patterns. The counter is not
        advanced: the caller advances it (``counter.add_(1)``) once per draw it uses.

        For numbers much smaller than a hash, cut across rows: one hash gives 32 coin flips or
        16 two-bit numbers, so a draw of ``B`` coin flips hashes ``B / 32`` lanes where the row
        streams (:meth:`uniform`, ...) hash ``B`` (:class:`~gpusim.envs.random_actions.HashRandomPolicy`
        draws its actions so).

        Args:
            count: hashes per draw.
            steps: how many draws ahead (``None``: the current one only).

        Examples:
            >>> rng = CounterRNG((), seed=0)
            >>> block = rng.shared_bits(5, steps=3)
            >>> block.shape, block.dtype, int(rng.counter)
            (torch.Size([3, 5]), torch.int32, 0)
            >>> torch.equal(rng.shared_bits(5), block[0])
            True
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"shared_bits: count must be a positive int, got {count!r}")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise ValueError(f"shared_bits: steps must be a positive int or None, got {steps!r}")
        device = self.counter.device
        if torch.compiler.is_compiling():
            lanes = torch.arange(count, dtype=torch.int32, device=device)
        else:
            lanes = self._shared_lanes.get(count)
            if lanes is None or lanes.device != device:
                lanes = torch.arange(count, dtype=torch.int32, device=device)
                if len(self._shared_lanes) < 8:
                    self._shared_lanes[count] = lanes
        base = self._bases(steps)
        return _hash32_i32(lanes ^ (base if steps is None else base.unsqueeze(-1)))

    def uniform_ahead(self, steps: int) -> torch.Tensor:
        """The numbers of the next ``steps`` default draws, ``[steps, *batch_size, num]``:
        slice ``t`` equals what the ``t``-th next :meth:`uniform` call (no arguments) returns.
        The counter is not advanced (the caller advances it as it uses the slices). One tensor
        program for ``steps`` draws: an eager loop pays the per-op cost once, not per step.

        Args:
            steps: how many draws ahead (a positive int).

        Examples:
            >>> rng = CounterRNG((3,), num=2, seed=0)
            >>> ahead = rng.uniform_ahead(4)
            >>> ahead.shape, int(rng.counter)
            (torch.Size([4, 3, 2]), 0)
            >>> all(torch.equal(ahead[t], rng.uniform()) for t in range(4))
            True
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"uniform_ahead: steps must be a positive int, got {steps!r}")
        lanes = self.lanes
        h = _hash32_i32(lanes.unsqueeze(0) ^ self._bases(steps).reshape(steps, *([1] * lanes.ndim)))
        return _Draw("uniform", (self.num,), self.bits, 0.0, 1.0).values(h)

    def bits32(self) -> torch.Tensor:
        """Draw raw 32-bit hashes of the step stream, ``[*batch_size, num_hashes]``, and advance
        the counter.

        The per-lane hash runs on ``int32`` tensors holding the bit patterns of the 32-bit values
        (the same numbers as :func:`hash32` on ``int64``, at half the memory traffic). The result
        is ``int32`` (the bit pattern; read the halves with masks).

        Examples:
            >>> rng = CounterRNG((3,), num=2, seed=0, bits=24)
            >>> h = rng.bits32()
            >>> h.shape, h.dtype, int(rng.counter)
            (torch.Size([3, 2]), torch.int32, 1)
        """
        return self._step_hashes(self._num_hashes)

    def _draw(self, kind: str, n: int | None, bits: int | None, a: object, b: object) -> _Draw:
        # a draw of Python numbers is validated once and kept (the eager step and reset paths
        # call this per draw); tensor bounds are checked per call. Not inside a graph: reading
        # or filling the memo there would guard on it (a recompile once it has changed)
        memo_key = None
        if (
            type(a) in (float, int)
            and type(b) in (float, int, type(None))
            and not isinstance(n, list)
            and not torch.compiler.is_compiling()
        ):
            memo_key = (kind, n, bits, type(a), a, type(b), b)
            draw = self._draw_memo.get(memo_key)
            if draw is not None:
                return draw
        draw = self._new_draw(kind, n, bits, a, b)
        if memo_key is not None and len(self._draw_memo) < 256:
            self._draw_memo[memo_key] = draw
        return draw

    def _new_draw(self, kind: str, n: int | None, bits: int | None, a: object, b: object) -> _Draw:
        draw = _Draw(
            kind, _check_n(self.num if n is None else n), _check_bits(self.bits if bits is None else bits), a, b
        )
        if kind == "randint":
            if any(isinstance(x, bool) or not isinstance(x, (int, torch.Tensor)) for x in (a, b)):
                raise TypeError(f"randint bounds must be ints or integer tensors, got low={a!r}, high={b!r}")
            if isinstance(a, int) and isinstance(b, int) and not 0 < b - a <= 1 << 24:
                raise ValueError(f"randint needs low < high and high - low <= 2**24, got low={a}, high={b}")
        elif kind == "bernoulli" and _is_number(a) and not 0.0 <= a <= 1.0:
            raise ValueError(f"bernoulli p must be in [0, 1], got {a!r}")
        elif kind == "uniform" and (_is_number(a) and _is_number(b)) and not a <= b:
            raise ValueError(f"uniform needs low <= high, got low={a!r}, high={b!r}")
        return draw

    # ------------------------------------------------------------------ step stream
    def uniform(
        self,
        low: float | torch.Tensor = 0.0,
        high: float | torch.Tensor = 1.0,
        n: int | tuple[int, ...] | None = None,
        *,
        bits: int | None = None,
    ) -> torch.Tensor:
        """Step stream: ``[*batch_size, n]`` float32 uniforms in ``[low, high)``; advances the
        counter.

        Args:
            low: the lower bound (a number, or a tensor broadcastable to ``[*batch_size, n]``).
            high: the upper bound.
            n: numbers per row (default: ``num``), or a tuple: their shape.
            bits: resolution, 16 or 24 (default: ``bits``).

        Examples:
            >>> rng = CounterRNG((2,), num=2)
            >>> x = rng.uniform(-0.05, 0.05)
            >>> bool(((x >= -0.05) & (x <= 0.05)).all())
            True
        """
        draw = self._draw("uniform", n, bits, low, high)
        return draw.values(self._step_hashes(draw.num_hashes))

    def uniform_range(self, low: float, high: float) -> torch.Tensor:
        """``uniform(low, high)`` (the older name).

        Examples:
            >>> CounterRNG((2,), num=3).uniform_range(0.0, 2.0).shape
            torch.Size([2, 3])
        """
        return self.uniform(low, high)

    def randint(
        self, low: int | torch.Tensor, high: int | torch.Tensor, n: int | tuple[int, ...] | None = None
    ) -> torch.Tensor:
        """Step stream: ``[*batch_size, n]`` int64 integers in ``[low, high)``; advances the counter.

        Args:
            low: the lowest value (an int or an integer tensor broadcastable to the output).
            high: one above the highest value (``high - low <= 2**24``).
            n: numbers per row (default: ``num``), or a tuple: their shape.

        Examples:
            >>> x = CounterRNG((1000,), seed=0).randint(-2, 3)
            >>> sorted(set(x.flatten().tolist()))
            [-2, -1, 0, 1, 2]
        """
        draw = self._draw("randint", n, 24, low, high)
        return draw.values(self._step_hashes(draw.num_hashes))

    def bernoulli(self, p: float | torch.Tensor, n: int | tuple[int, ...] | None = None) -> torch.Tensor:
        """Step stream: ``[*batch_size, n]`` bools, ``True`` with probability ``p``; advances the
        counter.

        Args:
            p: the probability (a number in ``[0, 1]``, or a float tensor broadcastable to the
                output).
            n: numbers per row (default: ``num``), or a tuple: their shape.

        Examples:
            >>> x = CounterRNG((10000,), seed=0).bernoulli(0.25)
            >>> 0.23 < x.float().mean().item() < 0.27
            True
        """
        draw = self._draw("bernoulli", n, 24, p, None)
        return draw.values(self._step_hashes(draw.num_hashes))

    # ------------------------------------------------------------------ reset stream
    def start_episodes(self, mask: torch.Tensor | None = None, index: torch.Tensor | None = None) -> None:
        """Increments the episode index of the rows of ``mask`` (or of the flat row ``index``;
        ``None`` for both: every row), in place.

        Examples:
            >>> rng = CounterRNG((3,), num=1)
            >>> rng.start_episodes(torch.tensor([True, False, True]))
            >>> rng.start_episodes(index=torch.tensor([1]))
            >>> rng.episodes.tolist()
            [1, 1, 1]
        """
        if index is not None:
            self.episodes.view(-1)[index] += 1
        elif mask is None:
            self.episodes.add_(1)
        else:
            self.episodes.add_(mask.reshape(self.episodes.shape).to(torch.int32))

    def _reset_values(self, draw: _Draw, number: int, index: torch.Tensor | None) -> torch.Tensor:
        """The numbers of reset draw ``number`` for every row (``index``: only those flat rows
        are hashed; the other rows hold the numbers of hash 0, finite and discarded)."""
        key = self.reset_key if number == 0 else self.reset_key ^ _draw_salt(number)
        num_hashes = draw.num_hashes
        ep = self.episodes
        if index is None:
            lanes = self._lanes_for(num_hashes)
            if COLHASH and draw.kind == "uniform" and draw.bits == 16 and draw.scalar and torch.compiler.is_compiling():
                return self._reset_uniform16_columns(draw, key, lanes, ep)
            golden = _int_constants(ep)[6]
            return draw.values(_hash32_i32(torch.bitwise_xor(lanes, key).add_(ep.unsqueeze(-1) * golden)))
        if num_hashes == self._num_hashes:
            lanes = self.lanes.reshape(-1, num_hashes)[index]
        else:  # the lane ids of those rows only
            lanes = index.to(torch.int32).unsqueeze(-1) * num_hashes + torch.arange(num_hashes, dtype=torch.int32)
            lanes = lanes.to(ep.device)
        golden = _int_constants(ep)[6]
        h = _hash32_i32(torch.bitwise_xor(lanes, key).add_(ep.view(-1)[index].unsqueeze(-1) * golden))
        numel = self.batch_size.numel()
        if draw.scalar:  # numbers of the reset rows only, scattered into zeros
            full = torch.zeros((numel, *draw.shape), dtype=draw.dtype, device=h.device)
            full[index] = draw.values(h)
            return full.reshape(*self.batch_size, *draw.shape)
        full = torch.zeros((numel, num_hashes), dtype=h.dtype, device=h.device)  # per-row parameters
        full[index] = h
        return draw.values(full.reshape(*self.batch_size, num_hashes))

    def _reset_uniform16_columns(
        self, draw: _Draw, key: torch.Tensor, lanes: torch.Tensor, ep: torch.Tensor
    ) -> torch.Tensor:
        # compiled: one ``[*B]`` column per hash (the same numbers), stacked once at the end;
        # Inductor fuses a ``[*B, hashes]`` hash into the step's loop as a short inner loop
        # (2 lanes for CartPole) or a separate strided pass. With the uint8 root mask
        # (``gpusim.envs.episode._graph_mask``), CartPole-v1 at 65536 compiled: 100.2 -> 117.1
        # M env-steps/s (A/B in one process, 2 threads). 16-bit draws only: Pendulum-v1's two
        # 24-bit hashes measured ~5 % slower by columns (92.9 vs 97.5 M at 65536)
        offset = ep * _GOLDEN
        cols = []
        for j in range(draw.num_hashes):
            h = _hash32_i32((lanes[..., j] ^ key) + offset)
            cols += [h & _MASK16, (h >> 16) & _MASK16]
        u = torch.stack(cols[: draw.n], dim=-1).to(torch.float32)
        return draw.scaled(u.reshape(*self.batch_size, *draw.shape), _SCALE16)

    def reset_uniform_range(
        self,
        low: float,
        high: float,
        mask: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One-draw reset: starts the episodes of the rows (``mask``, or the flat indices ``rows``;
        both ``None``: every row) and returns their ``[*batch_size, num]`` uniforms in ``[low,
        high)``, the first draw of :class:`ResetRows`.

        With ``rows`` (the sparse CPU path) only those rows are hashed and the others are zero;
        otherwise every row is hashed (the rows not reset get numbers of their current episode,
        discarded by the reset merge). The reset rows get the same numbers either way.

        Examples:
            >>> a, b = CounterRNG((4,), num=2, seed=0), CounterRNG((4,), num=2, seed=0)
            >>> full = a.reset_uniform_range(0.0, 1.0)
            >>> part = b.reset_uniform_range(0.0, 1.0, rows=torch.tensor([1, 3]))
            >>> torch.equal(part[1], full[1]), bool(part[0].eq(0).all())
            (True, True)
            >>> b.episodes.tolist()
            [0, 1, 0, 1]
        """
        return ResetRows.start(self, mask, rows).uniform(low, high)

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
        mixed = _signed32(int(hash32(torch.tensor((salt * _GOLDEN + 0x3C6EF372) & _MASK32, dtype=torch.int64))))
        x = (self.lanes ^ self.reset_key ^ mixed) + self.episodes.unsqueeze(-1) * _GOLDEN
        u, scale = _uniform_ints(_hash32_i32(x), self.num, self.bits)
        return u.mul_(scale)


class ResetRows:
    """The rows a reset starts, and their random numbers: the ``rows`` argument of
    ``NativeEnv._reset(tensordict, rows)``.

    ``_reset`` returns the start data of *every* row (``[*batch_size, ...]``); the rows that do
    not reset are replaced by their previous data afterwards, so their values only need to be
    finite. Most envs never read :attr:`mask` or :attr:`index`: they draw their start states with
    the methods below, which key each row's numbers by ``(seed, row, episode index of the row,
    draw index)``. The ``k``-th draw of a ``_reset`` call reads the ``k``-th reset stream, so
    keep the draws in a fixed order (no draw under a data-dependent Python branch).

    Built by :meth:`start` (which starts the episodes of the rows); ``NativeEnv`` builds it in
    its ``_reset_rows`` hook.

    Attributes:
        mask: bool ``[*batch_size]`` (``True``: the row resets), or ``None``: every row resets.
        index: flat indices (a CPU ``int64`` tensor) of the resetting rows on the sparse eager-CPU
            path, where only those rows are hashed and the others hold filler (zeros, or the
            numbers of hash 0 with tensor parameters); ``None`` elsewhere
            (every row is hashed: masked mode, compiled graphs, GPUs). The reset rows get the same
            numbers either way.

    Examples:
        >>> rng = CounterRNG((4,), seed=0)
        >>> rows = ResetRows.start(rng)                   # every row starts an episode
        >>> pos = rows.uniform(-1.0, 1.0, n=2)            # draw 0: [4, 2] float32
        >>> goal = rows.randint(0, 5, n=1)                # draw 1: [4, 1] int64
        >>> sticky = rows.bernoulli(0.5, n=1)             # draw 2: [4, 1] bool
        >>> pos.shape, goal.dtype, sticky.dtype, rows.full
        (torch.Size([4, 2]), torch.int64, torch.bool, True)
        >>> again = CounterRNG((4,), seed=0)              # sparse path: rows 1 and 3 only
        >>> part = ResetRows.start(again, index=torch.tensor([1, 3])).uniform(-1.0, 1.0, n=2)
        >>> torch.equal(part[[1, 3]], pos[[1, 3]]), part[0].tolist()
        (True, [0.0, 0.0])
    """

    __slots__ = ("_draws", "_rng", "index", "mask")

    def __init__(self, rng: CounterRNG, mask: torch.Tensor | None = None, index: torch.Tensor | None = None) -> None:
        self._rng = rng
        self.mask = mask
        self.index = index
        self._draws = 0

    @classmethod
    def start(cls, rng: CounterRNG, mask: torch.Tensor | None = None, index: torch.Tensor | None = None) -> ResetRows:
        """Starts the next episode of the rows (``mask``, or the flat ``index``; both ``None``:
        every row) in ``rng`` and returns their :class:`ResetRows`.

        Args:
            rng: the env's generator.
            mask: bool ``[*batch_size]`` mask of the resetting rows (no host read).
            index: host flat indices of the resetting rows (sparse path).

        Examples:
            >>> rng = CounterRNG((3,), seed=0)
            >>> rows = ResetRows.start(rng, mask=torch.tensor([True, False, True]))
            >>> rng.episodes.tolist(), rows.full
            ([1, 0, 1], False)
        """
        rng.start_episodes(mask, index)
        return cls(rng, mask, index)

    @property
    def full(self) -> bool:
        """Whether every row resets (no mask and no index).

        Examples:
            >>> ResetRows(CounterRNG((2,)), mask=torch.tensor([True, False])).full
            False
        """
        return self.mask is None and self.index is None

    def _next(self, draw: _Draw) -> torch.Tensor:
        number, self._draws = self._draws, self._draws + 1
        return self._rng._reset_values(draw, number, self.index)

    def uniform(
        self,
        low: float | torch.Tensor = 0.0,
        high: float | torch.Tensor = 1.0,
        n: int | tuple[int, ...] | None = None,
        *,
        bits: int | None = None,
    ) -> torch.Tensor:
        """``[*batch_size, n]`` float32 start-state uniforms in ``[low, high)`` (see the class).

        Args:
            low: the lower bound (a number, or a tensor broadcastable to ``[*batch_size, n]``).
            high: the upper bound.
            n: numbers per row (default: the generator's ``num``), or a tuple: their shape
                (``(agents, 2)`` gives ``[*batch_size, agents, 2]``).
            bits: resolution, 16 or 24 (default: the generator's ``bits``).

        Examples:
            >>> x = ResetRows.start(CounterRNG((3,), seed=1)).uniform(2.0, 3.0, n=5)
            >>> x.shape, bool(((x >= 2.0) & (x < 3.0)).all())
            (torch.Size([3, 5]), True)
        """
        return self._next(self._rng._draw("uniform", n, bits, low, high))

    def randint(
        self, low: int | torch.Tensor, high: int | torch.Tensor, n: int | tuple[int, ...] | None = None
    ) -> torch.Tensor:
        """``[*batch_size, n]`` int64 start-state integers in ``[low, high)`` (see the class).

        Examples:
            >>> x = ResetRows.start(CounterRNG((500,), seed=1)).randint(0, 3, n=1)
            >>> sorted(set(x.flatten().tolist()))
            [0, 1, 2]
        """
        return self._next(self._rng._draw("randint", n, 24, low, high))

    def bernoulli(self, p: float | torch.Tensor, n: int | tuple[int, ...] | None = None) -> torch.Tensor:
        """``[*batch_size, n]`` start-state bools, ``True`` with probability ``p`` (see the class).

        Examples:
            >>> ResetRows.start(CounterRNG((3,), seed=1)).bernoulli(1.0, n=2).all().item()
            True
        """
        return self._next(self._rng._draw("bernoulli", n, 24, p, None))

    def substream(self, stream: int) -> ResetRows:
        """The same rows with draws of their own: the ``k``-th draw of ``substream(s)`` reads
        another reset stream than the ``k``-th draw of ``self`` (and of other sub-streams), so
        draws added by a feature (e.g. randomized parameters) do not shift the env's own.

        Args:
            stream: a positive int naming the sub-stream.

        Examples:
            >>> rows = ResetRows.start(CounterRNG((3,), seed=0))
            >>> own, extra = rows.uniform(n=1), rows.substream(1).uniform(n=1)
            >>> torch.equal(own, extra)
            False
        """
        if isinstance(stream, bool) or not isinstance(stream, int) or stream < 1:
            raise ValueError(f"stream must be a positive int, got {stream!r}")
        sub = ResetRows(self._rng, self.mask, self.index)
        sub._draws = stream << 16
        return sub

    def __repr__(self) -> str:
        which = "all" if self.full else ("index" if self.index is not None else "mask")
        return f"ResetRows(rows={which}, draws={self._draws}, batch_size={list(self._rng.batch_size)})"
