"""``ConditionalSkip``: skips the env step of the rows for which a condition holds.

The transform works on the inverse path: before the parent's base env steps, ``cond(td)`` (a
bool per row of the input) is computed and ``"_step" = "_step" & ~cond`` is written into the
base env's input. The parent :class:`~gpusim.transforms.TransformedEnv` then runs a partial step
(:mod:`gpusim.envs._partial`): the skipped rows get their current data as ``"next"`` data (zero
reward). When no row steps (read on the host in SPARSE mode), neither the base env nor the
parent's output transforms run for that step; to keep a transform counting through skipped
steps, put it in an outer ``TransformedEnv``.

Examples:
    >>> import torch
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
    >>> inner = TransformedEnv(
    ...     PendulumEnv(seed=0),
    ...     Compose(StepCounter(step_count_key="inner"), ConditionalSkip(lambda td: td["step"] % 2 == 1)),
    ... )
    >>> env = TransformedEnv(inner, StepCounter(step_count_key="step"), auto_unwrap=False)
    >>> td = env.rollout(5)
    >>> td["step"].flatten().tolist(), td["inner"].flatten().tolist()
    ([0, 1, 2, 3, 4], [0, 1, 1, 2, 2])
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from gpusim.transforms.transform import Transform

__all__ = ["ConditionalSkip"]


class ConditionalSkip(Transform):
    """Skips the base env's step for the rows where ``cond(tensordict)`` is True.

    Args:
        cond: a callable on the step's input tensordict returning a bool (or a bool tensor with
            one value per row of the batch, a trailing singleton dim allowed): True = skip.

    Raises:
        TypeError: ``cond`` is not callable.
        NotImplementedError: on a forward call (the transform only acts inside an env).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ConditionalSkip(lambda td: torch.arange(td.numel()).view(td.shape) % 2 == 0)
        >>> t.inv(TensorDict(batch_size=[4]))["_step"].tolist()
        [False, True, False, True]
    """

    def __init__(self, cond: Callable[[TensorDictBase], bool | torch.Tensor]) -> None:
        if not callable(cond):
            raise TypeError(f"ConditionalSkip: cond must be callable, got {type(cond).__name__}")
        super().__init__()
        self.cond = cond

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        skip = torch.as_tensor(self.cond(tensordict), dtype=torch.bool, device=tensordict.device)
        batch = tensordict.batch_size
        if skip.shape != batch:
            if skip.numel() != batch.numel():
                raise ValueError(
                    f"ConditionalSkip: cond returned shape {list(skip.shape)}, expected one bool per row of the "
                    f"batch {list(batch)}"
                )
            skip = skip.reshape(batch)
        previous = tensordict.get("_step", None)
        step = ~skip if previous is None else previous.reshape(batch) & ~skip
        tensordict.set("_step", step)
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the transform decides which env rows step (use it in a TransformedEnv).

        Examples:
            >>> from tensordict import TensorDict
            >>> ConditionalSkip(lambda td: True)(TensorDict())
            Traceback (most recent call last):
            ...
            NotImplementedError: ConditionalSkip acts on env steps only; it has no forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "ConditionalSkip acts on env steps only; it has no forward. Use it in a TransformedEnv."
        )
