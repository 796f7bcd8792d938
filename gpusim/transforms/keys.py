"""Transforms that reorganize entries: ``CatTensors``, ``RenameTransform``,
``ExcludeTransform``, ``SelectTransform``.

They move data around without computing on it, and move the specs the same way: a
concatenated entry replaces its parts, a renamed entry takes its spec to the new name, excluded
entries lose their specs. The key lists are resolved once, when the transform is attached.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.keys import CatTensors, RenameTransform
    >>> td = TensorDict({"a": torch.zeros(2, 1), "b": torch.ones(2, 2)}, [2])
    >>> CatTensors(["a", "b"], out_key="ab")(td)["ab"]
    tensor([[0., 1., 1.],
            [0., 1., 1.]])
    >>> RenameTransform(["ab"], ["obs"])(td).keys()
    _StringKeys(dict_keys(['obs']))
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, as_tuple, unravel
from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms._spec_utils import INPUT_SPECS, OUTPUT_SPECS, drop_leaf, fmt_key, locate, require_keys
from gpusim.transforms.transform import Transform, _as_key_list

__all__ = ["CatTensors", "RenameTransform", "ExcludeTransform", "SelectTransform"]

_REQUIRED_DONE = ("done", "terminated")  # what SelectTransform keeps of every done level
_END_SIGNALS = ("done", "terminated", "truncated")


def check_end_signals(done_spec: Composite, removed: NestedKey, owner: str) -> None:
    """Raises when removing ``removed`` left its done level without an end-of-episode entry.

    A level may lose ``done`` (``terminated``/``truncated`` still mark the rows that ended) or
    ``terminated``, but not all three: nothing in the data would then say that an episode
    ended, and rollouts and auto-resets would step on past the end of the base env's episodes.

    Args:
        done_spec: the done spec after the removal.
        removed: the done entry removed (or renamed).
        owner: the transform (for the message).

    Raises:
        ValueError: the level of ``removed`` has no ``done``, ``terminated`` or ``truncated``
            entry left.

    Examples:
        >>> import torch
        >>> from gpusim.specs import Categorical, Composite
        >>> flag = Categorical(2, shape=(1,), dtype=torch.bool)
        >>> check_end_signals(Composite(terminated=flag), "done", "ExcludeTransform")
        >>> check_end_signals(Composite(), "done", "ExcludeTransform")
        Traceback (most recent call last):
        ...
        ValueError: ExcludeTransform: removing 'done' leaves the root done level without an end-of-episode entry ('done', 'terminated' or 'truncated'): rollouts and auto-resets could not see its episodes end; keep one of them
    """
    tkey = as_tuple(removed)
    if tkey[-1] not in _END_SIGNALS:
        return
    prefix = tkey[:-1]
    node = done_spec if not prefix else done_spec.get(prefix, None)
    if node is not None and any(name in node.keys() for name in _END_SIGNALS):
        return
    level = "root" if not prefix else fmt_key(prefix)
    raise ValueError(
        f"{owner}: removing {fmt_key(removed)} leaves the {level} done level without an end-of-episode "
        "entry ('done', 'terminated' or 'truncated'): rollouts and auto-resets could not see its "
        "episodes end; keep one of them"
    )


def _drop(td: TensorDictBase, keys) -> TensorDictBase:
    """Deletes ``keys`` from ``td`` in place, then any nested tensordict they leave empty (as
    the specs do)."""
    td.exclude(*keys, inplace=True)
    for key in keys:
        parts = as_tuple(key)
        for depth in range(len(parts) - 1, 0, -1):
            sub = td.get(unravel(parts[:depth]), None)
            if isinstance(sub, TensorDictBase) and sub.is_empty():
                td.exclude(unravel(parts[:depth]), inplace=True)
            else:
                break
    return td


def _sort_key(key: NestedKey) -> tuple:
    return as_tuple(key)


def _leaves(spec: Composite) -> list:
    return [unravel(k) for k, v in spec.items(True, True) if not isinstance(v, Composite)]


class CatTensors(Transform):
    """Concatenates several entries into one tensor.

    Args:
        in_keys: entries to concatenate (default: every observation entry, found when the
            transform is attached).
        out_key: the entry of the result (default ``"observation_vector"``).
        dim: the (negative) dim to concatenate along (default ``-1``).

    Keyword Args:
        del_keys: remove the concatenated entries (default ``True``).
        unsqueeze_if_oor: entries with fewer than ``-dim`` feature dims get trailing size-1 dims
            first (e.g. a ``(*B,)`` entry becomes ``(*B, 1)`` for ``dim=-1``).
        sort: concatenate in sorted key order (default ``True``); ``False`` keeps the given order.

    Raises:
        ValueError: a non-negative ``dim``; (when attached) entries whose shapes do not match
            outside ``dim``.
        KeyError: (when attached) an entry that is not an observation.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import Compose, StepCounter, TransformedEnv
        >>> cat = CatTensors(["observation", "step_count"], out_key="obs_vec", unsqueeze_if_oor=True,
        ...                  del_keys=False)  # keep the parts: StepCounter reads its count back
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), Compose(StepCounter(), cat))
        >>> env.observation_keys
        ['observation', 'step_count', 'obs_vec']
        >>> td = env.rollout(2)
        >>> td["next", "obs_vec"].shape, td["next", "obs_vec"][0, :, -1].tolist()  # the count, last
        (torch.Size([2, 2, 5]), [1.0, 2.0])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey = "observation_vector",
        dim: int = -1,
        *,
        del_keys: bool = True,
        unsqueeze_if_oor: bool = False,
        sort: bool = True,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim >= 0:
            raise ValueError(f"CatTensors: dim must be a negative int (feature dims only), got {dim!r}")
        keys = _as_key_list(in_keys, "in_keys")
        if sort:
            keys = sorted(keys, key=_sort_key)
        super().__init__(in_keys=keys, out_keys=[out_key])
        self._auto = in_keys is None
        self.dim = dim
        self.del_keys = del_keys
        self.unsqueeze_if_oor = unsqueeze_if_oor
        self.sort = sort

    @property
    def out_key(self) -> NestedKey:
        """The entry of the concatenation.

        Examples:
            >>> CatTensors(["a", "b"]).out_key
            'observation_vector'
        """
        return self.out_keys[0]

    def _pad(self, value: torch.Tensor, batch_dims: int) -> torch.Tensor:
        missing = -self.dim - (value.ndim - batch_dims)
        if self.unsqueeze_if_oor and missing > 0:
            return value.reshape(*value.shape, *([1] * missing))
        return value

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        values = [next_tensordict.get(k, None) for k in self.in_keys]
        if not values or all(v is None for v in values):
            return next_tensordict
        if any(v is None for v in values):
            missing = [fmt_key(k) for k, v in zip(self.in_keys, values) if v is None]
            raise KeyError(f"CatTensors: the data has some of the in_keys but not {', '.join(missing)}")
        bd = next_tensordict.batch_dims
        out = torch.cat([self._pad(v, bd) for v in values], self.dim)
        if self.del_keys:
            drop = [k for k in self.in_keys if k != self.out_key]
            if drop:
                _drop(next_tensordict, drop)
        next_tensordict.set(self.out_key, out)
        return next_tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        self.transform_observation_spec(output_spec["full_observation_spec"])
        return output_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        """Replaces the ``in_keys`` specs of ``observation_spec`` by the spec of their
        concatenation under ``out_key`` (in place; the Composite is returned).

        Raises:
            KeyError: an ``in_keys`` entry missing from the spec.
            ValueError: no ``in_keys``, or specs whose shapes cannot be concatenated.

        Examples:
            >>> from gpusim.specs import Bounded, Composite
            >>> t = CatTensors(["a", "b"], out_key="ab")
            >>> spec = t.transform_observation_spec(Composite(a=Bounded(0, 1, (2,)), b=Bounded(0, 1, (3,))))
            >>> list(spec.keys()), spec["ab"].shape
            (['ab'], torch.Size([5]))
        """
        obs = observation_spec
        if not isinstance(obs, Composite):
            return obs
        if self._auto:
            keys = [k for k in _leaves(obs) if k != self.out_key]
            self.in_keys = sorted(keys, key=_sort_key) if self.sort else keys
        if not self.in_keys:
            raise ValueError("CatTensors: there is nothing to concatenate (no in_keys)")
        require_keys(
            Composite(full_observation_spec=obs, shape=obs.shape),
            ("full_observation_spec",),
            self.in_keys,
            "CatTensors",
        )
        batch = len(obs.shape)
        specs = []
        for key in self.in_keys:
            spec = obs[key]
            missing = -self.dim - (spec.ndim - batch)
            if self.unsqueeze_if_oor and missing > 0:
                spec = (
                    spec.reshape(*spec.shape, *([1] * missing))
                    if not isinstance(spec, Bounded)
                    else Bounded(
                        spec.low.reshape(*spec.shape, *([1] * missing)),
                        spec.high.reshape(*spec.shape, *([1] * missing)),
                        dtype=spec.dtype,
                        device=spec.device,
                    )
                )
            if spec.ndim - batch < -self.dim:
                raise ValueError(
                    f"CatTensors: dim {self.dim} is out of the feature dims of {fmt_key(key)} (shape "
                    f"{list(spec.shape)}, batch dims {list(obs.shape)}); use unsqueeze_if_oor=True"
                )
            specs.append((key, spec))
        ref_key, ref = specs[0]
        d = ref.ndim + self.dim
        for key, spec in specs[1:]:
            if spec.ndim != ref.ndim or spec.shape[:d] != ref.shape[:d] or spec.shape[d + 1 :] != ref.shape[d + 1 :]:
                raise ValueError(
                    f"CatTensors: cannot concatenate {fmt_key(key)} (shape {list(spec.shape)}) with "
                    f"{fmt_key(ref_key)} (shape {list(ref.shape)}) along dim {self.dim}"
                )
        dtype = ref.dtype
        for _, spec in specs[1:]:
            dtype = torch.promote_types(dtype, spec.dtype)
        shape = list(ref.shape)
        shape[d] = sum(spec.shape[d] for _, spec in specs)
        if all(isinstance(spec, Bounded) for _, spec in specs):
            low = torch.cat([spec.low.to(dtype) for _, spec in specs], d)
            high = torch.cat([spec.high.to(dtype) for _, spec in specs], d)
            new = Bounded(low, high, shape=shape, dtype=dtype, device=ref.device)
        else:
            new = Unbounded(shape=shape, dtype=dtype, device=ref.device)
        if self.del_keys:
            for key in self.in_keys:
                drop_leaf(obs, key)
        obs[self.out_key] = new
        return obs

    def __repr__(self) -> str:
        return f"CatTensors(in_keys={self.in_keys}, out_key={self.out_key!r}, dim={self.dim}, del_keys={self.del_keys})"


class RenameTransform(Transform):
    """Renames entries of the output data (and, with the inverse keys, of the input data).

    Args:
        in_keys: the entries to rename (observations or rewards; done entries need
            ``create_copy=True``).
        out_keys: their new names.
        in_keys_inv: input entries (actions, states) as the base env names them.
        out_keys_inv: their names outside the transformed env.
        create_copy: copy the entries under the new name instead of renaming (needed for the
            done entries, which the env must keep).

    Raises:
        ValueError: key lists of different lengths; (when attached) moving away (without
            ``create_copy``) the last of ``done``/``terminated``/``truncated`` of a done level,
            or a new name that already exists.
        KeyError: (when attached) an entry that is not in the specs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RenameTransform(["observation"], ["stuff"], create_copy=True)
        >>> sorted(t(TensorDict({"observation": torch.zeros(1)}, [])).keys())
        ['observation', 'stuff']
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        create_copy: bool = False,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        if out_keys is None:
            raise ValueError("RenameTransform needs out_keys (the new names)")
        self._check_key_pairs()
        self.create_copy = create_copy
        self._state_renames: list = []

    def _rename(self, td: TensorDictBase, pairs) -> TensorDictBase:
        for src, dst in pairs:
            value = td.get(src, None)
            if value is None:
                continue
            td.set(dst, value)
            if not self.create_copy:
                _drop(td, [src])
        return td

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._rename(next_tensordict, [*zip(self.in_keys, self.out_keys), *self._state_renames])

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._rename(tensordict, zip(self.out_keys_inv, self.in_keys_inv))

    def _check_free(self, container: Composite, names, key: NestedKey, src: NestedKey) -> None:
        if key != src and locate(container, names, key) is not None:
            raise ValueError(f"RenameTransform: cannot rename {fmt_key(src)} to {fmt_key(key)}: that entry exists")

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        found = require_keys(output_spec, OUTPUT_SPECS, self.in_keys, "RenameTransform")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            name = found[in_key]
            self._check_free(output_spec, OUTPUT_SPECS, out_key, in_key)
            sub = output_spec[name]
            sub[out_key] = sub[in_key].clone()
            if not self.create_copy and out_key != in_key:
                drop_leaf(sub, in_key)
                if name == "full_done_spec":
                    check_end_signals(sub, in_key, "RenameTransform")
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        found = require_keys(input_spec, INPUT_SPECS, self.in_keys_inv, "RenameTransform", "in_keys_inv")
        self._state_renames = []
        for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
            self._check_free(input_spec, INPUT_SPECS, outer, inner)
            sub = input_spec[found[inner]]
            sub[outer] = sub[inner].clone()
            if outer != inner and not self.create_copy:
                drop_leaf(sub, inner)
            if found[inner] == "full_state_spec" and outer != inner:
                self._state_renames.append((inner, outer))
        return input_spec

    def __repr__(self) -> str:
        return (
            f"RenameTransform(in_keys={self.in_keys}, out_keys={self.out_keys}, in_keys_inv={self.in_keys_inv}, "
            f"out_keys_inv={self.out_keys_inv}, create_copy={self.create_copy})"
        )


def _key_args(keys: tuple, owner: str) -> list:
    if len(keys) == 1 and isinstance(keys[0], list):
        keys = tuple(keys[0])
    return _as_key_list(list(keys), owner)


class ExcludeTransform(Transform):
    """Excludes entries from the data (keys that are not present are ignored).

    Args:
        *excluded_keys: the entries to exclude (or one list of them).
        inverse: exclude them from the input of the base env (before each step) instead of
            from its output.

    Exactly the named entries go: a group that they leave empty stays, as an empty container
    (and an empty ``Composite`` in the specs); exclude the group itself to remove it. Done
    entries may be excluded (``done``: the rows that ended are read from ``terminated``/
    ``truncated``), as long as every done level keeps one end-of-episode entry.

    Raises:
        ValueError: (when attached) excluding the last of ``done``/``terminated``/``truncated``
            of a done level (nothing would say that its episodes end) or, on the way out, a
            state entry (the next step needs it).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ExcludeTransform("truncated")
        >>> td = TensorDict({"truncated": torch.zeros(1, dtype=torch.bool), "obs": torch.ones(1)}, [])
        >>> list(t(td).keys())
        ['obs']
    """

    def __init__(self, *excluded_keys: NestedKey, inverse: bool = False) -> None:
        super().__init__()
        self.excluded_keys = _key_args(excluded_keys, "excluded_keys")
        self.inverse = inverse

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.inverse or not self.excluded_keys:
            return next_tensordict
        # exactly the keys named: a group they leave empty stays (as its Composite in the specs)
        return next_tensordict.exclude(*self.excluded_keys, inplace=True)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.inverse or not self.excluded_keys:
            return tensordict
        return _drop(tensordict, self.excluded_keys)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self.inverse:
            return output_spec
        for key in self.excluded_keys:
            name = locate(output_spec, OUTPUT_SPECS, key)
            if name is None:
                continue
            del output_spec[name][key]
            if name == "full_done_spec":
                check_end_signals(output_spec[name], key, "ExcludeTransform")
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if not self.inverse:
            for key in self.excluded_keys:
                if locate(input_spec, ("full_state_spec",), key) is not None:
                    raise ValueError(
                        f"ExcludeTransform: {fmt_key(key)} is a state entry; excluding it from the "
                        "env's output would lose the state the next step needs (use inverse=True to "
                        "hide it from the base env's input instead)"
                    )
        return input_spec

    def __repr__(self) -> str:
        return f"ExcludeTransform(keys={self.excluded_keys}, inverse={self.inverse})"


class SelectTransform(Transform):
    """Keeps only the selected entries of the output data (keys not present are ignored).

    The reward entries are kept unless ``keep_rewards=False``, the done entries unless
    ``keep_dones=False`` (``done`` and ``terminated`` are always kept: every done level needs
    them), and the state entries always (the next step needs them).

    Args:
        *selected_keys: the entries to keep (or one list of them).

    Keyword Args:
        keep_rewards: keep every reward entry (default ``True``).
        keep_dones: keep every done entry (default ``True``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = SelectTransform("obs")
        >>> td = TensorDict({"other": torch.zeros(1), "obs": torch.ones(1)}, [])
        >>> list(t(td).keys())
        ['obs']
    """

    def __init__(self, *selected_keys: NestedKey, keep_rewards: bool = True, keep_dones: bool = True) -> None:
        super().__init__()
        self.selected_keys = _key_args(selected_keys, "selected_keys")
        self.keep_rewards = keep_rewards
        self.keep_dones = keep_dones
        self._keep: list = list(self.selected_keys)
        self._keep_state: list = []

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.select(*self._keep, *self._keep_state, strict=False)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        selected = set(self.selected_keys)
        keep = []
        for name in OUTPUT_SPECS:
            if name not in output_spec.keys():
                continue
            sub = output_spec[name]
            for key in _leaves(sub):
                kept = (
                    key in selected
                    or (name == "full_reward_spec" and self.keep_rewards)
                    or (name == "full_done_spec" and (self.keep_dones or as_tuple(key)[-1] in _REQUIRED_DONE))
                )
                if kept:
                    keep.append(key)
                else:
                    drop_leaf(sub, key)
        self._keep = keep
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        states = input_spec["full_state_spec"] if "full_state_spec" in input_spec.keys() else Composite()
        self._keep_state = _leaves(states)
        return input_spec

    def __repr__(self) -> str:
        return (
            f"SelectTransform(keys={self.selected_keys}, keep_rewards={self.keep_rewards}, "
            f"keep_dones={self.keep_dones})"
        )
