"""DistributedSyncDataCollector over 2 CPU ranks (gloo, spawned processes): per-rank seeds, weights
broadcast, VecNorm statistics equal across ranks and equal to one process's over the union of the
data, gathering, ObservationNorm statistics over the union, and a rank that dies or stalls making
the other fail with a clear error instead of hanging. The hang guards count from the moment both
ranks have joined the group, after their imports (slow on a loaded machine)."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch

import gpusim as gs
from tests.collectors import _dist_worker as worker

WORLD = 2


#: A hang guard for spawning the ranks and importing (minutes on a loaded machine); the limits the
#: tests give count from the moment both ranks have joined (``ready<r>`` written), after imports.
START_LIMIT = 600.0


def _spawn(tmp_path, target, *args, timeout: float, others_timeout: float | None = None) -> list[int | None]:
    """Runs ``target(rank, WORLD, store, out, *args)`` in WORLD spawned processes; once every rank
    has written ``ready<r>`` (imports done, group joined), waits ``timeout`` seconds for rank 0
    (ranks > 0: ``others_timeout`` more after rank 0 ended, when given), kills any still alive and
    returns their exit codes."""
    ctx = multiprocessing.get_context("spawn")
    store = str(tmp_path / "store")
    procs = [ctx.Process(target=target, args=(r, WORLD, store, str(tmp_path), *args)) for r in range(WORLD)]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + START_LIMIT
        while not all((tmp_path / f"ready{r}").exists() for r in range(WORLD)):
            if any(p.exitcode is not None for p in procs) or time.monotonic() > deadline:
                break  # a rank ended (or hung) before joining: its exit code tells
            time.sleep(0.05)
        for r, p in enumerate(procs):
            p.join(timeout if r == 0 or others_timeout is None else others_timeout)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)
    return [p.exitcode for p in procs]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    codes = _spawn(tmp, worker.main, timeout=2 * worker.TIMEOUT)
    assert codes == [0] * WORLD, f"rank exit codes {codes}"
    return [torch.load(tmp / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


def test_seeds_differ_per_rank_with_the_documented_offset(results):
    first = [res["batches"][0]["observation"][:, 0] for res in results]
    assert not torch.equal(first[0], first[1])
    for rank, obs in enumerate(first):
        ref = gs.make("CartPole-v1", num_envs=worker.N_LOCAL, seed=rank * worker.N_LOCAL).reset()["observation"]
        torch.testing.assert_close(obs, ref)
    ids = [set(res["batches"][1]["collector", "traj_ids"].unique().tolist()) for res in results]
    assert ids[0] and ids[1] and not ids[0] & ids[1]


def test_weights_broadcast_from_rank0(results):
    torch.manual_seed(0)
    ref = torch.nn.Linear(4, 2).state_dict()
    for res in results:
        for k, v in ref.items():
            torch.testing.assert_close(res["weights_start"][k], v, rtol=0, atol=0)
            expected = v + 1.0 if k == "weight" else v
            torch.testing.assert_close(res["weights_after"][k], expected, rtol=0, atol=0)


def _union_vecnorm(batches: list, decay: float) -> dict:
    """One process's VecNorm statistics after the first batch of all the ranks' envs (float64):
    the initial reset, then per step a decayed update with every row's next observation and the
    reset rows' new observations added."""
    b1, b2 = (torch.cat([b[i] for b in batches], 0) for i in (0, 1))
    obs, nobs, done = b1["observation"].double(), b1["next", "observation"].double(), b1["next", "done"][..., 0]
    T = obs.shape[1]
    s, ss, c = obs[:, 0].sum(0), (obs[:, 0] ** 2).sum(0), float(obs.shape[0])
    for t in range(T):
        s, ss, c = decay * s + nobs[:, t].sum(0), decay * ss + (nobs[:, t] ** 2).sum(0), decay * c + nobs.shape[0]
        new = (obs[:, t + 1] if t + 1 < T else b2["observation"][:, 0].double())[done[:, t]]
        s, ss, c = s + new.sum(0), ss + (new**2).sum(0), c + new.shape[0]
    return {"observation_sum": s, "observation_ssq": ss, "observation_count": torch.tensor(c, dtype=torch.float64)}


def test_vecnorm_statistics_are_global(results):
    for batch in range(2):
        a, b = (res["stats"][batch] for res in results)
        for k in a:
            torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)
    expected = _union_vecnorm([res["batches"] for res in results], worker.DECAY)
    assert int((torch.cat([res["batches"][0]["next", "done"] for res in results])).sum()) > 0  # resets exercised
    for k, v in expected.items():
        torch.testing.assert_close(results[0]["stats"][0][k].double(), v, rtol=1e-5, atol=1e-4)


def test_episode_stats_gathered_from_every_rank(results):
    local = [res["local_episodes"] for res in results]
    for res in results:
        for key in ("returns", "lengths"):
            torch.testing.assert_close(res["episodes"][key], torch.cat([loc[key] for loc in local]))
    assert results[0]["episodes"]["returns"].numel() > 0


def test_gather_on_rank0(results):
    g0, g1 = results[0]["gathered"], results[1]["gathered"]
    assert g1 == [None] and len(g0) == 1
    data = g0[0]
    assert data.shape == torch.Size([WORLD * worker.N_LOCAL, 3])
    for rank in range(WORLD):
        ref = gs.make("CartPole-v1", num_envs=worker.N_LOCAL, seed=10 + rank * worker.N_LOCAL).reset()["observation"]
        torch.testing.assert_close(data["observation"][rank * worker.N_LOCAL : (rank + 1) * worker.N_LOCAL, 0], ref)
    ids = data["collector", "traj_ids"][:, 0]
    assert ids.unique().numel() == ids.numel()


def test_observation_norm_statistics_over_the_union(results):
    (loc0, scale0), (loc1, scale1) = (res["obsnorm"] for res in results)
    torch.testing.assert_close(loc0, loc1, rtol=0, atol=0)
    torch.testing.assert_close(scale0, scale1, rtol=0, atol=0)
    union = torch.cat([res["obsnorm_data"] for res in results], 0).double()
    torch.testing.assert_close(loc0.double(), union.mean((0, 1)), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(scale0.double(), union.std((0, 1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["die", "stall"])
def test_a_failing_rank_makes_the_other_fail_clearly(tmp_path, mode):
    codes = _spawn(tmp_path, worker.failing_peer, mode, timeout=10 * worker.FAIL_TIMEOUT, others_timeout=1)
    assert codes[0] == 0, f"rank 0 exit code {codes[0]} (hung or crashed)"
    res = torch.load(tmp_path / "rank0.pt", weights_only=False)
    assert res["error"] is not None and "rank 0 of 2" in res["error"] and "died or stopped answering" in res["error"]
    assert f"collective timeout {worker.FAIL_TIMEOUT:g} s" in res["error"]


def test_init_distributed_names_the_missing_torchrun_variables(monkeypatch):
    import torch.distributed as dist

    assert not dist.is_initialized()
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(RuntimeError, match=r"lacks \['WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT'\].*torchrun"):
        gs.init_distributed()
    with pytest.raises(ValueError, match="timeout must be positive"):
        gs.init_distributed(timeout=0)


def test_init_stats_distributed_refuses_initialized_or_detached_norms():
    norm = gs.ObservationNorm(loc=0.0, scale=1.0, in_keys=["observation"])
    with pytest.raises(RuntimeError, match="already initialized"):
        gs.init_stats_distributed(norm, num_iter=2)
    with pytest.raises(RuntimeError, match="parent env"):
        gs.init_stats_distributed(gs.ObservationNorm(in_keys=["observation"]), num_iter=2)
    with pytest.raises(ValueError, match="num_iter must be a positive int, got 0"):
        gs.init_stats_distributed(gs.ObservationNorm(in_keys=["observation"]), num_iter=0)


def test_the_watchdog_ends_a_rank_blocked_in_a_collective(tmp_path, capfd):
    codes = _spawn(tmp_path, worker.failing_peer, "watchdog", timeout=10 * worker.FAIL_TIMEOUT, others_timeout=1)
    assert codes[0] == 124, f"rank 0 exit code {codes[0]}"
    err = capfd.readouterr().err
    assert "rank 0 of 2" in err and f"watchdog: still blocked after {worker.FAIL_TIMEOUT * 0.25:g} s" in err
    assert not (tmp_path / "rank0.pt").exists()


def test_settle_waits_for_the_backends_references_and_gives_up_keeping_them():
    """``_settle`` returns once another owner (here a thread holding a view, as gloo's worker holds
    a finished work) dropped the tensor, and after ``SETTLE_SECONDS`` keeps a tensor still held
    alive for good instead of waiting on."""
    import threading
    import time

    from gpusim.collectors import _comm

    t = torch.zeros(4)
    before = [t._use_count()]
    held = [t.view(4)]  # another reference to the tensor, dropped by a thread 50 ms later
    start = time.monotonic()  # before the thread starts: its sleep then bounds the wait from below
    threading.Thread(target=lambda: (time.sleep(0.05), held.clear())).start()
    _comm._settle([t], before)
    assert held == [] and t._use_count() == before[0] and time.monotonic() - start >= 0.04

    stuck = torch.zeros(2)
    keep = stuck.view(2)  # never dropped
    old = _comm.SETTLE_SECONDS
    try:
        _comm.SETTLE_SECONDS = 0.02
        _comm._settle([stuck], [1])
    finally:
        _comm.SETTLE_SECONDS = old
    assert any(x is stuck for x in _comm._UNSETTLED)
    del keep
    _comm._UNSETTLED.clear()
