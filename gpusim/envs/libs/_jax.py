"""The JAX edge of the Brax and Jumanji wrappers: pytrees <-> nested tensordict sources through
DLPack, planned once per pytree structure.

A JAX simulator's state is a pytree (a dataclass of arrays). :class:`TreePlan` flattens an
example once (key paths become nested tensordict keys: ``state.pipeline_state.q`` ->
``("pipeline_state", "q")``) and then converts every leaf with ``torch.from_dlpack`` /
``jax.dlpack.from_dlpack``: no copy where both sides live on the same device (the CPU here, a
GPU when JAX and torch share it); otherwise the leaf is copied to the host once. ``uint32``
leaves (JAX's PRNG keys) are carried as ``int32`` bit patterns, since torch's specs have no
unsigned 32-bit type; the bits are restored on the way back. Leading dims are the env batch:
leaves travel flat (``(N, ...)``) to the jitted functions and as ``(*batch_size, ...)`` views in
torch.

Examples:
    >>> import jax.numpy as jnp
    >>> tree = {"pos": jnp.zeros((4, 3)), "key": jnp.zeros((4, 2), dtype=jnp.uint32)}
    >>> plan = TreePlan(tree, torch.Size([4]))
    >>> src = plan.to_torch(tree)
    >>> src["pos"].shape, src["key"].dtype
    (torch.Size([4, 3]), torch.int32)
    >>> back = plan.to_jax(src)
    >>> back["key"].dtype
    dtype('uint32')
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs._wrapper import LibraryWrapper
from gpusim.specs import Categorical, Composite, Unbounded

__all__ = ["TreePlan", "Frame", "LastState", "JaxWrapper", "import_jax", "to_torch", "to_jax", "nested_td"]


#: JAX's switch for taking most of a GPU's memory at its first use.
JAX_PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"


def share_gpu_with_torch() -> None:
    """Turns JAX's GPU memory preallocation off unless the user set ``XLA_PYTHON_CLIENT_PREALLOCATE``.

    JAX takes 75 % of a GPU's memory at its first computation by default. In gpusim JAX shares
    the card with torch (the Brax and Jumanji wrappers, the JAX peers of ``gpusim compare``),
    and a preallocating JAX leaves torch, and every other process on the card, out of memory.
    Takes effect when called before JAX's first computation in the process (as
    :func:`import_jax` does); a value the user set is kept.

    Examples:
        >>> import os
        >>> saved = os.environ.pop(JAX_PREALLOCATE, None)
        >>> share_gpu_with_torch(); os.environ[JAX_PREALLOCATE]
        'false'
        >>> os.environ[JAX_PREALLOCATE] = "true"  # the user's choice stays
        >>> share_gpu_with_torch(); os.environ[JAX_PREALLOCATE]
        'true'
        >>> _ = os.environ.pop(JAX_PREALLOCATE) if saved is None else os.environ.update({JAX_PREALLOCATE: saved})
    """
    os.environ.setdefault(JAX_PREALLOCATE, "false")


def import_jax(what: str, extra: str) -> Any:
    """Imports jax, raising an ``ImportError`` that names the package to install; JAX then
    allocates GPU memory as it needs it (:func:`share_gpu_with_torch`)."""
    share_gpu_with_torch()
    return import_optional("jax", "jax", extra=extra, what=what)


def nested_td(source: dict, batch_size: torch.Size, device: torch.device | None = None) -> Any:
    """A nested dict of tensors as nested tensordicts, every level with ``batch_size`` (and the
    device label ``device``, for tensors already there).

    Examples:
        >>> nested_td({"a": {"b": torch.zeros(2, 3)}}, torch.Size([2]))["a"].batch_size
        torch.Size([2])
    """
    from gpusim.envs._fasttd import new_td

    return new_td(
        {k: nested_td(v, batch_size, device) if isinstance(v, dict) else v for k, v in source.items()},
        batch_size,
        device,
    )


def _path_name(entry: Any) -> str:
    for attr in ("name", "key", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def to_torch(array: Any) -> torch.Tensor:
    """A JAX array as a tensor (DLPack: no copy on a shared device).

    Examples:
        >>> import jax.numpy as jnp
        >>> to_torch(jnp.ones(2)).tolist()  # (on the GPU where JAX has one)
        [1.0, 1.0]
    """
    if array.dtype == np.uint32:
        return torch.from_dlpack(array).view(torch.int32)
    try:
        return torch.from_dlpack(array)
    except (RuntimeError, TypeError, BufferError):  # a dtype or layout DLPack does not carry
        return torch.from_numpy(np.array(array))


def to_jax(tensor: torch.Tensor, uint32: bool = False) -> Any:
    """A tensor as a JAX array (DLPack: no copy on a shared device; CUDA tensors stay there when
    JAX has a GPU, otherwise they are copied to the host).

    Examples:
        >>> to_jax(torch.arange(3)).tolist()
        [0, 1, 2]
    """
    import jax

    if tensor.requires_grad:
        tensor = tensor.detach()
    if tensor.device.type != "cpu" and jax.default_backend() == "cpu":
        tensor = tensor.cpu()
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    if uint32:
        tensor = tensor.view(torch.uint32) if tensor.dtype == torch.int32 else tensor
    try:
        return jax.dlpack.from_dlpack(tensor)
    except (RuntimeError, TypeError, BufferError):
        return jax.numpy.asarray(tensor.cpu().numpy())


class TreePlan:
    """The conversion plan of one pytree structure with batch dims ``batch_size`` in front.

    Args:
        example: a pytree of arrays whose leaves have ``batch_size`` leading dims.
        batch_size: the env batch dims.
    """

    def __init__(self, example: Any, batch_size: torch.Size) -> None:
        import jax

        self.batch_size = torch.Size(batch_size)
        self.nb = len(self.batch_size)
        self.numel = int(np.prod(self.batch_size)) if self.nb else 1
        with_path, self.treedef = jax.tree_util.tree_flatten_with_path(example)
        self.keys: list[tuple] = [tuple(_path_name(e) for e in path) for path, _ in with_path]
        self.uint32 = [leaf.dtype == np.uint32 for _, leaf in with_path]
        self.shapes = [tuple(leaf.shape[self.nb :]) for _, leaf in with_path]
        self.dtypes = [to_torch(leaf[(0,) * self.nb] if self.nb else leaf).dtype for _, leaf in with_path]

    def spec(self, device: torch.device) -> Composite:
        """The ``Composite`` of the tree (``Unbounded`` leaves; ``Categorical(2)`` for bools)."""
        B = self.batch_size
        spec = Composite(shape=B, device=device)
        for key, shape, dtype in zip(self.keys, self.shapes, self.dtypes):
            node = spec
            for part in key[:-1]:
                if part not in node.keys():
                    node[part] = Composite(shape=B, device=device)
                node = node[part]
            if dtype == torch.bool:
                node[key[-1]] = Categorical(2, shape=(*B, *shape), dtype=torch.bool, device=device)
            else:
                node[key[-1]] = Unbounded((*B, *shape), dtype=dtype, device=device)
        return spec

    def leaves_to_torch(self, leaves: list) -> list[torch.Tensor]:
        """Flat JAX leaves (``(N, ...)``) -> tensors shaped ``(*batch_size, ...)``."""
        B = self.batch_size
        return [to_torch(leaf).reshape(*B, *shape) for leaf, shape in zip(leaves, self.shapes)]

    def to_torch(self, tree: Any) -> dict:
        """The tree as a nested dict of tensors (keys from the paths)."""
        import jax

        return self.nest(self.leaves_to_torch(jax.tree_util.tree_leaves(tree)))

    def nest(self, tensors: list) -> dict:
        """Tensors in leaf order as a nested dict keyed by the leaves' paths."""
        out: dict = {}
        for key, value in zip(self.keys, tensors):
            node = out
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        return out

    def leaves_from(self, source: Any) -> list[torch.Tensor]:
        """The tensors of a nested dict / tensordict, in the tree's leaf order."""
        out = []
        for key in self.keys:
            node = source
            for part in key:
                node = node[part]
            out.append(node)
        return out

    def leaves_to_jax(self, tensors: list[torch.Tensor]) -> list:
        """Tensors ``(*batch_size, ...)`` -> flat JAX leaves ``(N, ...)``."""
        n = self.numel
        return [
            to_jax(t.reshape(n, *shape) if self.nb != 1 else t, u)
            for t, shape, u in zip(tensors, self.shapes, self.uint32)
        ]

    def to_jax(self, source: Any) -> Any:
        """A nested dict / tensordict of tensors back to the pytree (flat batch)."""
        return self.treedef.unflatten(self.leaves_to_jax(self.leaves_from(source)))


MAX_PACKED_BYTES = 32 << 10
"""Arrays larger than this cross in a buffer of their own: a DLPack conversion costs about the
same for any size (tens of microseconds on the CPU), a copy into the concatenation grows with the
bytes (measured with Brax ``fast`` at 1024 envs, 4-16 KiB leaves: packed; Jumanji Snake at 256
envs, 150-740 KiB grids: alone)."""


class Frame:
    """A fixed list of arrays as one flat buffer per dtype: a step's data crosses the JAX/torch
    boundary with one DLPack conversion per dtype and direction instead of one per pytree leaf
    (a DLPack import into JAX costs tens of microseconds per array on the CPU). Arrays larger
    than ``max_packed_bytes`` travel as buffers of their own (flattened, not copied).

    Inside a jitted function :meth:`pack` concatenates the flattened arrays of each dtype (no
    bitcasts: on XLA's CPU backend a concatenation is cheaper than returning the arrays one by
    one) and :meth:`unpack` slices them back; on the torch side :meth:`to_torch` hands out
    views of those buffers (``uint32`` as ``int32`` bits, like :func:`to_torch`) and
    :meth:`from_torch` packs tensors into new buffers for the way back (slots past the given
    tensors are zeros).

    Args:
        structs: ``(shape, numpy dtype)`` of every array, in order.
        views: the torch shape of every array (default: its shape; same number of elements).
        max_packed_bytes: the largest array packed into a shared buffer.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> frame = Frame([((2, 3), np.float32), ((2,), np.bool_), ((2, 2), np.uint32), ((2,), np.float32)])
        >>> arrays = [jnp.ones((2, 3)), jnp.array([True, False]), jnp.full((2, 2), 7, jnp.uint32), jnp.zeros(2)]
        >>> buffers = jax.jit(frame.pack)(arrays)
        >>> len(buffers)  # one per dtype
        3
        >>> obs, flag, key, reward = frame.to_torch(buffers)
        >>> obs.sum().item(), flag.tolist(), key.dtype, reward.shape
        (6.0, [True, False], torch.int32, torch.Size([2]))
        >>> back = jax.jit(frame.unpack)(frame.from_torch([obs, flag, key, reward]))
        >>> back[1].tolist(), back[2].dtype
        ([True, False], dtype('uint32'))
    """

    def __init__(
        self,
        structs: list[tuple[tuple, Any]],
        views: list[tuple] | None = None,
        max_packed_bytes: int = MAX_PACKED_BYTES,
    ) -> None:
        self.views = [tuple(v) for v in views] if views is not None else [tuple(shape) for shape, _ in structs]
        self.dtypes: list[np.dtype] = []  # one buffer per distinct dtype (in order of first use), then the large arrays
        sizes: list[int] = []
        self.slots = []  # (buffer index, offset, size, shape)
        large = []
        for k, (shape, dtype) in enumerate(structs):
            dtype = np.dtype(dtype)
            size = int(np.prod(shape, dtype=np.int64))
            if size * dtype.itemsize > max_packed_bytes:
                large.append((k, size, tuple(shape), dtype))
                self.slots.append(None)
                continue
            if dtype not in self.dtypes:
                self.dtypes.append(dtype)
                sizes.append(0)
            b = self.dtypes.index(dtype)
            self.slots.append((b, sizes[b], size, tuple(shape)))
            sizes[b] += size
        self.n_packed = len(self.dtypes)
        for k, size, shape, dtype in large:  # a buffer of its own: no copy into a concatenation
            self.slots[k] = (len(self.dtypes), 0, size, shape)
            self.dtypes.append(dtype)
            sizes.append(size)
        self.sizes = sizes
        self.torch_dtypes = [
            torch.int32 if d == np.uint32 else torch.from_numpy(np.zeros((), d)).dtype for d in self.dtypes
        ]

    @classmethod
    def of(cls, structs: list, batch_size: torch.Size) -> Frame:
        """The frame of flat-batch array structs (``.shape``, ``.dtype``: arrays or
        ``jax.ShapeDtypeStruct``) whose torch views have ``batch_size`` in front."""
        views = [(*batch_size, *s.shape[1:]) for s in structs]
        return cls([(tuple(s.shape), s.dtype) for s in structs], views)

    def pack(self, arrays: list) -> tuple:
        """The arrays as one flat buffer per dtype (traced: call inside ``jax.jit``)."""
        import jax
        import jax.numpy as jnp

        # the barrier keeps XLA from fusing the producers with the concatenation: the values
        # are computed exactly as by the same function without the packing
        arrays = jax.lax.optimization_barrier(list(arrays))
        parts: list[list] = [[] for _ in self.dtypes]
        for (b, _, size, _), array in zip(self.slots, arrays):
            if size or b >= self.n_packed:
                parts[b].append(array.astype(self.dtypes[b]).reshape(-1))
        return tuple(
            (p[0] if len(p) == 1 else jnp.concatenate(p)) if p else jnp.zeros(0, dtype)
            for p, dtype in zip(parts, self.dtypes)
        )

    def unpack(self, buffers: tuple, count: int | None = None) -> list:
        """The first ``count`` arrays (default all) of the buffers (traced: call inside ``jax.jit``)."""
        import jax

        return jax.lax.optimization_barrier(
            [buffers[b][o : o + n].reshape(shape) for b, o, n, shape in self.slots[:count]]
        )

    def to_torch(self, buffers: tuple) -> list[torch.Tensor]:
        """Views of the JAX buffers (one DLPack conversion per buffer)."""
        data = [to_torch(buf) for buf in buffers]
        return [data[b][o : o + n].view(view) for (b, o, n, _), view in zip(self.slots, self.views)]

    def from_torch(self, tensors: list[torch.Tensor]) -> tuple:
        """New buffers holding ``tensors`` (the first slots; the others zero) as JAX arrays, on
        the first tensor's device (:func:`to_jax` moves them to the host where JAX has no GPU)."""
        device = tensors[0].device if tensors else torch.device("cpu")
        data: list = [
            torch.zeros(n, dtype=t, device=device) for n, t in zip(self.sizes[: self.n_packed], self.torch_dtypes)
        ]
        data += [None] * (len(self.dtypes) - self.n_packed)
        for (b, o, n, _), tensor in zip(self.slots, tensors):
            if b < self.n_packed:
                data[b][o : o + n].copy_(tensor.detach().reshape(-1))
            else:  # a large array travels alone (DLPack: no copy where it is contiguous)
                data[b] = tensor.detach().reshape(-1)
        for b in range(self.n_packed, len(self.dtypes)):  # arrays past the given tensors: zeros
            if data[b] is None:
                data[b] = torch.zeros(self.sizes[b], dtype=self.torch_dtypes[b], device=device)
        return tuple(to_jax(d, dtype == np.uint32) for d, dtype in zip(data, self.dtypes))


class LastState:
    """The JAX leaves behind the tensors a step last handed out.

    In a rollout the next step reads back exactly the state tensors the previous step wrote (the
    same objects, unmodified): those need no conversion, the JAX arrays they alias are reused.
    Any other tensor, or one modified in place since (its version counter moved), is converted.

    Examples:
        >>> import jax.numpy as jnp
        >>> cache = LastState()
        >>> arrays = [jnp.zeros(2)]
        >>> tensors = [to_torch(a) for a in arrays]
        >>> cache.put(tensors, arrays)
        >>> cache.get(tensors) is arrays
        True
        >>> tensors[0].add_(1.0) is not None and cache.get(tensors) is None  # modified: converted again
        True
    """

    __slots__ = ("tensors", "versions", "leaves")

    def __init__(self) -> None:
        self.tensors: list = []
        self.versions: list = []
        self.leaves: list | None = None

    def put(self, tensors: list[torch.Tensor], leaves: list) -> None:
        """Remembers ``tensors`` (as handed out) and the JAX ``leaves`` they alias."""
        self.tensors = list(tensors)
        self.versions = [t._version for t in tensors]
        self.leaves = leaves

    def get(self, tensors: list[torch.Tensor]) -> list | None:
        """The JAX leaves when ``tensors`` are the remembered ones, unmodified; else ``None``."""
        if self.leaves is None or len(tensors) != len(self.tensors):
            return None
        for t, mine, version in zip(tensors, self.tensors, self.versions):
            if t is not mine or t._version != version:
                return None
        return self.leaves


class JaxWrapper(LibraryWrapper):
    """What the JAX simulator wrappers share: the env key (seeded by ``seed``/``set_seed``, split
    once per reset into one key per row), the flat batch size ``_n`` of the jitted vmapped
    functions, and the :class:`LastState` of the last step. The env is stateless: its state
    travels in the tensordict.
    """

    functional_step = True

    def _init_jax(self, env: Any, seed: int | None) -> Any:
        """Stores ``env`` and the JAX bookkeeping; returns the jax module."""
        import jax

        self._wrap(env)
        self.__dict__["_jax"] = jax
        self.__dict__["_key"] = jax.random.PRNGKey(0 if seed is None else int(seed))
        if seed is not None:  # the constructor's seed keys rollout()'s random actions, as set_seed does
            from gpusim.envs.random_actions import note_seed

            note_seed(self, int(seed))
        self.__dict__["_last"] = LastState()
        self.__dict__["_n"] = int(np.prod(self.batch_size)) if len(self.batch_size) else 1
        self.__dict__["_pack"] = True
        return jax

    def _set_packed(self, packed: bool) -> None:
        """Chooses the transfer: one :class:`Frame` per step (default) or one DLPack conversion
        per pytree leaf (the reference path, kept for gradients and parity tests)."""
        self.__dict__["_pack"] = bool(packed)
        self.__dict__["_last"] = LastState()

    def _row_keys(self) -> Any:
        """One fresh key per row (the env key moves on), committed to JAX's device like every
        array that comes in through DLPack."""
        jax = self._jax
        key, sub = jax.random.split(self._key)
        self.__dict__["_key"] = key
        return jax.device_put(jax.random.split(sub, self._n), jax.devices()[0])

    def _batched(self, fn: Any) -> Any:
        """``jax.jit(jax.vmap(fn))`` whose outputs are strongly typed.

        XLA compiles a function again for inputs that differ in weak typing or in being committed
        to a device. Every input of these functions is committed (DLPack arrays, the committed
        keys, and the outputs of calls on committed inputs) and every output strongly typed, so
        each compiles once whether its state comes from a reset, a step or torch.
        """
        jax = self._jax
        convert = jax.lax.convert_element_type

        def run(*args: Any) -> Any:
            return jax.tree_util.tree_map(lambda v: convert(v, v.dtype), jax.vmap(fn)(*args))

        return jax.jit(run)

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            raise ValueError(f"{type(self).__name__}.set_seed needs an integer seed (JAX keys), got None")
        self.__dict__["_key"] = self._jax.random.PRNGKey(int(seed))
