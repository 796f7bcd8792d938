"""Token chains identified by a hash: the text-generation env that TorchRL documents as
``LLMHashingEnv``.

Environment card
----------------
Source:
    ``torchrl.envs.LLMHashingEnv``: a prompt is the start state, each action appends one token,
    and every token chain is identified by a hash chained token by token, so a search tree
    (MCTS) or a replay structure can key nodes by hash alone.
Reset:
    needs the prompt: ``reset(td)`` with ``td[observation_key]`` int64 ``[*B, L0]`` (one prompt
    length per call). ``"hashing"`` starts as the hash of the prompt.
Action (``"action"``, ``Categorical(vocab_size)``, int64 ``[*B, 1]``):
    the next token.
Observation (``batch_size`` fixed at construction, every shape static):
    ``observation_key`` int64 ``[*B, max_length]``: the chain so far, left-aligned and padded
    with ``pad_token``; ``"length"`` int64 ``[*B, 1]``: how many tokens are valid; ``"hashing"``
    int64 ``[*B, 1]``: ``hash(previous hash, token)``; ``text_key`` (non-tensor) the decoded
    chain when a tokenizer is given.
Reward:
    ``0`` (the env identifies states; rewards come from elsewhere, e.g. a reward model).
Episode end:
    ``truncated`` (and ``done``) once the chain reaches ``max_length`` tokens; never terminated.
    The state also carries ``"prompt_length"`` and ``"prompt_hashing"``: a reset whose input holds
    a running chain (``max_length`` wide, with ``"prompt_length"``: auto-resets, partial resets)
    restarts each selected row from its own prompt.
Differences from TorchRL:
    TorchRL's chain grows by one column per step (a shape that changes every step, with a
    batch-unlocked env). gpusim keeps static shapes (specs, compiled graphs, the episode merge)
    with a ``max_length`` buffer and a ``"length"`` entry. The default hash is gpusim's own
    64-bit mix (:func:`chain_hash`), not TorchRL's SipHash; any ``hashing_module`` mapping an
    int64 ``[N, k]`` tensor to ``[N]`` int64 can replace it.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> env = LLMHashingEnv(vocab_size=50, batch_size=[2], max_length=8)
    >>> prompt = TensorDict(observation=torch.tensor([[3, 4], [3, 5]]), batch_size=[2])
    >>> td = env.reset(prompt)
    >>> td["length"].squeeze(-1).tolist(), bool(td["hashing"][0] != td["hashing"][1])
    ([2, 2], True)
    >>> td = env.step(td.set("action", torch.tensor([[7], [7]])))
    >>> td["next", "observation"][0, :3].tolist()
    [3, 4, 7]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import NonTensorStack, TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, NonTensor, Unbounded

__all__ = ["LLMHashingEnv", "chain_hash"]

_MIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def _i64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


_GOLDEN, _M1, _M2 = (_i64(v) for v in _MIX)


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 64-bit finalizer (splitmix64's) on int64 tensors (wrap-around arithmetic; the logical
    shifts are emulated with a mask after the arithmetic ones)."""
    x = x ^ ((x >> 30) & ((1 << 34) - 1))
    x = x * _M1
    x = x ^ ((x >> 27) & ((1 << 37) - 1))
    x = x * _M2
    return x ^ ((x >> 31) & ((1 << 33) - 1))


def chain_hash(tokens: torch.Tensor) -> torch.Tensor:
    """Hashes each row of an int64 ``[N, k]`` tensor to int64 ``[N]``, folding left to right:
    ``h = mix(h * golden + token)``, so ``chain_hash(cat([h_prefix, t]))`` chains one token on.

    Examples:
        >>> a = chain_hash(torch.tensor([[1, 2, 3]]))
        >>> b = chain_hash(torch.tensor([[1, 2, 4]]))
        >>> a.dtype, bool(a != b)
        (torch.int64, True)
    """
    if tokens.dtype != torch.int64:
        tokens = tokens.to(torch.int64)
    h = torch.zeros(tokens.shape[0], dtype=torch.int64, device=tokens.device)
    for j in range(tokens.shape[1]):
        h = _mix(h * _GOLDEN + tokens[:, j])
    return h


class LLMHashingEnv(EnvBase):
    """Token chains with chained hashes (see the module card).

    Args:
        vocab_size: the number of tokens (taken from ``tokenizer.vocab_size`` when omitted).
        hashing_module: ``[N, k]`` int64 -> ``[N]`` int64 (default :func:`chain_hash`).
        observation_key: where the chain lives (default ``"observation"``).
        text_output: add the decoded text (needs ``tokenizer``; default: when one is given).
        tokenizer: an object with ``decode``/``batch_decode`` (and ``vocab_size``).
        text_key: the key of the text (default ``"text"``).
        batch_size: the env batch dims.
        max_length: the longest chain (prompt included).
        pad_token: the value of the unused positions.
        device: where the tensors live.

    Raises:
        TypeError: neither ``vocab_size`` nor a tokenizer.
        ValueError: ``text_output=True`` without a tokenizer; a prompt longer than
            ``max_length``, missing, of the wrong batch or dtype.

    Examples:
        >>> env = LLMHashingEnv(vocab_size=10, batch_size=[3], max_length=4)
        >>> from tensordict import TensorDict
        >>> td = env.reset(TensorDict(observation=torch.ones(3, 2, dtype=torch.int64), batch_size=[3]))
        >>> env.rollout(5, auto_reset=False, tensordict=td, break_when_any_done=False)["next", "length"][0].squeeze(-1).tolist()
        [3, 4, 3, 4, 3]
    """

    functional_step = True

    def __init__(
        self,
        vocab_size: int | None = None,
        *,
        hashing_module: Callable[[torch.Tensor], torch.Tensor] | None = None,
        observation_key: str = "observation",
        text_output: bool | None = None,
        tokenizer: Any = None,
        text_key: str | None = "text",
        batch_size: Any = None,
        max_length: int = 128,
        pad_token: int = 0,
        device: torch.device | str | int | None = None,
    ) -> None:
        if vocab_size is None:
            if tokenizer is None:
                raise TypeError("LLMHashingEnv needs vocab_size, or a tokenizer with a vocab_size")
            vocab_size = int(tokenizer.vocab_size)
        if text_output is None:
            text_output = tokenizer is not None
        if text_output and tokenizer is None:
            raise ValueError("LLMHashingEnv(text_output=True) decodes the chain with a tokenizer: pass tokenizer=")
        if not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"max_length must be a positive int, got {max_length!r}")
        super().__init__(device=device, batch_size=batch_size)
        B = self.batch_size
        dev = self.device
        self.vocab_size = int(vocab_size)
        self.max_length = max_length
        self.pad_token = int(pad_token)
        self.observation_key = observation_key
        self.text_output = bool(text_output)
        self.text_key = (text_key or "text") if text_output else None
        self.__dict__["_hash"] = hashing_module or chain_hash
        self.__dict__["_tokenizer"] = tokenizer
        obs = Composite(
            {
                observation_key: Categorical(self.vocab_size, shape=(*B, max_length), device=dev),
                "length": Unbounded((*B, 1), dtype=torch.int64, device=dev),
                "hashing": Unbounded((*B, 1), dtype=torch.int64, device=dev),
            },
            shape=B,
            device=dev,
        )
        if self.text_output:
            obs[self.text_key] = NonTensor(shape=B, device=dev, example_data="")
        self.observation_spec = obs
        state = {k: obs[k].clone() for k in (observation_key, "length", "hashing")}
        state["prompt_length"] = Unbounded((*B, 1), dtype=torch.int64, device=dev)
        state["prompt_hashing"] = Unbounded((*B, 1), dtype=torch.int64, device=dev)
        self.state_spec = Composite(state, shape=B, device=dev)
        self.action_spec = Categorical(self.vocab_size, shape=(*B, 1), device=dev)
        self.reward_spec = Unbounded((*B, 1), device=dev)
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=B, device=dev)

    def _hash_rows(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[-1]
        return self._hash(tokens.reshape(-1, n)).reshape(*self.batch_size, 1)

    def _text(self, chain: torch.Tensor, length: torch.Tensor) -> Any:
        rows = chain.reshape(-1, self.max_length).tolist()
        lens = length.reshape(-1).tolist()
        texts = self._tokenizer.batch_decode([r[:n] for r, n in zip(rows, lens)])
        if not len(self.batch_size):
            return texts[0]
        return (
            NonTensorStack.from_list(texts).reshape(self.batch_size)
            if len(self.batch_size) > 1
            else NonTensorStack.from_list(texts)
        )

    def _out(self, src: dict, chain: torch.Tensor, length: torch.Tensor) -> TensorDictBase:
        text = self._text(chain, length) if self.text_output else None
        td = new_td(src, self.batch_size, self.device)
        if text is not None:
            if isinstance(text, str):
                td.set_non_tensor(self.text_key, text)
            else:
                td.set(self.text_key, text)
        return td

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        key = self.observation_key
        B = self.batch_size
        prompt = None if tensordict is None else tensordict.get(key, None)
        if prompt is None:
            raise ValueError(f"LLMHashingEnv.reset needs the prompt: pass a tensordict with {key!r} (int64 [*B, L])")
        if prompt.shape[: len(B)] != B or prompt.dim() != len(B) + 1 or prompt.dtype != torch.int64:
            raise ValueError(
                f"LLMHashingEnv.reset: the prompt {key!r} must be int64 of shape [{', '.join(map(str, B))}, L], "
                f"got {prompt.dtype} {list(prompt.shape)}"
            )
        flag = torch.zeros((*B, 1), dtype=torch.bool, device=self.device)
        plen = tensordict.get("prompt_length", None)
        if plen is not None and prompt.shape[-1] == self.max_length:
            # a running chain (an auto-reset or a partial reset): back to its own prompt
            positions = torch.arange(self.max_length, device=self.device)
            chain = torch.where(positions < plen, prompt, self.pad_token)
            length, hashing = plen, tensordict.get("prompt_hashing")
        else:
            L0 = prompt.shape[-1]
            if not 1 <= L0 <= self.max_length:
                raise ValueError(
                    f"LLMHashingEnv.reset: the prompt has {L0} tokens; it needs 1..max_length={self.max_length}"
                )
            chain = torch.full((*B, self.max_length), self.pad_token, dtype=torch.int64, device=self.device)
            chain[..., :L0] = prompt
            length = torch.full((*B, 1), L0, dtype=torch.int64, device=self.device)
            hashing = self._hash_rows(prompt)
        src = {
            key: chain,
            "length": length,
            "hashing": hashing,
            "prompt_length": length.clone(),
            "prompt_hashing": hashing.clone(),
            "done": flag,
            "terminated": flag.clone(),
            "truncated": flag.clone(),
        }
        return self._out(src, chain, length)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        key = self.observation_key
        action = tensordict.get("action")
        chain = tensordict.get(key)
        length = tensordict.get("length")
        full = length >= self.max_length
        pos = length.clamp(max=self.max_length - 1)
        new_chain = chain.scatter(-1, pos, torch.where(full, chain.gather(-1, pos), action))
        new_length = torch.where(full, length, length + 1)
        new_hash = self._hash_rows(torch.cat([tensordict.get("hashing"), action], -1))
        truncated = new_length >= self.max_length
        src = {
            key: new_chain,
            "length": new_length,
            "hashing": new_hash,
            "reward": torch.zeros((*self.batch_size, 1), device=self.device),
            "done": truncated,
            "terminated": torch.zeros_like(truncated),
            "truncated": truncated.clone(),
        }
        return self._out(src, new_chain, new_length)

    def _set_seed(self, seed: int | None) -> None:
        """The env has no randomness: nothing to seed."""
