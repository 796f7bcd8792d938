"""``MultiAction``: one env step of the transformed env plays a chunk of actions.

The policy writes a stack of actions (a "chunk", or macro action) along a new dim; the
transform plays them one after the other in the env before it (the base env and the
transforms that come earlier in the chain), and the transformed env's step is the whole
chunk. The rewards of the chunk are stacked along the same dim (``stack_rewards=True``, the
default) or only the last is kept; observations are the last one (``stack_observations=False``,
the default) or stacked. The chunk length may change from one step to the next: the action
(and stacked) specs have a dynamic (``-1``) dim there.

A row whose episode ends inside the chunk plays no further action: the next actions of the
chunk are skipped for it (a ``"_step"`` partial step, so the env before the transform must be
able to step some rows only: functional envs, batched envs, batch-unlocked envs), and its
reward stack holds zeros for the skipped steps. When every row has ended, the chunk stops and
the reward stack ends with a single zero slot for the skipped remainder.

Transforms before ``MultiAction`` in the chain run once per action; those after it, once per
chunk. Deciding when to stop reads the done flags on the host once per action of the chunk.
With ``stack_observations``, a reset returns the observation of the env before the transform
(no chunk dim) and the inner steps read the last observation of the previous chunk: chunks of
different lengths make ragged data, which a rollout stacks lazily.

Examples:
    >>> import torch
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import Compose, MultiAction, StepCounter, TransformedEnv
    >>> env = TransformedEnv(
    ...     PendulumEnv(batch_size=[2], seed=0),
    ...     Compose(StepCounter(step_count_key="actions_played"), MultiAction(), StepCounter()),
    ... )
    >>> env.action_spec.shape  # a chunk of any length along dim 1
    torch.Size([2, -1, 1])
    >>> chunk = lambda td: td.set("action", torch.zeros(2, 4, 1))  # 4 actions per env step
    >>> data = env.rollout(3, chunk)
    >>> data["next", "reward"].shape  # one reward per played action
    torch.Size([2, 3, 4, 1])
    >>> data["next", "actions_played"][0].flatten().tolist(), data["next", "step_count"][0].flatten().tolist()
    ([4, 8, 12], [1, 2, 3])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey
from gpusim.transforms.transform import Transform

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.envs.common import EnvBase
    from gpusim.specs import Composite

__all__ = ["MultiAction"]


def _with_dynamic_dim(leaf, pos: int, key: NestedKey, dim: int, ndim: int):
    """``leaf`` with a new dynamic (``-1``) dim inserted at ``pos`` of its shape."""
    try:
        if pos > len(leaf.shape):
            raise ValueError(f"dim {pos} is beyond the {len(leaf.shape)} dims of the spec")
        leaf = leaf.unsqueeze(pos)
    except ValueError as err:  # beyond the leaf, or a spec whose last dim must stay its own
        raise ValueError(
            f"MultiAction: dim={dim} puts the chunk at dim {pos} of {key!r}, whose spec has shape "
            f"{list(leaf.shape)} ({ndim} batch dims), which cannot hold it there: {err}"
        ) from err
    shape = list(leaf.shape)
    shape[pos] = -1
    return leaf.expand(shape)


class MultiAction(Transform):
    """Plays a stack of actions (a chunk) in the env before it, one per inner step.

    Keyword Args:
        dim: where the chunk dim sits in each action leaf, counted from the data's batch dims
            (``1``, the default: right after them). Must be ``>= 1``.
        stack_rewards: stack the reward of every played action along the chunk dim
            (``True``, default) or keep the last one.
        stack_observations: stack the observation of every played action (``False``,
            default: keep the last one).
        action_key: the one-step action key of the env before the transform (default: all of
            its action keys).
        chunk_key: where the policy writes the chunk (default: ``action_key``).

    Raises:
        ValueError: ``dim < 1``; a chunk of the wrong number of dims, or chunks of unequal
            lengths across action keys.
        KeyError: the step input has no chunk entry.

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), MultiAction(chunk_key="plan"))
        >>> sorted(env.full_action_spec.keys()), env.full_action_spec["plan"].shape
        (['plan'], torch.Size([3, -1]))
        >>> td = env.reset().set("plan", torch.ones(3, 5, dtype=torch.long))
        >>> out = env.step(td)
        >>> out["next", "reward"].shape, out["next", "reward"].sum().item()
        (torch.Size([3, 5, 1]), 15.0)
    """

    def __init__(
        self,
        *,
        dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        action_key: NestedKey | None = None,
        chunk_key: NestedKey | None = None,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"MultiAction: dim must be an int >= 1 (counted from the batch dims), got {dim!r}")
        if action_key is None and chunk_key is not None:
            action_key = "action"
        if chunk_key is None:
            chunk_key = action_key
        super().__init__(in_keys_inv=action_key, out_keys_inv=chunk_key)
        self.dim = dim
        self.stack_rewards = bool(stack_rewards)
        self.stack_observations = bool(stack_observations)
        self.__dict__["_played"] = None

    # ------------------------------------------------------------------ keys
    def _pairs(self, action_keys: list) -> list[tuple[NestedKey, NestedKey]]:
        """``[(one-step action key, chunk key)]``."""
        if self.in_keys_inv:
            return list(zip(self.in_keys_inv, self.out_keys_inv))
        return [(k, k) for k in action_keys]

    def _has_inverse(self) -> bool:
        return True

    # ------------------------------------------------------------------ specs
    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """The policy writes a chunk: each action leaf gets a dynamic dim (under the chunk key).

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> spec = PendulumEnv(batch_size=[4]).input_spec.clone().unlock_()
            >>> MultiAction().transform_input_spec(spec)["full_action_spec", "action"].shape
            torch.Size([4, -1, 1])
        """
        actions = input_spec["full_action_spec"]
        pos = input_spec.ndim + self.dim - 1
        for action_key, chunk_key in self._pairs(list(actions.keys(True, True))):
            leaf = (
                actions.get(action_key, None)
                if isinstance(action_key, str)
                else (actions[action_key] if action_key in actions.keys(True, True) else None)
            )
            if leaf is None:
                raise KeyError(
                    f"MultiAction: action_key {action_key!r} is not an action of the env (expected one of "
                    f"{sorted(map(str, actions.keys(True, True)))})"
                )
            chunked = _with_dynamic_dim(leaf, pos, action_key, self.dim, input_spec.ndim)
            if chunk_key != action_key:
                del actions[action_key]
            actions[chunk_key] = chunked
        input_spec["full_action_spec"] = actions
        return input_spec

    def _stacked_spec(self, spec: Composite) -> Composite:
        pos = spec.ndim + self.dim - 1
        for key in list(spec.keys(True, True)):
            spec[key] = _with_dynamic_dim(spec[key], pos, key, self.dim, spec.ndim)
        return spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        """With ``stack_rewards``, every reward leaf gets the dynamic chunk dim.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> spec = PendulumEnv().full_reward_spec.clone()
            >>> MultiAction().transform_reward_spec(spec)["reward"].shape
            torch.Size([-1, 1])
        """
        return self._stacked_spec(reward_spec) if self.stack_rewards else reward_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        """With ``stack_observations``, every observation leaf gets the dynamic chunk dim.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> spec = PendulumEnv().full_observation_spec.clone()
            >>> MultiAction(stack_observations=True).transform_observation_spec(spec)["observation"].shape
            torch.Size([-1, 3])
        """
        return self._stacked_spec(observation_spec) if self.stack_observations else observation_spec

    # ------------------------------------------------------------------ the chunk
    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("MultiAction plays actions in an env: it needs a parent (use it in a TransformedEnv)")
        pairs = self._pairs(parent.action_keys)
        pos = tensordict.batch_dims + self.dim - 1
        chunks = []
        for action_key, chunk_key in pairs:
            chunk = tensordict.get(chunk_key, None)
            if chunk is None:
                raise KeyError(
                    f"MultiAction: the step input has no stacked actions at {chunk_key!r} (expected the chunk "
                    f"of {action_key!r} actions along dim {pos}); keys: {sorted(map(str, tensordict.keys(True, True)))[:20]}"
                )
            if chunk.ndim <= pos:
                raise ValueError(
                    f"MultiAction: the chunk {chunk_key!r} has shape {list(chunk.shape)}, expected the actions stacked "
                    f"along dim {pos} (at least {pos + 1} dims)"
                )
            chunks.append(chunk)
        lengths = {c.shape[pos] for c in chunks}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError(
                f"MultiAction: the chunks {[c for _, c in pairs]} must hold the same positive number of actions "
                f"along dim {pos}, got {[c.shape[pos] for c in chunks]}"
            )
        n = lengths.pop()
        if self.stack_observations:  # the parent reads one observation: the last of the previous chunk
            obs_spec = parent.full_observation_spec
            for key in parent.observation_keys:
                value = tensordict.get(key, None)
                if (
                    value is not None
                    and value.ndim == tensordict.batch_dims - obs_spec.ndim + len(obs_spec[key].shape) + 1
                ):
                    tensordict.set(key, value.select(pos, -1))
        rewards: list[TensorDictBase] = []
        observations: list[TensorDictBase] = []
        td, ended = tensordict, None
        for i in range(n - 1):
            for (action_key, _), chunk in zip(pairs, chunks):
                td.set(action_key, chunk.select(pos, i))
            if ended is not None:
                td.set("_step", ~ended)
            td = parent.step(td)
            step = td.get("next")
            if self.stack_rewards:
                rewards.append(step.select(*parent.reward_keys))
            if self.stack_observations:
                observations.append(step.select(*parent.observation_keys))
            td = parent.step_mdp(td)
            done = self._ended(parent, td)
            ended = done if ended is None else ended | done
            if bool(ended.all()):  # every row finished: the rest of the chunk is skipped
                break
        for (action_key, _), chunk in zip(pairs, chunks):
            td.set(action_key, chunk.select(pos, n - 1))
        if ended is not None and bool(ended.any()):
            td.set("_step", ~ended)
        self.__dict__["_played"] = (rewards, observations, parent.reward_keys, parent.observation_keys)
        return td

    @staticmethod
    def _ended(parent: EnvBase, tensordict: TensorDictBase) -> torch.Tensor:
        """The data rows whose episode ended (any done flag of any level)."""
        flags = None
        for key in parent.done_keys:
            value = tensordict.get(key).reshape(*tensordict.batch_size, -1).any(-1)
            flags = value if flags is None else flags | value
        return flags

    def _stack(self, parts: list[TensorDictBase], last: TensorDictBase, keys: list, out: TensorDictBase) -> None:
        pos = out.batch_dims + self.dim - 1
        for key in keys:
            values = [p.get(key) for p in parts]
            values.append(last.get(key))
            out.set(key, torch.stack(values, pos))

    def _take_played(self) -> tuple:
        played = self.__dict__["_played"]
        if played is None:
            raise RuntimeError("MultiAction: a step reached the transform without its chunk being played first")
        self.__dict__["_played"] = None
        return played

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        rewards, observations, reward_keys, observation_keys = self._take_played()
        if self.stack_rewards:
            self._stack(rewards, next_tensordict.select(*reward_keys), reward_keys, next_tensordict)
        if self.stack_observations:
            self._stack(observations, next_tensordict.select(*observation_keys), observation_keys, next_tensordict)
        return next_tensordict

    def _step_skipped(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        # every row ended inside the chunk: the played steps, then one slot for the skipped rest
        # (a zero reward, the current observation)
        rewards, observations, reward_keys, observation_keys = self._take_played()
        if self.stack_rewards:
            self._stack(rewards, rewards[-1].apply(torch.zeros_like), reward_keys, next_tensordict)
        if self.stack_observations:
            self._stack(observations, tensordict.select(*observation_keys), observation_keys, next_tensordict)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline data is left as it is (the chunk is played by env steps).

        Examples:
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"action": torch.zeros(2, 3, 1)}, [2])
            >>> MultiAction()(td) is td
            True
        """
        return tensordict

    def __repr__(self) -> str:
        return (
            f"MultiAction(dim={self.dim}, stack_rewards={self.stack_rewards}, "
            f"stack_observations={self.stack_observations})"
        )
