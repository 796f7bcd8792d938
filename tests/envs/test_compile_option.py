"""The ``compile=`` construction option and ``compile_step_and_maybe_reset`` / ``eager``:
``step_and_maybe_reset`` compiled in place with ``torch.compile`` (TorchRL's ``env.compile``)."""

from __future__ import annotations

import pytest
import torch

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import StepCounter, TransformedEnv


def _compiled(env):
    return env.__dict__.get("_compiled_step_and_maybe_reset")


def test_construction_option_forms():
    assert _compiled(CartPoleEnv(compile=False)) is None
    assert _compiled(CartPoleEnv(compile=None)) is None
    assert _compiled(CartPoleEnv(compile=True)) is not None
    assert _compiled(CartPoleEnv(compile={"backend": "eager", "warmup": 2})) is not None
    env = TransformedEnv(CartPoleEnv(), StepCounter(), compile={"backend": "eager"})
    assert _compiled(env) is not None
    with pytest.raises(TypeError, match="compile must be a bool, None or a dict .* got str 'please'"):
        CartPoleEnv(compile="please")
    with pytest.raises(ValueError, match="warmup must be a non-negative int or None, got -1"):
        CartPoleEnv().compile_step_and_maybe_reset(warmup=-1)


def test_compiled_steps_match_the_eager_ones_and_eager_undoes_it():
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    eager = CartPoleEnv(batch_size=[4], seed=3)
    compiled = CartPoleEnv(batch_size=[4], seed=3, compile={"backend": "eager", "warmup": 1})
    td_e, td_c = eager.reset(), compiled.reset()
    for _ in range(4):
        action = torch.tensor([0, 1, 1, 0])
        data_e, td_e = eager.step_and_maybe_reset(td_e.set("action", action))
        data_c, td_c = compiled.step_and_maybe_reset(td_c.set("action", action))
        assert torch.equal(data_e["next", "observation"], data_c["next", "observation"])
        assert torch.equal(td_e["observation"], td_c["observation"])
    assert counters["stats"]["unique_graphs"] > 0  # the steps after the warmup were traced
    assert compiled.eager() is compiled and _compiled(compiled) is None


def test_env_compile_caches_runners_with_dict_options():
    """``env.compile(options={...})``: torch.compile options are a dict; the runner cache keys them
    by value (the same options give the same runner, other options another)."""
    from gpusim import CartPoleEnv

    env = CartPoleEnv(batch_size=[4], seed=0)
    runner = env.compile(verbose=False, options={"cpp.simdlen": 0})
    assert env.compile(verbose=False, options={"cpp.simdlen": 0}) is runner
    assert env.compile(verbose=False, options={"cpp.simdlen": 8}) is not runner
