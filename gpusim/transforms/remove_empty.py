"""``RemoveEmptySpecs``: drops the empty Composite entries (no leaf inside, at any depth) from an
env's specs and from its data; on the inverse path it writes the empty input entries back, so
that the base env receives the layout its specs declare.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": {"b": {}}, "x": torch.zeros(())}, [])
    >>> list(RemoveEmptySpecs()(td).keys())
    ['x']
"""

from __future__ import annotations

from tensordict import NonTensorData, TensorDictBase

from gpusim.envs._keys import as_tuple
from gpusim.specs import Composite
from gpusim.transforms._spec_utils import INPUT_SPECS, OUTPUT_SPECS
from gpusim.transforms.transform import Transform

__all__ = ["RemoveEmptySpecs"]


def _empty_composite_keys(spec: Composite) -> list[tuple]:
    """The keys of the empty sub-Composites of ``spec``, deepest first (so deleting in order is safe)."""
    found = []
    for key in spec.keys(True):
        sub = spec[key]
        if isinstance(sub, Composite) and not list(sub.keys(True, True)):
            found.append(as_tuple(key))
    return sorted(found, key=len, reverse=True)


def _empty_td_keys(td: TensorDictBase) -> list[tuple]:
    found = []
    for key in td.keys(True):
        value = td.get(key)
        if isinstance(value, TensorDictBase) and not isinstance(value, NonTensorData):
            if not list(value.keys(True, True)):
                found.append(as_tuple(key))
    return sorted(found, key=len, reverse=True)


class RemoveEmptySpecs(Transform):
    """Removes the empty Composite entries of the specs and the empty sub-tensordicts of the data.

    The empty action/state entries the base env declares are written back (empty) into its input
    on the inverse path.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(), RemoveEmptySpecs())
        >>> "observation" in env.observation_spec.keys()  # leaves are kept
        True
    """

    def __init__(self) -> None:
        super().__init__()
        self.__dict__["_empty_inputs"] = []

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for name in OUTPUT_SPECS:
            sub = output_spec[name]
            for key in _empty_composite_keys(sub):
                if key in sub.keys(True):
                    del sub[key]
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        empty = []
        for name in INPUT_SPECS:
            sub = input_spec[name]
            for key in _empty_composite_keys(sub):
                if key in sub.keys(True):
                    empty.append(key)
                    del sub[key]
        self.__dict__["_empty_inputs"] = empty
        return input_spec

    def _has_inverse(self) -> bool:
        return bool(self.__dict__["_empty_inputs"]) or self.parent is None

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for key in reversed(self.__dict__["_empty_inputs"]):  # shallowest first
            if key not in tensordict.keys(True):
                tensordict.create_nested(key)
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in _empty_td_keys(next_tensordict):
            if key in next_tensordict.keys(True):
                del next_tensordict[key]
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)
