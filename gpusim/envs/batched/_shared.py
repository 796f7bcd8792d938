"""Buffers and key plans of a batched env, built once from the workers' metadata.

A batched env exchanges data with its workers through three buffers of batch
``[num_workers, *sub_batch]``, allocated from the worker specs (in shared memory for
``ParallelEnv``):

* ``inputs``: what the main process writes before a command: the action and state entries
  and one ``"_reset"`` mask per done level;
* ``reset_out``: what workers write on reset: observations, done flags and state;
* ``next_out``: what workers write on step: the ``"next"`` entries.

Every buffer is read and written leaf by leaf through fixed key lists, with one
``torch._foreach_copy_`` per worker and direction; worker tensordicts are rebuilt from leaf views
with a prebuilt :class:`TDBuilder` (no per-step key discovery).

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.envs.batched.metadata import get_env_metadata
    >>> plan = KeyPlan.from_metadata(get_env_metadata(CartPoleEnv))
    >>> plan.action_keys, plan.state_keys
    (['action'], ['state'])
    >>> buffers = Buffers.allocate(plan, get_env_metadata(CartPoleEnv), 2, share_memory=False)
    >>> buffers.next_out["observation"].shape
    torch.Size([2, 4])
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase, is_non_tensor, is_tensor_collection

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get, inner, is_plain, new_td
from gpusim.envs._keys import DoneLevel, NestedKey
from gpusim.envs.batched.metadata import EnvMetaData

__all__ = [
    "KeyPlan",
    "Buffers",
    "FileBuffers",
    "FlatLayout",
    "TDBuilder",
    "copy_leaves",
    "heterogeneous_stack",
    "leaves",
    "maybe_leaves",
    "nontensor_keys",
]


def _tensor_keys(td: TensorDictBase) -> list[NestedKey]:
    """The tensor leaves of ``td``, minus those inside entries carried whole (see
    :func:`_carried_whole`)."""
    out: list = []

    def walk(node: TensorDictBase, prefix: tuple) -> None:
        for key, value in node.items():
            if isinstance(value, torch.Tensor):
                out.append(_keys.unravel((*prefix, key)))
            elif isinstance(value, TensorDictBase) and not is_non_tensor(value) and not _carried_whole(value):
                walk(value, (*prefix, key))

    walk(td, ())
    return out


def nontensor_keys(td: TensorDictBase) -> list[NestedKey]:
    """The keys of the non-tensor leaves (``NonTensorData``/``NonTensorStack``) of ``td``.

    Examples:
        >>> td = TensorDict({"a": torch.zeros(2)}, [2])
        >>> td.set_non_tensor(("b", "c"), "text")["a"].shape
        torch.Size([2])
        >>> nontensor_keys(td)
        [('b', 'c')]
    """
    out: list = []

    def walk(node: TensorDictBase, prefix: tuple) -> None:
        for key, value in node.items():
            if is_non_tensor(value) or _carried_whole(value):
                out.append(_keys.unravel((*prefix, key)))
            elif isinstance(value, TensorDictBase):
                walk(value, (*prefix, key))

    walk(td, ())
    return out


def _carried_whole(value) -> bool:
    """An entry no buffer can hold, that travels whole with the commands and answers: a
    tensorclass holding non-tensor data (e.g. a chat history whose length changes every step),
    or a lazy stack of heterogeneous members (entries whose shapes or keys differ from one
    stacked member to the next, e.g. agents with observations of different sizes)."""
    if isinstance(value, LazyStackedTensorDict):
        return heterogeneous_stack(value)
    if isinstance(value, TensorDictBase) or not is_tensor_collection(value):
        return False
    return any(is_non_tensor(v) for _, v in value.items(True, False))


def heterogeneous_stack(stack: LazyStackedTensorDict) -> bool:
    """Whether the members of a lazy stack differ in their keys or leaf shapes (no dense tensor
    can hold its entries).

    Examples:
        >>> from tensordict import LazyStackedTensorDict
        >>> a, b = TensorDict({"x": torch.zeros(3)}, []), TensorDict({"x": torch.zeros(2)}, [])
        >>> heterogeneous_stack(LazyStackedTensorDict.lazy_stack([a, b])), heterogeneous_stack(LazyStackedTensorDict.lazy_stack([a, a]))
        (True, False)
    """
    signatures = set()
    for member in stack.tensordicts:
        if isinstance(member, LazyStackedTensorDict) and heterogeneous_stack(member):
            return True
        signatures.add(
            tuple(sorted((str(k), tuple(v.shape)) for k, v in member.items(True, True) if isinstance(v, torch.Tensor)))
        )
        if len(signatures) > 1:
            return True
    return False


def _covering(key: NestedKey, carried: Sequence[NestedKey]) -> NestedKey | None:
    """The entry of ``carried`` that is ``key`` or encloses it (``None``: none)."""
    parts = key if isinstance(key, tuple) else (key,)
    for entry in carried:
        e = entry if isinstance(entry, tuple) else (entry,)
        if parts[: len(e)] == e:
            return entry
    return None


@dataclass
class KeyPlan:
    """The fixed key lists a batched env and its workers exchange (worker level).

    Attributes:
        action_keys: action leaves.
        state_keys: state leaves (inputs other than actions).
        observation_keys: observation leaves (step inputs too: envs may read them).
        input_keys: ``action_keys + state_keys + observation_keys``: what a step may read.
        reset_mask_keys: one ``"_reset"`` key per done level, root first.
        reset_out_keys: leaves a reset writes (observation, done and state entries).
        next_keys: leaves a step writes under ``"next"``.
        done_levels: the worker's done levels.
        input_nontensor_keys / reset_out_nontensor_keys / next_nontensor_keys: the non-tensor
            entries of the inputs and outputs (no buffer holds them: they travel with the
            commands and answers).
    """

    action_keys: list
    state_keys: list
    observation_keys: list
    input_keys: list
    reset_mask_keys: list
    reset_out_keys: list
    next_keys: list
    done_levels: list
    input_nontensor_keys: list = field(default_factory=list)
    reset_out_nontensor_keys: list = field(default_factory=list)
    next_nontensor_keys: list = field(default_factory=list)

    @classmethod
    def from_metadata(cls, meta: EnvMetaData) -> KeyPlan:
        """Builds the plan from the worker :class:`EnvMetaData`."""
        action_keys = _keys.leaf_keys(meta.input_spec["full_action_spec"])
        state_keys = _keys.leaf_keys(meta.input_spec["full_state_spec"])
        observation_keys = _keys.leaf_keys(meta.output_spec["full_observation_spec"])
        levels = _keys.done_levels(meta.output_spec["full_done_spec"], meta.batch_size)
        fake = meta.tensordict
        root = fake.exclude("next")
        # an action that is also an observation (a primed initial action) is a reset output too
        not_outputs = set(action_keys) - set(observation_keys)
        root_keys = [k for k in _tensor_keys(root) if k not in not_outputs]
        next_keys = _tensor_keys(fake.get("next"))
        root_nontensor = nontensor_keys(root)
        inputs = _keys.exclusive([*action_keys, *state_keys, *observation_keys])
        input_nontensor = []
        for k in inputs:  # spec leaves inside a non-tensor entry travel with that entry
            entry = _covering(k, root_nontensor)
            if entry is not None and entry not in input_nontensor:
                input_nontensor.append(entry)
        return cls(
            action_keys=action_keys,
            state_keys=[k for k in state_keys if _covering(k, root_nontensor) is None],
            observation_keys=observation_keys,
            input_keys=[k for k in inputs if _covering(k, root_nontensor) is None],
            reset_mask_keys=[level.reset_key for level in levels],
            reset_out_keys=root_keys,
            next_keys=next_keys,
            done_levels=levels,
            input_nontensor_keys=input_nontensor,
            reset_out_nontensor_keys=[k for k in root_nontensor if k not in set(action_keys)],
            next_nontensor_keys=nontensor_keys(fake.get("next")),
        )

    def required_inputs(self) -> tuple[int, ...]:
        """Indices in :attr:`input_keys` of the action and state entries: what every step sends
        (the other entries, observations, are optional inputs).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.envs.batched.metadata import get_env_metadata
            >>> plan = KeyPlan.from_metadata(get_env_metadata(CartPoleEnv))
            >>> plan.input_keys, plan.required_inputs()
            (['action', 'state', 'observation'], (0, 1))
        """
        needed = {*self.action_keys, *self.state_keys}
        return tuple(i for i, k in enumerate(self.input_keys) if k in needed)


def _done_shape(meta: EnvMetaData, level: DoneLevel) -> torch.Size:
    return meta.tensordict.get(level.keys[0]).shape


_ALIGN = 64


class FlatLayout:
    """Where each leaf of a buffer lives in its single byte block (64-byte aligned).

    One block per buffer means one shared-memory segment per buffer, and one copy to move a
    whole buffer to another device.

    Examples:
        >>> layout = FlatLayout([(torch.Size([2, 3]), torch.float32), (torch.Size([2]), torch.bool)])
        >>> a, b = layout.views(layout.allocate(torch.device("cpu"), share_memory=False))
        >>> a.shape, b.dtype
        (torch.Size([2, 3]), torch.bool)
    """

    def __init__(self, shapes_dtypes: Sequence[tuple[torch.Size, torch.dtype]]) -> None:
        self.entries = []
        total = 0
        for shape, dtype in shapes_dtypes:
            nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
            self.entries.append((total, nbytes, dtype, torch.Size(shape)))
            total += -(-max(nbytes, 1) // _ALIGN) * _ALIGN
        self.nbytes = max(total, _ALIGN)

    def allocate(self, device: torch.device, share_memory: bool, path: str | None = None) -> torch.Tensor:
        """A zero-filled byte block (in shared memory when asked, on the CPU; in the file
        ``path``, memory-mapped and shared between processes, when given)."""
        if path is not None:
            if torch.device(device).type != "cpu":
                raise ValueError(f"memory-mapped buffers live on the CPU; the workers' device is {device}")
            return torch.from_file(path, shared=True, size=self.nbytes, dtype=torch.uint8)
        flat = torch.zeros(self.nbytes, dtype=torch.uint8, device=device)
        if share_memory and flat.device.type == "cpu":
            flat.share_memory_()
        return flat

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """The typed leaf views of a block (any device)."""
        return [flat[o : o + n].view(dtype).view(shape) for o, n, dtype, shape in self.entries]


def _buffer(
    template: TensorDictBase,
    keys: Sequence[NestedKey],
    tensors: Sequence[torch.Tensor],
    share_memory: bool,
    path: str | None = None,
) -> tuple[TensorDict, torch.Tensor, FlatLayout]:
    """A tensordict with the structure of ``template`` whose leaves ``keys`` are fresh zeros
    shaped like ``tensors``, all in one (shared, or memory-mapped in ``path``) byte block;
    returns it with the block and its layout."""
    device = tensors[0].device if tensors else torch.device("cpu")
    layout = FlatLayout([(t.shape, t.dtype) for t in tensors])
    flat = layout.allocate(device, share_memory, path)
    return _fill(template.empty(recurse=True), keys, layout.views(flat)), flat, layout


def _fill(structure: TensorDictBase, keys: Sequence[NestedKey], views: Sequence[torch.Tensor]) -> TensorDictBase:
    for key, value in zip(keys, views):
        structure.set(key, value)
    return structure


@dataclass
class FileBuffers:
    """Memory-mapped buffers as a worker process receives them: each buffer's file, layout,
    structure and keys (the worker maps the files itself, whatever its start method)."""

    files: list  # [(path, FlatLayout, empty structure, keys)] for inputs, reset_out, next_out

    def open(self, plan: KeyPlan) -> Buffers:
        """Maps the files and wraps them as :class:`Buffers`."""
        tds = []
        for path, layout, structure, keys in self.files:
            flat = layout.allocate(torch.device("cpu"), False, path)
            tds.append(_fill(structure.clone(), keys, layout.views(flat)))
        return Buffers.from_tensordicts(plan, *tds)


class TDBuilder:
    """Builds a tensordict from a fixed list of leaf keys and tensors, fast.

    The nested structure (and the batch size of every nested node, e.g. ``(*B, n_agents)`` for
    an agent group) is read once from a template tensordict.

    Examples:
        >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2])
        >>> TDBuilder(td, ["a"])([torch.ones(2, 3)])["a"].sum().item()
        6.0
    """

    def __init__(self, template: TensorDictBase, keys: Sequence[NestedKey]) -> None:
        self.keys = [_keys.unravel(k) for k in keys]
        self.batch_size = template.batch_size
        self.device = template.device
        self.flat = all(isinstance(k, str) for k in self.keys)
        # tree: {name: int (leaf index) | (batch_size, subtree)}
        self._tree: dict = {}
        for i, key in enumerate(self.keys):
            parts = _keys.as_tuple(key)
            node = self._tree
            for depth, part in enumerate(parts[:-1]):
                if part not in node:
                    sub = template.get(parts[: depth + 1])
                    node[part] = (sub.batch_size, {})
                node = node[part][1]
            node[parts[-1]] = i

    def _build(self, tree: dict, batch_size: torch.Size, tensors: Sequence[torch.Tensor], device) -> TensorDict:
        source = {}
        for name, entry in tree.items():
            if isinstance(entry, int):
                source[name] = tensors[entry]
            else:
                source[name] = self._build(entry[1], entry[0], tensors, device)
        return new_td(source, batch_size, device)

    def __call__(self, tensors: Sequence[torch.Tensor], device: torch.device | None = None) -> TensorDict:
        """A new tensordict whose leaves are ``tensors`` (in the order of ``keys``), on
        ``device`` (default: the template's device; the tensors must already live there)."""
        device = self.device if device is None else device
        if self.flat:
            return new_td(dict(zip(self.keys, tensors)), self.batch_size, device)
        return self._build(self._tree, self.batch_size, tensors, device)


def copy_leaves(dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor]) -> None:
    """``torch._foreach_copy_(dst, src)`` (nothing to do for empty lists: an env may have no
    action, or no state). The buffers hold data, not graphs: the copy runs without autograd, so
    sources that require grad (an env with a learnable transform) are copied as values."""
    if dst:
        with torch.no_grad():
            torch._foreach_copy_(dst, src)


def leaves(td: TensorDictBase, keys: Sequence[NestedKey]) -> list[torch.Tensor]:
    """The tensors of ``keys`` in ``td`` (plain tensordicts are read without validation).

    Raises:
        KeyError: naming the first missing key.
    """
    plain = is_plain(td)
    out = []
    for key in keys:
        value = None
        if plain:
            if isinstance(key, str):
                value = fast_get(td, key)
            else:
                node = td
                for part in key:
                    node = fast_get(node, part) if isinstance(node, TensorDictBase) else None
                    if node is None:
                        break
                value = node
        else:
            value = td.get(key, None)
        if value is None:
            raise KeyError(f"the tensordict has no entry {key!r} (keys: {list(td.keys(True, True))})")
        out.append(value)
    return out


def maybe_leaves(td: TensorDictBase, keys: Sequence[NestedKey]) -> list[torch.Tensor | None]:
    """Like :func:`leaves`, with ``None`` for missing entries."""
    d = inner(td)
    if d is not None and all(isinstance(k, str) for k in keys):
        return [d.get(k) for k in keys]
    return [td.get(k, None) for k in keys]


@dataclass
class Buffers:
    """The three exchange buffers of a batched env and their per-worker leaf views.

    Attributes:
        inputs: actions, state and ``"_reset"`` masks ``[W, *sub]``.
        reset_out: reset outputs ``[W, *sub]``.
        next_out: step outputs (the ``"next"`` entries) ``[W, *sub]``.
        input_leaves / reset_mask_leaves / reset_out_leaves / next_leaves: the leaves of the
            buffers in the order of the plan's key lists.
        blocks: ``{"reset" | "next": (byte block, FlatLayout)}`` of the output buffers (main
            process only), for one-copy device transfers.
    """

    inputs: TensorDict
    reset_out: TensorDict
    next_out: TensorDict
    input_leaves: list
    reset_mask_leaves: list
    reset_out_leaves: list
    next_leaves: list
    blocks: dict | None = None
    files: FileBuffers | None = None

    @classmethod
    def allocate(
        cls, plan: KeyPlan, meta: EnvMetaData, num_workers: int, share_memory: bool, memmap: bool = False
    ) -> Buffers:
        """Zero-filled buffers on the worker device, in shared memory when ``share_memory``, or
        in memory-mapped temporary files when ``memmap`` (removed with the buffers)."""
        fake = meta.tensordict.expand(num_workers, *meta.batch_size)
        masks = [
            torch.zeros((num_workers, *_done_shape(meta, level)), dtype=torch.bool, device=meta.device)
            for level in plan.done_levels
        ]
        next_fake = fake.get("next")
        specs = [
            (fake, [*plan.input_keys, *plan.reset_mask_keys], [*leaves(fake, plan.input_keys), *masks]),
            (fake, plan.reset_out_keys, leaves(fake, plan.reset_out_keys)),
            (next_fake, plan.next_keys, leaves(next_fake, plan.next_keys)),
        ]
        folder = tempfile.mkdtemp(prefix="gpusim-buffers-") if memmap else None
        built, files = [], []
        for name, (template, keys, tensors) in zip(("inputs", "reset", "next"), specs):
            path = None if folder is None else os.path.join(folder, name)
            td, flat, layout = _buffer(template, keys, tensors, share_memory and not memmap, path)
            built.append((td, flat, layout))
            files.append((path, layout, template.empty(recurse=True), list(keys)))
        (inputs, _, _), (reset_out, reset_flat, reset_layout), (next_out, next_flat, next_layout) = built
        out = cls.from_tensordicts(plan, inputs, reset_out, next_out)
        out.blocks = {"reset": (reset_flat, reset_layout), "next": (next_flat, next_layout)}
        if folder is not None:
            out.files = FileBuffers(files)
            weakref.finalize(out, shutil.rmtree, folder, True)
        return out

    def for_worker(self) -> tuple | FileBuffers:
        """What a worker process receives: the shared tensordicts, or the memory-mapped files."""
        if self.files is not None:
            return self.files
        return (self.inputs, self.reset_out, self.next_out)

    @classmethod
    def from_tensordicts(
        cls, plan: KeyPlan, inputs: TensorDict, reset_out: TensorDict, next_out: TensorDict
    ) -> Buffers:
        """Wraps existing buffers (a worker process receives them this way)."""
        return cls(
            inputs=inputs,
            reset_out=reset_out,
            next_out=next_out,
            input_leaves=leaves(inputs, plan.input_keys),
            reset_mask_leaves=leaves(inputs, plan.reset_mask_keys),
            reset_out_leaves=leaves(reset_out, plan.reset_out_keys),
            next_leaves=leaves(next_out, plan.next_keys),
        )

    def worker_views(self, i: int) -> WorkerViews:
        """The leaf views of worker ``i``."""
        return WorkerViews(
            inputs=[t[i] for t in self.input_leaves],
            reset_masks=[t[i] for t in self.reset_mask_leaves],
            reset_out=[t[i] for t in self.reset_out_leaves],
            next_out=[t[i] for t in self.next_leaves],
        )


@dataclass
class WorkerViews:
    """One worker's leaf views into the :class:`Buffers` (row ``i`` of every leaf)."""

    inputs: list
    reset_masks: list
    reset_out: list
    next_out: list
