"""``LibraryWrapper``: what every wrapper of an external simulator shares.

* attribute forwarding: an attribute the wrapper does not have is read from the wrapped library
  object (``env.task``, ``env.possible_agents``, ...), with an error naming both when neither has it;
* ``env``: the wrapped object;
* ``_reset``: the reset of the rows that ``"_reset"`` selects, through the one ``_reset_rows`` hook
  each wrapper writes (see :mod:`gpusim.envs.episode`);
* ``_to_device``: the device edge, one packed transfer per output (:mod:`gpusim.envs.libs._edge`).

Examples:
    >>> from gpusim.envs.libs.dm_control import DMControlEnv
    >>> issubclass(DMControlEnv, LibraryWrapper)
    True
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.common import EnvBase
from gpusim.envs.episode import ResetMasks
from gpusim.envs.libs._edge import EdgeTransfer

__all__ = ["LibraryWrapper"]


class LibraryWrapper(EnvBase):
    """Base of the library wrappers (see the module docstring). Subclasses store the wrapped object
    with :meth:`_wrap` and write ``_reset_rows``, ``_step`` and ``_set_seed``.

    Attributes:
        library: how error messages name the library (``"dm_control"``).
    """

    library = "library"

    def _wrap(self, env: Any) -> None:
        """Stores the wrapped object and the device edge (call after ``EnvBase.__init__``)."""
        self.__dict__["_env"] = env
        self.__dict__["_edge"] = EdgeTransfer(self.device)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            env = self.__dict__.get("_env")
            if env is None or name.startswith("__"):
                raise
        try:
            return getattr(env, name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__} and its {self.library} env have no attribute {name!r}"
            ) from None

    @property
    def env(self) -> Any:
        """The wrapped library object."""
        return self._env

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Closes the wrapped library object (when it has a ``close``), then the env. Closing a
        closed env does nothing unless ``raise_if_closed``.

        Args:
            raise_if_closed: raise a ``RuntimeError`` instead when the env is already closed.

        Examples:
            >>> from gpusim.envs.libs.vmas import VmasEnv
            >>> env = VmasEnv("balance", num_envs=2, n_agents=2, seed=0)
            >>> env.close()
            >>> env.is_closed
            True
            >>> env.close(raise_if_closed=True)
            Traceback (most recent call last):
            ...
            RuntimeError: VmasEnv.close: the env is already closed
        """
        if not self.is_closed:
            closer = getattr(self.__dict__.get("_env"), "close", None)
            if callable(closer):
                closer()
        super().close(raise_if_closed=raise_if_closed)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        return self._reset_rows(tensordict, self.episode.resolve(tensordict), **kwargs)

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        raise NotImplementedError(f"{type(self).__name__} must implement _reset_rows")

    def _no_kwargs(self, kwargs: dict, where: str = "reset") -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}.{where} got unexpected keyword arguments {sorted(kwargs)}")

    def _to_device(self, td: TensorDictBase) -> TensorDictBase:
        """``td`` (built on the host) on the env device: itself on the CPU, else one packed copy."""
        if td.device is not None and td.device == self.device or self.device.type == "cpu":
            return td
        return self._edge(td)

    @staticmethod
    def _selects_nothing(masks: ResetMasks) -> bool:
        """Whether a reset selects no row (a host read: the libraries run on the host)."""
        rows = masks.env_rows()
        return rows is not None and not bool(rows.any())

    def _previous_or_zeros(self) -> TensorDictBase:
        """The reset data of a reset that selects nothing: zeros that the episode merge replaces
        with the previous data in every row (the library is left as it is)."""
        return self.fake_tensordict().exclude("next")

    @staticmethod
    def _flag_tensors(shape: tuple, names: tuple = ("done", "terminated", "truncated")) -> dict:
        """``False`` flags of ``shape`` for a reset output, one allocation."""
        flags = torch.zeros(len(names), *shape, dtype=torch.bool)
        return dict(zip(names, flags))
