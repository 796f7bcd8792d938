"""``ActionDiscretizer``: a discrete action space over a bounded continuous one.

Each of the ``n`` action dims is cut into ``K_i`` equal intervals of ``[low_i, high_i]``; the
policy picks one interval per dim (``MultiCategorical`` indices, or ``MultiOneHot``) and the
transform maps it to a continuous value in that interval (its middle, low or high end, or a
uniform draw) before the base env steps. The value table is built once, when the transform is
attached, as one ``(*batch, n, max K)`` tensor on the env device; a step is one ``gather``
(indices) or one ``index_add`` (one-hot), whatever the number of dims: batched, no host reads.

Examples:
    >>> import torch
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import TransformedEnv
    >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), ActionDiscretizer(num_intervals=4))
    >>> env.action_spec.space.nvec  # 4 intervals of the torque range [-2, 2]
    (4,)
    >>> td = env.rand_step(env.reset())
    >>> td["action"].dtype, td["action"].shape
    (torch.int64, torch.Size([2, 1]))
"""

from __future__ import annotations

import enum

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, unravel
from gpusim.specs import Bounded, Categorical, Composite, MultiCategorical, MultiOneHot, OneHot
from gpusim.transforms._spec_utils import fmt_key
from gpusim.transforms.transform import Transform

__all__ = ["ActionDiscretizer"]


class ActionDiscretizer(Transform):
    """Discretizes a continuous (``Bounded``) action.

    Args:
        num_intervals: intervals per action dim: an int for all dims, or a 1-D tensor/sequence
            with one count per dim (the last dim of the action).
        action_key: the env's continuous action.
        out_action_key: the discrete action the policy writes (default: ``action_key``). When
            it differs, the continuous action moves from the action spec to the state spec: it is
            written into the caller's data at every step, so rollouts record it.
        sampling: where in its interval a choice lands: a :class:`SamplingStrategy` (``MEDIAN``,
            the default; ``LOW``; ``HIGH``; ``RANDOM``, uniform in the interval).
        categorical: indices (``MultiCategorical``, or ``Categorical`` for a scalar action) if
            True, else one-hot (``MultiOneHot`` / ``OneHot``).

    Override :meth:`custom_arange` for other positions inside the intervals.

    Raises:
        TypeError: (when attached) the action spec is not ``Bounded``.
        ValueError: a non-positive interval count, or counts that do not match the action dims.

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> t = ActionDiscretizer(num_intervals=4, out_action_key="action_index")
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), t)
        >>> td = env.reset().set("action_index", torch.tensor([[0], [3]]))
        >>> env.step(td)["action"].flatten().tolist()  # the middles of the first/last interval
        [-1.5, 1.5]
        >>> t = ActionDiscretizer(4, out_action_key="i", sampling=ActionDiscretizer.SamplingStrategy.LOW)
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), t)
        >>> env.step(env.reset().set("i", torch.tensor([[0], [3]])))["action"].flatten().tolist()
        [-2.0, 1.0]
    """

    class SamplingStrategy(enum.IntEnum):
        """Where a discrete choice lands in its interval."""

        MEDIAN = 0
        LOW = 1
        HIGH = 2
        RANDOM = 3

    invertible = True

    def __init__(
        self,
        num_intervals: int | torch.Tensor,
        action_key: NestedKey = "action",
        out_action_key: NestedKey | None = None,
        sampling: ActionDiscretizer.SamplingStrategy | int | None = None,
        categorical: bool = True,
    ) -> None:
        action_key = unravel(action_key)
        out_action_key = action_key if out_action_key is None else unravel(out_action_key)
        super().__init__(in_keys_inv=[action_key], out_keys_inv=[out_action_key])
        self.action_key = action_key
        self.out_action_key = out_action_key
        if isinstance(num_intervals, torch.Tensor):
            counts = [int(v) for v in num_intervals.reshape(-1).tolist()]
            self.num_intervals = num_intervals
        elif isinstance(num_intervals, int) and not isinstance(num_intervals, bool):
            counts = [num_intervals]
            self.num_intervals = num_intervals
        else:
            counts = [int(v) for v in num_intervals]
            self.num_intervals = torch.as_tensor(counts)
        if not counts or min(counts) < 1:
            raise ValueError(f"ActionDiscretizer: num_intervals must be positive, got {num_intervals!r}")
        self.sampling = self.SamplingStrategy(self.SamplingStrategy.MEDIAN if sampling is None else sampling)
        self.categorical = bool(categorical)
        self.__dict__["_counts"] = counts
        self.register_buffer("intervals", None)  # (*batch, n, max K) values (n = 1 for a scalar action)
        self.register_buffer("jitters", None)  # (*batch, n) interval widths, RANDOM only
        self.register_buffer("nvec", None)
        self.__dict__["_scalar"] = False

    def custom_arange(self, nint: int, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Positions in ``[0, 1]`` of the ``nint`` choices inside ``[low, high]`` (override for
        other layouts).

        Examples:
            >>> ActionDiscretizer(4).custom_arange(4, torch.device("cpu"))
            tensor([0.1250, 0.3750, 0.6250, 0.8750])
        """
        low = torch.arange(nint, dtype=dtype, device=device) / nint
        if self.sampling in (self.SamplingStrategy.LOW, self.SamplingStrategy.RANDOM):
            return low
        high = low + 1.0 / nint
        if self.sampling == self.SamplingStrategy.HIGH:
            return high
        return (low + high) / 2

    # ------------------------------------------------------------------ specs
    def transform_input_spec(self, input_spec: Composite) -> Composite:
        actions = input_spec["full_action_spec"]
        key, out_key = self.action_key, self.out_action_key
        if key not in actions.keys(True, True):
            raise KeyError(f"ActionDiscretizer: {fmt_key(key)} is not an action of the env")
        spec = actions[key]
        if not isinstance(spec, Bounded):
            raise TypeError(
                f"ActionDiscretizer: the action {fmt_key(key)} must have a Bounded spec, got {type(spec).__name__}"
            )
        batch = input_spec.shape
        scalar = spec.shape == batch  # no action dim
        n = 1 if scalar else spec.shape[-1]
        counts = self.__dict__["_counts"]
        if len(counts) == 1:
            counts = counts * n
        if len(counts) != n:
            raise ValueError(
                f"ActionDiscretizer: num_intervals has {len(counts)} entries, the action {fmt_key(key)} has {n} dims"
            )
        device, dtype = spec.device, spec.dtype
        low = spec.space.low.expand(spec.shape).to(dtype)
        high = spec.space.high.expand(spec.shape).to(dtype)
        if scalar:
            low, high = low.unsqueeze(-1), high.unsqueeze(-1)
        width = high - low  # (*batch, n)
        kmax = max(counts)
        pos = torch.zeros(n, kmax, dtype=dtype, device=device)
        for i, k in enumerate(counts):
            row = self.custom_arange(k, device, dtype)
            pos[i, :k] = row
            pos[i, k:] = row[-1]  # never picked (out of the spec); keeps the table finite
        self.register_buffer("intervals", low.unsqueeze(-1) + pos * width.unsqueeze(-1))
        self.register_buffer("nvec", torch.as_tensor(counts, device=device))
        # one-hot layout: the dim of every slot and its position inside the dim
        seg = torch.tensor([i for i, k in enumerate(counts) for _ in range(k)], device=device)
        pos_in_seg = torch.tensor([j for k in counts for j in range(k)], device=device)
        self.register_buffer("_seg", seg, persistent=False)
        self.register_buffer("_pos_in_seg", pos_in_seg, persistent=False)
        self.register_buffer(
            "jitters", width / self.nvec.to(dtype) if self.sampling == self.SamplingStrategy.RANDOM else None
        )
        self.__dict__["_scalar"] = scalar
        if scalar:
            cls = Categorical if self.categorical else OneHot
            shape = batch if self.categorical else (*batch, counts[0])
            new = cls(counts[0], shape=shape, device=device)
        elif self.categorical:
            new = MultiCategorical(counts, shape=spec.shape, device=device, remove_singleton=False)
        else:
            new = MultiOneHot(counts, shape=(*spec.shape[:-1], sum(counts)), device=device)
        if out_key != key:
            input_spec["full_state_spec"][key] = spec.clone()
            del actions[key]
        actions[out_key] = new
        return input_spec

    # ------------------------------------------------------------------ inverse
    def _values(self, action: torch.Tensor) -> torch.Tensor:
        intervals = self.intervals
        if intervals is None:
            raise RuntimeError(
                "ActionDiscretizer has no intervals yet: attach it to an env with a Bounded action "
                "(TransformedEnv(env, ActionDiscretizer(...)))"
            )
        n, kmax = intervals.shape[-2:]
        if self.categorical:
            index = action.long().reshape(*action.shape[: action.ndim - (0 if self._scalar else 1)], n, 1)
        else:
            onehot = action.long()
            if self._scalar:
                index = onehot.argmax(-1, keepdim=True).unsqueeze(-1)
            else:  # one index_add: every one-hot slot adds its position to its dim's index
                seg, pos_in_seg = self._seg, self._pos_in_seg
                index = torch.zeros(*onehot.shape[:-1], n, dtype=torch.long, device=onehot.device)
                index = index.index_add(-1, seg, onehot * pos_in_seg).unsqueeze(-1)
        table = intervals.expand(*index.shape[:-2], n, kmax)
        values = table.gather(-1, index).squeeze(-1)
        if self.jitters is not None:
            values = values + self.jitters * torch.rand_like(values)
        return values.squeeze(-1) if self._scalar else values

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(self.out_action_key, None)
        if action is None:
            return tensordict
        return tensordict.set(self.action_key, self._values(action))

    def _has_inverse(self) -> bool:
        return True

    def _inverse_exports(self) -> list:
        return [self.action_key] if self.action_key != self.out_action_key else []

    def __repr__(self) -> str:
        return (
            f"ActionDiscretizer(num_intervals={self.num_intervals}, action_key={self.action_key!r}, "
            f"out_action_key={self.out_action_key!r}, sampling={self.sampling.name}, categorical={self.categorical})"
        )
