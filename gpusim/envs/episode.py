"""The episode core: which rows reset, how ``"_reset"`` masks resolve, and how reset rows merge.

Everything that decides or applies a (partial) reset lives here, planned once per env when its
specs are locked (:class:`EpisodePlan`, from the ``full_done_spec``), and executed by
:class:`~gpusim.envs.common.EnvBase` and its step pipeline, :mod:`gpusim.envs.pipeline` (``reset``,
``maybe_reset``, ``step_and_maybe_reset``). Envs, wrappers, batched envs and transforms receive the resolved masks (:class:`ResetMasks`) or ask
:func:`reset_mask_for`; none of them re-derives the rules.

The rules (TorchRL's documented ``"_reset"`` semantics, DESIGN.md section 3):

* a ``"_reset"`` entry at a done level (bool, shaped like that level's ``done``) selects the rows
  of that level to reset;
* a root ``"_reset"`` prevails: it applies to every level and nested ``"_reset"`` entries are
  ignored;
* without any ``"_reset"``, every row resets;
* after the reset, the rows that were not reset keep the previous data, and every ``"_reset"``
  entry is erased.

Auto-reset (``step_and_maybe_reset``) marks a level's rows with ``done`` (or ``truncated``, which
a transform may set without touching ``done``) and resets them the same way. How it runs is the
env's :class:`AutoResetMode`, chosen once at construction:

* ``MASKED``: every row goes through the reset and the merge, selected by masks; nothing is read
  on the host. What a device env does, and what every compiled graph does.
* ``SPARSE``: the rows to reset are read on the host once per step; with none, no reset work is
  done at all; otherwise only those rows are drawn and merged. The default on the CPU, where a
  host read costs nothing, and for envs backed by a host library (gymnasium, VMAS, batched
  workers).

Both modes give the same data, and the same random numbers: native envs key their reset noise by
(seed, row, episode index of the row), not by how often reset was called.

Examples:
    >>> import torch
    >>> from gpusim.specs import Categorical, Composite
    >>> from tensordict import TensorDict
    >>> done = Composite(done=Categorical(2, shape=(3, 1), dtype=torch.bool), shape=(3,))
    >>> plan = EpisodePlan(done, torch.Size([3]))
    >>> td = TensorDict({"_reset": torch.tensor([[True], [False], [True]])}, [3])
    >>> masks = plan.resolve(td)
    >>> masks.env_rows()
    tensor([ True, False,  True])
    >>> new = TensorDict({"x": torch.zeros(3)}, [3])
    >>> old = TensorDict({"x": torch.ones(3)}, [3])
    >>> merge_rows(new, old, masks.env_rows())["x"]
    tensor([0., 1., 0.])
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDictBase, is_non_tensor

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get, fast_pop, fast_set, inner
from gpusim.envs._keys import DoneLevel, NestedKey
from gpusim.kernels._inductor import in_cpu_graph, pack_bool, realized, unpack_bool
from gpusim.kernels.masked_merge import masked_merge

__all__ = [
    "AutoResetMode",
    "EpisodePlan",
    "ResetMasks",
    "merge_rows",
    "reset_mask_for",
    "mask_at",
    "selects_rows",
    "level_for_key",
    "reduce_rows",
    "rows_of",
    "resolve_set_state",
]


class AutoResetMode(str, enum.Enum):
    """How an env runs the reset part of ``step_and_maybe_reset`` (chosen at construction).

    * ``MASKED``: all rows go through the reset and a masked merge; no host read (device envs,
      compiled graphs).
    * ``SPARSE``: the done rows are read on the host; no reset work when none is done, otherwise
      only those rows are reset and merged (CPU envs, host-backed wrappers, batched envs).

    Both give the same results. Inside ``torch.compile`` every env runs ``MASKED``.

    Examples:
        >>> AutoResetMode("sparse") is AutoResetMode.SPARSE
        True
        >>> AutoResetMode.MASKED.value
        'masked'
    """

    MASKED = "masked"
    SPARSE = "sparse"

    @classmethod
    def parse(cls, value: AutoResetMode | str | None, device: torch.device) -> AutoResetMode:
        """The mode for ``value`` (``None``: ``SPARSE`` on the CPU, ``MASKED`` elsewhere).

        Raises:
            ValueError: an unknown mode name, naming the known ones.

        Examples:
            >>> AutoResetMode.parse(None, torch.device("cpu"))
            <AutoResetMode.SPARSE: 'sparse'>
        """
        if value is None:
            mode = _DEFAULT_MODES.get(device)  # ``device.type`` is slow to read on the step path
            if mode is None:
                mode = _DEFAULT_MODES[device] = cls.SPARSE if device.type == "cpu" else cls.MASKED
            return mode
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"auto_reset_mode must be one of {[m.value for m in cls]} (or an AutoResetMode), got {value!r}"
            ) from None


_fmt = _keys.fmt

#: Whether Dynamo traces ``id()`` of a tensor made inside the graph (torch 2.13 does; 2.11 raises
#: ``Unsupported: call_id() without source``). Where it cannot, merges inside compiled graphs mark
#: nothing: the later merge then merges those leaves again, which gives the same values.
_IDS_IN_GRAPHS = torch.torch_version.TorchVersion(torch.__version__) >= (2, 13)
_DEFAULT_MODES: dict = {}  # torch.device -> its default AutoResetMode
#: compiled CPU graphs store the root auto-reset mask as uint8 (see :func:`_graph_mask`)
GRAPH_MASK_UINT8 = True


def _tget(td: TensorDictBase, key: NestedKey) -> Any:
    if isinstance(key, str):
        return fast_get(td, key)
    node = td
    for part in key[:-1]:
        node = fast_get(node, part)
        if node is None or isinstance(node, torch.Tensor):
            return None
    return fast_get(node, key[-1])


def _check_mask(value: Any, key: NestedKey, shape: torch.Size) -> torch.Tensor:
    """``value`` as a bool mask of ``shape`` (accepts ``shape`` or ``(*shape, 1)``); raises naming
    the key, the expected and the received dtype/shape (metadata only: no device sync)."""
    expected = f"a bool tensor of shape {list(shape) + [1]} (or {list(shape)})"
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"the {_fmt(key)} entry must be {expected}, got {type(value).__name__}")
    if value.dtype is not torch.bool:
        raise TypeError(f"the {_fmt(key)} entry must be {expected}, got dtype {value.dtype}")
    if value.shape == shape:
        return value
    if value.ndim == len(shape) + 1 and value.shape[-1] == 1 and value.shape[:-1] == shape:
        return value.squeeze(-1)
    raise ValueError(f"the {_fmt(key)} entry must be {expected}, got shape {list(value.shape)}")


def _check_flag(value: torch.Tensor, key: NestedKey, shape: torch.Size) -> None:
    """A done flag read by the auto-reset: bool, with the level's element count (metadata only)."""
    if value.dtype is not torch.bool:
        raise TypeError(f"maybe_reset: the {_fmt(key)} entry must be a bool tensor, got dtype {value.dtype}")
    if value.numel() != shape.numel() and -1 not in shape:
        raise ValueError(
            f"maybe_reset: the {_fmt(key)} entry must have the done spec's shape {list(shape) + [1]}, "
            f"got shape {list(value.shape)}"
        )


def _host_flag(value: Any, numel: int) -> bool:
    """Whether ``value`` is a plain CPU bool tensor of ``numel`` elements (read as a numpy view)."""
    return type(value) is torch.Tensor and value.dtype is torch.bool and value.is_cpu and value.numel() == numel


def _graph_mask(mask: torch.Tensor) -> torch.Tensor:
    """The root auto-reset mask as a compiled CPU graph should hold it: stored once in a ``uint8``
    buffer and read back as ``!= 0`` (the same values; outside compilation, or off the CPU,
    ``mask`` itself).

    The root mask feeds every reset consumer (noise key, merges, transforms' restarts), so
    Inductor stores the node it is computed from. As a bool buffer that store and each load run
    as scalar byte loops (torch 2.13, see :mod:`gpusim.kernels._inductor`), and the reset
    noise loop that reads it fuses poorly. Forcing the store onto a ``uint8`` node
    (:func:`gpusim.kernels._inductor.realized` makes Inductor realize its input) leaves the bool node
    a one-load ``!= 0`` that fuses into every reader. A/B in one process, 2 threads, with the
    column-wise reset hash (``gpusim.envs.native.rng.COLHASH``): CartPole-v1 65536 106.2 ->
    117.1 M env-steps/s, 4096 38.3 -> 41.8 M, with 5 transforms 53.8 -> 58.2 M, MountainCar-v0
    51.5 -> 82.7 M.
    """
    if not (GRAPH_MASK_UINT8 and in_cpu_graph(mask)):
        return mask
    return unpack_bool(realized(pack_bool(mask)))


def _broadcast(mask: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """A root mask (env rows) broadcast to a level's finer ``shape`` (a view)."""
    if mask.shape == shape:
        return mask
    return mask.reshape(*mask.shape, *([1] * (len(shape) - mask.ndim))).expand(shape)


_ROWS_CACHE: list = [None, None, None]  # mask, its version, its flat indices


def rows_of(mask: torch.Tensor) -> torch.Tensor:
    """Flat indices of the True entries of a CPU ``mask`` (host read; cached for the last mask).

    For the ``SPARSE`` paths only (a CPU mask needs no device sync): the episode code, the native
    envs' sparse draws and the transforms' row refills of one reset all ask for the same mask, so
    it is read once.

    Examples:
        >>> rows_of(torch.tensor([False, True, True]))
        tensor([1, 2])
    """
    cached, version, rows = _ROWS_CACHE
    if cached is mask and version == mask._version:
        return rows
    rows = mask.reshape(-1).nonzero().squeeze(-1)
    _ROWS_CACHE[:] = [mask, mask._version, rows]
    return rows


class ResetMasks:
    """The rows to reset, resolved once: one bool mask per done level (``None``: every row).

    Built by :meth:`EpisodePlan.resolve` (from the ``"_reset"`` entries of a ``reset`` input) or
    :meth:`EpisodePlan.done_masks` (from the done flags, for auto-reset), and handed to the env's
    ``_reset_rows`` hook. Wrappers and transforms read it; nobody else applies the rules.

    Attributes:
        levels: the env's done levels (root first).
        masks: per level, a bool tensor of the level's shape, or ``None`` (every row).
        root: the env-rows mask (``batch_size`` shape) when it applies to every level (a root
            ``"_reset"``, or root done flags), else ``None``.
        sparse: whether host reads are allowed (``SPARSE`` mode, eager).
        auto: whether the reset comes from ``maybe_reset`` (done flags).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[3])
        >>> td = env.reset().set("_reset", torch.tensor([[True], [False], [True]]))
        >>> masks = env.episode.resolve(td, True)  # what env.reset(td) hands to _reset_rows
        >>> masks.full, masks.env_rows(), masks.rows()
        (False, tensor([ True, False,  True]), tensor([0, 2]))
        >>> env.episode.resolve(None, True).full  # reset() without input: every row
        True
    """

    __slots__ = ("levels", "masks", "root", "sparse", "auto", "batch_size", "premerged", "_host")

    def __init__(
        self,
        levels: Sequence[DoneLevel],
        masks: Sequence[torch.Tensor | None],
        root: torch.Tensor | None,
        batch_size: torch.Size,
        sparse: bool = False,
        auto: bool = False,
    ) -> None:
        self.levels = tuple(levels)
        self.masks = tuple(masks)
        self.root = root
        self.batch_size = batch_size
        self.sparse = sparse
        self.auto = auto
        self.premerged: dict[int, torch.Tensor] = {}  # id -> the tensor itself (kept alive)
        self._host: np.ndarray | None = None  # env_rows() read on the host, once (host_rows)

    @property
    def full(self) -> bool:
        """Whether every row of every level resets (no mask at all).

        Examples:
            >>> ResetMasks([], [], None, torch.Size([2])).full
            True
        """
        return self.root is None and all(m is None for m in self.masks)

    def env_rows(self) -> torch.Tensor | None:
        """The env rows (``batch_size`` shape) touched by the reset, or ``None`` for all rows: the
        root mask, else the OR of the nested levels' masks over their extra dims.

        Examples:
            >>> m = ResetMasks([], [], torch.tensor([True, False]), torch.Size([2]))
            >>> m.env_rows()
            tensor([ True, False])
        """
        if self.root is not None:
            return self.root
        out = None
        nb = len(self.batch_size)
        for mask in self.masks:
            if mask is None:
                return None
            m = mask if mask.ndim == nb else mask.reshape(*self.batch_size, -1).any(-1)
            out = m if out is None else out | m
        return out

    def rows(self) -> torch.Tensor | None:
        """Host flat indices of :meth:`env_rows` (``None``: all rows). ``SPARSE`` mode only.

        Raises:
            RuntimeError: called on masks that may not be read on the host (``MASKED`` mode).

        Examples:
            >>> m = ResetMasks([], [], torch.tensor([True, False, True]), torch.Size([3]), sparse=True)
            >>> m.rows()
            tensor([0, 2])
        """
        if not self.sparse:
            raise RuntimeError("ResetMasks.rows() reads the masks on the host: SPARSE mode only")
        rows = self.env_rows()
        return None if rows is None else rows_of(rows)

    def host_rows(self) -> np.ndarray | None:
        """:meth:`env_rows` as a numpy bool array of shape ``batch_size`` (``None``: all rows),
        read on the host once per reset (the auto-reset of a host-flag env hands it over
        already read). For wrappers of host libraries that take a numpy mask. ``SPARSE`` only.

        Raises:
            RuntimeError: called on masks that may not be read on the host (``MASKED`` mode).

        Examples:
            >>> m = ResetMasks([], [], torch.tensor([True, False]), torch.Size([2]), sparse=True)
            >>> m.host_rows()
            array([ True, False])
        """
        if self._host is None:
            if not self.sparse:
                raise RuntimeError("ResetMasks.host_rows() reads the masks on the host: SPARSE mode only")
            rows = self.env_rows()
            if rows is None:
                return None
            self._host = rows.reshape(self.batch_size).cpu().numpy()
        return self._host

    def any(self) -> bool:
        """Whether any row resets (a host read: ``SPARSE`` mode, or outside the step path).

        Examples:
            >>> ResetMasks([], [], torch.tensor([False, False]), torch.Size([2])).any()
            False
        """
        rows = self.env_rows()
        return True if rows is None else bool(rows.any())

    def for_level(self, level: DoneLevel) -> torch.Tensor | None:
        """The mask of ``level`` (its shape), or ``None`` (every row of the level).

        Examples:
            >>> lvl = DoneLevel((), ("done",), "_reset", torch.Size([2]))
            >>> ResetMasks([lvl], [torch.tensor([True, False])], None, torch.Size([2])).for_level(lvl)
            tensor([ True, False])
        """
        for lvl, mask in zip(self.levels, self.masks):
            if lvl.prefix == level.prefix:
                return mask
        return None if self.root is None else _broadcast(self.root, level.shape)

    def for_key(self, key: NestedKey) -> torch.Tensor | None:
        """The mask of the deepest done level whose group holds ``key`` (the root level for
        root keys), or ``None``.

        Examples:
            >>> lvl = DoneLevel((), ("done",), "_reset", torch.Size([2]))
            >>> ResetMasks([lvl], [torch.tensor([True, False])], None, torch.Size([2])).for_key("obs")
            tensor([ True, False])
        """
        level = level_for_key(self.levels, key)
        if level is None:
            return self.root
        return self.for_level(level)

    def mark_merged(self, value: torch.Tensor) -> torch.Tensor:
        """Declares that ``value`` (a leaf of the reset output) already holds the previous data in
        the rows that are not reset, so the merge keeps it as is. Returns ``value``.

        Examples:
            >>> m = ResetMasks([], [], None, torch.Size([2]))
            >>> x = m.mark_merged(torch.zeros(2))
            >>> id(x) in m.premerged
            True
        """
        self.premerged[id(value)] = value
        return value


def level_for_key(levels: Sequence[DoneLevel], key: NestedKey) -> DoneLevel | None:
    """The deepest level whose prefix contains ``key`` (the root level, if any, for root keys).

    Examples:
        >>> root = DoneLevel((), ("done",), "_reset", torch.Size([2]))
        >>> agents = DoneLevel(("agents",), (("agents", "done"),), ("agents", "_reset"), torch.Size([2, 3]))
        >>> level_for_key([root, agents], ("agents", "obs")).prefix
        ('agents',)
    """
    tkey = _keys.as_tuple(key)
    best = None
    for level in levels:
        p = level.prefix
        if len(p) < len(tkey) and tkey[: len(p)] == p:
            if best is None or len(p) > len(best.prefix):
                best = level
    return best


def reset_mask_for(
    tensordict: TensorDictBase | None, key: NestedKey, levels: Sequence[DoneLevel], batch_size: torch.Size
) -> torch.Tensor | None:
    """The reset rows for entry ``key`` of a ``reset`` input (``"_reset"`` entries still in it), or
    ``None`` (every row): a root ``"_reset"`` prevails, else the ``"_reset"`` of the deepest done
    level holding ``key``. The shape is that level's (``batch_size`` for root keys).

    For transforms, whose ``_reset(tensordict, tensordict_reset)`` receives the input of the reset.

    Examples:
        >>> from tensordict import TensorDict
        >>> lvl = DoneLevel((), ("done",), "_reset", torch.Size([2]))
        >>> td = TensorDict({"_reset": torch.tensor([[False], [True]])}, [2])
        >>> reset_mask_for(td, "obs", [lvl], torch.Size([2]))
        tensor([False,  True])
    """
    if tensordict is None:
        return None
    level = level_for_key(levels, key) if levels else None
    shape = batch_size if level is None else level.shape
    root = fast_get(tensordict, "_reset")
    if root is not None:
        root_shape = levels[0].shape if levels and levels[0].prefix == () else batch_size
        return _broadcast(_check_mask(root, "_reset", root_shape), shape)
    if level is None or level.prefix == ():
        return None
    own = _tget(tensordict, level.reset_key)
    return None if own is None else _check_mask(own, level.reset_key, level.shape)


def resolve_set_state(
    set_state: bool | None, supported: bool, has_state: bool, env_name: str = "the env"
) -> bool | None:
    """The ``set_state`` a ``reset`` hands to ``_reset`` (TorchRL's deterministic-reset kwarg),
    or ``None`` (nothing is handed).

    * ``set_state=True`` asks for a reset *to the state held by the input tensordict*; an env
      that cannot honour it (``supported`` False: its class does not set
      ``_supports_set_state = True``) raises.
    * ``set_state=False``: the state in the input is ignored (a fresh initial state).
    * ``set_state=None`` (the default): on an env that supports it, a state present in the
      input (``has_state``) is honoured, with a :class:`FutureWarning` (TorchRL's transition:
      from its v0.15 an unspecified ``set_state`` means ``False``); without state, ``False``.
    * An env that does not support it never receives the kwarg (``None``).

    Args:
        set_state: the value passed to ``reset``.
        supported: whether the env's ``_reset`` can honour a state (``env._supports_set_state``).
        has_state: whether the input holds an entry of the env's ``state_spec``.
        env_name: named in the errors.

    Raises:
        NotImplementedError: ``set_state=True`` on an env that does not support it.
        TypeError: a ``set_state`` that is not a bool or ``None``.

    Examples:
        >>> resolve_set_state(None, supported=True, has_state=False)
        False
        >>> resolve_set_state(None, supported=False, has_state=True) is None
        True
        >>> resolve_set_state(True, supported=False, has_state=True, env_name="MyEnv")
        Traceback (most recent call last):
        ...
        NotImplementedError: MyEnv does not support reset(td, set_state=True): its _reset cannot honour a state passed in the tensordict (a class that can sets _supports_set_state = True)
    """
    if set_state is not None and not isinstance(set_state, bool):
        raise TypeError(f"reset: set_state must be a bool or None, got {type(set_state).__name__} {set_state!r}")
    if set_state is True and not supported:
        raise NotImplementedError(
            f"{env_name} does not support reset(td, set_state=True): its _reset cannot honour a state "
            "passed in the tensordict (a class that can sets _supports_set_state = True)"
        )
    if not supported:
        return None
    if set_state is None:
        if not has_state:
            return False
        warnings.warn(
            f"{env_name}.reset received a tensordict holding state entries without set_state: the "
            "state is honoured, as TorchRL does until its v0.15 (after which an unspecified "
            "set_state means False); pass set_state=True to honour it or set_state=False to ignore it",
            FutureWarning,
            stacklevel=3,
        )
        return True
    return set_state


def selects_rows(tensordict: TensorDictBase | None) -> bool:
    """Whether a ``reset`` input carries ``"_reset"`` entries (at any level): a reset of
    selected rows (an auto-reset or a partial reset) rather than a reset of the whole env.

    Examples:
        >>> from tensordict import TensorDict
        >>> selects_rows(TensorDict({"_reset": torch.tensor([[True], [False]])}, [2]))
        True
        >>> selects_rows(TensorDict({"agents": {"_reset": torch.ones(2, 3, 1, dtype=torch.bool)}}, [2]))
        True
        >>> selects_rows(None), selects_rows(TensorDict({}, [2]))
        (False, False)
    """
    if tensordict is None:
        return False
    return any(_keys.as_tuple(k)[-1] == "_reset" for k in tensordict.keys(True, True))


def mask_at(tensordict: TensorDictBase | None, key: NestedKey, shape: torch.Size) -> torch.Tensor | None:
    """The bool mask stored at an explicitly named ``key`` (a transform's ``reset_key`` argument),
    checked and shaped ``shape``, or ``None`` when absent.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"r": torch.tensor([[True], [False]])}, [2])
        >>> mask_at(td, "r", torch.Size([2]))
        tensor([ True, False])
    """
    if tensordict is None:
        return None
    value = _tget(tensordict, _keys.unravel(key))
    return None if value is None else _check_mask(value, key, shape)


def reduce_rows(mask: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """A level mask brought to ``shape`` rows: unchanged when equal, OR-ed over the extra dims of
    a finer level (a row resets when any of its agents does).

    Examples:
        >>> reduce_rows(torch.tensor([[True, False], [False, False]]), torch.Size([2]))
        tensor([ True, False])
    """
    if mask.shape == shape:
        return mask
    if mask.ndim > len(shape) and mask.shape[: len(shape)] == shape:
        return mask.reshape(*shape, -1).any(-1)
    return _broadcast(mask, shape)


class EpisodePlan:
    """The episode plan of an env, built once from its ``full_done_spec`` when specs are locked.

    Args:
        full_done_spec: the env's done Composite (every level's ``done``/``terminated``/...).
        batch_size: the env batch dims.

    Examples:
        >>> from gpusim.specs import Categorical, Composite
        >>> spec = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
        >>> EpisodePlan(spec, torch.Size([2])).levels[0].prefix
        ()
    """

    def __init__(self, full_done_spec: Any, batch_size: torch.Size) -> None:
        self.batch_size = torch.Size(batch_size)
        self.levels: list[DoneLevel] = (
            _keys.done_levels(full_done_spec, self.batch_size) if full_done_spec is not None else []
        )
        self.root_level = self.levels[0] if self.levels and self.levels[0].prefix == () else None
        # the shape of a root mask: the root done level's (usually ``batch_size``)
        self.root_shape = self.root_level.shape if self.root_level is not None else self.batch_size
        # per level, the entries whose OR marks a row to reset: ``done`` is by contract the union
        # of the end-of-trajectory signals; ``truncated`` is re-read (a transform may set it alone)
        self.flag_names: list[tuple[str, ...]] = []
        for level in self.levels:
            names = {_keys.as_tuple(k)[-1] for k in level.keys}
            if "done" in names:
                self.flag_names.append(("done", "truncated") if "truncated" in names else ("done",))
            else:  # a transform removed (or renamed) ``done``: the other end signals mark the rows
                self.flag_names.append(tuple(n for n in ("terminated", "truncated") if n in names))
        self.root_done_only = len(self.levels) == 1 and self.root_level is not None and self.flag_names[0] == ("done",)
        # the element count of a root mask, when the root level is the only one and has no dynamic dim
        only_root = len(self.levels) == 1 and self.root_level is not None and -1 not in self.root_shape
        self._root_numel = self.root_shape.numel() if only_root else None
        self.reset_keys = ["_reset", *(lvl.reset_key for lvl in self.levels if lvl.prefix != ())]

    # -------------------------------------------------------------- resolution
    def _check_root(self, value: Any) -> torch.Tensor:
        """A root ``"_reset"``: the root done level's shape; without a root level, ``batch_size``
        or the shape shared by the nested levels (the documentation's worked example)."""
        if self.root_level is not None or not self.levels:
            return _check_mask(value, "_reset", self.root_shape)
        batch = self.batch_size
        shapes = {lvl.shape for lvl in self.levels}
        if isinstance(value, torch.Tensor) and value.shape not in (batch, torch.Size([*batch, 1])) and len(shapes) == 1:
            (shape,) = shapes
            if value.shape in (shape, torch.Size([*shape, 1])):
                return _check_mask(value, "_reset", shape)
        return _check_mask(value, "_reset", batch)

    def full(self, sparse: bool = False) -> ResetMasks:
        """Masks for a full reset (every row of every level).

        Examples:
            >>> EpisodePlan(None, torch.Size([2])).full().full
            True
        """
        return ResetMasks(self.levels, [None] * len(self.levels), None, self.batch_size, sparse)

    def resolve(self, tensordict: TensorDictBase | None, sparse: bool = False) -> ResetMasks:
        """The masks of a ``reset`` input: a root ``"_reset"`` prevails over nested ones; a level
        without one resets fully. Each entry is checked (bool, the level's done shape) and the
        error names the key, the expected and the received dtype/shape.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Categorical, Composite
            >>> spec = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
            >>> plan = EpisodePlan(spec, torch.Size([2]))
            >>> plan.resolve(TensorDict({"_reset": torch.ones(2, 1)}, [2]))
            Traceback (most recent call last):
            ...
            TypeError: the '_reset' entry must be a bool tensor of shape [2, 1] (or [2]), got dtype torch.float32
        """
        if tensordict is None:
            return self.full(sparse)
        root = fast_get(tensordict, "_reset")
        if root is not None:
            root = self._check_root(root)
            masks = [_broadcast(root, lvl.shape) for lvl in self.levels]
            return ResetMasks(self.levels, masks, root, self.batch_size, sparse)
        masks = []
        for level in self.levels:
            if level.prefix == ():
                masks.append(None)
                continue
            own = _tget(tensordict, level.reset_key)
            masks.append(None if own is None else _check_mask(own, level.reset_key, level.shape))
        return ResetMasks(self.levels, masks, None, self.batch_size, sparse)

    def done_masks(self, tensordict: TensorDictBase, sparse: bool = False) -> ResetMasks:
        """The auto-reset masks of a next-step root: per level, ``done`` (OR ``truncated``); the
        root level's flags prevail over nested ones, as a root ``"_reset"`` would.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Categorical, Composite
            >>> spec = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
            >>> plan = EpisodePlan(spec, torch.Size([2]))
            >>> plan.done_masks(TensorDict({"done": torch.tensor([[True], [False]])}, [2])).env_rows()
            tensor([ True, False])
        """
        if self.root_done_only:
            done = fast_get(tensordict, "done")
            if done is None:
                raise KeyError("maybe_reset: the tensordict has no 'done' entry (the root done flag of the env)")
            _check_flag(done, "done", self.root_shape)
            root = _graph_mask(done.reshape(self.root_shape))
            return ResetMasks(self.levels, [root], root, self.batch_size, sparse, auto=True)
        masks = []
        for level, names in zip(self.levels, self.flag_names):
            node = tensordict if level.prefix == () else _tget(tensordict, level.prefix)
            flag = None if node is None else _any_flag(node, names, level)
            if flag is None:
                raise KeyError(f"maybe_reset: the tensordict has no {_fmt(level.key('done'))} entry")
            masks.append(flag.reshape(level.shape))
        if self.root_level is not None:
            root = _graph_mask(masks[0])
            masks = [_broadcast(root, lvl.shape) for lvl in self.levels]
            return ResetMasks(self.levels, masks, root, self.batch_size, sparse, auto=True)
        return ResetMasks(self.levels, masks, None, self.batch_size, sparse, auto=True)

    def sparse_done_masks(self, tensordict: TensorDictBase) -> ResetMasks | None:
        """``SPARSE`` mode's auto-reset masks, read on the host once: ``None`` when the done flags
        of a next-step root mark no row (no reset work at all), else the masks of
        :meth:`done_masks` (``sparse=True``), equal to them.

        With a root done level only and CPU flags of the root mask's size, the flags are OR-ed
        and tested as numpy views (no torch kernel; the result is also handed over as
        :meth:`ResetMasks.host_rows`); anything else (nested levels, absent flags or flags of
        another size, device flags) goes through :meth:`done_masks`, which raises on bad flags.

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Categorical, Composite
            >>> spec = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
            >>> plan = EpisodePlan(spec, torch.Size([2]))
            >>> plan.sparse_done_masks(TensorDict({"done": torch.tensor([[False], [False]])}, [2])) is None
            True
            >>> plan.sparse_done_masks(TensorDict({"done": torch.tensor([[False], [True]])}, [2])).env_rows()
            tensor([False,  True])
        """
        flags = self._host_flags(tensordict)
        if flags is None:
            masks = self.done_masks(tensordict, True)
            return masks if masks.any() else None
        first, second = flags
        if first.numel() == 1 and not (first.item() or (second is not None and second.item())):
            return None  # one row (batch 1): scalar reads, no array
        shape = self.root_shape
        host = first.numpy().reshape(shape)
        if second is not None:
            host = np.asarray(np.logical_or(host, second.numpy().reshape(shape)))  # 0-d: a scalar
        if not np.count_nonzero(host):
            return None
        root = torch.from_numpy(host) if second is not None else first.reshape(shape)
        masks = ResetMasks(self.levels, [root], root, self.batch_size, True, auto=True)
        if shape == self.batch_size:
            masks._host = host
        return masks

    def _host_flags(self, tensordict: TensorDictBase) -> tuple | None:
        """The root level's auto-reset flags (``done`` and, when declared, ``truncated``; the second
        ``None`` when absent) if they may be read as numpy views: a root level only, plain CPU bool
        tensors of the root mask's size and of one shape. ``None`` otherwise."""
        numel = self._root_numel
        if numel is None:
            return None
        names = self.flag_names[0]
        first = fast_get(tensordict, names[0])
        second = fast_get(tensordict, names[1]) if len(names) > 1 else None
        if not _host_flag(first, numel) or (
            second is not None and not (_host_flag(second, numel) and second.shape == first.shape)
        ):
            return None
        return first, second

    def ended(self, next_tensordict: TensorDictBase) -> torch.Tensor:
        """The env rows (``batch_size`` shape) where any done entry (``done``, ``terminated``,
        ``truncated``) of any level is set: the rows whose trajectory ended at this step.

        Raises:
            KeyError: the data lacks a done entry of the env (named).

        Examples:
            >>> from tensordict import TensorDict
            >>> from gpusim.specs import Categorical, Composite
            >>> spec = Composite(done=Categorical(2, shape=(2, 1), dtype=torch.bool), shape=(2,))
            >>> nxt = TensorDict({"done": torch.tensor([[False], [True]])}, [2])
            >>> EpisodePlan(spec, torch.Size([2])).ended(nxt)
            tensor([False,  True])
        """
        flags = None
        for level in self.levels:
            node = next_tensordict if level.prefix == () else _tget(next_tensordict, level.prefix)
            for key in level.keys:
                name = _keys.as_tuple(key)[-1]
                value = None if node is None else fast_get(node, name)
                if value is None:
                    raise KeyError(f"the step data has no done entry {_fmt(key)}")
                value = value.reshape(*self.batch_size, -1).any(-1)
                flags = value if flags is None else flags | value
        if flags is None:
            raise KeyError("the env has no done entry")
        return flags

    def write(self, tensordict: TensorDictBase, masks: ResetMasks) -> None:
        """Writes ``masks`` as ``"_reset"`` entries (``(*level, 1)`` bool), TorchRL's contract for
        an env's ``_reset``: the root entry when the root mask prevails, else one per level.

        Examples:
            >>> from tensordict import TensorDict
            >>> plan = EpisodePlan(None, torch.Size([2]))
            >>> td = TensorDict({}, [2])
            >>> plan.write(td, ResetMasks([], [], torch.tensor([True, False]), torch.Size([2])))
            >>> td["_reset"].shape
            torch.Size([2, 1])
        """
        if masks.root is not None:
            fast_set(tensordict, "_reset", masks.root.unsqueeze(-1))
            return
        for level, mask in zip(masks.levels, masks.masks):
            if mask is not None:
                node = tensordict if level.prefix == () else _tget(tensordict, level.prefix)
                if node is not None:
                    fast_set(node, "_reset", mask.unsqueeze(-1))

    def erase(self, tensordict: TensorDictBase) -> None:
        """Removes every ``"_reset"`` entry of the env's levels from ``tensordict``.

        Examples:
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"_reset": torch.ones(2, 1, dtype=torch.bool)}, [2])
            >>> EpisodePlan(None, torch.Size([2])).erase(td)
            >>> "_reset" in td.keys()
            False
        """
        fast_pop(tensordict, "_reset")
        for level in self.levels:
            if level.prefix != ():
                node = _tget(tensordict, level.prefix)
                if isinstance(node, TensorDictBase):
                    fast_pop(node, "_reset")

    # -------------------------------------------------------------- merge
    def _merge_levels(
        self, reset_out: TensorDictBase, previous: TensorDictBase, masks: ResetMasks, mark: dict | None
    ) -> None:
        if masks.root is not None:
            merge_rows(reset_out, previous, masks.root, masks.premerged, mark)
            return
        for level, mask in zip(masks.levels, masks.masks):
            if mask is None or level.prefix == ():
                continue
            node_new = _tget(reset_out, level.prefix)
            node_old = _tget(previous, level.prefix)
            if isinstance(node_new, TensorDictBase) and isinstance(node_old, TensorDictBase):
                merge_rows(node_new, node_old, mask, masks.premerged, mark)

    def merge_early(
        self, reset_out: TensorDictBase, previous: TensorDictBase | None, masks: ResetMasks
    ) -> TensorDictBase:
        """Merges the previous data into the rows of ``reset_out`` that are not reset, before
        anything else reads it (a ``TransformedEnv`` does this to its base env's reset data, so
        that its transforms see the reset rows' new data and the other rows' previous data,
        never placeholders). The merged leaves are marked (:meth:`ResetMasks.mark_merged`), so
        the final :meth:`merge` does not merge them again. Returns ``reset_out``.

        Examples:
            >>> from tensordict import TensorDict
            >>> plan = EpisodePlan(None, torch.Size([2]))
            >>> m = ResetMasks([], [], torch.tensor([True, False]), torch.Size([2]))
            >>> out = plan.merge_early(TensorDict({"x": torch.zeros(2)}, [2]), TensorDict({"x": torch.ones(2)}, [2]), m)
            >>> out["x"], len(m.premerged)
            (tensor([0., 1.]), 1)
        """
        if previous is not None and not masks.full:
            self._merge_levels(reset_out, previous, masks, masks.premerged)
        return reset_out

    def merge(self, reset_out: TensorDictBase, previous: TensorDictBase, masks: ResetMasks) -> TensorDictBase:
        """Writes the reset into ``previous`` and returns it: rows not reset keep ``previous``'s
        data (a root mask applies to every leaf, a level mask to the leaves of its group), the
        ``"_reset"`` entries are erased, then ``previous`` takes every entry of ``reset_out``.

        Examples:
            >>> from tensordict import TensorDict
            >>> plan = EpisodePlan(None, torch.Size([2]))
            >>> prev = TensorDict({"x": torch.ones(2)}, [2])
            >>> m = ResetMasks([], [], torch.tensor([True, False]), torch.Size([2]))
            >>> plan.merge(TensorDict({"x": torch.zeros(2)}, [2]), prev, m)["x"]
            tensor([0., 1.])
        """
        self._merge_levels(reset_out, previous, masks, None)
        self.erase(previous)
        root = masks.root
        if root is not None and root.ndim >= 1 and (_lazy_rows(previous) or _lazy_rows(reset_out)):
            # rows of different shapes (host data): only the rows with a reset take the new data
            reset_any = root.reshape(root.shape[0], -1).any(-1).tolist()
            if _lazy_rows(previous):
                for i, row in enumerate(previous.tensordicts):
                    if reset_any[i]:
                        row.update(reset_out[i])
                return previous
            rows = [previous[i].update(reset_out[i]) if reset_any[i] else previous[i] for i in range(len(reset_any))]
            return LazyStackedTensorDict.maybe_dense_stack(rows, 0)
        if type(previous) is type(reset_out) and not previous.is_locked:
            entries = inner(reset_out)  # a plain tensordict's own dict, else its items
            entries = entries.items() if entries is not None else list(reset_out.items())
            if all(isinstance(value, torch.Tensor) for _, value in entries):  # flat: the entries as they are
                for key, value in entries:
                    fast_set(previous, key, value)
                return previous
        return previous.update(reset_out)


def merge_rows(
    new: TensorDictBase,
    old: TensorDictBase | None,
    mask: torch.Tensor,
    skip: dict | None = None,
    mark: dict | None = None,
) -> TensorDictBase:
    """Writes into ``new`` the values of ``old`` wherever ``mask`` is False, leaf by leaf; returns
    ``new``. Leaves absent from ``old`` (or of another shape) keep ``new``'s values; leaves in
    ``skip`` (``{id: tensor}``, see :meth:`ResetMasks.mark_merged`) are kept as they are; the
    merged leaves are recorded in ``mark`` (same form) when given. ``old`` values of another dtype
    are cast. One fused merge for all leaves (:func:`gpusim.kernels.masked_merge`).

    The merge of a partial reset, and of any "rows that take the new data" update (frame skip,
    no-op starts).

    Examples:
        >>> from tensordict import TensorDict
        >>> new = TensorDict({"a": torch.zeros(2, 3)}, [2])
        >>> old = TensorDict({"a": torch.ones(2, 3)}, [2])
        >>> merge_rows(new, old, torch.tensor([False, True]))["a"][:, 0]
        tensor([1., 0.])
    """
    if old is None:
        return new
    data = inner(new)  # a plain tensordict's own dict (neither side is then a lazy stack)
    old_data = inner(old) if data is not None else None
    if skip and data is not None and all(skip.get(id(v)) is v for v in data.values()):
        return new  # every leaf already holds the previous data (a host library's complete reset)
    if old_data is None and mask.ndim >= 1 and (_lazy_rows(new) or _lazy_rows(old)):
        # a lazy stack (rows of different shapes, e.g. dynamic specs): row by row, on the host
        for i in range(mask.shape[0]):
            if _lazy_rows(new):
                merge_rows(new.tensordicts[i], old[i], mask[i], skip, mark)
            else:
                new[i] = merge_rows(new[i], old[i], mask[i], skip, mark)
        return new
    keys, new_leaves, old_leaves = [], [], []
    nontensor = []
    if mark is not None and not _IDS_IN_GRAPHS and torch.compiler.is_compiling():
        mark = None  # see _IDS_IN_GRAPHS
    if old_data is not None and not any(type(value) is not torch.Tensor for value in data.values()):
        # two plain tensordicts and a flat ``new`` of plain tensors (the usual reset data): their
        # own dicts, the same leaves and order as the general walk below, without its machinery
        items, lookup = data.items(), old_data.get
    else:
        items, lookup = new.items(True, True, is_leaf=_is_leaf), None
    for key, value in items:
        if not isinstance(value, torch.Tensor):
            if is_non_tensor(value):
                nontensor.append((key, value))
            continue
        if skip and skip.get(id(value)) is value:
            continue
        prev = old.get(key, None) if lookup is None else lookup(key)
        if not isinstance(prev, torch.Tensor) or prev.shape != value.shape:
            continue
        keys.append(key)
        new_leaves.append(value)
        old_leaves.append(prev if prev.dtype == value.dtype else prev.to(value.dtype))
    if keys:
        merged = masked_merge(new_leaves, old_leaves, [mask] * len(keys))
        for key, value in zip(keys, merged):
            if isinstance(key, str):
                fast_set(new, key, value)
            else:
                new.set(key, value)
            if mark is not None:
                mark[id(value)] = value
    if nontensor:
        _merge_nontensor(new, old, mask, nontensor)
    return new


def _any_flag(node: TensorDictBase, names: Sequence[str], level: DoneLevel) -> torch.Tensor | None:
    """The OR of the flags ``names`` present in ``node`` (``None`` when none is), each checked
    against ``level`` (bool, the level's size, one shape for all)."""
    flag, first = None, None
    for name in names:
        value = fast_get(node, name)
        if value is None:
            continue
        _check_flag(value, level.key(name), level.shape)
        if flag is None:
            flag, first = value, name
            continue
        if value.shape != flag.shape:
            raise ValueError(
                f"maybe_reset: the {_fmt(level.key(name))} entry has shape {list(value.shape)}, the "
                f"{_fmt(level.key(first))} entry {list(flag.shape)}: the done flags of a level share one shape"
            )
        flag = flag | value
    return flag


def _lazy_rows(td: TensorDictBase) -> bool:
    """Whether ``td`` is a lazy stack along its first dim (its rows may differ in shape)."""
    return isinstance(td, LazyStackedTensorDict) and td.stack_dim == 0


def _is_leaf(cls: type) -> bool:
    return not issubclass(cls, TensorDictBase) or issubclass(cls, NonTensorStack)


def _pick(new: Any, old: Any, keep_new: Any) -> Any:
    if isinstance(keep_new, list):
        return [_pick(n, o, k) for n, o, k in zip(new, old, keep_new)]
    return new if keep_new else old


def _merge_nontensor(new: TensorDictBase, old: TensorDictBase, mask: torch.Tensor, entries: list) -> None:
    """The non-tensor entries of a merge (host data: the mask is read on the host): rows where
    ``mask`` is False take ``old``'s values."""
    keep_new = mask.tolist()
    for key, value in entries:
        prev = old.get(key, None)
        if not is_non_tensor(prev) or prev.batch_size != value.batch_size:
            continue
        if value.batch_size[: mask.ndim] != mask.shape:
            continue
        if mask.ndim == 0:
            new.set(key, value if keep_new else prev)
            continue
        new.set(key, NonTensorStack.from_list(_pick(value.tolist(), prev.tolist(), keep_new)))
