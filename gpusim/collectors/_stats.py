"""Normalization statistics kept global across ranks: ``VecNorm`` running sums reduced once per
batch, ``ObservationNorm`` statistics computed from the union of every rank's data.

VecNorm (decay ``d``): between two synchronisations every rank starts from the same statistics
``B`` and updates them ``k`` times (one per env step, each decaying the old sums by ``d``) plus
the reset rows (added without decay), so rank ``r`` holds ``S_r = d**k * B + D_r`` where ``D_r``
is what its own data added. One process stepping every rank's envs as one batch would hold
``d**k * B + sum_r D_r``, which is what :meth:`VecNormSync.sync` writes on every rank from one
all-reduce of the ``D_r``. With ``decay=1`` (exact statistics) ``k`` plays no role.

Examples:
    >>> import gpusim as gs
    >>> env = gs.TransformedEnv(gs.make("CartPole-v1", num_envs=2, seed=0), gs.VecNorm(in_keys=["observation"], decay=1.0))
    >>> sync = VecNormSync(env, Comm(None))
    >>> _ = env.rollout(3)
    >>> sync.sync(steps=3)   # world size 1: the statistics stay as they are
    >>> float(env.transform[-1].stats["observation_count"])
    8.0
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpusim.collectors._comm import Comm, CommError
from gpusim.envs._keys import NestedKey
from gpusim.transforms.normalization import ObservationNorm
from gpusim.transforms.vecnorm import VecNorm

__all__ = ["VecNormSync", "init_stats_distributed"]


class VecNormSync:
    """Keeps the ``VecNorm`` transforms of an env equal on every rank: :meth:`start` makes every
    rank start from rank 0's statistics, :meth:`sync` (once per batch) reduces what every rank
    added since the last call (one all-reduce for all the transforms).

    Args:
        env: the rank's env (its ``VecNorm`` modules are found with ``env.modules()``).
        comm: the collectives.

    Examples:
        >>> import torch.distributed as dist
        >>> import gpusim as gs
        >>> from gpusim.collectors._comm import Comm
        >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        >>> env = gs.TransformedEnv(gs.CartPoleEnv(batch_size=[4]), gs.VecNorm(in_keys=["observation"]))
        >>> sync = VecNormSync(env, Comm(None, watchdog=False))  # None: the default group
        >>> len(sync.norms)  # the VecNorm modules it keeps equal on every rank
        1
        >>> dist.destroy_process_group()
    """

    def __init__(self, env: torch.nn.Module, comm: Comm) -> None:
        self.comm = comm
        self.norms = [m for m in env.modules() if isinstance(m, VecNorm)]
        self._base: list[torch.Tensor] | None = None

    def _tensors(self) -> list[tuple[VecNorm, torch.Tensor]]:
        out = []
        for vn in self.norms:
            td = vn.stats
            if td is not None:
                out.extend((vn, t) for _, t in sorted(td.items(True, True), key=lambda kv: str(kv[0])))
        return out

    def start(self) -> list[torch.Tensor]:
        """The statistics tensors to broadcast from rank 0 at construction (the caller
        broadcasts them with the policy's weights); :meth:`snapshot` must follow."""
        return [t for _, t in self._tensors()]

    def snapshot(self) -> None:
        """Records the (now common) statistics as the base of the next :meth:`sync`."""
        self._base = [t.detach().to(torch.float64, copy=True) for _, t in self._tensors()]

    def sync(self, steps: int, extra: Sequence[torch.Tensor] = ()) -> None:
        """All-reduces what each rank added over its last ``steps`` env steps (see the module
        docstring); a frozen or eval-mode transform is left as it is. ``extra`` float64 tensors
        are summed over the ranks in the same collective.

        Raises:
            CommError: the collective failed (a peer died or stalled).
        """
        pairs = self._tensors()
        if self.comm.world_size == 1:
            self.snapshot()
            return
        if self._base is None or len(self._base) != len(pairs):
            raise CommError(
                "VecNorm statistics appeared after the distributed collector started (an env built lazily?): "
                "their base is unknown on this rank"
            )
        decayed, deltas = [], []
        for (vn, t), base in zip(pairs, self._base):
            k = steps if vn._updating() else 0
            b = base * (vn.decay**k)
            decayed.append(b)
            deltas.append(t.detach().to(torch.float64) - b)
        self.comm.all_reduce_(deltas + list(extra), "per-batch all-reduce of the VecNorm statistics")
        with torch.no_grad():
            for (_, t), b, d in zip(pairs, decayed, deltas):
                t.copy_((b + d).to(t.dtype))
        self.snapshot()


def init_stats_distributed(
    transform: ObservationNorm,
    num_iter: int,
    reduce_dim: int | Sequence[int] = 0,
    cat_dim: int | None = None,
    key: NestedKey | None = None,
    keep_dims: Sequence[int] | None = None,
    group=None,
    timeout: float = 300.0,
) -> None:
    """``ObservationNorm.init_stats`` over the data of every rank: each rank runs ``num_iter``
    random steps of its parent env, the counts, sums and sums of squares are all-reduced (one
    collective), and every rank sets the same ``loc``/``scale``: those ``init_stats`` would set in
    one process from the union of the data (mean and unbiased standard deviation over
    ``reduce_dim``, clamped to ``eps``). Must be called on every rank.

    Args:
        transform: an uninitialised ``ObservationNorm`` attached to an env.
        num_iter, reduce_dim, cat_dim, key, keep_dims: as ``ObservationNorm.init_stats``.
        group: the process group (default: the default group when initialised, else world size 1).
        timeout: seconds before a stalled peer fails the call (the watchdog's base).

    Raises:
        RuntimeError: no parent env, or the statistics are already set.
        ValueError: bad ``num_iter``/``cat_dim``.
        CommError: the collective failed.

    Examples:
        >>> import gpusim as gs
        >>> norm = gs.ObservationNorm(in_keys=["observation"], standard_normal=True)
        >>> env = gs.TransformedEnv(gs.make("Pendulum-v1", num_envs=4, seed=0), norm)
        >>> init_stats_distributed(norm, num_iter=10, reduce_dim=(0, 1), cat_dim=1)   # one process
        >>> norm.loc.shape, norm.scale.shape
        (torch.Size([3]), torch.Size([3]))
    """
    import torch.distributed as dist

    if transform.initialized:
        raise RuntimeError("init_stats_distributed: loc and scale are already initialized")
    if not isinstance(num_iter, int) or isinstance(num_iter, bool) or num_iter < 1:
        raise ValueError(f"init_stats_distributed: num_iter must be a positive int, got {num_iter!r}")
    dims = (reduce_dim,) if isinstance(reduce_dim, int) else tuple(reduce_dim)
    cat_dim = dims[0] if cat_dim is None else cat_dim
    if cat_dim not in dims:
        raise ValueError(f"init_stats_distributed: cat_dim {cat_dim} must be one of reduce_dim {dims}")
    parent = transform.parent
    if parent is None:
        raise RuntimeError("init_stats_distributed needs a parent env: attach the transform to an env first")
    if group is None and dist.is_available() and dist.is_initialized():
        group = dist.group.WORLD
    data = parent.rollout(num_iter, break_when_any_done=False).get(key if key is not None else transform.in_keys[0])
    ndim = data.ndim
    norm = sorted({d % ndim for d in dims})
    x = data.to(torch.float64)
    count = torch.tensor(float(torch.Size([data.shape[d] for d in norm]).numel()), dtype=torch.float64)
    total = x.sum(dim=norm, keepdim=True)
    ssq = (x * x).sum(dim=norm, keepdim=True)
    moments = [count, total, ssq]
    Comm(group, timeout).all_reduce_(moments, "ObservationNorm statistics all-reduce")
    count, total, ssq = moments
    mean = total / count
    var = (ssq - count * mean * mean) / (count - 1) if float(count) > 1 else torch.zeros_like(mean)
    std = var.clamp_min(0).sqrt()
    keep = {d % ndim for d in (keep_dims or ())}
    squeeze = tuple(d for d in norm if d not in keep)
    if squeeze:
        mean, std = mean.squeeze(squeeze), std.squeeze(squeeze)
    mean, std = mean.to(data.dtype), std.to(data.dtype)
    std = std.clamp_min(transform.eps if transform.eps is not None else float(torch.finfo(std.dtype).eps))
    if transform.standard_normal:
        transform.loc, transform.scale = mean, std
    else:
        transform.scale = 1 / std
        transform.loc = -mean * transform.scale
    if transform.container is not None:
        transform.container._chain_changed()
