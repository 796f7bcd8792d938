"""Gymnasium spaces to gpusim specs, and the per-leaf numpy <-> torch converters.

The mapping (DESIGN.md section 3, TorchRL's documented choices):

=================  ==========================================================================
gymnasium space    spec
=================  ==========================================================================
``Box``            ``Bounded`` (``Unbounded`` when every bound is infinite); the Box dtype
``Discrete``       ``OneHot`` (int64), or ``Categorical`` with ``categorical_action_encoding``
``MultiDiscrete``  ``MultiOneHot``, or ``MultiCategorical`` with ``categorical_action_encoding``
``MultiBinary``    ``Binary`` (int8)
``Dict``           ``Composite`` with the same keys
``Tuple``          ``Composite`` with keys ``"0"``, ``"1"``, ...
``Text``           ``NonTensor`` (the string is carried as non-tensor data)
=================  ==========================================================================

Every spec carries the env batch dims in front. Conversion is planned once: a space becomes a
list of :class:`GymLeaf` (tensordict key, path into the gym structure, converters), so a step
runs one ``torch.from_numpy`` per leaf and no Python loop over the envs of a vector env.
``Discrete(n, start=s)`` values are shifted to ``[0, n)`` on the way in and back on the way out.

Examples:
    >>> import gymnasium as gym
    >>> spec, leaves = space_to_spec(gym.spaces.Discrete(3), batch_size=(4,), key=("action",))
    >>> spec
    OneHot(
        shape=torch.Size([4, 3]),
        space=CategoricalBox(n=3),
        device=cpu,
        dtype=torch.int64,
        domain=discrete)
    >>> leaves[0].to_numpy(spec.rand()).shape
    (4,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack

from gpusim.envs._fasttd import fast_get
from gpusim.envs.libs.gym_backend import import_gymnasium
from gpusim.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
)

__all__ = [
    "GymLeaf",
    "flat_multi_discrete",
    "space_to_spec",
    "is_image_space",
    "read_leaves",
    "write_actions",
    "spec_to_space",
    "spaces_of",
]

Key = tuple


@dataclass
class GymLeaf:
    """One leaf of a gym structure: where it lives in the tensordict and in the gym data.

    Attributes:
        key: the tensordict key (tuple).
        path: the keys/indices leading to the value inside the gym structure (dicts, tuples).
        to_torch: converts the (batched) numpy value to a tensor of the spec's shape.
        to_numpy: converts a tensor of the spec's shape to what the gym env expects.
        spec: the leaf spec.

    Examples:
        >>> import gymnasium as gym
        >>> space = gym.spaces.Dict(pos=gym.spaces.Box(-1, 1, (2,)), n=gym.spaces.Discrete(3))
        >>> _, leaves = space_to_spec(space, categorical_action_encoding=True)
        >>> [(leaf.key, leaf.path) for leaf in leaves]
        [(('observation', 'pos'), ('pos',)), (('observation', 'n'), ('n',))]
        >>> leaves[1].to_torch(np.int64(2)), leaves[1].to_numpy(torch.tensor(1))
        (tensor(2), np.int64(1))
    """

    key: Key
    path: tuple
    to_torch: Callable[[Any], Any]
    to_numpy: Callable[[torch.Tensor], Any]
    spec: TensorSpec


def spaces_of(space: Any) -> Any:
    """The ``spaces`` module of the library that defined ``space``: ``gymnasium.spaces``, or
    ``gym.spaces`` for a gym 0.26 space (same classes, same meaning).

    Examples:
        >>> import gymnasium as gym
        >>> spaces_of(gym.spaces.Discrete(2)).__name__
        'gymnasium.spaces'
    """
    if type(space).__module__.split(".")[0] == "gym":
        import gym

        return gym.spaces
    return import_gymnasium().spaces


def is_image_space(space: Any) -> bool:
    """Whether ``space`` looks like an image: a uint8 ``Box`` of shape ``(H, W, C)``, C in 1/3/4.

    Examples:
        >>> import gymnasium as gym
        >>> is_image_space(gym.spaces.Box(0, 255, (64, 64, 3), dtype=np.uint8))
        True
        >>> is_image_space(gym.spaces.Box(-1.0, 1.0, (4,)))
        False
    """
    return (
        isinstance(space, spaces_of(space).Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[-1] in (1, 3, 4)
    )


class _OneHotIndex:
    """One-hot (last dim ``n``) -> index. On CPU one product with ``arange(n)``: cheaper than
    ``argmax`` at large batch (no per-row reduction kernel); exact for one-hot inputs. On other
    devices ``argmax`` (CUDA has no integer matmul)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._aranges: dict = {}

    def __call__(self, value: torch.Tensor) -> torch.Tensor:
        if value.device.type != "cpu":  # no integer matmul on CUDA; argmax before the one copy back
            return value.argmax(-1)
        if value.dtype == torch.bool:
            value = value.to(torch.int64)
        key = (value.dtype, value.device)
        arange = self._aranges.get(key)
        if arange is None:
            arange = self._aranges[key] = torch.arange(self.n, dtype=value.dtype, device=value.device)
        idx = value @ arange
        return idx if idx.dtype == torch.int64 else idx.round().to(torch.int64)


def _numpy(value: torch.Tensor) -> np.ndarray:
    """``value`` as a numpy array: a view for CPU tensors, one device-to-host copy otherwise."""
    if not value.is_cpu:
        value = value.cpu()
    if value.requires_grad:
        value = value.detach()
    return value.numpy()


def _index_action(arr: np.ndarray, start: int) -> Any:
    """A ``Discrete`` action for the library: the index array shifted by ``start``; a single
    env's action (0-d) as a numpy integer, the type ``Discrete.sample()`` hands out. (gym 0.26's
    classic-control envs format ``repr(action)`` on every step: a 0-d array's repr costs about
    100 µs, a numpy integer's 1 µs.)"""
    if start:
        arr = arr + start
    return arr[()] if arr.ndim == 0 else arr


def _torch_dtype(np_dtype: Any) -> torch.dtype:
    try:
        return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype
    except TypeError as err:
        raise TypeError(f"the numpy dtype {np_dtype} has no torch equivalent") from err


# The converters are module-level functions bound with ``functools.partial`` (not closures), so
# the leaf plans, and the envs holding them, pickle (``pickle.dumps(GymEnv(...))``).


def _box_to_torch(np_dtype: Any, shape: tuple, torch_shape: torch.Size, copy: bool, value: Any) -> torch.Tensor:
    arr = np.asarray(value, dtype=np_dtype)
    if copy:
        arr = arr.copy()
    t = torch.from_numpy(arr)
    # ``view`` of a same-shape (often column-major) array still costs a stride computation
    return t if arr.shape == shape else t.view(torch_shape)


def _box_to_numpy(np_dtype: Any, value: torch.Tensor) -> np.ndarray:
    arr = _numpy(value)
    return arr if arr.dtype == np_dtype else arr.astype(np_dtype)


def _box(space, B, device, copy):
    shape = (*B, *space.shape)
    dtype = _torch_dtype(space.dtype)
    low = np.broadcast_to(space.low, space.shape)
    high = np.broadcast_to(space.high, space.shape)
    if np.isinf(low).all() and np.isinf(high).all():
        spec = Unbounded(shape, device=device, dtype=dtype)
    elif np.issubdtype(space.dtype, np.integer) and (np.isinf(low).any() or np.isinf(high).any()):
        spec = Unbounded(shape, device=device, dtype=dtype)
    else:
        low_t = torch.as_tensor(np.array(low, dtype=np.float64 if dtype.is_floating_point else space.dtype))
        high_t = torch.as_tensor(np.array(high, dtype=np.float64 if dtype.is_floating_point else space.dtype))
        spec = Bounded(
            low_t.to(dtype).expand(shape), high_t.to(dtype).expand(shape), shape=shape, device=device, dtype=dtype
        )
    np_dtype = space.dtype
    return spec, partial(_box_to_torch, np_dtype, shape, torch.Size(shape), copy), partial(_box_to_numpy, np_dtype)


def _index_to_torch(torch_shape: torch.Size, start: int, value: Any) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(value, dtype=np.int64)).view(torch_shape)
    return t - start if start else t


def _index_to_numpy(start: int, value: torch.Tensor) -> Any:
    return _index_action(_numpy(value), start)


def _one_hot_to_torch(torch_shape: torch.Size, start: int, n: int, value: Any) -> torch.Tensor:
    return torch.nn.functional.one_hot(_index_to_torch(torch_shape, start, value), n)


def _one_hot_to_numpy(index: _OneHotIndex, start: int, value: torch.Tensor) -> Any:
    return _index_action(_numpy(index(value)), start)


def _discrete(space, B, device, categorical):
    n = int(space.n)
    start = int(space.start)
    torch_shape = torch.Size(B)
    if categorical:
        spec = Categorical(n, shape=B, device=device, dtype=torch.int64)
        return spec, partial(_index_to_torch, torch_shape, start), partial(_index_to_numpy, start)
    spec = OneHot(n, shape=(*B, n), device=device, dtype=torch.int64)
    return spec, partial(_one_hot_to_torch, torch_shape, start, n), partial(_one_hot_to_numpy, _OneHotIndex(n), start)


def _multi_index_to_torch(torch_shape: torch.Size, start_t: torch.Tensor | None, value: Any) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(value, dtype=np.int64)).view(torch_shape)
    return t if start_t is None else t - start_t


def _multi_index_to_numpy(start: np.ndarray | None, value: torch.Tensor) -> np.ndarray:
    arr = value.detach().cpu().numpy()
    return arr if start is None else arr + start


def _multi_one_hot_to_torch(
    torch_shape: torch.Size, start_t: torch.Tensor | None, sizes: list, value: Any
) -> torch.Tensor:
    t = _multi_index_to_torch(torch_shape, start_t, value)
    return torch.cat([torch.nn.functional.one_hot(t[..., i], n) for i, n in enumerate(sizes)], -1)


def _multi_one_hot_to_numpy(sizes: list, start: np.ndarray | None, value: torch.Tensor) -> np.ndarray:
    index = torch.stack([chunk.argmax(-1) for chunk in value.split(sizes, -1)], -1)
    return _multi_index_to_numpy(start, index)


def _multi_discrete(space, B, device, categorical):
    nvec = np.asarray(space.nvec)
    start = np.asarray(space.start)
    if nvec.ndim != 1:
        raise ValueError(
            f"MultiDiscrete spaces with a multi-dimensional nvec (shape {nvec.shape}) are not supported; "
            "flatten the space in the gym env"
        )
    torch_shape = torch.Size((*B, len(nvec)))
    shifted = bool(np.any(start != 0))
    start_t = torch.as_tensor(start, dtype=torch.int64) if shifted else None
    start = start if shifted else None
    if categorical:
        spec = MultiCategorical(nvec.tolist(), shape=torch_shape, device=device, dtype=torch.int64)
        return spec, partial(_multi_index_to_torch, torch_shape, start_t), partial(_multi_index_to_numpy, start)
    spec = MultiOneHot(nvec.tolist(), shape=(*B, int(nvec.sum())), device=device, dtype=torch.int64)
    sizes = nvec.tolist()
    return (
        spec,
        partial(_multi_one_hot_to_torch, torch_shape, start_t, sizes),
        partial(_multi_one_hot_to_numpy, sizes, start),
    )


def _flat_to_torch(
    start: np.ndarray, strides_t: torch.Tensor, torch_shape: torch.Size, n: int | None, value: Any
) -> torch.Tensor:
    """Multi-index -> flat index (``n``: one-hot of ``n`` choices, bool; ``None``: the index)."""
    multi = torch.as_tensor(np.asarray(value, dtype=np.int64) - start)
    flat = (multi * strides_t).sum(-1).view(torch_shape)
    return flat if n is None else torch.nn.functional.one_hot(flat, n).bool()


def _flat_to_numpy(
    index: _OneHotIndex | None, strides: np.ndarray, nvec: np.ndarray, start: np.ndarray, value: torch.Tensor
) -> np.ndarray:
    flat = _numpy(value if index is None else index(value)).astype(np.int64, copy=False)
    return (flat[..., None] // strides) % nvec + start


def flat_multi_discrete(space: Any, batch_size: Sequence[int], device: Any, categorical: bool, key: Key) -> GymLeaf:
    """The action leaf of a ``MultiDiscrete`` space flattened to one choice among ``prod(nvec)``.

    Used for grid actions whose legal moves come as one mask of shape ``nvec`` (``(rows,
    cols)``): the spec is ``Categorical(prod(nvec))`` (``OneHot`` without
    ``categorical``, bool as in TorchRL), so the mask is one row of the spec's mask. Flat index
    ``i`` is sent to the gym env as the multi-index ``np.unravel_index(i, nvec)`` (plus the
    space's ``start``), row-major.

    Args:
        space: the ``MultiDiscrete`` space (1-D ``nvec``).
        batch_size: the env batch dims.
        device: the spec device.
        categorical: index (``Categorical``) or one-hot (``OneHot``) actions.
        key: the tensordict key of the action.

    Returns:
        The :class:`GymLeaf`.

    Examples:
        >>> import gymnasium as gym
        >>> leaf = flat_multi_discrete(gym.spaces.MultiDiscrete([2, 3]), (), None, True, ("action",))
        >>> leaf.spec.n, leaf.to_numpy(torch.tensor(4)), leaf.to_torch(np.array([1, 1]))
        (6, array([1, 1]), tensor(4))
    """
    nvec = np.asarray(space.nvec, dtype=np.int64)
    if nvec.ndim != 1:
        raise ValueError(f"flat_multi_discrete needs a 1-D nvec, got shape {nvec.shape}")
    start = np.asarray(space.start, dtype=np.int64)
    B = tuple(batch_size)
    n = int(nvec.prod())
    # row-major strides: flat = sum(index * stride)
    strides = np.concatenate([np.cumprod(nvec[::-1])[::-1][1:], [1]]).astype(np.int64)
    if categorical:
        spec = Categorical(n, shape=B, device=device, dtype=torch.int64)
        index = None
    else:
        spec = OneHot(n, shape=(*B, n), device=device, dtype=torch.bool)
        index = _OneHotIndex(n)
    to_torch = partial(_flat_to_torch, start, torch.as_tensor(strides), torch.Size(B), None if categorical else n)
    to_numpy = partial(_flat_to_numpy, index, strides, nvec, start)
    return GymLeaf(tuple(key), (), to_torch, to_numpy, spec)


def _binary_to_torch(torch_shape: torch.Size, copy: bool, value: Any) -> torch.Tensor:
    arr = np.asarray(value, dtype=np.int8)
    if copy:
        arr = arr.copy()
    return torch.from_numpy(arr).view(torch_shape)


def _binary_to_numpy(value: torch.Tensor) -> np.ndarray:
    return value.detach().cpu().numpy().astype(np.int8, copy=False)


def _multi_binary(space, B, device, copy):
    shape = (*B, *np.atleast_1d(space.n).tolist())
    spec = Binary(shape=shape, device=device, dtype=torch.int8)
    return spec, partial(_binary_to_torch, torch.Size(shape), copy), _binary_to_numpy


def _text_to_torch(batched: bool, device: torch.device | None, value: Any) -> Any:
    if batched:
        return NonTensorStack(*[_text_to_torch(False, device, v) for v in value], stack_dim=0)
    return NonTensorData(data=str(value), batch_size=torch.Size([]), device=device)


def _text_to_numpy(value: Any) -> Any:
    if isinstance(value, NonTensorStack):
        return tuple(value.tolist())
    return getattr(value, "data", value)


def _text(space, B, device):
    example = "".join(sorted(space.character_set))[: max(space.min_length, 1)] if space.min_length else ""
    spec = NonTensor(shape=B, device=device, example_data=example)
    # labelled with the device on the CPU (as the tensor leaves' tensordict); elsewhere the
    # device edge moves (and labels) the output
    host = spec.device if spec.device is not None and spec.device.type == "cpu" else None
    return spec, partial(_text_to_torch, len(B) > 0, host), _text_to_numpy


def space_to_spec(
    space: Any,
    *,
    batch_size: Sequence[int] = (),
    device: torch.device | str | None = None,
    categorical_action_encoding: bool = False,
    key: Key = ("observation",),
    copy: bool = False,
) -> tuple[TensorSpec, list[GymLeaf]]:
    """Converts a (single-env) gymnasium space to a spec with ``batch_size`` in front.

    Args:
        space: the gymnasium space of ONE env (``single_observation_space`` for vector envs).
        batch_size: the env batch dims prepended to every leaf.
        device: the spec device.
        categorical_action_encoding: ``Discrete``/``MultiDiscrete`` as ``Categorical``/
            ``MultiCategorical`` instead of one-hot.
        key: the tensordict key of the space (the keys of ``Dict``/``Tuple`` children nest under it).
        copy: copy numpy arrays before wrapping them (for envs that reuse their output buffers).

    Returns:
        ``(spec, leaves)``: a leaf spec (or ``Composite`` for ``Dict``/``Tuple``) and the leaf plan.

    Raises:
        TypeError: for spaces without a spec equivalent (``Graph``, ``Sequence``, ...), naming them.

    Examples:
        >>> import gymnasium as gym
        >>> spec, leaves = space_to_spec(gym.spaces.Box(-1.0, 1.0, (3,)), batch_size=(4,))
        >>> type(spec).__name__, spec.shape, leaves[0].key
        ('Bounded', torch.Size([4, 3]), ('observation',))
        >>> space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.MultiBinary(3)))
        >>> spec, _ = space_to_spec(space, key=("action",))
        >>> sorted(spec.keys()), type(spec["1"]).__name__
        (['0', '1'], 'Binary')
    """
    B = tuple(batch_size)
    leaves: list[GymLeaf] = []

    def build(sp, k: Key, path: tuple):
        spaces = spaces_of(sp)
        if isinstance(sp, spaces.Dict):
            children = {name: build(child, (*k, name), (*path, name)) for name, child in sp.spaces.items()}
            return Composite(children, shape=B, device=device)
        if isinstance(sp, spaces.Tuple):
            children = {str(i): build(child, (*k, str(i)), (*path, i)) for i, child in enumerate(sp.spaces)}
            return Composite(children, shape=B, device=device)
        if isinstance(sp, spaces.Box):
            spec, to_t, to_n = _box(sp, B, device, copy)
        elif isinstance(sp, spaces.Discrete):
            spec, to_t, to_n = _discrete(sp, B, device, categorical_action_encoding)
        elif isinstance(sp, spaces.MultiDiscrete):
            spec, to_t, to_n = _multi_discrete(sp, B, device, categorical_action_encoding)
        elif isinstance(sp, spaces.MultiBinary):
            spec, to_t, to_n = _multi_binary(sp, B, device, copy)
        elif isinstance(sp, spaces.Text):
            spec, to_t, to_n = _text(sp, B, device)
        else:
            raise TypeError(
                f"the gymnasium space {sp!r} (at key {k}) has no gpusim spec equivalent; supported: "
                "Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple, Text"
            )
        leaves.append(GymLeaf(k, path, to_t, to_n, spec))
        return spec

    spec = build(space, tuple(key), ())
    return spec, leaves


def read_leaves(leaves: Sequence[GymLeaf], data: Any, out: dict) -> dict:
    """Converts the gym ``data`` (nested dicts/tuples of arrays) into ``out``: a nested dict of
    tensors keyed like the leaves (ready for ``TensorDict``).

    Args:
        leaves: the leaf plan of the space (from :func:`space_to_spec`).
        data: an observation of the space.
        out: the dict to fill.

    Returns:
        ``out``.

    Examples:
        >>> import gymnasium as gym
        >>> space = gym.spaces.Dict(pos=gym.spaces.Box(-1, 1, (2,)), n=gym.spaces.Discrete(3))
        >>> _, leaves = space_to_spec(space, categorical_action_encoding=True)
        >>> read_leaves(leaves, {"pos": np.zeros(2, np.float32), "n": np.int64(1)}, {})
        {'observation': {'pos': tensor([0., 0.]), 'n': tensor(1)}}
    """
    for leaf in leaves:
        value = data
        for p in leaf.path:
            value = value[p]
        node = out
        for name in leaf.key[:-1]:
            node = node.setdefault(name, {})
        node[leaf.key[-1]] = leaf.to_torch(value)
    return out


def write_actions(leaves: Sequence[GymLeaf], tensordict: Any, space: Any) -> Any:
    """Builds the gym action (array, dict or tuple) from the tensordict, one conversion per leaf.

    Args:
        leaves: the leaf plan of the action space (from :func:`space_to_spec`).
        tensordict: the data holding the action entries.
        space: the action space.

    Returns:
        The action in the gym structure.

    Examples:
        >>> import gymnasium as gym
        >>> from tensordict import TensorDict
        >>> space = gym.spaces.Dict(move=gym.spaces.Discrete(3), jump=gym.spaces.MultiBinary(1))
        >>> _, leaves = space_to_spec(space, categorical_action_encoding=True, key=("action",))
        >>> td = TensorDict({"action": {"move": torch.tensor(2), "jump": torch.ones(1, dtype=torch.int8)}}, [])
        >>> write_actions(leaves, td, space)
        {'move': np.int64(2), 'jump': array([1], dtype=int8)}
    """
    if len(leaves) == 1 and not leaves[0].path:
        leaf = leaves[0]
        key = leaf.key
        value = fast_get(tensordict, key[0]) if len(key) == 1 else None
        return leaf.to_numpy(value if value is not None else tensordict.get(key))
    root: dict = {}
    for leaf in leaves:
        node = root
        for p in leaf.path[:-1]:
            node = node.setdefault(p, {})
        node[leaf.path[-1]] = leaf.to_numpy(tensordict.get(leaf.key))

    def assemble(sp, node):
        spaces = spaces_of(sp)
        if isinstance(sp, spaces.Dict):
            return {name: assemble(child, node[name]) for name, child in sp.spaces.items()}
        if isinstance(sp, spaces.Tuple):
            return tuple(assemble(child, node[i]) for i, child in enumerate(sp.spaces))
        return node

    return assemble(space, root)


def _row_bound(spec: Bounded, name: str, batch_dims: int, key: str) -> np.ndarray:
    """The ``low``/``high`` of one env (the first row), checked to be every row's."""
    bound = getattr(spec, name)
    row = bound[(0,) * batch_dims]
    if batch_dims and not bool((bound == row).all()):
        raise ValueError(
            f"the spec at {key} has a {name} that differs between envs; a gymnasium space holds one "
            f"{name} for every env (got {name}={bound.tolist()})"
        )
    return row.cpu().numpy()


def _multi_binary_space(spaces: Any, shape: tuple) -> Any:
    return spaces.MultiBinary(shape[0] if len(shape) == 1 else list(shape))


def spec_to_space(spec: TensorSpec, batch_dims: int = 0, key: str = "the root") -> Any:
    """Converts a spec to the gymnasium space of ONE env (dropping ``batch_dims`` leading dims).

    ``Bounded`` -> ``Box`` (the bounds of one env, which must be every env's), ``Unbounded`` ->
    ``Box`` with infinite bounds (the dtype's extremes for integers; ``MultiBinary`` for bool),
    ``Categorical`` -> ``Discrete`` (``MultiDiscrete`` when it has dims of its own), ``OneHot``
    -> ``Discrete`` (the index), ``MultiCategorical`` / ``MultiOneHot`` -> ``MultiDiscrete``,
    ``Binary`` -> ``MultiBinary``, ``NonTensor`` -> ``Text``, ``Composite`` -> ``Dict``.

    Args:
        spec: the spec (batch dims included).
        batch_dims: how many leading dims are batch dims.
        key: where the spec sits, named in errors.

    Raises:
        TypeError: a spec with no gymnasium space, naming it.
        ValueError: bounds that differ between the envs of the batch, naming the key.

    Examples:
        >>> spec_to_space(Categorical(4))
        Discrete(4)
        >>> spec_to_space(Categorical(9, shape=(8, 1)), batch_dims=1)
        MultiDiscrete([9])
    """
    gym = import_gymnasium()
    spaces = gym.spaces
    if isinstance(spec, Composite):
        return spaces.Dict(
            {k: spec_to_space(v, batch_dims, f"{key}/{k}" if key != "the root" else repr(k)) for k, v in spec.items()}
        )
    shape = tuple(spec.shape[batch_dims:])
    if isinstance(spec, Categorical):
        return spaces.Discrete(spec.n) if not shape else spaces.MultiDiscrete(np.full(shape, spec.n))
    if isinstance(spec, OneHot):
        lead = shape[:-1]
        return spaces.Discrete(spec.n) if not lead else spaces.MultiDiscrete(np.full(lead, spec.n))
    if isinstance(spec, MultiCategorical):  # nvec: a tensor of the spec shape
        return spaces.MultiDiscrete(spec.nvec[(0,) * batch_dims].cpu().numpy().astype(np.int64))
    if isinstance(spec, MultiOneHot):
        nvec = np.asarray(list(spec.nvec), dtype=np.int64)
        lead = shape[:-1]
        return spaces.MultiDiscrete(np.broadcast_to(nvec, (*lead, len(nvec))).copy() if lead else nvec)
    if isinstance(spec, Binary):
        return _multi_binary_space(spaces, shape)
    if isinstance(spec, NonTensor):
        return spaces.Text(max_length=1024)
    np_dtype = torch.zeros((), dtype=spec.dtype).numpy().dtype
    if isinstance(spec, Bounded):
        low = _row_bound(spec, "low", batch_dims, key)
        high = _row_bound(spec, "high", batch_dims, key)
        return spaces.Box(low, high, shape=shape, dtype=np_dtype)
    if isinstance(spec, Unbounded):
        if spec.dtype == torch.bool:
            return _multi_binary_space(spaces, shape)
        if not spec.dtype.is_floating_point:
            info = np.iinfo(np_dtype)
            return spaces.Box(info.min, info.max, shape=shape, dtype=np_dtype)
        return spaces.Box(-np.inf, np.inf, shape=shape, dtype=np_dtype)
    raise TypeError(f"no gymnasium space for the spec {type(spec).__name__} at {key}")
