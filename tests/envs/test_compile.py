"""``step_and_maybe_reset`` of a stateless tensor env compiles with ``fullgraph=True`` and
matches eager."""

from __future__ import annotations

import torch

from tests.envs.toy_envs import StatelessCounter


def test_step_and_maybe_reset_compiles_fullgraph_and_matches_eager():
    torch._dynamo.reset()
    env = StatelessCounter(batch_size=(6,), max_count=3)

    def step(td):
        return env.step_and_maybe_reset(td)

    compiled = torch.compile(step, fullgraph=True)
    actions = torch.randint(0, 2, (8, 6), generator=torch.Generator().manual_seed(0))
    td_e = env.reset()
    td_c = env.reset()
    for t in range(8):
        td_e["action"] = actions[t]
        td_c["action"] = actions[t].clone()
        out_e, td_e = step(td_e)
        out_c, td_c = compiled(td_c)
        for key in ("state", "observation", "done"):
            assert torch.equal(td_e[key], td_c[key]), (t, key)
        assert torch.equal(out_e["next", "reward"], out_c["next", "reward"])
    assert td_e["done"].dtype == torch.bool
