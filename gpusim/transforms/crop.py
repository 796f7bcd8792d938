"""``RandomCropTensorDict``: random sub-trajectories of stored data (replay buffers, modules).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.crop import RandomCropTensorDict
    >>> valid = torch.arange(10).expand(4, 10) < 5  # the first 5 steps of each row are valid
    >>> td = TensorDict({"t": torch.arange(10).expand(4, 10), "valid": valid}, [4, 10])
    >>> out = RandomCropTensorDict(3, mask_key="valid")(td)
    >>> bool((out["t"] < 5).all())  # every window lies inside the valid steps
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._keys import NestedKey, unravel
from gpusim.transforms.transform import Transform

if TYPE_CHECKING:  # pragma: no cover
    from gpusim.specs import Composite

__all__ = ["RandomCropTensorDict"]


class _TooShort(ValueError, RuntimeError):
    """Data shorter than the crop (a ``ValueError``, and a ``RuntimeError`` as TorchRL raises)."""


class RandomCropTensorDict(Transform):
    """Crops a random contiguous window of ``sub_seq_len`` steps along ``sample_dim``.

    Every row (every index of the other batch dims) gets its own random start. With a
    ``mask_key`` (a bool entry, ``True`` on the valid steps, valid steps first) only valid steps
    are returned: the window lies inside the valid part of each row, and a row with fewer valid
    steps than ``sub_seq_len`` raises (checking it reads one number on the host; the crop itself
    runs on the data's device).

    It is meant for replay buffers and modules (``forward``); attaching it to an env raises.

    Args:
        sub_seq_len: length of the crop.
        sample_dim: the batch dim to crop (default ``-1``, the time dim).
        mask_key: optional entry marking the valid steps.

    Raises:
        ValueError: a non-positive ``sub_seq_len``; (in ``forward``) data shorter than it (also
            a ``RuntimeError``, as TorchRL raises), or a row with fewer valid steps under
            ``mask_key``.
        RuntimeError: when attached to an env.

    Examples:
        Crop windows of 3 steps out of a stored rollout:

        >>> from gpusim.envs.native import CartPoleEnv
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> data = CartPoleEnv(batch_size=[4], seed=0).rollout(10, break_when_any_done=False)
        >>> out = RandomCropTensorDict(3)(data)  # one random start per row
        >>> out.shape
        torch.Size([4, 3])
        >>> start = out["observation"][:, 0]  # each window is 3 consecutive steps of its row
        >>> bool(all((data["observation"][i] == start[i]).all(-1).any() for i in range(4)))
        True
    """

    def __init__(self, sub_seq_len: int, sample_dim: int = -1, mask_key: NestedKey | None = None) -> None:
        if isinstance(sub_seq_len, bool) or not isinstance(sub_seq_len, int) or sub_seq_len < 1:
            raise ValueError(f"RandomCropTensorDict: sub_seq_len must be a positive int, got {sub_seq_len!r}")
        if isinstance(sample_dim, bool) or not isinstance(sample_dim, int):
            raise ValueError(f"RandomCropTensorDict: sample_dim must be an int, got {sample_dim!r}")
        super().__init__()
        self.sub_seq_len = sub_seq_len
        self.sample_dim = sample_dim
        self.mask_key = None if mask_key is None else unravel(mask_key)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns a new tensordict with one random window of ``sub_seq_len`` steps per row.

        Args:
            tensordict: stored data; ``sample_dim`` is one of its batch dims.

        Returns:
            The crop: ``sub_seq_len`` along ``sample_dim``, every other dim unchanged.

        Raises:
            ValueError: ``sample_dim`` is not a batch dim, or the data (or, with ``mask_key``, the
                valid part of a row) is shorter than ``sub_seq_len`` (that error is a
                ``RuntimeError`` too, as TorchRL raises).

        Examples:
            >>> from tensordict import TensorDict
            >>> td = TensorDict({"t": torch.arange(10).expand(4, 10)}, [4, 10])
            >>> out = RandomCropTensorDict(3)(td)
            >>> out.shape, bool(((out["t"][:, 1:] - out["t"][:, :-1]) == 1).all())
            (torch.Size([4, 3]), True)
            >>> RandomCropTensorDict(12)(td)
            Traceback (most recent call last):
            ...
            gpusim.transforms.crop._TooShort: RandomCropTensorDict: cannot crop 12 steps from data with 10 steps along dim -1 (batch_size [4, 10]). Cannot sample trajectories of length 12 from 10 steps.
        """
        bd = tensordict.batch_dims
        if not -bd <= self.sample_dim < bd:
            raise ValueError(
                f"RandomCropTensorDict: sample_dim {self.sample_dim} is not a batch dim of data with "
                f"batch_size {list(tensordict.batch_size)}"
            )
        d = self.sample_dim % bd
        T, L = tensordict.batch_size[d], self.sub_seq_len
        if T < L:
            raise _TooShort(
                f"RandomCropTensorDict: cannot crop {L} steps from data with {T} steps along dim "
                f"{self.sample_dim} (batch_size {list(tensordict.batch_size)}). Cannot sample "
                f"trajectories of length {L} from {T} steps."
            )
        rows = tensordict.batch_size[:d] + tensordict.batch_size[d + 1 :]
        device = tensordict.device
        if self.mask_key is not None:
            mask = tensordict.get(self.mask_key)
            mask = mask.reshape(*tensordict.batch_size, -1).any(-1)
            length = mask.sum(d)
            shortest = int(length.min())  # a host read: stored data, never an env step
            if shortest < L:
                raise _TooShort(
                    f"RandomCropTensorDict: cannot crop {L} valid steps: the shortest row has "
                    f"{shortest} valid steps under {self.mask_key!r}. Cannot sample trajectories "
                    f"of length {L} when the minimum trajectory length is {shortest}."
                )
            high = length - L + 1
            start = (torch.rand(rows, device=mask.device) * high).long().clamp_max(T - L)
        else:
            start = torch.randint(0, T - L + 1, rows, device=device)
        steps = torch.arange(L, device=start.device).reshape(L, *([1] * (bd - 1 - d)))
        idx = start.unsqueeze(d) + steps  # (*rows with L at d)
        new_batch = torch.Size((*tensordict.batch_size[:d], L, *tensordict.batch_size[d + 1 :]))

        def crop(value: torch.Tensor) -> torch.Tensor:
            extra = value.ndim - bd
            index = idx.reshape(*idx.shape, *([1] * extra)).expand(*new_batch, *value.shape[bd:])
            return torch.gather(value, d, index.to(value.device))

        def crop_td(td: TensorDictBase) -> TensorDictBase:
            batch = torch.Size((*new_batch, *td.batch_size[bd:]))
            out = {}
            for key, value in td.items():
                out[key] = crop_td(value) if isinstance(value, TensorDictBase) else crop(value)
            return TensorDict(out, batch_size=batch, device=td.device)

        return crop_td(tensordict)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self.forward(next_tensordict)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        """Raises: the transform crops stored data and cannot be used in an env.

        Raises:
            RuntimeError: always.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> TransformedEnv(CartPoleEnv(), RandomCropTensorDict(3))
            Traceback (most recent call last):
            ...
            RuntimeError: RandomCropTensorDict crops stored trajectories (replay buffers, modules); it cannot be used as an environment transform
        """
        raise RuntimeError(
            "RandomCropTensorDict crops stored trajectories (replay buffers, modules); it cannot be "
            "used as an environment transform"
        )

    def __repr__(self) -> str:
        return f"RandomCropTensorDict(sub_seq_len={self.sub_seq_len}, sample_dim={self.sample_dim}, mask_key={self.mask_key!r})"
