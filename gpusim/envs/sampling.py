"""Seeding, random actions and fake data of :class:`~gpusim.envs.common.EnvBase`.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[2])
    >>> env.set_seed(0) is not None, env.rand_action()["action"].shape
    (True, torch.Size([2]))
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get, fast_set, is_plain
from gpusim.envs._seeding import next_seed
from gpusim.envs.env_specs import _cached_plan
from gpusim.specs import Composite

__all__ = ["EnvSampling"]


class EnvSampling:
    """Mixin of :class:`~gpusim.envs.common.EnvBase`: ``set_seed``, ``rand_action``,
    ``rand_step``, ``fake_tensordict``, ``all_actions``.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> CartPoleEnv().fake_tensordict()["next", "reward"].shape
        torch.Size([1])
    """

    def all_actions(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Every action of a fully discrete action spec, stacked on a new leading dim.

        With several action entries, every combination is listed (the first entry varies
        slowest). With ``tensordict``, the env is reset with it first.

        Returns:
            A tensordict of batch size ``[n_actions, *env.batch_size]``.

        Raises:
            TypeError: an action spec that cannot be enumerated (continuous).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> CartPoleEnv(batch_size=[3]).all_actions()["action"]
            tensor([[0, 0, 0],
                    [1, 1, 1]])
        """
        if tensordict is not None:
            self.reset(tensordict)
        spec = self.full_action_spec
        keys = self.action_keys
        values = []
        for key in keys:
            leaf = spec[key]
            try:
                values.append(leaf.enumerate())
            except (NotImplementedError, AttributeError) as err:
                raise TypeError(
                    f"all_actions needs discrete action specs; the action {_keys.fmt(key)} has a "
                    f"{type(leaf).__name__} spec, which cannot be enumerated"
                ) from err
        counts = [v.shape[0] for v in values]
        grids = torch.cartesian_prod(*[torch.arange(n, device=self.device) for n in counts])
        grids = grids.reshape(-1, len(counts))
        out = TensorDict({}, batch_size=[grids.shape[0], *self.batch_size], device=self.device)
        for i, (key, value) in enumerate(zip(keys, values)):
            out.set(key, value[grids[:, i]])
        return out

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the env and returns the next seed (deterministic function of ``seed``).

        Args:
            seed: the seed (``None``: unseeded).
            static_seed: return ``seed`` itself instead of the next seed.

        Returns:
            The next seed, for the next seeded object (``seed`` with ``static_seed``).

        Raises:
            TypeError: ``seed`` is neither an int nor ``None``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> next_seed = env.set_seed(0)
            >>> first = env.reset()["observation"]
            >>> _ = env.set_seed(0)
            >>> torch.equal(env.reset()["observation"], first), env.set_seed(0, static_seed=True)
            (True, 0)
        """
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        self._set_seed(seed)
        from gpusim.envs import random_actions  # (imports the native envs: not at module level)

        random_actions.note_seed(self, seed)  # rollout()'s random actions follow the env's seed
        if seed is None or static_seed:
            return seed
        return next_seed(seed)

    # ------------------------------------------------------------------ random / fake data
    def _empty_td(self) -> TensorDict:
        return TensorDict({}, batch_size=self.batch_size, device=self.device)

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a random action (from ``full_action_spec``) into ``tensordict``.

        A batch-unlocked env without batch dims draws one action per row of ``tensordict``.

        Args:
            tensordict: the data to write into (``None``: a new, empty tensordict).

        Returns:
            ``tensordict`` with the action entries.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> env = PendulumEnv(batch_size=[3])
            >>> action = env.rand_action()["action"]
            >>> action.shape, bool((action.abs() <= 2.0).all())  # inside the action spec
            (torch.Size([3, 1]), True)
        """
        if tensordict is None:
            tensordict = self._empty_td()
        elif self._rand_action_into(tensordict):
            return tensordict
        shape = ()
        if not self.batch_locked and not self.batch_size:
            shape = tensordict.batch_size
        tensordict.update(self.full_action_spec.rand(shape))
        return tensordict

    @_cached_plan
    def _rand_action_plan(self) -> tuple | None:
        """``(parents, leaves)`` of the action spec for :meth:`_rand_action_into`: the nested
        composites (key path, shape) and the leaves (parent index, name, spec) in the order
        ``Composite.rand`` draws them; ``None`` when a node is not a plain ``Composite`` or a leaf
        is not a plain tensor spec (lazy stacks, non-tensor, choice specs)."""
        from gpusim.specs import Choice, NonTensor, Stacked

        parents: list[tuple] = []
        leaves: list[tuple] = []
        device = self.device

        def walk(spec: Any, path: tuple) -> bool:
            if type(spec) is not Composite or spec.data_cls is not None:
                return False
            index = len(parents)
            parents.append((path, torch.Size(spec.shape)))
            for name, sub in spec._specs.items():
                if sub is None:
                    continue
                if isinstance(sub, Composite):
                    if not walk(sub, (*path, name)):
                        return False
                elif isinstance(sub, (Stacked, NonTensor, Choice)) or sub.device != device:
                    return False
                else:
                    leaves.append((index, name, sub))
            return True

        if not self.batch_locked and not self.batch_size:
            return None
        return (tuple(parents), tuple(leaves)) if walk(self.full_action_spec, ()) else None

    def _rand_action_into(self, tensordict: TensorDictBase) -> bool:
        """Writes a random action into a plain ``tensordict`` of the env's batch and device
        through the cached plan: the same draws, in the same order, as
        ``tensordict.update(full_action_spec.rand())``, without building a tensordict per step.
        ``False`` (nothing drawn) when the plan or ``tensordict`` does not allow it: a nested
        container is missing or is not a plain tensordict of the spec's shape."""
        plan = self._rand_action_plan
        if plan is None or not is_plain(tensordict) or tensordict.batch_size != self.batch_size:
            return False
        if tensordict.device is not None and tensordict.device != self.device:
            return False
        nodes = []
        for path, shape in plan[0]:
            node = tensordict
            for part in path:
                node = fast_get(node, part)
                if not is_plain(node):
                    return False
            if node.is_locked or node.batch_size != shape:
                return False
            nodes.append(node)
        prefix = torch.Size([])
        for index, name, spec in plan[1]:
            fast_set(nodes[index], name, spec.rand(prefix))
        return True

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A step with a random action.

        Args:
            tensordict: the root data. ``None``: as in TorchRL, an env that was reset before
                and reads nothing but its actions (an empty ``state_spec``: its state lives in
                the env) steps on from where it is, from an input holding the action only; an
                env never reset, or one that reads state entries from its input, is reset first.

        Returns:
            The stepped tensordict (output under ``"next"``).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> td = CartPoleEnv(batch_size=[2], seed=0).rand_step()
            >>> td["next", "reward"].flatten().tolist()
            [1.0, 1.0]
        """
        if tensordict is None:
            if self.state_keys or not self.__dict__.get("_was_reset", False):  # nn.Module slot (see gpusim.envs.common)
                tensordict = self.reset()
            else:
                tensordict = TensorDict({}, batch_size=self.batch_size, device=self.device)
        return self.step(self.rand_action(tensordict))

    def fake_tensordict(self) -> TensorDictBase:
        """A zero-filled tensordict with the structure of one step (root + ``"next"``).

        :func:`~gpusim.envs.check_env_specs` compares it with real data.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> fake = CartPoleEnv(batch_size=[2]).fake_tensordict()
            >>> sorted(fake.keys()), sorted(fake["next"].keys())
            (['action', 'done', 'next', 'observation', 'state', 'terminated'], ['done', 'observation', 'reward', 'state', 'terminated'])
        """
        state = self.full_state_spec.zero()
        action = self.full_action_spec.zero()
        obs = self.full_observation_spec.zero()
        reward = self.full_reward_spec.zero()
        done = self.full_done_spec.zero()
        root = state.update(action).update(obs.clone()).update(done.clone())
        nxt = obs.update(reward).update(done)
        for key in self._echo_state_keys:
            nxt.set(key, state.get(key).clone())
        root.set("next", nxt)
        return root
