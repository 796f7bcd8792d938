"""Dtype and device casts: ``DTypeCastTransform``, ``DoubleToFloat``, ``DeviceCastTransform``,
``PinMemoryTransform``.

Casting is the edge of an env: outputs are cast on the way out (``in_keys``) and inputs are
cast back on the way in (``in_keys_inv``), so that a policy sees one dtype/device and the base
env another. Specs follow: a cast entry gets the new dtype (bounds are cast too) or device.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.dtype_device import DoubleToFloat
    >>> td = TensorDict({"obs": torch.zeros(2, dtype=torch.float64)}, [])
    >>> DoubleToFloat()(td)["obs"].dtype  # standalone with no keys: every double entry
    torch.float32
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, unravel
from gpusim.specs import Composite
from gpusim.transforms._keyed import KeyedTransform
from gpusim.transforms._spec_utils import INPUT_SPECS, OUTPUT_SPECS, fmt_key, locate, require_keys
from gpusim.transforms.transform import Transform

__all__ = ["DTypeCastTransform", "DoubleToFloat", "DeviceCastTransform", "PinMemoryTransform"]


def _leaves_with_dtype(container: Composite, names: Sequence[str], dtype: torch.dtype) -> list:
    out = []
    for name in names:
        if name not in container.keys():
            continue
        for key, spec in container[name].items(True, True):
            if not isinstance(spec, Composite) and spec.dtype == dtype:
                out.append(unravel(key))
    return out


class DTypeCastTransform(KeyedTransform):
    """Casts one dtype to another for selected keys.

    * With keys: exactly those entries are cast, ``dtype_in -> dtype_out`` on the way out
      (``in_keys``), ``dtype_out -> dtype_in`` on the way in (``in_keys_inv``: the names the base
      env expects; ``out_keys_inv``: the outer names). A state entry cast on the way out is also
      cast back on the way in.
    * Without keys, attached to an env: every output entry (observation, reward, done, and
      state entries echoed in the output) whose spec has ``dtype_in`` is cast on the way out, and
      every input entry (action, state) whose spec has ``dtype_in`` is cast back on the way in.
      The keys are found once, when the transform is attached.
    * Without keys and without an env (``forward``/``inv`` on stored data): every ``dtype_in``
      entry is cast (resp. every ``dtype_out`` entry back); keys are not cached.

    Args:
        dtype_in: the dtype inside the env.
        dtype_out: the dtype seen outside.
        in_keys: output entries to cast.
        out_keys: where to write them (default ``in_keys``; not allowed without ``in_keys``).
        in_keys_inv: inner names of input entries to cast back.
        out_keys_inv: outer names of those entries (default ``in_keys_inv``).

    Raises:
        TypeError: a dtype that is not a ``torch.dtype``; (when attached) a key whose spec
            dtype is not ``dtype_in``.
        KeyError: (when attached) a key that is not in the specs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DTypeCastTransform(torch.int64, torch.int32, in_keys=["count"])
        >>> t(TensorDict({"count": torch.arange(3)}, [3]))["count"].dtype
        torch.int32
    """

    _spec_values_change = False

    def __init__(
        self,
        dtype_in: torch.dtype,
        dtype_out: torch.dtype,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        for name, value in (("dtype_in", dtype_in), ("dtype_out", dtype_out)):
            if not isinstance(value, torch.dtype):
                raise TypeError(f"{type(self).__name__}: {name} must be a torch.dtype, got {value!r}")
        auto = in_keys is None and in_keys_inv is None
        if auto and (out_keys is not None or out_keys_inv is not None):
            raise ValueError(
                f"{type(self).__name__}: out_keys/out_keys_inv need in_keys/in_keys_inv (without keys, "
                "every entry of dtype_in is cast in place)"
            )
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self.dtype_in = dtype_in
        self.dtype_out = dtype_out
        self._auto = auto
        self._resolved = False
        self._state_fwd: list = []  # forward keys that are state entries (cast back on the way in)

    # ------------------------------------------------------------------ tensors
    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.to(self.dtype_out)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.to(self.dtype_in)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self._auto and not self._resolved:
            for key, value in list(next_tensordict.items(True, True)):
                if isinstance(value, torch.Tensor) and value.dtype == self.dtype_in:
                    next_tensordict.set(key, value.to(self.dtype_out))
            return next_tensordict
        return super()._call(next_tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._auto and not self._resolved:
            for key, value in list(tensordict.items(True, True)):
                if isinstance(value, torch.Tensor) and value.dtype == self.dtype_out:
                    tensordict.set(key, value.to(self.dtype_in))
            return tensordict
        tensordict = super()._inv_call(tensordict)
        for key in self._state_fwd:
            value = tensordict.get(key, None)
            if value is not None:
                tensordict.set(key, value.to(self.dtype_in))
        return tensordict

    # ------------------------------------------------------------------ specs
    def _check_dtype(self, spec, key) -> None:
        if spec.dtype != self.dtype_in:
            raise TypeError(
                f"{self._name}: the spec of {fmt_key(key)} has dtype {spec.dtype}, not dtype_in={self.dtype_in}"
            )

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self._auto:
            self.in_keys = _leaves_with_dtype(output_spec, OUTPUT_SPECS, self.dtype_in)
        self._pending_state = []
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            name = locate(output_spec, OUTPUT_SPECS, in_key)
            if name is None:  # maybe a state entry: checked with the input spec
                self._pending_state.append((in_key, out_key))
                continue
            sub = output_spec[name]
            self._check_dtype(sub[in_key], in_key)
            sub[out_key] = self._transform_leaf_spec(sub[in_key], in_key)
        self._resolved = True
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        pending = getattr(self, "_pending_state", [])
        if self._auto:
            self.in_keys_inv = _leaves_with_dtype(input_spec, INPUT_SPECS, self.dtype_in)
            state = _leaves_with_dtype(input_spec, ("full_state_spec",), self.dtype_in)
            self.in_keys = [*self.in_keys, *[k for k in state if k not in self.in_keys]]
            pending = []
        for inner in self.in_keys_inv:
            name = locate(input_spec, INPUT_SPECS, inner)
            if name is not None:
                self._check_dtype(input_spec[name][inner], inner)
        input_spec = super().transform_input_spec(input_spec)
        self._state_fwd = []
        states = input_spec["full_state_spec"] if "full_state_spec" in input_spec.keys() else Composite()
        for in_key, out_key in pending:
            spec = states.get(in_key, None)
            if spec is None or isinstance(spec, Composite):
                raise KeyError(
                    f"{self._name}: in_keys entry {fmt_key(in_key)} is not in the env's specs "
                    "(observation, reward, done or state)"
                )
            if in_key != out_key:
                raise ValueError(
                    f"{self._name}: the state entry {fmt_key(in_key)} is cast in place; it cannot be "
                    f"renamed to {fmt_key(out_key)}"
                )
            if in_key in self.in_keys_inv:
                continue
            self._check_dtype(spec, in_key)
            states[in_key] = self._transform_leaf_spec(spec, in_key)
            self._state_fwd.append(in_key)
        return input_spec

    def __repr__(self) -> str:
        keys = (
            "auto" if self._auto and not self._resolved else f"in_keys={self.in_keys}, in_keys_inv={self.in_keys_inv}"
        )
        return f"{type(self).__name__}({self.dtype_in} -> {self.dtype_out}, {keys})"


class DoubleToFloat(DTypeCastTransform):
    """Casts ``float64`` entries to ``float32`` (and back on the way in).

    Same rules as :class:`DTypeCastTransform` with ``dtype_in=torch.float64`` and
    ``dtype_out=torch.float32``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DoubleToFloat(in_keys=["obs"], in_keys_inv=["action"])
        >>> td = TensorDict({"obs": torch.zeros(1, dtype=torch.float64), "action": torch.zeros(1)}, [])
        >>> t(td)["obs"].dtype, t.inv(td)["action"].dtype
        (torch.float32, torch.float64)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(torch.float64, torch.float32, in_keys, out_keys, in_keys_inv, out_keys_inv)


def _as_device(value, name: str) -> torch.device:
    try:
        return torch.device(value)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"DeviceCastTransform: {name} is not a device: {value!r}") from err


class DeviceCastTransform(Transform):
    """Moves data from one device to another.

    Without keys the whole data moves: outputs to ``device``, inputs (and the input of
    ``reset``) back to ``orig_device``, and the transformed env reports ``device``. With keys,
    only those entries move: the data then has no single device, and the env reports ``None``
    (TorchRL's behaviour). This is the device boundary of a
    CPU-backed env: one transfer per step, at the edge.

    Args:
        device: the destination device (outside the env).
        orig_device: the device inside the env (default: the parent env's device, found when
            the transform is attached).

    Keyword Args:
        in_keys: output entries to move (default: everything).
        out_keys: their names after moving (default ``in_keys``).
        in_keys_inv: input entries to move back (names the base env expects).
        out_keys_inv: their outer names (default ``in_keys_inv``).

    Raises:
        ValueError: a device string torch does not accept.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DeviceCastTransform("cpu")
        >>> t(TensorDict({"obs": torch.ones(1)}, [])).device
        device(type='cpu')
    """

    def __init__(
        self,
        device: torch.device | str | int,
        orig_device: torch.device | str | int | None = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self._check_key_pairs()
        self.device = _as_device(device, "device")
        self.orig_device = None if orig_device is None else _as_device(orig_device, "orig_device")
        self._whole = in_keys is None and in_keys_inv is None

    def _move(self, value, device):
        if device is None:
            return value
        if isinstance(value, TensorDictBase):
            return value if value.device == device else value.to(device)
        return value.to(device, non_blocking=device.type == "cuda")

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._move(obs, self.device)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return self._move(state, self.orig_device)

    @staticmethod
    def _mixed(tensordict: TensorDictBase, device) -> TensorDictBase:
        """Entries moved to another device leave the data without a single device."""
        if device is not None and tensordict.device is not None and tensordict.device != device:
            tensordict.clear_device_()
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self._whole:
            return self._move(next_tensordict, self.device)
        return super()._call(self._mixed(next_tensordict, self.device))

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._whole:
            return self._move(tensordict, self.orig_device)
        self._mixed(tensordict, self.orig_device)
        for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(outer, None)
            if value is not None:
                tensordict.set(inner, self._move(value, self.orig_device))
        return tensordict

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        if self._whole and tensordict is not None:
            return self._move(tensordict, self.orig_device)
        return tensordict

    def transform_env_device(self, device: torch.device | None) -> torch.device | None:
        """The cast device for a whole-env cast; ``None`` (mixed devices) for a cast of some keys
        (TorchRL's behaviour).

        Examples:
            >>> import torch
            >>> DeviceCastTransform("cpu").transform_env_device(torch.device("cpu"))
            device(type='cpu')
            >>> print(DeviceCastTransform("cpu", in_keys=["observation"]).transform_env_device(None))
            None
        """
        return self.device if self._whole else None

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self.orig_device is None and output_spec.device is not None:
            self.orig_device = torch.device(output_spec.device)
        if self._whole:
            return output_spec.to(self.device)
        found = require_keys(output_spec, OUTPUT_SPECS, self.in_keys, type(self).__name__)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            sub = output_spec[found[in_key]]
            sub[out_key] = sub[in_key].to(self.device)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if self._whole:
            return input_spec.to(self.device)
        found = require_keys(input_spec, INPUT_SPECS, self.in_keys_inv, type(self).__name__, "in_keys_inv")
        for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
            sub = input_spec[found[inner]]
            spec = sub[inner].to(self.device)
            if outer != inner:
                del sub[inner]
            sub[outer] = spec
        return input_spec

    def __repr__(self) -> str:
        return f"DeviceCastTransform(device={self.device}, orig_device={self.orig_device})"


class PinMemoryTransform(Transform):
    """Calls ``pin_memory`` on the output data to speed up host-to-GPU copies.

    Pinning needs CUDA: on a machine without it (or for data that is not on the CPU) the
    transform leaves the data as it is.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = PinMemoryTransform()(TensorDict({"obs": torch.ones(1)}, []))
        >>> td["obs"].is_pinned() == torch.cuda.is_available()
        True
    """

    def __init__(self) -> None:
        super().__init__()
        self._pin = torch.cuda.is_available()

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self._pin:
            return next_tensordict
        device = next_tensordict.device
        if device is None:  # mixed or unset: pin the CPU entries only
            return next_tensordict.apply(lambda x: x.pin_memory() if x.device.type == "cpu" else x)
        if device.type == "cpu":
            return next_tensordict.pin_memory()
        return next_tensordict
