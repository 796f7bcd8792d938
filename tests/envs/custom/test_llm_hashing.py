"""LLMHashingEnv: chained hashes, static-shape chains, truncation and restarts from the prompt, text."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.checks import check_env_specs
from gpusim.envs.custom import LLMHashingEnv
from gpusim.envs.custom.llm_hashing import chain_hash


class CharTokenizer:
    """A character-level tokenizer (token = code point - 96)."""

    vocab_size = 27

    def batch_decode(self, rows):
        return ["".join(chr(96 + t) for t in row) for row in rows]


def _prompt(rows):
    return TensorDict(observation=torch.tensor(rows), batch_size=[len(rows)])


def test_hash_identifies_chains_and_chains_token_by_token():
    env = LLMHashingEnv(vocab_size=27, batch_size=[2], max_length=6)
    td = env.reset(_prompt([[1, 2], [1, 2]]))
    assert torch.equal(td["hashing"][0], td["hashing"][1])  # same prompt, same hash
    td = env.step(td.set("action", torch.tensor([[3], [4]])))["next"]
    assert not torch.equal(td["hashing"][0], td["hashing"][1])
    # the hash of a chain is the hash of (previous hash, token)
    prev = env.reset(_prompt([[1, 2], [1, 2]]))["hashing"]
    assert torch.equal(td["hashing"], chain_hash(torch.cat([prev, torch.tensor([[3], [4]])], -1)).unsqueeze(-1))
    # two different paths to the same tokens give the same hash (the env is a pure function of its input)
    other = env.reset(_prompt([[1, 2], [9, 9]]))
    again = env.step(other.set("action", torch.tensor([[3], [3]])))["next"]
    assert torch.equal(again["hashing"][0], td["hashing"][0])
    assert td["observation"][0, :3].tolist() == [1, 2, 3] and td["length"].squeeze(-1).tolist() == [3, 3]


def test_truncation_restarts_from_the_prompt_and_text():
    env = LLMHashingEnv(tokenizer=CharTokenizer(), batch_size=[2], max_length=4)
    assert env.vocab_size == 27 and env.text_output
    td = env.reset(_prompt([[1, 2], [3, 3]]))
    assert td["text"] == ["ab", "cc"]
    data = env.rollout(4, auto_reset=False, tensordict=td, break_when_any_done=False)
    assert data["next", "truncated"][0].squeeze(-1).tolist() == [False, True, False, True]
    assert not data["next", "terminated"].any()
    # after the truncation the chain restarts from its own prompt with the prompt's hash
    assert torch.equal(data["observation"][:, 2, :2], torch.tensor([[1, 2], [3, 3]]))
    assert torch.equal(data["hashing"][:, 2], td["hashing"])
    assert data["length"][:, 2].squeeze(-1).tolist() == [2, 2]
    assert len(data["next", "text"][0][1]) == 4
    check_env_specs(env, tensordict=_prompt([[1, 2], [3, 3]]))


def test_errors():
    with pytest.raises(TypeError, match="vocab_size"):
        LLMHashingEnv()
    with pytest.raises(ValueError, match="tokenizer"):
        LLMHashingEnv(vocab_size=5, text_output=True)
    env = LLMHashingEnv(vocab_size=5, batch_size=[2], max_length=3)
    with pytest.raises(ValueError, match="needs the prompt"):
        env.reset()
    with pytest.raises(ValueError, match="1..max_length=3"):
        env.reset(_prompt([[1, 1, 1, 1], [1, 1, 1, 1]]))
    with pytest.raises(ValueError, match="int64"):
        env.reset(TensorDict(observation=torch.ones(2, 2), batch_size=[2]))
