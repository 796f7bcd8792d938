"""Action transforms: ``ActionMask`` and ``DiscreteActionProjection``.

``ActionMask`` keeps the transformed env's discrete action spec masked with the env's latest
``action_mask`` so that random actions (``env.rand_action``, ``rollout`` without a policy) are
always legal. ``DiscreteActionProjection`` lets a policy with ``max_actions`` outputs drive an
env with fewer actions: out-of-range actions are replaced by random legal ones before the base
env steps. Both work row by row on batched data, on the env device, without host reads.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.actions import DiscreteActionProjection
    >>> t = DiscreteActionProjection(num_actions_effective=2, max_actions=3)
    >>> action = torch.tensor([False, True, False])  # one-hot, in range
    >>> t.inv(TensorDict({"action": action}, []))["action"]
    tensor([False,  True])
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, unravel
from gpusim.envs.episode import reset_mask_for
from gpusim.specs import Categorical, Composite, MultiCategorical, MultiOneHot, OneHot
from gpusim.transforms._levels import default_levels, done_levels_of
from gpusim.transforms._spec_utils import INPUT_SPECS, OUTPUT_SPECS, fmt_key, locate
from gpusim.transforms.transform import Transform

__all__ = ["ActionMask", "DiscreteActionProjection"]

_MASKABLE = (Categorical, OneHot, MultiCategorical, MultiOneHot)


def _check_key(key, name: str, owner: str) -> NestedKey:
    if not isinstance(key, (str, tuple)) or (isinstance(key, tuple) and not key):
        raise TypeError(f"{owner}: {name} must be a str or a non-empty tuple of str, got {key!r}")
    return unravel(key)


class ActionMask(Transform):
    """An adaptive action masker.

    After every reset and step it reads ``mask_key`` from the env output and sets it as the
    mask of the transformed env's action spec, so that ``env.rand_action()`` (and rollouts
    without a policy) only draw legal actions. On a partial reset, rows that are not reset keep
    their previous mask.

    Args:
        action_key: the action entry (a ``Categorical``, ``OneHot``, ``MultiCategorical`` or
            ``MultiOneHot`` spec). Default ``"action"``.
        mask_key: the mask entry (an observation or state entry of the env). Default
            ``"action_mask"``.

    Raises:
        KeyError: (when attached) a missing action or mask entry.
        TypeError: (when attached) an action spec that cannot be masked.

    Examples:
        TicTacToe's legal moves are ``"mask"`` (``[*B, 9]``); its action spec is
        ``Categorical(9)`` of shape ``[*B, 1]``, whose mask has shape ``[*B, 1, 9]``:

        >>> from gpusim.envs.native import TicTacToeEnv
        >>> from gpusim.transforms import Compose, TransformedEnv, UnsqueezeTransform
        >>> legal = UnsqueezeTransform(-2, in_keys=["mask"], out_keys=["legal"])
        >>> env = TransformedEnv(TicTacToeEnv(batch_size=[2], seed=0), Compose(legal, ActionMask(mask_key="legal")))
        >>> td = env.rollout(9)  # random actions drawn from the masked spec
        >>> bool(td["mask"].gather(-1, td["action"]).all())  # every move was legal
        True
    """

    def __init__(self, action_key: NestedKey = "action", mask_key: NestedKey = "action_mask") -> None:
        action_key = _check_key(action_key, "action_key", "ActionMask")
        mask_key = _check_key(mask_key, "mask_key", "ActionMask")
        super().__init__(in_keys=[action_key, mask_key])
        self.action_key = action_key
        self.mask_key = mask_key
        self._mask_in_output = False

    def _env(self):
        env = self.container
        if env is None:
            raise RuntimeError(
                "ActionMask needs an environment (its parent cannot be None): attach it with "
                "TransformedEnv(env, ActionMask())"
            )
        return env

    def _update(self, mask: torch.Tensor) -> None:
        self._env().full_action_spec[self.action_key].update_mask(mask)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._env()  # the mask goes to the env's action spec: without one, nothing can be masked
        mask = next_tensordict.get(self.mask_key, None)
        if mask is not None:
            self._update(mask)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Sets the mask of ``tensordict`` (when present) on the env's action spec.

        Raises:
            RuntimeError: the transform is not attached to an env.

        Examples:
            >>> from tensordict import TensorDict
            >>> ActionMask()(TensorDict({"action_mask": torch.ones(2, dtype=torch.bool)}, []))
            Traceback (most recent call last):
            ...
            RuntimeError: ActionMask needs an environment (its parent cannot be None): attach it with TransformedEnv(env, ActionMask())
        """
        return self._call(tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        mask = tensordict_reset.get(self.mask_key, None)
        if mask is None:
            return tensordict_reset
        previous = tensordict.get(self.mask_key, None) if tensordict is not None else None
        if previous is not None:
            # the rows not reset keep their previous mask (the episode module's rule for the
            # level holding the mask)
            levels = self.__dict__.get("_levels") or default_levels(tensordict_reset.batch_size)
            rows = reset_mask_for(tensordict, self.mask_key, levels, tensordict_reset.batch_size)
            if rows is not None:
                rows = rows.reshape(*rows.shape, *([1] * (mask.ndim - rows.ndim)))
                mask = torch.where(rows, mask, previous)
        self._update(mask)
        return tensordict_reset

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        self.__dict__["_levels"] = done_levels_of(output_spec)
        self._mask_in_output = locate(output_spec, OUTPUT_SPECS, self.mask_key) is not None
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        name = locate(input_spec, INPUT_SPECS, self.action_key)
        if name != "full_action_spec":
            raise KeyError(f"ActionMask: action_key {fmt_key(self.action_key)} is not an action entry of the env")
        spec = input_spec[name][self.action_key]
        if not isinstance(spec, _MASKABLE):
            raise TypeError(
                f"ActionMask: the action {fmt_key(self.action_key)} has a {type(spec).__name__} spec, which "
                "cannot be masked (use Categorical, OneHot, MultiCategorical or MultiOneHot)"
            )
        if not self._mask_in_output and locate(input_spec, ("full_state_spec",), self.mask_key) is None:
            raise KeyError(
                f"ActionMask: mask_key {fmt_key(self.mask_key)} is not an observation or state entry of the env"
            )
        return input_spec

    def __repr__(self) -> str:
        return f"ActionMask(action_key={self.action_key!r}, mask_key={self.mask_key!r})"


class DiscreteActionProjection(Transform):
    """Projects discrete actions from a large space (``max_actions``) to a smaller one.

    The transformed env accepts actions in ``[0, max_actions)``; before the base env steps,
    actions ``>= num_actions_effective`` are replaced by a uniformly random action in
    ``[0, num_actions_effective)`` and the rest are kept. Actions may be one-hot (``OneHot``
    spec, the default outside an env) or indices (``Categorical`` spec).

    ``forward`` (offline use, e.g. on stored data) maps stored actions the other way, from
    ``num_actions_effective`` to ``max_actions`` (one-hot actions are zero-padded), when
    ``include_forward`` is set.

    Args:
        num_actions_effective: number of actions of the base env.
        max_actions: number of actions the policy produces (``>= num_actions_effective``).
        action_key: the action entry (default ``"action"``).
        include_forward: map actions in ``forward`` too (default ``True``).

    Raises:
        ValueError: non-positive sizes or ``num_actions_effective > max_actions``; (when
            attached) a base action spec whose size is not ``num_actions_effective``.
        TypeError: (when attached) a base action spec that is not ``OneHot``/``Categorical``.

    Examples:
        A policy with 4 outputs driving CartPole's 2 actions:

        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), DiscreteActionProjection(2, 4))
        >>> env.action_spec.n, env.base_env.action_spec.n
        (4, 2)
        >>> td = env.reset().set("action", torch.tensor([0, 1, 3]))  # 3 is out of range
        >>> env.transform.inv(td)["action"][:2]  # in range: kept; row 2 gets a random legal action
        tensor([0, 1])
        >>> env.step(td)["next", "observation"].shape
        torch.Size([3, 4])
    """

    def __init__(
        self,
        num_actions_effective: int,
        max_actions: int,
        action_key: NestedKey = "action",
        include_forward: bool = True,
    ) -> None:
        for name, value in (("num_actions_effective", num_actions_effective), ("max_actions", max_actions)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DiscreteActionProjection: {name} must be a positive int, got {value!r}")
        if num_actions_effective > max_actions:
            raise ValueError(
                "DiscreteActionProjection: num_actions_effective must be <= max_actions, got "
                f"num_actions_effective={num_actions_effective} > max_actions={max_actions}"
            )
        action_key = _check_key(action_key, "action_key", "DiscreteActionProjection")
        super().__init__(in_keys_inv=[action_key])
        self.num_actions_effective = num_actions_effective
        self.max_actions = max_actions
        self.action_key = action_key
        self.include_forward = include_forward
        self._one_hot = True

    def _project(self, action: torch.Tensor) -> torch.Tensor:
        m = self.num_actions_effective
        if self._one_hot:
            idx = action.to(torch.uint8).argmax(-1)
            rand = torch.randint(0, m, idx.shape, device=idx.device)
            idx = torch.where(idx < m, idx, rand)
            return F.one_hot(idx, m).to(action.dtype)
        rand = torch.randint(0, m, action.shape, device=action.device, dtype=action.dtype)
        return torch.where(action < m, action, rand)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(self.action_key, None)
        if action is not None:
            tensordict.set(self.action_key, self._project(action))
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use: pads stored one-hot actions from ``num_actions_effective`` to ``max_actions``.

        Args:
            tensordict: stored data (written in place).

        Returns:
            ``tensordict`` (unchanged with ``include_forward=False``).

        Examples:
            >>> from tensordict import TensorDict
            >>> t = DiscreteActionProjection(num_actions_effective=2, max_actions=3)
            >>> t(TensorDict({"action": torch.tensor([0, 1])}, []))["action"]
            tensor([0, 1, 0])
        """
        if not self.include_forward:
            return tensordict
        action = tensordict.get(self.action_key, None)
        if action is not None and self._one_hot and action.shape[-1] == self.num_actions_effective:
            pad = self.max_actions - self.num_actions_effective
            tensordict.set(self.action_key, F.pad(action.to(torch.uint8), (0, pad)).to(action.dtype))
        return tensordict

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if locate(input_spec, ("full_action_spec",), self.action_key) is None:
            raise KeyError(
                f"DiscreteActionProjection: action_key {fmt_key(self.action_key)} is not an action entry of the env"
            )
        sub = input_spec["full_action_spec"]
        spec = sub[self.action_key]
        if not isinstance(spec, (OneHot, Categorical)) or isinstance(spec, MultiCategorical):
            raise TypeError(
                f"DiscreteActionProjection: the action {fmt_key(self.action_key)} has a {type(spec).__name__} "
                "spec; OneHot or Categorical is needed"
            )
        if spec.n != self.num_actions_effective:
            raise ValueError(
                f"DiscreteActionProjection: the env's action {fmt_key(self.action_key)} has n={spec.n}, but "
                f"num_actions_effective={self.num_actions_effective}"
            )
        self._one_hot = isinstance(spec, OneHot)
        n = self.max_actions
        if self._one_hot:
            new = OneHot(n, shape=(*spec.shape[:-1], n), dtype=spec.dtype, device=spec.device)
        else:
            new = Categorical(n, shape=spec.shape, dtype=spec.dtype, device=spec.device)
        sub[self.action_key] = new
        return input_spec

    def __repr__(self) -> str:
        return (
            f"DiscreteActionProjection(num_actions_effective={self.num_actions_effective}, "
            f"max_actions={self.max_actions}, action_key={self.action_key!r})"
        )
