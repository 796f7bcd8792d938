"""``docs/writing_an_env.md`` runs as written: its code blocks, executed in order, print what the
page says they print; the guide's env then behaves as the page claims (masked and sparse resets
give the same data, seeds reproduce, a torch.Generator env gets the clear compile error)."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types

import pytest
import torch

GUIDE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "writing_an_env.md"


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), re.DOTALL | re.MULTILINE)


def _expected_prints(code: str) -> list[str]:
    """What the page says each ``print(...)`` line prints: its trailing ``# comment``, or the
    comment line right under it."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        inline = re.search(r"\)\s+# (.*)$", line)
        if inline:
            out.append(inline.group(1).strip())
        else:
            assert i + 1 < len(lines) and lines[i + 1].startswith("# "), f"no expected output for {line!r}"
            out.append(lines[i + 1][2:].strip())
    return out


@pytest.fixture(scope="module")
def guide():
    """The namespace after running every code block of the guide (its id unregistered after)."""
    from gpusim.registry import _REGISTRY

    blocks = _blocks()
    assert len(blocks) == 3, "the guide's code blocks changed: update this test"
    module = types.ModuleType("writing_an_env_guide")  # a real module: Dynamo looks classes up by module
    module.__file__ = str(GUIDE)
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    printed: list[str] = []
    expected: list[str] = []
    try:
        for code in blocks:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(code, str(GUIDE), "exec"), namespace)  # noqa: S102 (the guide's own code)
            printed += buf.getvalue().strip().splitlines()
            expected += _expected_prints(code)
        namespace["_printed"], namespace["_expected"] = printed, expected
        yield namespace
    finally:
        _REGISTRY.pop("GoalWalk-v0", None)
        sys.modules.pop(module.__name__, None)


def test_guide_code_runs_and_prints_what_it_says(guide) -> None:
    assert guide["_printed"] == guide["_expected"]
    assert len(guide["_expected"]) == 4


def test_guide_env_is_about_thirty_lines() -> None:
    first = _blocks()[0]
    body = first[first.index("class GoalWalkEnv") :]
    assert len([line for line in body.splitlines() if line.strip()]) <= 32


def test_guide_env_masked_and_sparse_resets_give_the_same_data(guide) -> None:
    """The guide's claim: a row's data does not depend on how resets are executed."""
    from gpusim.kernels import record_backends

    cls = guide["GoalWalkEnv"]
    runs = []
    for mode in ("masked", "sparse"):
        torch.manual_seed(0)  # the seed of rollout()'s random actions
        env = cls(batch_size=[300], seed=3, slip=0.3, auto_reset_mode=mode)
        with record_backends() as calls:
            runs.append(env.rollout(80, break_when_any_done=False))
        assert (("sparse_reset", "cpu") in calls) == (mode == "sparse")  # only the reset rows hashed
    assert runs[0]["next", "done"].any()  # resets happened during the rollouts
    assert (runs[0] == runs[1]).all()


def test_guide_env_seeds_reproduce_and_steps_draw_fresh_numbers(guide) -> None:
    cls = guide["GoalWalkEnv"]
    env = cls(batch_size=[64], seed=5, slip=0.5)
    td = env.reset()
    env.set_seed(5)
    assert torch.equal(env.reset()["state"], td["state"])
    td["action"] = torch.full((64,), 2)
    moved = [env.step(td)["next", "state"][:, 0] - td["state"][:, 0] for _ in range(2)]
    assert not torch.equal(moved[0], moved[1])  # the slips of two steps differ


def test_a_generator_env_gets_the_guides_compile_error() -> None:
    """The guide's warning: a torch.Generator in _reset fails under compile=True with an error
    that names it and points to the counter-based generator."""
    from tensordict import TensorDict

    import gpusim as gs
    from gpusim.envs._compile_errors import EnvCompileError
    from gpusim.specs import Categorical, Composite, Unbounded

    class GeneratorEnv(gs.EnvBase):
        def __init__(self):
            super().__init__(batch_size=[4])
            B = self.batch_size
            self.observation_spec = Composite(obs=Unbounded((*B, 1)), shape=B)
            self.action_spec = Categorical(2, shape=B)
            self.reward_spec = Unbounded((*B, 1))
            self.gen = torch.Generator().manual_seed(0)

        def _reset(self, td, **kwargs):
            return TensorDict({"obs": torch.rand(4, 1, generator=self.gen)}, self.batch_size)

        def _step(self, td):
            obs = td["obs"] + 1
            return TensorDict({"obs": obs, "reward": obs, "done": obs > 3}, self.batch_size)

        def _set_seed(self, seed):
            self.gen.manual_seed(seed)

    env = GeneratorEnv()
    assert env.rollout(5, break_when_any_done=False).shape == (4, 5)  # eager works
    with pytest.raises(EnvCompileError, match=r"GeneratorEnv could not be compiled.*torch\.Generator.*rows\.uniform"):
        env.rollout(5, break_when_any_done=False, compile=True)
