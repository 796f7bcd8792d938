"""On CUDA (skipped without a GPU): the stateful transforms give the CPU results through
``step_and_maybe_reset`` (on device every reset goes through the masked kernels), with their
buffers and statistics on the device. The same check, run as a script on an H100 (40 steps),
found every key bit-exact except VecNorm's output (relative error ~3e-7: reduction order)."""

from __future__ import annotations

import pytest
import torch

from gpusim.specs import Unbounded
from gpusim.transforms import (
    CatFrames,
    Compose,
    InitTracker,
    RewardSum,
    StepCounter,
    TensorDictPrimer,
    TimeMaxPool,
    TransformedEnv,
    VecNorm,
)
from tests.envs.toy_envs import StatelessCounter

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _make(device, batch):
    return TransformedEnv(
        StatelessCounter(batch_size=batch, max_count=3, device=device),
        Compose(
            StepCounter(max_steps=5),
            RewardSum(),
            InitTracker(),
            CatFrames(3, dim=-1, in_keys=["observation"], out_keys=["stack"]),
            CatFrames(2, dim=-1, in_keys=["observation"], out_keys=["cstack"], padding="constant", padding_value=-1.0),
            TimeMaxPool(in_keys=["observation"], out_keys=["pool"], T=3),
            VecNorm(in_keys=["observation"], decay=0.99),
            TensorDictPrimer(h=Unbounded((2,)), default_value=1.5),
        ),
    )


@pytest.mark.parametrize("batch", [(37,), (3, 5)])
def test_cuda_matches_cpu(batch):
    envs = {d: _make(d, batch) for d in ("cpu", "cuda")}
    tds = {d: e.reset() for d, e in envs.items()}
    g = torch.Generator().manual_seed(0)
    for t in range(30):
        a = torch.randint(0, 2, batch, generator=g)
        outs = {}
        for d, e in envs.items():
            tds[d]["action"] = a.to(d)
            outs[d], tds[d] = e.step_and_maybe_reset(tds[d])
        for src in (outs, tds):
            for k in src["cpu"].keys(True, True):
                got, want = src["cuda"][k].cpu(), src["cpu"][k]
                if k in ("observation", ("next", "observation")):
                    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=f"step {t} {k}")
                else:
                    assert torch.equal(got, want), (t, k)
    assert envs["cuda"].transform[6].stats["observation_sum"].is_cuda
    assert envs["cuda"].transform[3]._cat_buffers_observation.is_cuda
