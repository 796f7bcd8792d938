"""The device edge of CPU-backed envs: one packed, pinned, non-blocking host-to-device copy per
output tensordict.

Moving a step's output leaf by leaf costs one allocation and one copy launch per leaf (and
``pin_memory()`` per step adds a pinned allocation and a copy each). :class:`EdgeTransfer`
packs every tensor leaf into one pinned byte buffer laid out once per key/shape/dtype
signature (offsets aligned to 16 bytes), copies that buffer to the device with one
``non_blocking`` copy, and hands out typed views of the device buffer. Two pinned buffers
alternate per layout; before one is refilled, the event recorded after its last copy is waited
on, so the host never overwrites memory a copy still reads. Non-tensor leaves (text) fall back to
``TensorDict.to``.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> edge = EdgeTransfer("cpu", pin=False)  # CPU target: the packing path alone
    >>> td = TensorDict({"obs": torch.ones(4, 3), "done": torch.zeros(4, 1, dtype=torch.bool)}, [4])
    >>> out = edge(td)
    >>> out["obs"].sum().item(), out["done"].dtype
    (12.0, torch.bool)
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._fasttd import new_td

__all__ = ["EdgeTransfer"]

_ALIGN = 16


class _Layout:
    def __init__(self, leaves: list[tuple[Any, torch.Size, torch.dtype]], pin: bool) -> None:
        self.slots = []
        offset = 0
        for key, shape, dtype in leaves:
            nbytes = shape.numel() * torch.empty((), dtype=dtype).element_size()
            self.slots.append((key, offset, nbytes, shape, dtype))
            offset += -(-nbytes // _ALIGN) * _ALIGN
        self.total = max(offset, _ALIGN)
        self.buffers = [torch.empty(self.total, dtype=torch.uint8, pin_memory=pin) for _ in range(2)]
        # typed views of each staging buffer, made once: a step only copies into them
        self.views = [
            [buf[off : off + nb].view(dtype).view(shape) for _, off, nb, shape, dtype in self.slots]
            for buf in self.buffers
        ]
        self.sizes = []
        for i, (_, off, _nb, _, _) in enumerate(self.slots):
            end = self.slots[i + 1][1] if i + 1 < len(self.slots) else self.total
            self.sizes.append(end - off)
        self.events: list = [None, None]
        self.turn = 0


class EdgeTransfer:
    """Moves CPU tensordicts to ``device`` with one packed copy (see the module docstring).

    Args:
        device: the target device.
        pin: use pinned staging buffers (default: when the target is CUDA).
    """

    def __init__(self, device: torch.device | str, pin: bool | None = None) -> None:
        self.device = torch.device(device)
        self.pin = self.device.type == "cuda" if pin is None else pin
        self._layouts: dict[tuple, _Layout] = {}
        self.host_device = self.device if self.device.type == "cpu" else None

    # ``host_device``: the device label of the tensordicts a wrapper builds on the host: the target
    # itself when it is the CPU (the data stays there, so every output reports the env's device),
    # else ``None`` (the transfer labels its output).

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        leaves = list(td.items(True, True))
        if not all(isinstance(v, torch.Tensor) for _, v in leaves):
            return td.to(self.device, non_blocking=True)
        signature = tuple((k, v.shape, v.dtype) for k, v in leaves)
        layout = self._layouts.get(signature)
        if layout is None:
            layout = self._layouts[signature] = _Layout(list(signature), self.pin)
        i = layout.turn
        layout.turn = 1 - i
        buf, event = layout.buffers[i], layout.events[i]
        if event is not None:
            event.synchronize()  # the copy that last read this buffer has finished
        for view, (_, value) in zip(layout.views[i], leaves):
            view.copy_(value)
        dev = torch.empty(layout.total, dtype=torch.uint8, device=self.device)
        dev.copy_(buf, non_blocking=True)
        if self.device.type == "cuda":
            event = layout.events[i] or torch.cuda.Event()
            event.record()
            layout.events[i] = event
        source: dict = {}
        chunks = dev.split(layout.sizes)
        for (key, _off, nbytes, shape, dtype), chunk in zip(layout.slots, chunks):
            view = chunk[:nbytes].view(dtype).view(shape)
            if isinstance(key, tuple) and len(key) > 1:
                node = source
                for part in key[:-1]:
                    node = node.setdefault(part, {})
                node[key[-1]] = view
            else:
                source[key[0] if isinstance(key, tuple) else key] = view
        return _new_nested(source, td, self.device)


def _new_nested(source: dict, template: TensorDictBase, device: torch.device) -> TensorDict:
    """Rebuilds ``template``'s nesting (and nested batch sizes) around the device views."""
    out = {}
    for key, value in source.items():
        if isinstance(value, dict):
            out[key] = _new_nested(value, template.get(key), device)
        else:
            out[key] = value
    return new_td(out, template.batch_size, device)
