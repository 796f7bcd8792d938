"""``torch.compile(fullgraph=True)`` of ``step_and_maybe_reset`` of a transformed tensor env
(StepCounter, RewardSum, InitTracker, CatFrames, VecNorm) matches eager step by step."""

from __future__ import annotations

import torch

from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNorm
from tests.envs.toy_envs import StatelessCounter


def _make():
    return TransformedEnv(
        StatelessCounter(batch_size=(6,), max_count=3),
        Compose(
            StepCounter(max_steps=4),
            RewardSum(),
            InitTracker(),
            CatFrames(3, dim=-1, in_keys=["observation"]),
            VecNorm(in_keys=["observation"], decay=0.99),
        ),
    )


def test_compiled_step_and_maybe_reset_matches_eager():
    torch._dynamo.reset()
    env_e, env_c = _make(), _make()
    compiled = torch.compile(env_c.step_and_maybe_reset, fullgraph=True)
    actions = torch.randint(0, 2, (8, 6), generator=torch.Generator().manual_seed(0))
    td_e, td_c = env_e.reset(), env_c.reset()
    saw_done = False
    for t in range(8):
        td_e["action"] = actions[t]
        td_c["action"] = actions[t].clone()
        out_e, td_e = env_e.step_and_maybe_reset(td_e)
        out_c, td_c = compiled(td_c)
        saw_done = saw_done or bool(out_e["next", "done"].any())
        for key in td_e.keys(True, True):
            torch.testing.assert_close(td_c[key], td_e[key], msg=f"step {t}, key {key}")
        torch.testing.assert_close(out_c["next", "episode_reward"], out_e["next", "episode_reward"])
    assert saw_done
    # the buffers and statistics were updated in place by the compiled graph too
    torch.testing.assert_close(env_c.transform[3]._cat_buffers_observation, env_e.transform[3]._cat_buffers_observation)
    torch.testing.assert_close(env_c.transform[4].stats, env_e.transform[4].stats)
