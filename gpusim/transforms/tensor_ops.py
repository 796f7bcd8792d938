"""Tensor-level transforms: ``UnaryTransform`` (any function of an entry), ``Hash`` (a hash of an
entry, e.g. a string) and ``Stack`` (several entries stacked along a new dim, and unstacked on
the inverse path).

``UnaryTransform``/``Hash`` call a user function on the whole (batched) entry; their specs are
read from the function's output on a zero-filled input built from the specs. ``Stack`` is one
``torch.stack`` per step; its specs are the input specs stacked along the same dim.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2, 3), "b": torch.ones(2, 3)}, [2])
    >>> Stack(in_keys=["a", "b"], out_key="ab", dim=-2)(td)["ab"].shape
    torch.Size([2, 2, 3])
    >>> UnaryTransform(in_keys=["ab"], out_keys=["n"], fn=lambda x: x.sum(-1))(td)["n"][0]
    tensor([0., 3.])
    >>> Hash(in_keys=["s"], out_keys=["h"])(TensorDict({"s": "abc"}, []))["h"].shape
    torch.Size([32])
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.envs.utils import make_composite_from_td
from gpusim.specs import Composite
from gpusim.transforms._spec_utils import INPUT_SPECS, OUTPUT_SPECS, drop_leaf
from gpusim.transforms.transform import Transform

__all__ = ["UnaryTransform", "Hash", "Stack"]


def _unwrap(value: Any) -> Any:
    """The Python data of a non-tensor entry (a value, or a list for stacks)."""
    if isinstance(value, NonTensorData):
        return value.data if value.batch_dims == 0 else value.tolist()
    if isinstance(value, NonTensorStack):
        return value.tolist()
    return value


class UnaryTransform(Transform):
    """Applies ``fn`` to every ``in_key`` (the whole batched entry) and writes ``out_key``.

    Args:
        in_keys: the inputs.
        out_keys: the outputs.
        in_keys_inv: inner names of the inverse keys.
        out_keys_inv: outer names of the inverse keys.
        fn: the function (tensors, or the Python data of non-tensor entries).
        inv_fn: the inverse function (default: ``fn``).
        use_raw_nontensor: give ``NonTensorData``/``NonTensorStack`` entries to ``fn`` as they
            are instead of their Python data.

    The output specs are those of ``fn``'s output on zero-filled inputs built from the specs.

    Examples:
        >>> import torch
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> norm = lambda x: x.norm(dim=-1)
        >>> t = UnaryTransform(in_keys=["observation"], out_keys=["norm"], fn=norm)
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), t)
        >>> env.observation_spec["norm"].shape  # read from fn's output on zeros
        torch.Size([2])
        >>> td = env.reset()
        >>> torch.equal(td["norm"], td["observation"].norm(dim=-1))
        True
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        fn: Callable[[Any], Any],
        inv_fn: Callable[[Any], Any] | None = None,
        use_raw_nontensor: bool = False,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self._check_key_pairs()
        self._fn = fn
        self._inv_fn = inv_fn
        self._use_raw_nontensor = bool(use_raw_nontensor)

    def _prep(self, value: Any) -> Any:
        return value if self._use_raw_nontensor else _unwrap(value)

    def _apply_transform(self, value: Any) -> Any:
        return self._fn(self._prep(value))

    def _inv_apply_transform(self, value: Any) -> Any:
        return (self._inv_fn or self._fn)(self._prep(value))

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in next_tensordict.keys(True, True):
                if not self.missing_tolerance:
                    raise self._missing(in_key, next_tensordict)
                continue
            next_tensordict.set(out_key, self._apply_transform(next_tensordict.get(in_key)))
        return next_tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            if out_key not in tensordict.keys(True, True):
                if in_key == out_key and not self.missing_tolerance:
                    raise self._missing(out_key, tensordict)
                continue
            tensordict.set(in_key, self._inv_apply_transform(tensordict.get(out_key)))
        return tensordict

    def _probe_specs(self, container: Composite, names: Sequence[str], pairs) -> Composite | None:
        """The specs of the outputs of ``fn`` on zero-filled inputs of the ``names`` specs."""
        present = [n for n in names if n in container.keys()]
        zeros = None
        for name in present:
            z = container[name].zero()
            zeros = z if zeros is None else zeros.update(z)
        if zeros is None:
            return None
        for in_key, out_key in pairs:
            if in_key in zeros.keys(True, True):
                value = zeros.get(in_key)
                zeros.set(out_key, self._apply_transform(value))
        return make_composite_from_td(zeros, unsqueeze_null_shapes=False)

    def _write_specs(self, container: Composite, names: Sequence[str], pairs, probe: Composite) -> None:
        for name in names:
            if name not in container.keys():
                continue
            sub = container[name]
            keys = set(sub.keys(True, True))
            for in_key, out_key in pairs:
                if in_key in keys:
                    sub[out_key] = probe[out_key]

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        pairs = list(zip(self.in_keys, self.out_keys))
        probe = self._probe_specs(output_spec, OUTPUT_SPECS, pairs)
        if probe is not None:
            self._write_specs(output_spec, OUTPUT_SPECS, pairs, probe)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        # the outer spec is what fn gives on the inner data (TorchRL's convention)
        pairs = list(zip(self.in_keys_inv, self.out_keys_inv))
        if not pairs:
            return input_spec
        probe = self._probe_specs(input_spec, INPUT_SPECS, pairs)
        if probe is not None:
            self._write_specs(input_spec, INPUT_SPECS, pairs, probe)
        return input_spec

    def __repr__(self) -> str:
        return f"{type(self).__name__}(in_keys={self.in_keys}, out_keys={self.out_keys}, fn={getattr(self._fn, '__name__', self._fn)})"


class Hash(UnaryTransform):
    """Writes a hash of every ``in_key`` to its ``out_key``.

    Args:
        in_keys: the values to hash.
        out_keys: the hashes.
        in_keys_inv: on the inverse path, where the original values are written back.
        out_keys_inv: on the inverse path, the hashes to look up.
        hash_fn: ``(value[, seed]) -> tensor``; default :meth:`reproducible_hash` (SHA-256 of the
            string, 32 ``uint8``).
        seed: passed to ``hash_fn`` when given.
        use_raw_nontensor: see :class:`UnaryTransform`.
        repertoire: a dict from hash to value, filled by every forward call and read by the
            inverse (created when inverse keys are given; shared, not copied).

    Raises:
        ValueError: ``hash_fn`` did not return a tensor.
        RuntimeError: an inverse lookup without a repertoire.

    Examples:
        >>> from tensordict import TensorDict
        >>> t = Hash(in_keys=["s"], out_keys=["h"], in_keys_inv=["s"], out_keys_inv=["h"])
        >>> h = t(TensorDict({"s": "abc"}, []))["h"]
        >>> t.get_input_from_hash(h)
        'abc'
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        hash_fn: Callable | None = None,
        seed: Any | None = None,
        use_raw_nontensor: bool = False,
        repertoire: dict | None = None,
    ) -> None:
        if repertoire is None and in_keys_inv:
            repertoire = {}
        self._repertoire = repertoire
        self._seed = seed
        self._hash_fn = Hash.reproducible_hash if hash_fn is None else hash_fn
        super().__init__(
            in_keys=in_keys,
            out_keys=out_keys,
            in_keys_inv=in_keys_inv,
            out_keys_inv=out_keys_inv,
            fn=self.call_hash_fn,
            inv_fn=self.get_input_from_hash,
            use_raw_nontensor=use_raw_nontensor,
        )

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
        """The repertoire (the hash -> value map).

        Examples:
            >>> from tensordict import TensorDict
            >>> t = Hash(in_keys=["s"], out_keys=["h"], repertoire={})
            >>> _ = t(TensorDict({"s": "abc"}, []))
            >>> list(t.state_dict()["_repertoire"].values())
            ['abc']
        """
        return {"_repertoire": self._repertoire}

    @classmethod
    def hash_to_repertoire_key(cls, hash_tensor: Any) -> Any:
        """A hashable key for a hash tensor (nested tuples of its values).

        Examples:
            >>> import torch
            >>> Hash.hash_to_repertoire_key(torch.tensor([[1, 2], [3, 4]]))
            ((1, 2), (3, 4))
        """
        if isinstance(hash_tensor, torch.Tensor):
            return (
                hash_tensor.tolist()
                if hash_tensor.dim() == 0
                else tuple(cls.hash_to_repertoire_key(t) for t in hash_tensor.tolist())
            )
        if isinstance(hash_tensor, list):
            return tuple(cls.hash_to_repertoire_key(t) for t in hash_tensor)
        return hash_tensor

    def get_input_from_hash(self, hash_tensor: Any) -> Any:
        """The value that gave ``hash_tensor`` (from the repertoire).

        Raises:
            RuntimeError: the transform keeps no repertoire.
            KeyError: ``hash_tensor`` was never produced by this transform.

        Examples:
            >>> t = Hash(in_keys=["s"], out_keys=["h"], repertoire={})
            >>> t.get_input_from_hash(t.call_hash_fn("abc"))
            'abc'
        """
        if self._repertoire is None:
            raise RuntimeError("Hash: an inverse lookup needs a repertoire (pass repertoire= or inverse keys)")
        return self._repertoire[self.hash_to_repertoire_key(hash_tensor)]

    def call_hash_fn(self, value: Any) -> torch.Tensor:
        """The hash of ``value`` (recorded in the repertoire when there is one).

        Raises:
            ValueError: ``hash_fn`` did not return a tensor.

        Examples:
            >>> t = Hash(in_keys=["s"], out_keys=["h"], seed="salt-")
            >>> h = t.call_hash_fn("abc")
            >>> h.dtype, h.shape, h.equal(Hash.reproducible_hash("salt-abc"))
            (torch.uint8, torch.Size([32]), True)
        """
        out = self._hash_fn(value) if self._seed is None else self._hash_fn(value, self._seed)
        if not torch.is_tensor(out):
            raise ValueError(f"Hash: hash_fn must return a tensor, got {type(out).__name__}")
        if self._repertoire is not None:
            self._repertoire[self.hash_to_repertoire_key(out)] = copy.copy(value)
        return out

    @classmethod
    def reproducible_hash(cls, string: Any, seed: str | None = None) -> torch.Tensor:
        """SHA-256 of ``seed + str(string)`` (``None`` hashes as ``""``) as 32 ``uint8``.

        Examples:
            >>> Hash.reproducible_hash("abc")[:4]
            tensor([186, 120,  22, 191], dtype=torch.uint8)
        """
        text = "" if string is None else str(string)
        if seed is not None:
            text = seed + text
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return torch.tensor(list(digest), dtype=torch.uint8)


def _stack_specs(specs: list, dim: int) -> Any:
    """Specs stacked along ``dim`` (negative: counted from the end of the spec shape)."""
    first = specs[0]
    pos = len(first.shape) + dim + 1 if dim < 0 else dim
    if all(s == first for s in specs[1:]):
        new_shape = (*first.shape[:pos], len(specs), *first.shape[pos:])
        return first.unsqueeze(pos).expand(*new_shape)
    return torch.stack(specs, dim)  # heterogeneous specs: the spec library's stacking


class Stack(Transform):
    """Stacks entries (tensors or tensordicts of the same shape) into one along a new ``dim``.

    Args:
        in_keys: the entries to stack.
        out_key: the stacked entry.
        in_key_inv: the stacked entry to split on the inverse path.
        out_keys_inv: the entries it is split into (with ``in_key_inv``).
        dim: the new dim (negative unless ``allow_positive_dim``).
        allow_positive_dim: accept ``dim >= 0``.
        del_keys: delete the inputs (and the sub-tensordicts they leave empty).

    Raises:
        ValueError: a positive dim without ``allow_positive_dim``; only one of ``in_key_inv``/
            ``out_keys_inv``; ``out_key`` among ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"a": torch.zeros(2, 3), "b": torch.ones(2, 3)}, [2])
        >>> out = Stack(in_keys=["a", "b"], out_key="ab", dim=-2)(td)
        >>> out["ab"].shape, "a" in out.keys()  # the inputs are deleted (del_keys=True)
        (torch.Size([2, 2, 3]), False)
        >>> out["ab"][0, :, 0]
        tensor([0., 1.])
    """

    invertible = True

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_key: NestedKey,
        in_key_inv: NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        dim: int = -1,
        allow_positive_dim: bool = False,
        *,
        del_keys: bool = True,
    ) -> None:
        if not allow_positive_dim and dim >= 0:
            raise ValueError(
                f"Stack: dim should be negative to accommodate for envs of different batch_sizes, got dim={dim}; "
                "set allow_positive_dim=True to allow it"
            )
        if (in_key_inv is None) != (out_keys_inv is None):
            raise ValueError("Stack: in_key_inv and out_keys_inv must be given together")
        super().__init__(
            in_keys=in_keys,
            out_keys=[out_key],
            in_keys_inv=None if in_key_inv is None else [in_key_inv],
            out_keys_inv=out_keys_inv,
        )
        out = _keys.as_tuple(self.out_keys[0])
        if any(_keys.as_tuple(k) == out for k in self.in_keys):
            raise ValueError(f"Stack: out_key {out_key!r} cannot be in in_keys {self.in_keys}")
        parents = []
        for key in self.in_keys:
            t = _keys.as_tuple(key)
            for depth in range(len(t) - 1, 0, -1):
                parent = _keys.unravel(t[:depth])
                if parent not in parents:
                    parents.append(parent)
        self._parents = sorted(parents, key=lambda k: len(_keys.as_tuple(k)), reverse=True)
        self.dim = dim
        self._del_keys = bool(del_keys)

    def _drop_inputs(self, tensordict: TensorDictBase) -> None:
        tensordict.exclude(*self.in_keys, inplace=True)
        for parent in self._parents:
            node = tensordict.get(parent, None)
            if isinstance(node, TensorDictBase) and len(node.keys()) == 0:
                tensordict.exclude(parent, inplace=True)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        values = []
        for key in self.in_keys:
            value = next_tensordict.get(key, None)
            if value is None:
                if not self.missing_tolerance:
                    raise self._missing(key, next_tensordict)
                continue
            values.append(value)
        if not values:
            return next_tensordict
        next_tensordict.set(self.out_keys[0], torch.stack(values, self.dim))
        if self._del_keys:
            self._drop_inputs(next_tensordict)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.in_keys_inv:
            return tensordict
        stacked = tensordict.get(self.in_keys_inv[0], None)
        if stacked is None:
            return tensordict
        for value, key in zip(torch.unbind(stacked, self.dim), self.out_keys_inv):
            tensordict.set(key, value)
        return tensordict.exclude(self.in_keys_inv[0])

    def _stack_spec(self, spec: Composite) -> Composite:
        keys = set(spec.keys(True))
        found = [k for k in self.in_keys if k in keys]
        if len(found) != len(self.in_keys):  # the entries live elsewhere (or not all here)
            return spec
        spec[self.out_keys[0]] = _stack_specs([spec[k] for k in found], self.dim)
        if self._del_keys:
            for k in found:
                drop_leaf(spec, k)  # a leaf or a sub-composite, and the parents it empties
        return spec

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for name in OUTPUT_SPECS:
            if name in output_spec.keys():
                output_spec[name] = self._stack_spec(output_spec[name])
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        for name in INPUT_SPECS:
            if name in input_spec.keys():
                input_spec[name] = self._stack_spec(input_spec[name])
        return input_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._stack_spec(observation_spec)

    def __repr__(self) -> str:
        return f"Stack(in_keys={self.in_keys}, out_key={self.out_keys[0]}, dim={self.dim})"
