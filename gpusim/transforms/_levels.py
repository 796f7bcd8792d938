"""Done levels of a transform's parent, and validation-free nested access for transforms.

Stateful transforms learn the done levels of their parent when the specs are transformed
(``transform_output_spec`` receives the parent's ``full_done_spec``), so nothing is looked up per
step. Which rows a reset touches is the episode module's business
(:func:`gpusim.envs.episode.reset_mask_for`, re-exported here): transforms ask it, they do not
read ``"_reset"`` entries themselves.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> levels = default_levels(torch.Size([3]))
    >>> td = TensorDict({"_reset": torch.tensor([[True], [False], [True]])}, [3])
    >>> reset_mask_for(td, "obs", levels, torch.Size([3]))
    tensor([ True, False,  True])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get, fast_set
from gpusim.envs._keys import DoneLevel, NestedKey
from gpusim.envs.episode import level_for_key, mask_at, reduce_rows, reset_mask_for

__all__ = [
    "done_levels_of",
    "default_levels",
    "level_for_key",
    "reset_mask_for",
    "mask_at",
    "reduce_rows",
    "tget",
    "tset",
]


def done_levels_of(output_spec) -> list[DoneLevel]:
    """The done levels (root first) of an ``output_spec`` Composite.

    Examples:
        >>> from gpusim.specs import Categorical, Composite
        >>> done = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
        >>> [lvl.prefix for lvl in done_levels_of(Composite(full_done_spec=done, shape=(2,)))]
        [()]
    """
    if "full_done_spec" not in output_spec.keys():
        return []
    return _keys.done_levels(output_spec["full_done_spec"], output_spec.shape)


def default_levels(batch_size: torch.Size) -> list[DoneLevel]:
    """A root-only level list (transforms used without an env).

    Examples:
        >>> default_levels(torch.Size([4]))[0].shape
        torch.Size([4])
    """
    return [DoneLevel((), ("done",), "_reset", torch.Size(batch_size))]


def tget(td: TensorDictBase, key: NestedKey, default=None):
    """Validation-free ``td.get(key, default)`` for str or tuple keys (plain TensorDicts).

    Examples:
        >>> from tensordict import TensorDict
        >>> tget(TensorDict({"a": {"b": torch.ones(1)}}, []), ("a", "b"))
        tensor([1.])
    """
    if isinstance(key, str):
        return fast_get(td, key, default)
    node = td
    for part in key[:-1]:
        node = fast_get(node, part)
        if node is None or isinstance(node, torch.Tensor):
            return default
    return fast_get(node, key[-1], default)


def tset(td: TensorDictBase, key: NestedKey, value: torch.Tensor) -> TensorDictBase:
    """Validation-free ``td.set(key, value)`` for str or tuple keys (falls back to ``set`` when
    an intermediate node is missing).

    Examples:
        >>> from tensordict import TensorDict
        >>> tset(TensorDict({}, []), ("a", "b"), torch.zeros(1))["a", "b"]
        tensor([0.])
    """
    if isinstance(key, str):
        return fast_set(td, key, value)
    node = td
    for part in key[:-1]:
        child = fast_get(node, part)
        if child is None or isinstance(child, torch.Tensor):
            return td.set(key, value)
        node = child
    fast_set(node, key[-1], value)
    return td
