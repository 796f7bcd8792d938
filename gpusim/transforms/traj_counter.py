"""``TrajCounter``: a global trajectory id, unique across envs, clones and processes.

Every reset row gets the next value of a counter (its trajectory id), which the steps of the
episode carry; all clones of a transform (``clone()``, pickled copies in worker processes) draw
from the same counter, held in shared memory and guarded by a file lock, so no two episodes get
the same id. Assigning ids reads the number of reset rows on the host.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import StepCounter, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=0), TrajCounter())
    >>> env.reset()["traj_count"].flatten().tolist()
    [0, 1, 2]
    >>> env.reset()["traj_count"].flatten().tolist()
    [3, 4, 5]
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import weakref
from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, as_tuple
from gpusim.transforms._levels import default_levels, reset_mask_for
from gpusim.transforms.transform import Transform

__all__ = ["TrajCounter"]


class _FileLock:
    """An inter-process lock on a file (works for forked and spawned processes alike)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> _FileLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: Any) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __getstate__(self) -> dict:
        return {"path": self.path, "_fd": None}


def _map_counter(path: str) -> torch.Tensor:
    return torch.from_file(path, shared=True, size=1, dtype=torch.int64).view(())


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class _OwnedPath(str):
    """A file path that removes its file when garbage collected (a pickled copy is a plain str)."""

    def __new__(cls, path: str) -> _OwnedPath:
        out = super().__new__(cls, path)
        weakref.finalize(out, _remove, str(path))
        return out

    def __reduce__(self) -> tuple:
        return (str, (str(self),))


class TrajCounter(Transform):
    """Writes a global trajectory id (``out_key``) at each reset and carries it through the steps.

    Args:
        out_key: the entry of the id (default ``"traj_count"``); its prefix selects the done
            entries (and ``"_reset"`` masks) it follows: ``("agents", "traj_count")`` counts the
            episodes of ``("agents", "done")``.

    Raises:
        RuntimeError: on a call outside an env's step or reset, or no done entry matches the prefix.

    Examples:
        >>> t = TrajCounter()
        >>> t.clone().state_dict() == t.state_dict() == {"traj_count": 0}
        True
    """

    restarts_on_native_autoreset = True  # per-episode state: restarted on a native auto-reset

    def __init__(self, out_key: NestedKey = "traj_count") -> None:
        super().__init__(in_keys=[], out_keys=[out_key])
        path = os.path.join(tempfile.gettempdir(), f"gpusim-trajcounter-{os.getuid()}.lock")  # one for all
        self.__dict__["_lock"] = _FileLock(path)
        # the counter lives in a file mapped in every process (forked, spawned or unpickled copies)
        fd, counter_path = tempfile.mkstemp(prefix="gpusim-trajcounter-", suffix=".bin")
        os.write(fd, bytes(8))
        os.close(fd)
        self.__dict__["_counter_path"] = counter_path
        self.__dict__["_counter"] = _map_counter(counter_path)
        # the creator's file; mappings outlive it
        self.__dict__["_file_owner"] = weakref.finalize(self, _remove, counter_path)

    def _done_key(self) -> NestedKey:
        key = as_tuple(self.out_keys[0])
        for done_key in self.parent.done_keys:
            t = as_tuple(done_key)
            if t[:-1] == key[:-1] and t[-1] == "done":
                return done_key
        raise RuntimeError(
            f"TrajCounter: no done entry matches the prefix of {self.out_keys[0]!r} "
            f"(done keys: {self.parent.done_keys})"
        )

    def _draw(self, n: int) -> int:
        with self._lock:
            first = int(self._counter)
            self._counter.add_(n)
        return first

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        out_key = self.out_keys[0]
        done_key = self._done_key()
        shape = self.parent.full_done_spec[done_key].shape
        batch = tensordict_reset.batch_size
        mask = reset_mask_for(tensordict, done_key, default_levels(batch), batch)
        device = tensordict_reset.device
        if mask is None:
            mask = torch.ones(shape, dtype=torch.bool, device=device)
        mask = mask.reshape(shape) if mask.numel() == shape.numel() else mask.expand(shape)
        n = int(mask.sum())
        first = self._draw(n)
        previous = tensordict.get(out_key, None) if tensordict is not None else None
        ids = torch.zeros(shape, dtype=torch.int64, device=device) if previous is None else previous.clone()
        ids[mask] = torch.arange(first, first + n, dtype=torch.int64, device=device)
        tensordict_reset.set(out_key, ids)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        value = tensordict.get(self.out_keys[0], None)
        if value is None:
            raise RuntimeError("TrajCounter: step called before reset (no trajectory id in the input)")
        next_tensordict.set(self.out_keys[0], value)
        return next_tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TrajCounter can only be called within an environment step or reset.")

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: ids are drawn by env resets.

        Examples:
            >>> from tensordict import TensorDict
            >>> TrajCounter()(TensorDict())
            Traceback (most recent call last):
            ...
            RuntimeError: TrajCounter can only be called within an environment step or reset.
        """
        return self._call(tensordict)

    def _shared_state(self) -> dict:
        """The counter file for :class:`~gpusim.envs.batched.EnvCreator`: every env a creator (and
        its variants) builds draws from it; the creator's state owns the file from then on."""
        owner = self.__dict__.get("_file_owner")
        if owner is not None and owner.detach() is not None:
            self.__dict__["_file_owner"] = None
            return {"counter_path": _OwnedPath(self._counter_path)}
        return {"counter_path": self._counter_path}

    def _load_shared_state(self, state: dict) -> None:
        """Draws from the counter file of ``state`` (see :meth:`_shared_state`)."""
        path = str(state["counter_path"])
        self.__dict__["_counter_path"] = path
        self.__dict__["_counter"] = _map_counter(path)

    def clone(self) -> TrajCounter:
        """A parent-less copy drawing from the same counter.

        Examples:
            >>> t = TrajCounter()
            >>> t.load_state_dict({"traj_count": 5})
            >>> t.clone().state_dict()
            {'traj_count': 5}
        """
        out = super().clone()
        out.__dict__["_file_owner"] = None  # the file stays owned by the original
        out.__dict__["_counter"] = self._counter
        out.__dict__["_counter_path"] = self._counter_path
        out.__dict__["_lock"] = self._lock
        return out

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_counter"] = None  # re-mapped from _counter_path
        state["_file_owner"] = None  # a copy never removes the file
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.__dict__["_counter"] = _map_counter(self.__dict__["_counter_path"])

    def state_dict(self, *args: Any, **kwargs: Any) -> dict:
        """``{"traj_count": next id}``.

        Examples:
            >>> TrajCounter().state_dict()
            {'traj_count': 0}
        """
        return {"traj_count": int(self._counter)}

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> None:
        """Sets the next id (shared by every clone).

        Examples:
            >>> t = TrajCounter()
            >>> t.load_state_dict({"traj_count": 3})
            >>> t.state_dict()
            {'traj_count': 3}
        """
        with self._lock:
            self._counter.fill_(int(state_dict["traj_count"]))

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        """Adds the id entry (int64, the shape of the matching done entry).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), TrajCounter())
            >>> env.observation_spec["traj_count"].shape, env.observation_spec["traj_count"].dtype
            (torch.Size([2, 1]), torch.int64)
        """
        from gpusim.specs import Unbounded

        done = self.parent.full_done_spec[self._done_key()]
        observation_spec = observation_spec.clone()
        observation_spec.unlock_()
        observation_spec[self.out_keys[0]] = Unbounded(shape=done.shape, dtype=torch.int64, device=done.device)
        return observation_spec
