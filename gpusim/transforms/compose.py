"""``Compose``: a chain of transforms that behaves as one transform.

Forward hooks (``_call``, ``_step``, ``_reset``, ``forward``, spec transforms) run the chain in
order; the inverse (``_inv_call``) runs it in reverse order. Indexing with an int returns the
transform itself (it keeps its parent); slicing returns a new, parent-less ``Compose`` of clones
(the clones share their buffers with the originals).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms import Compose, Transform
    >>> class Add(Transform):
    ...     def __init__(self, v):
    ...         super().__init__(in_keys=["x"])
    ...         self.v = v
    ...     def _apply_transform(self, x):
    ...         return x + self.v
    >>> c = Compose(Add(1), Add(10))
    >>> c(TensorDict({"x": torch.zeros(1)}, [1]))["x"]
    tensor([11.])
    >>> len(c), c[0].v, c[1:][0].v
    (2, 1, 10)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torch import nn

from gpusim.transforms.transform import Transform

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.specs import Composite

__all__ = ["Compose"]


class _CallableTransform(Transform):
    """A function on tensordicts used as a transform (forward only; specs unchanged)."""

    def __init__(self, fn: Callable[[TensorDictBase], TensorDictBase]) -> None:
        super().__init__()
        self.fn = fn

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        out = self.fn(next_tensordict)
        return next_tensordict if out is None else out

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    def __repr__(self) -> str:
        return f"_CallableTransform({getattr(self.fn, '__name__', self.fn)!r})"


def _as_member(transform: Any, where: str) -> Transform:
    """``transform``, or a callable on tensordicts wrapped as a transform; raises on others."""
    if isinstance(transform, Transform):
        return transform
    if callable(transform):
        return _CallableTransform(transform)
    raise TypeError(f"{where} takes a Transform or a callable on tensordicts, got {type(transform).__name__}")


class Compose(Transform):
    """Composes a chain of transforms.

    Args:
        *transforms: the transforms, applied in order (the inverse in reverse order). A single
            list or tuple of transforms is accepted too. A callable on tensordicts is wrapped
            as a transform (forward only, specs unchanged).
        transforms: the transforms as a keyword argument (instead of positional ones).

    Raises:
        TypeError: an element that is neither a ``Transform`` nor a callable, or transforms
            given both positionally and as ``transforms=``.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import Compose, InitTracker, RewardSum, StepCounter, TransformedEnv
        >>> chain = Compose(StepCounter(max_steps=2), RewardSum(), InitTracker())
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), chain)
        >>> td = env.rollout(3, break_when_any_done=False)
        >>> td["next", "step_count"][0].flatten().tolist()  # truncated after 2 steps, then reset
        [1, 2, 1]
        >>> td["next", "episode_reward"][0].flatten().tolist()
        [1.0, 2.0, 1.0]
        >>> td["is_init"][0].flatten().tolist()
        [True, False, True]
        >>> len(env.transform), type(env.transform[0]).__name__
        (3, 'StepCounter')
    """

    def __init__(
        self,
        *transforms: Transform | Callable[[TensorDictBase], TensorDictBase],
        **kwargs: Sequence[Transform | Callable[[TensorDictBase], TensorDictBase]],
    ) -> None:
        super().__init__()
        if "transforms" in kwargs:
            if transforms:
                raise TypeError("Compose takes its transforms either positionally or as transforms=, not both")
            transforms = tuple(kwargs.pop("transforms"))
        if kwargs:
            raise TypeError(f"Compose got unexpected keyword arguments {sorted(kwargs)}")
        if len(transforms) == 1 and isinstance(transforms[0], (list, tuple)):
            transforms = tuple(transforms[0])
        transforms = tuple(_as_member(t, "Compose") for t in transforms)
        for t in transforms:
            t.set_container(self)
        self.transforms = nn.ModuleList(transforms)

    # ------------------------------------------------------------------ keys (union of the chain)
    @property
    def in_keys(self) -> list:
        """The union of the transforms' ``in_keys``, in chain order (read-only).

        Examples:
            >>> from gpusim.transforms import ObservationNorm, RewardScaling
            >>> norm = ObservationNorm(loc=0.0, scale=1.0, in_keys=["observation"])
            >>> Compose(norm, RewardScaling(loc=0.0, scale=2.0)).in_keys
            ['observation', 'reward']
        """
        keys = []
        for t in self.__dict__.get("_modules", {}).get("transforms", []):
            keys.extend(k for k in t.in_keys if k not in keys)
        return keys

    @in_keys.setter
    def in_keys(self, value) -> None:
        if value:
            raise AttributeError("Compose.in_keys is the union of its transforms' keys; set them there")

    @property
    def out_keys(self) -> list:
        """The union of the transforms' ``out_keys``, in chain order (read-only).

        Examples:
            >>> from gpusim.transforms import ObservationNorm
            >>> Compose(ObservationNorm(0.0, 1.0, in_keys=["observation"], out_keys=["obs_n"])).out_keys
            ['obs_n']
        """
        keys = []
        for t in self.__dict__.get("_modules", {}).get("transforms", []):
            keys.extend(k for k in t.out_keys if k not in keys)
        return keys

    @out_keys.setter
    def out_keys(self, value) -> None:
        if value:
            raise AttributeError("Compose.out_keys is the union of its transforms' keys; set them there")

    @property
    def in_keys_inv(self) -> list:
        """The union of the transforms' ``in_keys_inv``, in chain order (read-only).

        Examples:
            >>> from gpusim.transforms import DoubleToFloat
            >>> Compose(DoubleToFloat(in_keys_inv=["action"])).in_keys_inv
            ['action']
        """
        keys = []
        for t in self.__dict__.get("_modules", {}).get("transforms", []):
            keys.extend(k for k in t.in_keys_inv if k not in keys)
        return keys

    @in_keys_inv.setter
    def in_keys_inv(self, value) -> None:
        if value:
            raise AttributeError("Compose.in_keys_inv is the union of its transforms' keys")

    @property
    def out_keys_inv(self) -> list:
        """The union of the transforms' ``out_keys_inv``, in chain order (read-only).

        Examples:
            >>> from gpusim.transforms import DoubleToFloat
            >>> Compose(DoubleToFloat(in_keys_inv=["action"], out_keys_inv=["action_f"])).out_keys_inv
            ['action_f']
        """
        keys = []
        for t in self.__dict__.get("_modules", {}).get("transforms", []):
            keys.extend(k for k in t.out_keys_inv if k not in keys)
        return keys

    @out_keys_inv.setter
    def out_keys_inv(self, value) -> None:
        if value:
            raise AttributeError("Compose.out_keys_inv is the union of its transforms' keys")

    # ------------------------------------------------------------------ data hooks
    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._call(next_tensordict)
        return next_tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._step(tensordict, next_tensordict)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict_reset = t._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def _reset_on_native_autoreset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for t in self.transforms:
            tensordict_reset = t._reset_on_native_autoreset(tensordict, tensordict_reset)
        return tensordict_reset

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        for t in reversed(self.transforms):
            tensordict = t._reset_env_preprocess(tensordict)
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use: each transform's ``forward``, in chain order.

        Args:
            tensordict: the data to transform (written in place).

        Returns:
            The transformed data.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.transforms import RewardClipping, RewardScaling
            >>> chain = Compose(RewardScaling(loc=0.0, scale=10.0), RewardClipping(-1.0, 1.0))
            >>> chain(TensorDict({"reward": torch.tensor([[0.05], [0.5]])}, [2]))["reward"].flatten()
            tensor([0.5000, 1.0000])
        """
        for t in self.transforms:
            tensordict = t(tensordict)
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in reversed(self.transforms):
            tensordict = t._inv_call(tensordict)
        return tensordict

    def _step_skipped(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._step_skipped(tensordict, next_tensordict)
        return next_tensordict

    def _post_step_mdp(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        for t in self.transforms:
            if t._has_post_step_mdp():
                tensordict, tensordict_ = t._post_step_mdp(tensordict, tensordict_)
        return tensordict, tensordict_

    def _has_post_step_mdp(self) -> bool:
        return any(t._has_post_step_mdp() for t in self.transforms)

    def _check_batched_worker_compat(self) -> None:
        for t in self.transforms:
            t._check_batched_worker_compat()

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        """Each transform's ``transform_fake_tensordict``, in chain order.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import NextObservationDelta, TransformedEnv
            >>> env = TransformedEnv(PendulumEnv(), Compose(NextObservationDelta(["observation"])))
            >>> fake = env.fake_tensordict()  # the delta replaces the full next observation
            >>> ("next", "observation") in fake.keys(True), ("next", "delta", "observation") in fake.keys(True)
            (False, True)
        """
        for t in self.transforms:
            fake_tensordict = t.transform_fake_tensordict(fake_tensordict)
        return fake_tensordict

    def set_missing_tolerance(self, mode: bool = False) -> None:
        super().set_missing_tolerance(mode)
        for t in self.transforms:
            t.set_missing_tolerance(mode)

    def _inverse_exports(self) -> list:
        keys = []
        for t in self.transforms:
            keys.extend(k for k in t._inverse_exports() if k not in keys)
        return keys

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for t in self.transforms:
            output_spec = t.transform_output_spec(output_spec)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        for t in self.transforms:
            input_spec = t.transform_input_spec(input_spec)
        return input_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for t in self.transforms:
            observation_spec = t.transform_observation_spec(observation_spec)
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        for t in self.transforms:
            reward_spec = t.transform_reward_spec(reward_spec)
        return reward_spec

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        for t in self.transforms:
            done_spec = t.transform_done_spec(done_spec)
        return done_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        for t in self.transforms:
            action_spec = t.transform_action_spec(action_spec)
        return action_spec

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        for t in self.transforms:
            state_spec = t.transform_state_spec(state_spec)
        return state_spec

    def transform_env_device(self, device: torch.device) -> torch.device:
        for t in self.transforms:
            device = t.transform_env_device(device)
        return device

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        for t in self.transforms:
            batch_size = t.transform_env_batch_size(batch_size)
        return batch_size

    # ------------------------------------------------------------------ container protocol
    def __getitem__(self, item: int | slice) -> Transform:
        transforms = self.transforms
        if isinstance(item, slice):
            return Compose(*[t.clone() for t in list(transforms)[item]])
        if isinstance(item, int):
            return transforms[item]
        raise TypeError(f"Compose indices must be int or slice, got {type(item).__name__}")

    def __len__(self) -> int:
        return len(self.transforms)

    def __iter__(self) -> Iterator[Transform]:
        return iter(self.transforms)

    def append(self, transform: Transform | Callable[[TensorDictBase], TensorDictBase]) -> None:
        """Appends ``transform`` to the chain (the env's specs are recomputed).

        The transform is put in eval mode (as every transform added to an env; ``env.train()``
        switches them all). A plain ``Compose`` appended to a plain ``Compose`` is flattened:
        its members join this chain.

        Args:
            transform: the transform (it must not belong to another environment), or a callable
                on tensordicts (wrapped as a forward-only transform).

        Raises:
            TypeError: ``transform`` is neither a ``Transform`` nor a callable.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]))
            >>> env.transform.append(StepCounter())
            >>> "step_count" in env.observation_spec.keys()
            True
        """
        transform = _as_member(transform, "Compose.append")
        transform.eval()
        if type(self) is Compose and type(transform) is Compose:
            members = list(transform.transforms)
            for t in members:
                t._detach_container()
        else:
            members = [transform]
        for t in members:
            t.set_container(self)
            self.transforms.append(t)
        self._chain_changed()

    def insert(self, index: int, transform: Transform | Callable[[TensorDictBase], TensorDictBase]) -> None:
        """Inserts ``transform`` at ``index`` (negative indices count from the end), in eval
        mode.

        Args:
            index: the position in the chain, ``-len(self) <= index <= len(self)``.
            transform: the transform, or a callable on tensordicts.

        Raises:
            TypeError: ``transform`` is neither a ``Transform`` nor a callable.
            IndexError: ``index`` out of range.

        Examples:
            >>> from gpusim.transforms import InitTracker, RewardSum, StepCounter
            >>> chain = Compose(StepCounter(), RewardSum())
            >>> chain.insert(1, InitTracker())
            >>> [type(t).__name__ for t in chain]
            ['StepCounter', 'InitTracker', 'RewardSum']
        """
        transform = _as_member(transform, "Compose.insert")
        transform.eval()
        n = len(self.transforms)
        if not -n <= index <= n:
            raise IndexError(f"index {index} out of range for a Compose of length {n}")
        transform.set_container(self)
        items = list(self.transforms)
        items.insert(index, transform)
        self.transforms = nn.ModuleList(items)
        self._chain_changed()

    def pop(self, index: int = -1) -> Transform:
        """Removes and returns the transform at ``index`` (it loses its parent).

        Args:
            index: the position in the chain (default: the last one).

        Returns:
            The removed transform, free to join another environment.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(), Compose(StepCounter()))
            >>> t = env.transform.pop()
            >>> t.container is None, "step_count" in env.observation_spec.keys()
            (True, False)
        """
        items = list(self.transforms)
        if not -len(items) <= index < len(items):
            raise IndexError(f"Compose.pop: index {index} is out of range (the Compose has {len(items)} transforms)")
        t = items.pop(index)
        self.transforms = nn.ModuleList(items)
        t._detach_container()
        self._chain_changed()
        return t

    def _chain_changed(self) -> None:
        """Propagates a change of the chain up to the env (which recomputes its specs)."""
        self.reset_parent()
        container = self.__dict__["_container"]
        if container is not None:
            container._chain_changed()

    def reset_parent(self) -> None:
        super().reset_parent()
        for t in self.__dict__.get("_modules", {}).get("transforms", []):
            t.reset_parent()

    def empty_cache(self) -> None:
        super().empty_cache()
        for t in self.transforms:
            t.empty_cache()

    def clone(self) -> Compose:
        """A parent-less ``Compose`` of clones (buffers shared with the originals).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import Compose, TransformedEnv, VecNorm
            >>> norm = VecNorm(in_keys=["observation"])
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), Compose(norm))
            >>> copy = env.transform.clone()
            >>> copy.container is None, copy[0].stats is env.transform[0].stats
            (True, True)
        """
        return Compose(*[t.clone() for t in self.transforms])

    def __setstate__(self, state: dict) -> None:
        """Restores a pickled or deep-copied ``Compose``: its members belong to it again (a
        pickled transform keeps no container; the copy's chain is rebuilt here, the outer
        container links the ``Compose`` itself)."""
        super().__setstate__(state)
        for t in self.transforms:
            t.__dict__["_container"] = self
            t.reset_parent()

    def _set_seed(self, seed: int | None) -> int | None:
        for t in self.transforms:
            seed = t.set_seed(seed)
        return seed

    def to(self, *args: Any, **kwargs: Any) -> Compose:
        for t in self.transforms:
            t.to(*args, **kwargs)
        self.reset_parent()
        return self

    def close(self) -> None:
        for t in self.transforms:
            t.close()

    def __repr__(self) -> str:
        inner = ",\n".join("    " + "\n    ".join(repr(t).split("\n")) for t in self.transforms)
        return f"Compose(\n{inner})" if inner else "Compose()"
