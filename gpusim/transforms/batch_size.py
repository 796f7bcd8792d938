"""``BatchSizeTransform``: gives an env another batch size.

Two uses: a fixed ``batch_size`` for a batch-unlocked env (its outputs and specs are expanded to
it, e.g. a stateless env with an empty batch size), or a ``reshape_fn`` (``reshape``, ``flatten``,
``unflatten``, ``squeeze``, ``unsqueeze``) applied to the env's outputs and specs, with the inputs
reshaped back to the inner env's batch size.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[4], seed=0), BatchSizeTransform(reshape_fn=lambda x: x.reshape(2, 2)))
    >>> env.batch_size, env.rollout(3)["next", "observation"].shape
    (torch.Size([2, 2]), torch.Size([2, 2, 3, 4]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.transforms.transform import Transform

__all__ = ["BatchSizeTransform"]


class BatchSizeTransform(Transform):
    """Changes the batch size of an environment (a fixed size, or a reshaping function).

    Keyword Args:
        batch_size: the new batch size; the inner env's batch size must expand to it (a
            batch-unlocked env with an empty batch size expands to any). Exclusive with
            ``reshape_fn``.
        reshape_fn: a callable applied to the env's output tensordicts and to its specs (so one
            of the shape methods both have: ``reshape``, ``flatten``, ``unflatten``,
            ``squeeze``, ``unsqueeze``). The inputs of ``step``/``reset`` are reshaped back to
            the inner env's batch size. Exclusive with ``batch_size``.
        reset_func: ``reset_func(tensordict, tensordict_reset)`` builds the reset output from
            the reset input and the inner env's reset output (before the batch size change).
        env_kwarg: call ``reset_func`` with ``env=`` the transformed env too.

    Raises:
        ValueError: neither or both of ``batch_size`` and ``reshape_fn`` are given.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[3], seed=0), BatchSizeTransform(reshape_fn=lambda x: x.unsqueeze(0)))
        >>> env.batch_size, env.action_spec.shape, env.reset()["observation"].shape
        (torch.Size([1, 3]), torch.Size([1, 3, 1]), torch.Size([1, 3, 3]))
    """

    def __init__(
        self,
        *,
        batch_size: Sequence[int] | torch.Size | None = None,
        reshape_fn: Callable[[Any], Any] | None = None,
        reset_func: Callable[..., TensorDictBase] | None = None,
        env_kwarg: bool = False,
    ) -> None:
        if (batch_size is None) == (reshape_fn is None):
            raise ValueError(
                "BatchSizeTransform: exactly one of `batch_size` and `reshape_fn` must be given, got "
                f"batch_size={batch_size!r}, reshape_fn={reshape_fn!r}"
            )
        if reshape_fn is not None and not callable(reshape_fn):
            raise ValueError(f"BatchSizeTransform: `reshape_fn` must be callable, got {type(reshape_fn).__name__}")
        super().__init__()
        self.batch_size = None if batch_size is None else torch.Size(batch_size)
        self.reshape_fn = reshape_fn
        self.reset_func = reset_func
        self.env_kwarg = bool(env_kwarg)

    def _change(self, data: Any) -> Any:
        if self.batch_size is not None:
            return data.expand(self.batch_size)
        return self.reshape_fn(data)

    def _to_inner(self, tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if self.reshape_fn is None or parent is None or tensordict.batch_size == parent.batch_size:
            return tensordict
        return tensordict.reshape(parent.batch_size)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict if self.reshape_fn is None else self.reshape_fn(next_tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Reshapes ``tensordict`` with ``reshape_fn`` (offline use; unchanged with ``batch_size``).

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> t = BatchSizeTransform(reshape_fn=lambda x: x.reshape(2, 3))
            >>> t(TensorDict(a=torch.zeros(6), batch_size=[6])).batch_size
            torch.Size([2, 3])
        """
        return self._call(tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.reset_func is not None:
            if self.env_kwarg:
                tensordict_reset = self.reset_func(tensordict, tensordict_reset, env=self.container)
            else:
                tensordict_reset = self.reset_func(tensordict, tensordict_reset)
        if self.batch_size is not None:
            if tensordict_reset.batch_size == self.batch_size:
                return tensordict_reset
            return tensordict_reset.expand(self.batch_size).clone()  # owned memory, writable rows
        return self.reshape_fn(tensordict_reset)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        return None if tensordict is None else self._to_inner(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._to_inner(tensordict)

    def _has_inverse(self) -> bool:
        return self.reshape_fn is not None

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        """The env's new batch size.

        Examples:
            >>> import torch
            >>> BatchSizeTransform(reshape_fn=lambda x: x.flatten(0, 1)).transform_env_batch_size(torch.Size([2, 3]))
            torch.Size([6])
            >>> BatchSizeTransform(batch_size=[5]).transform_env_batch_size(torch.Size([]))
            torch.Size([5])
        """
        if self.batch_size is not None:
            return self.batch_size
        return self.reshape_fn(torch.empty(batch_size, device="meta")).shape

    def transform_output_spec(self, output_spec: Any) -> Any:
        """The output spec with the new batch size.

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> spec = Composite(full_observation_spec=Composite(obs=Unbounded((4, 2)), shape=[4]), shape=[4])
            >>> BatchSizeTransform(reshape_fn=lambda x: x.reshape(2, 2)).transform_output_spec(spec)["full_observation_spec", "obs"].shape
            torch.Size([2, 2, 2])
        """
        return self._change(output_spec)

    def transform_input_spec(self, input_spec: Any) -> Any:
        """The input spec with the new batch size.

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> spec = Composite(full_action_spec=Composite(action=Unbounded((1,))))
            >>> BatchSizeTransform(batch_size=[3]).transform_input_spec(spec)["full_action_spec", "action"].shape
            torch.Size([3, 1])
        """
        return self._change(input_spec)
