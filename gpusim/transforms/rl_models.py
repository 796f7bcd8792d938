"""Model-based transforms: ``KLRewardTransform``.

``KLRewardTransform`` penalizes the reward with ``KL[pi_current || pi_0]`` estimated from the
action taken: ``reward - coef * (log pi_current(a) - log pi_0(a))``, where ``pi_0`` is a frozen
copy of the actor given at construction and ``log pi_current(a)`` is the log-probability the
policy wrote next to its action.

TorchRL's pretrained-embedding transforms (``R3MTransform``, ``VIPTransform``, ...) live in
:mod:`gpusim.contrib.pretrained`.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.rl_models import KLRewardTransform
    >>> ref = lambda td: torch.distributions.Categorical(logits=torch.zeros(*td.batch_size, 2))
    >>> t = KLRewardTransform(ref, coef=1.0)
    >>> root = TensorDict({"action": torch.tensor([0]), "sample_log_prob": torch.tensor([0.0])}, [1])
    >>> nxt = TensorDict({"reward": torch.tensor([[1.0]])}, [1])
    >>> t._step(root, nxt)["reward"]  # 1 - (0 - log 0.5)
    tensor([[0.3069]])
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from gpusim.envs._keys import NestedKey, unravel
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms._spec_utils import OUTPUT_SPECS, check_finite_number, require_keys
from gpusim.transforms.transform import Transform

__all__ = ["KLRewardTransform"]


def _freeze(actor: Any) -> Any:
    ref = copy.deepcopy(actor)
    if isinstance(ref, nn.Module):
        ref.requires_grad_(False)
        ref.eval()
    return ref


class KLRewardTransform(Transform):
    """Adds a ``KL[pi_current || pi_0]`` correction term to the reward.

    After each step, with the action ``a`` and the log-probability ``log pi_current(a)`` that the
    policy wrote in the root data, the reward becomes ``reward - coef * (log pi_current(a) -
    log pi_0(a))``. ``pi_0`` is a frozen deep copy of ``actor`` taken at construction (later
    updates of ``actor`` do not change it). Steps whose data has no action or no log-probability
    (e.g. random actions from ``env.rand_action``) keep their reward.

    Args:
        actor: the reference policy: a module with ``get_dist(tensordict)`` (a tensordict
            ``ProbabilisticTensorDictModule``) or a callable mapping a tensordict to a
            ``torch.distributions.Distribution``.
        coef: the KL coefficient.
        in_keys: reward entries (default ``["reward"]``).
        out_keys: where to write the corrected rewards (default ``in_keys``).

    Keyword Args:
        action_key: the action entry (default ``"action"``).
        log_prob_key: the current policy's log-probability entry (default
            ``"sample_log_prob"``).

    Raises:
        TypeError: an actor that is neither a ``get_dist`` module nor callable.
        ValueError: a NaN ``coef`` or key lists of different lengths.

    Examples:
        >>> import math
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> uniform = lambda td: torch.distributions.Categorical(logits=torch.zeros(*td.batch_size, 2))
        >>> def policy(td):  # always pushes right, with probability 0.9 under the current policy
        ...     td["action"] = torch.ones(td.batch_size, dtype=torch.long)
        ...     td["sample_log_prob"] = torch.full(td.batch_size, math.log(0.9))
        ...     return td
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), KLRewardTransform(uniform, coef=1.0))
        >>> env.rollout(2, policy)["next", "reward"][0].flatten()  # 1 - (log 0.9 - log 0.5)
        tensor([0.4122, 0.4122])
    """

    def __init__(
        self,
        actor: Any,
        coef: float = 1.0,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        action_key: NestedKey = "action",
        log_prob_key: NestedKey = "sample_log_prob",
    ) -> None:
        if not (hasattr(actor, "get_dist") or callable(actor)):
            raise TypeError(f"KLRewardTransform: actor must have get_dist() or be callable, got {type(actor).__name__}")
        if isinstance(coef, bool) or not isinstance(coef, (int, float)):
            raise TypeError(f"KLRewardTransform: coef must be a number, got {coef!r}")
        check_finite_number(coef, "coef", "KLRewardTransform")
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.coef = float(coef)
        self.action_key = unravel(action_key)
        self.log_prob_key = unravel(log_prob_key)
        ref = _freeze(actor)
        if isinstance(ref, nn.Module):
            self.reference_actor = ref
        else:
            self.__dict__["reference_actor"] = ref

    def _reference_dist(self, tensordict: TensorDictBase) -> torch.distributions.Distribution:
        ref: Callable = self.reference_actor
        data = tensordict.copy()  # the actor may write entries: keep the root untouched
        if hasattr(ref, "get_dist"):
            return ref.get_dist(data)
        out = ref(data)
        if not isinstance(out, torch.distributions.Distribution):
            raise TypeError(
                f"KLRewardTransform: the actor returned {type(out).__name__}; it must return a "
                "torch.distributions.Distribution (or have get_dist)"
            )
        return out

    def kl(self, tensordict: TensorDictBase) -> torch.Tensor | None:
        """The per-step estimate ``log pi_current(a) - log pi_0(a)`` (``None`` without data).

        Args:
            tensordict: root data with the action and the current log-probability.

        Returns:
            The estimate, shaped like the log-probability, or ``None`` when the action or the
            log-probability is missing.

        Examples:
            >>> from tensordict import TensorDict
            >>> ref = lambda td: torch.distributions.Categorical(logits=torch.zeros(*td.batch_size, 2))
            >>> t = KLRewardTransform(ref)
            >>> t.kl(TensorDict({"action": torch.tensor([0]), "sample_log_prob": torch.tensor([0.0])}, [1]))
            tensor([0.6931])
            >>> t.kl(TensorDict({}, [1])) is None
            True
        """
        action = tensordict.get(self.action_key, None)
        current = tensordict.get(self.log_prob_key, None)
        if action is None or current is None:
            return None
        with torch.no_grad():
            reference = self._reference_dist(tensordict).log_prob(action)
        return current - reference.to(current.device)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        kl = self.kl(tensordict)
        if kl is None:
            return next_tensordict
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            reward = next_tensordict.get(in_key, None)
            if reward is None:
                continue
            k = kl
            while k.ndim < reward.ndim:
                k = k.unsqueeze(-1)
            next_tensordict.set(out_key, reward - self.coef * k.to(reward.dtype))
        return next_tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict  # needs the root data: see _step

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use on stored transitions (root with ``"next"``): corrects ``("next", reward)``.

        Args:
            tensordict: stored transitions (written in place).

        Returns:
            ``tensordict``.

        Examples:
            >>> from tensordict import TensorDict
            >>> ref = lambda td: torch.distributions.Categorical(logits=torch.zeros(*td.batch_size, 2))
            >>> td = TensorDict({"action": torch.tensor([0]), "sample_log_prob": torch.tensor([0.0]),
            ...                  "next": {"reward": torch.tensor([[1.0]])}}, [1])
            >>> KLRewardTransform(ref, coef=1.0)(td)["next", "reward"]  # 1 - (0 - log 0.5)
            tensor([[0.3069]])
        """
        nxt = tensordict.get("next", None)
        if nxt is not None:
            self._step(tensordict, nxt)
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        found = require_keys(output_spec, OUTPUT_SPECS, self.in_keys, "KLRewardTransform")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            sub = output_spec[found[in_key]]
            spec = sub[in_key]
            dtype = spec.dtype if spec.dtype.is_floating_point else torch.get_default_dtype()
            if isinstance(spec, (Bounded, Unbounded)) or out_key != in_key:
                sub[out_key] = Unbounded(shape=spec.shape, dtype=dtype, device=spec.device)
        return output_spec

    def __repr__(self) -> str:
        return f"KLRewardTransform(coef={self.coef}, in_keys={self.in_keys}, out_keys={self.out_keys})"
