"""Data-parallel PPO on CartPole-v1 over the ranks of a torchrun launch.

    torchrun --nproc-per-node 2 examples/ppo_cartpole_distributed.py --threads 1

Each rank runs a ``gs.DistributedSyncDataCollector`` share of the envs (64 over all the ranks, as
``ppo_cartpole.py``) and the same PPO (``_ppo.py``, the hyperparameters of ``ppo_cartpole.py``) on
its local batches; the gradients are averaged over the ranks after every backward (one
all-reduce), so every rank applies the same update, and the collector broadcasts rank 0's
weights after each batch. Rank 0 prints the progress and the evaluation (bar: a mean return of
at least 475 over 20 episodes, deterministic policy). ``--smoke`` runs two tiny iterations (CI).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo import common_args, evaluate, run, sized  # noqa: E402
from ppo_cartpole import BAR, CONFIG, make_agent  # noqa: E402

import gpusim as gs  # noqa: E402

_FLAT: dict[int, torch.Tensor] = {}  # one flat gradient buffer per size, kept for the whole run


def average_gradients(params: list[torch.Tensor]) -> None:
    """Replaces every gradient by its mean over the ranks (one all-reduce of a flat buffer).

    The buffer lives as long as the process: gloo's worker thread drops its reference to a
    collective's tensor a little after ``all_reduce`` returned, and a temporary freed before that
    would leave the thread to free its Python object, which aborts the process if it happens
    while the interpreter shuts down (see ``gpusim.collectors._comm._settle``)."""
    grads = [p.grad for p in params if p.grad is not None]
    n = sum(g.numel() for g in grads)
    flat = _FLAT.get(n)
    if flat is None:
        flat = _FLAT[n] = torch.empty(n, dtype=grads[0].dtype, device=grads[0].device)
    torch.cat([g.reshape(-1) for g in grads], out=flat)
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    start = 0
    for g in grads:
        g.copy_(flat[start : start + g.numel()].view_as(g))
        start += g.numel()


def main(argv=None) -> float:
    args = common_args(__doc__.splitlines()[0], CONFIG.total_frames).parse_args(argv)
    torch.set_num_threads(args.threads)
    gs.init_distributed(timeout=120)  # torchrun's environment: gloo on CPU, NCCL on GPUs
    rank = dist.get_rank()
    cfg = sized(CONFIG, args, smoke_envs=8, smoke_steps=8)
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    actor, critic = (
        m.to(device) for m in make_agent(args.seed)
    )  # the collector broadcasts rank 0's actor weights anyway
    torch.manual_seed(args.seed + 1 + rank)  # each rank samples its own actions and minibatches
    # keep every rank's critic identical too: it is not the collector's policy
    for t in critic.state_dict().values():
        dist.broadcast(t, src=0)

    def make_collector(cfg):
        return gs.DistributedSyncDataCollector(
            gs.make,
            actor,
            create_env_kwargs={"env_id": "CartPole-v1"},
            num_envs=cfg.num_envs,
            seed=args.seed,
            frames_per_batch=cfg.num_envs * cfg.steps,
            total_frames=cfg.total_frames,
            compile=args.compile,
            timeout=120,
        )

    score = lambda: evaluate(gs.make("CartPole-v1", num_envs=20, seed=args.seed + 1000, device=device), actor, 500)  # noqa: E731
    title = f"CartPole-v1 PPO, data-parallel over {dist.get_world_size()} ranks"
    result = run(
        title,
        args,
        cfg,
        None,
        actor,
        critic,
        score,
        BAR,
        "return",
        make_collector=make_collector,
        log=rank == 0,
        sync_grads=average_gradients,
    )
    # the ranks tear the group down together: a rank that destroys its gloo group and exits
    # while another still holds its connections (rank 0 evaluating) can abort at exit
    dist.barrier()
    dist.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
