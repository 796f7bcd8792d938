"""``ExpandAs``: one entry expanded to the right to the shape of a reference entry (e.g. an
env-level ``done`` to the per-agent reward shape of a multi-agent env).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"done": torch.tensor([[True], [False]]), "ref": torch.zeros(2, 1, 3)}, [2])
    >>> ExpandAs(in_key="done", ref_key="ref", out_key="done_3")(td)["done_3"].shape
    torch.Size([2, 1, 3])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.specs import Composite
from gpusim.transforms._spec_utils import OUTPUT_SPECS, fmt_key, locate
from gpusim.transforms.transform import Transform

__all__ = ["ExpandAs"]


def _expand_right(value: torch.Tensor, shape: torch.Size, what: str) -> torch.Tensor:
    """``value`` with trailing singleton dims added, expanded to ``shape``."""
    if value.ndim > len(shape):
        raise ValueError(f"{what}: the entry has shape {list(value.shape)}, more dims than the reference {list(shape)}")
    view = value.reshape(*value.shape, *([1] * (len(shape) - value.ndim)))
    try:
        return view.expand(shape)
    except RuntimeError as err:
        raise ValueError(f"{what}: the entry of shape {list(value.shape)} cannot be expanded to {list(shape)}") from err


class ExpandAs(Transform):
    """Expands ``in_key`` to the right (trailing dims) to the shape of ``ref_key``.

    Args:
        in_key: the entry to expand.
        ref_key: the entry whose shape is the target.
        out_key: where the result goes (default: ``in_key``, overwritten).

    In an env the output spec is the input spec expanded likewise; an output written from a done
    entry under another name is an observation (the done entries stay as the env writes them).

    Raises:
        KeyError: (in an env) ``in_key`` or ``ref_key`` is not an output entry of the parent.
        ValueError: the entry cannot be expanded to the reference shape.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), ExpandAs("done", "observation", "done_obs"))
        >>> env.reset()["done_obs"].shape
        torch.Size([2, 4])
    """

    def __init__(self, in_key: NestedKey, ref_key: NestedKey, out_key: NestedKey | None = None) -> None:
        in_key = _keys.unravel(in_key)
        out_key = in_key if out_key is None else _keys.unravel(out_key)
        super().__init__(in_keys=[in_key], out_keys=[out_key])
        self.in_key = in_key
        self.ref_key = _keys.unravel(ref_key)
        self.out_key = out_key

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        value = next_tensordict.get(self.in_key, None)
        ref = next_tensordict.get(self.ref_key, None)
        if value is None or ref is None:
            if self.missing_tolerance:
                return next_tensordict
            raise self._missing(self.in_key if value is None else self.ref_key, next_tensordict)
        next_tensordict.set(self.out_key, _expand_right(value, ref.shape, type(self).__name__))
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        value = tensordict_reset.get(self.in_key, None)
        if value is None:
            return tensordict_reset
        ref = tensordict_reset.get(self.ref_key, None)
        # a reference that only steps write (a reward): the shape of its spec
        shape = ref.shape if ref is not None else self.__dict__.get("_ref_shape")
        if shape is not None:
            tensordict_reset.set(self.out_key, _expand_right(value, shape, type(self).__name__))
        return tensordict_reset

    def _find(self, output_spec: Composite, key: NestedKey) -> str:
        name = locate(output_spec, OUTPUT_SPECS, key)
        if name is None:
            raise KeyError(f"{type(self).__name__}: {fmt_key(key)} is not an output entry of the parent env")
        return name

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        ref_spec = output_spec[self._find(output_spec, self.ref_key)][self.ref_key]
        in_name = self._find(output_spec, self.in_key)
        in_spec = output_spec[in_name][self.in_key]
        target = in_name
        if in_name == "full_done_spec" and self.out_key != self.in_key:
            target = "full_observation_spec"
        while in_spec.ndim < ref_spec.ndim:
            in_spec = in_spec.unsqueeze(-1)
        output_spec[target][self.out_key] = in_spec.expand(ref_spec.shape)
        self.__dict__["_ref_shape"] = ref_spec.shape
        return output_spec
