"""Compile-friendly random actions from a counter-based stream.

``torch.randint``/``torch.rand`` inside a compiled CPU graph run as scalar Philox loops and pull
the whole fused step out of vectorized code (BENCHMARKS.md measures 10x). ``HashRandomPolicy``
draws the same kind of actions as ``action_spec.rand()`` from an integer hash of
``(seed, counter, env index)`` instead, which fuses with the step. It is the default policy of
compiled rollouts; specs it cannot express (masks, infinite bounds, ...) fall back to
``spec.rand()``.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.specs import Categorical, Composite
    >>> spec = Composite(action=Categorical(3, shape=(5,)), shape=(5,))
    >>> policy = HashRandomPolicy(spec, torch.Size([5]), seed=0)
    >>> policy(TensorDict({}, [5]))["action"].shape
    torch.Size([5])
"""

from __future__ import annotations

import inspect
import itertools
import math
import weakref
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import leaf_keys
from gpusim.envs.native.rng import CounterRNG
from gpusim.specs import Binary, Bounded, Categorical, Composite, OneHot

__all__ = ["HashRandomPolicy", "note_seed", "rollout_actions"]


def _supported(spec) -> bool:
    if isinstance(spec, Categorical):
        return spec.mask is None and spec.dtype is not torch.bool
    if isinstance(spec, OneHot):
        return getattr(spec, "mask", None) is None
    if isinstance(spec, Bounded):
        return spec.dtype.is_floating_point and bool(torch.isfinite(spec.low).all() and torch.isfinite(spec.high).all())
    return isinstance(spec, Binary)


class _Cut:
    """How one action leaf is cut from the policy's shared hashes (:meth:`CounterRNG.shared_bits
    <gpusim.envs.native.rng.CounterRNG.shared_bits>`).

    Two, four (and one) categories take one or two bits: number ``i`` of the leaf's flat
    ``[*B, size]`` values is field ``i % per_hash`` of hash ``offset + i // per_hash`` (32 or 16
    numbers per hash; ``Binary`` leaves too). Any other leaf takes 24 bits of hash ``offset + i``.

    Why not pack more: a compiled graph reads the numbers in the consumer's loop order. With one
    number per hash, the hash of number ``i`` is index arithmetic, inlined and vectorized in any
    order (the MPE worlds read actions batch-innermost). Two 16-bit fields per hash, laid either
    way, cost more than the hashes they save: MPE simple_spread, 8192 envs, compiled, one thread:
    15.0-16.5 M env-steps/s with a hash per float, 14.1 with fields hash-major (Inductor
    vectorized the inner loop of 2 fields), 13.2 field-major (index ``i % hashes``).
    """

    __slots__ = ("count", "hashes", "kind", "n", "offset", "per_hash", "width")

    def __init__(self, spec, count: int, offset: int) -> None:
        n = int(spec.n) if isinstance(spec, (Categorical, OneHot)) else 2 if isinstance(spec, Binary) else 0
        if n and n <= 4 and n & (n - 1) == 0:  # 1, 2 (Binary) or 4: their bits, exact
            self.kind, self.width = "bits", 1 if n <= 2 else 2
        elif n:  # (24 bits * n) >> 24: each index within 2**-24 of probability 1/n
            self.kind, self.width = "scaled", 32
        else:  # Bounded floats: low + u * (high - low), u of 24 bits
            self.kind, self.width = "float", 32
        self.n, self.count, self.offset = n, count, offset
        self.per_hash = 32 // self.width
        self.hashes = -(-count // self.per_hash)

    def numbers(self, h: torch.Tensor, dtype: torch.dtype = torch.int32) -> torch.Tensor:
        """The leaf's numbers ``[*lead, count]`` from the policy's hashes ``h`` (``[*lead, hashes]``):
        indices of integer type ``dtype`` (bits cut in that type: one allocation of the result's
        size), or float32 uniforms in ``[0, 1)`` for a ``float`` leaf."""
        h = h[..., self.offset : self.offset + self.hashes]
        if self.width == 32:
            top = torch.bitwise_right_shift(h, 8).bitwise_and_(0xFFFFFF)
            if self.kind == "float":
                return top.to(torch.float32).mul_(1.0 / 16777216.0)
            return (top.to(torch.int64) * self.n) >> 24
        if dtype in (torch.int64, torch.int32):
            h = h.to(dtype)  # sign-extended: the mask below keeps the field's bits only
        if torch.compiler.is_compiling():
            shifts = torch.arange(self.per_hash, dtype=h.dtype, device=h.device) * self.width
        else:
            shifts = _shifts(self.per_hash, self.width, h.device, h.dtype)
        fields = torch.bitwise_right_shift(h.unsqueeze(-1), shifts).bitwise_and_(self.n - 1).flatten(-2)
        return fields if fields.shape[-1] == self.count else fields[..., : self.count]


_SHIFTS: dict[tuple, torch.Tensor] = {}


def _shifts(per_hash: int, width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """``arange(per_hash) * width`` on ``device``, made once (eager)."""
    key = (per_hash, width, device, dtype)
    shifts = _SHIFTS.get(key)
    if shifts is None:
        shifts = _SHIFTS[key] = torch.arange(per_hash, dtype=dtype, device=device) * width
    return shifts


class HashRandomPolicy:
    """Uniform random actions for every leaf of ``action_spec`` from a :class:`CounterRNG`.

    Each step hashes ``(seed, counter, lane)`` and cuts the actions of all rows from the hashes:
    a leaf of two categories (``Binary`` too) takes one bit, of four two bits, so one hash serves
    32 rows of CartPole; other leaves take 24 bits of a hash each (an index within ``2**-24`` of
    probability ``1 / n``; a float ``low + u * (high - low)``). The numbers of row ``r`` depend on ``(seed, counter, r)``
    only, the same eager, compiled, on CPU and CUDA.

    Args:
        action_spec: the env's ``full_action_spec``.
        batch_size: the env batch dims (leading dims of every leaf).
        seed: the stream's seed (``None``: drawn from torch's global generator, so
            ``torch.manual_seed`` makes it reproducible).

    Raises:
        ValueError: if a leaf is of a kind it cannot draw (use ``spec.rand()`` then; see
            :meth:`supports`).

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> env = PendulumEnv(batch_size=[4], seed=0)
        >>> policy = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)
        >>> action = policy(env.reset())["action"]
        >>> action.shape, bool((action.abs() <= 2.0).all())  # uniform in the action bounds
        (torch.Size([4, 1]), True)
        >>> torch.equal(HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)(env.reset())["action"], action)
        True
    """

    def __init__(self, action_spec: Composite, batch_size: torch.Size, seed: int | None = None) -> None:
        self.keys = leaf_keys(action_spec)
        if not self.supports(action_spec):
            raise ValueError(f"HashRandomPolicy cannot draw every action leaf of {self.keys}")
        nb = len(batch_size)
        self.specs = [action_spec[k] for k in self.keys]
        self.sizes = [
            (math.prod(s.shape[nb:]) if not isinstance(s, OneHot) else math.prod(s.shape[nb:-1])) for s in self.specs
        ]
        #: uniforms per row that :meth:`values` takes
        self.num = max(1, sum(self.sizes))
        # ``(low, high - low)`` of each Bounded leaf, read once: a Composite stores batch-uniform
        # bounds compactly (reading ``spec.low`` builds a full copy), and the span is not
        # recomputed per draw (MPE simple_speaker_listener, 8192 envs: 6 us a leaf a step)
        self.ranges = [(s.low, s.high - s.low) if isinstance(s, Bounded) else None for s in self.specs]
        self.batch_size = torch.Size(batch_size)
        rows = self.batch_size.numel()
        self.cuts: list[_Cut] = []
        offset = 0
        for spec, size in zip(self.specs, self.sizes):
            self.cuts.append(_Cut(spec, rows * size, offset))
            offset += self.cuts[-1].hashes
        self.hashes = max(1, offset)  # hashes per step
        # the integer type each leaf's fields are cut in (one_hot takes int64 indices)
        self.cut_dtypes = [torch.int64 if isinstance(s, OneHot) else s.dtype for s in self.specs]
        device = self.specs[0].device if self.specs else None
        if seed is None:
            seed = int(torch.randint(0, 2**31 - 1, ()))
        self.rng = CounterRNG((), num=1, device=device, seed=seed, bits=24)

    @staticmethod
    def supports(action_spec: Composite) -> bool:
        """Whether every leaf of ``action_spec`` is a kind this policy draws.

        Supported: ``Categorical`` and ``OneHot`` without a mask, ``Binary``, and floating
        ``Bounded`` with finite bounds.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv, TicTacToeEnv
            >>> HashRandomPolicy.supports(CartPoleEnv().full_action_spec)
            True
            >>> from gpusim.specs import Composite, Unbounded
            >>> HashRandomPolicy.supports(Composite(action=Unbounded((1,))))  # no bounds to draw in
            False
        """
        keys = leaf_keys(action_spec)
        return bool(keys) and all(_supported(action_spec[k]) for k in keys)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        h = self.rng.shared_bits(self.hashes)
        self.rng.counter.add_(1)
        for key, value in zip(self.keys, self.actions(h)):
            tensordict.set(key, value)
        return tensordict

    def actions(self, h: torch.Tensor, exact_only: bool = False) -> list[torch.Tensor | None]:
        """The action of every leaf cut from the policy's hashes ``h`` (``[*lead, hashes]``, as
        :meth:`CounterRNG.shared_bits <gpusim.envs.native.rng.CounterRNG.shared_bits>` gives
        them), each ``[*lead, *spec.shape]``.

        Args:
            h: the hashes of one step (``[hashes]``) or of several (``[steps, hashes]``).
            exact_only: give ``None`` for the float leaves (``low + u * (high - low)``), whose last
                bits may depend on the shape of the op (vectorized body or scalar tail); the
                index, one-hot and binary leaves are exact at any shape.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3])
            >>> policy = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)
            >>> h = torch.tensor([0b101], dtype=torch.int32)  # one hash: bit r is row r's action
            >>> policy.actions(h)[0]
            tensor([1, 0, 1])
        """
        return [
            None if exact_only and cut.kind == "float" else self._leaf_action(i, h) for i, cut in enumerate(self.cuts)
        ]

    def _leaf_action(self, i: int, h: torch.Tensor) -> torch.Tensor:
        """Leaf ``i``'s action ``[*lead, *spec.shape]`` cut from hashes ``h`` (``[*lead, hashes]``)."""
        spec, cut = self.specs[i], self.cuts[i]
        lead = h.shape[:-1]
        x = cut.numbers(h, self.cut_dtypes[i])
        if isinstance(spec, OneHot):
            value = torch.nn.functional.one_hot(x.reshape((*lead, *spec.shape[:-1])), spec.n)
        elif cut.kind == "float":
            low, span = self.ranges[i]
            value = torch.addcmul(low, x.reshape((*lead, *spec.shape)), span)
        else:
            value = x.reshape((*lead, *spec.shape))
        return value.to(spec.dtype)

    def write(self, tensordict: TensorDictBase, u: torch.Tensor) -> TensorDictBase:
        """Writes the actions made from uniforms ``u`` (``[*B, num]`` in ``[0, 1)``, a row's
        numbers of its own: e.g. a stream keyed by the row's episode) into ``tensordict`` and
        returns it.

        Args:
            tensordict: the data to write into.
            u: uniforms in ``[0, 1)``, one column per drawn value.

        Returns:
            ``tensordict`` with the actions.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3])
            >>> policy = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)
            >>> u = torch.tensor([[0.1], [0.6], [0.9]])  # below 1/2: action 0, else 1
            >>> policy.write(TensorDict({}, [3]), u)["action"]
            tensor([0, 1, 1])
        """
        for key, value in zip(self.keys, self.values(u)):
            tensordict.set(key, value)
        return tensordict

    def values(self, u: torch.Tensor) -> list[torch.Tensor]:
        """The action of every leaf made from uniforms ``u`` (``[*lead, *B, num]``), each
        ``[*lead, *spec.shape]``: the policy's mapping for numbers the caller draws per row.

        Args:
            u: uniforms in ``[0, 1)``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> policy = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=0)
            >>> [v.tolist() for v in policy.values(torch.tensor([[[0.1], [0.7]], [[0.9], [0.2]]]))]  # two steps
            [[[0, 1], [1, 0]]]
        """
        lead = u.shape[: u.ndim - 1 - len(self.batch_size)]
        out: list[torch.Tensor] = []
        start = 0
        for spec, size, bounds in zip(self.specs, self.sizes, self.ranges):
            part = u[..., start : start + size]
            start += size
            if isinstance(spec, OneHot):
                # clamped in float32 (vectorized), then truncated: the same integers as a clamp
                # of the int64 (a scalar loop on CPU: 1.05 ms against 0.1 ms at [4, 65536, 1])
                idx = (part * spec.n).clamp_max_(spec.n - 1).to(torch.int64)
                value = torch.nn.functional.one_hot(idx.reshape((*lead, *spec.shape[:-1])), spec.n).to(spec.dtype)
            elif isinstance(spec, Categorical):
                value = (part * spec.n).clamp_max_(spec.n - 1).to(torch.int64).reshape((*lead, *spec.shape))
                value = value.to(spec.dtype)
            elif isinstance(spec, Binary):
                value = (part < 0.5).reshape((*lead, *spec.shape)).to(spec.dtype)
            else:
                low, span = bounds
                value = torch.addcmul(low, part.reshape((*lead, *spec.shape)), span).to(spec.dtype)
            out.append(value)
        return out

    def ahead(self, max_steps: int) -> Callable[[TensorDictBase], TensorDictBase]:
        """This policy for an eager loop of at most ``max_steps`` steps, drawing its numbers in
        blocks of steps (:meth:`CounterRNG.uniform_ahead
        <gpusim.envs.native.rng.CounterRNG.uniform_ahead>`): the same actions as calling the
        policy once per step, at the per-op cost of one draw per block. The returned callable
        advances the stream's counter by one per call, like the policy: stopping early leaves the
        stream where per-step calls would have left it. Use it for one loop, nothing else drawing
        from the stream meanwhile.

        Args:
            max_steps: the most calls the loop makes (more calls still work, by further blocks).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3], seed=0)
            >>> a = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=1)
            >>> b = HashRandomPolicy(env.full_action_spec, env.batch_size, seed=1)
            >>> fast, td = b.ahead(10), env.reset()
            >>> all(torch.equal(a(td.clone())["action"], fast(td.clone())["action"]) for _ in range(12))
            True
        """
        return _Ahead(self, max_steps)


class _Ahead:
    """:meth:`HashRandomPolicy.ahead`: the hashes of a block of steps drawn at once."""

    _BLOCK_STEPS = 64
    _BLOCK_HASHES = 1 << 17  # hashes per block at most
    # below this many numbers per step, the block's actions are cut at once too (small batches:
    # the per-op cost is what blocks save); above, each step cuts its own from the block's
    # hashes (large batches: a step's action is freshly allocated, as a per-step draw's is)
    _CUT_BLOCK_BELOW = 1 << 14

    def __init__(self, policy: HashRandomPolicy, max_steps: int) -> None:
        self.policy = policy
        self.left = max(1, int(max_steps))
        self.block_steps = max(1, min(self._BLOCK_STEPS, self._BLOCK_HASHES // policy.hashes))
        self.cut_block = policy.batch_size.numel() * policy.num < self._CUT_BLOCK_BELOW
        self.h: torch.Tensor | None = None  # the block's hashes [steps, hashes]
        self.block: list[torch.Tensor | None] | None = None  # its exact actions (None: a float leaf)
        self.pos = 0

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        policy = self.policy
        if torch.compiler.is_compiling():  # a graph draws per step (the same numbers)
            return policy(tensordict)
        if self.h is None or self.pos == self.h.shape[0]:
            steps = min(self.block_steps, max(1, self.left))
            self.h = policy.rng.shared_bits(policy.hashes, steps)
            self.block = policy.actions(self.h, exact_only=True) if self.cut_block else None
            self.pos = 0
        t = self.pos
        self.pos += 1
        self.left -= 1
        policy.rng.counter.add_(1)  # where a per-step draw leaves the stream
        block = self.block
        for i, key in enumerate(policy.keys):
            # a cut block holds None for float leaves: converted per step, as the policy does
            value = block[i] if block is not None else None
            tensordict.set(key, policy._leaf_action(i, self.h[t]) if value is None else value[t])
        return tensordict


# ---------------------------------------------------------------- the env's own action stream
_ACTION_SALT = 0x2545F4914F6CDD1D  # keys the action stream apart from the env's own streams
_SEEDS: weakref.WeakKeyDictionary[Any, tuple[int | None, int]] = weakref.WeakKeyDictionary()
_STREAMS: weakref.WeakKeyDictionary[Any, list] = weakref.WeakKeyDictionary()
_GENERATIONS = itertools.count(1)


def note_seed(env: Any, seed: int | None) -> None:
    """Records that ``env`` was seeded with ``seed`` (called by ``EnvBase.set_seed``): the random
    actions of its rollouts without a policy (:func:`rollout_actions`) start over from ``seed``.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2])
        >>> note_seed(env, 5)
        >>> torch.equal(rollout_actions(env)(env.reset())["action"], (note_seed(env, 5), rollout_actions(env))[1](env.reset())["action"])
        True
    """
    _SEEDS[env] = record = (seed, next(_GENERATIONS))
    for owner, entry in list(_STREAMS.items()):  # restarted now: a compiled runner holds it
        if env in _chain(owner) and _seed_of(owner) == record:
            entry[0].rng.manual_seed(_stream_seed(seed))
            entry[1] = record[1]


def _chain(env: Any) -> list:
    """``env`` and the envs it wraps (``base_env``)."""
    chain = []
    while env is not None:
        chain.append(env)
        # a class attribute only (a TransformedEnv's property): wrappers of host libraries forward
        # unknown attributes to the library's env, which may be closed
        if not isinstance(inspect.getattr_static(type(env), "base_env", None), property):
            break
        env = env.base_env
    return chain


def _stream_seed(seed: int | None) -> int:
    if seed is None:  # an unseeded env: torch's global generator picks the stream
        return int(torch.randint(0, 2**31 - 1, ()))
    from gpusim.envs._seeding import next_seed

    return next_seed(seed ^ _ACTION_SALT)


def _own_rand_action(env: Any) -> bool:
    """Whether ``env`` or an env it wraps overrides ``EnvBase.rand_action``."""
    from gpusim.envs.common import EnvBase

    return any(getattr(type(e), "rand_action", None) is not EnvBase.rand_action for e in _chain(env))


def _seed_of(env: Any) -> tuple[int | None, int]:
    """The last seed given to ``env`` or to the env it wraps (``base_env``), and when."""
    for inner in _chain(env):
        record = _SEEDS.get(inner)
        if record is not None:
            return record
    return None, 0


def rollout_actions(env: Any, steps: int | None = None) -> Callable[[TensorDictBase], TensorDictBase]:
    """The random actions of ``env.rollout()`` and of compiled rollouts without a policy: a
    :class:`HashRandomPolicy` owned by ``env``, keyed by the env's seed (``set_seed`` or the
    constructor's ``seed=``; not by ``torch.manual_seed``) and by a counter that advances with each
    step, the same numbers eager and compiled. ``set_seed`` restarts it (in place: a compiled
    graph reading it is not recompiled). An unseeded env's stream is seeded once from torch's
    global generator. An env (or a wrapped env) that writes its own ``rand_action`` (e.g. one that
    reads a legal-move mask), an action spec the hash cannot draw (masks, infinite bounds), and a
    batch-unlocked env without batch dims use ``env.rand_action`` (torch's global generator).

    Args:
        env: the env.
        steps: for an eager loop of that many steps: the stream drawn in blocks of steps
            (:meth:`HashRandomPolicy.ahead`, the same actions at a fraction of the per-step
            cost); ``None``: the policy itself.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[3], seed=0)
        >>> policy = rollout_actions(env)
        >>> first = policy(env.reset())["action"]
        >>> _ = torch.manual_seed(123)  # no effect on the env's actions
        >>> _ = env.set_seed(0)
        >>> rollout_actions(env) is policy, torch.equal(policy(env.reset())["action"], first)
        (True, True)
    """
    spec = env.full_action_spec
    if _own_rand_action(env) or not HashRandomPolicy.supports(spec) or (not env.batch_locked and not env.batch_size):
        return env.rand_action
    seed, generation = _seed_of(env)
    entry = _STREAMS.get(env)
    if entry is None or entry[0].keys != leaf_keys(spec) or entry[0].batch_size != env.batch_size:
        entry = [HashRandomPolicy(spec, env.batch_size, seed=_stream_seed(seed)), generation]
        _STREAMS[env] = entry
    elif entry[1] != generation:
        entry[0].rng.manual_seed(_stream_seed(seed))
        entry[1] = generation
    return entry[0] if steps is None else entry[0].ahead(steps)
