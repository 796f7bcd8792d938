"""Names of the batch dims of Composite specs (TorchRL's ``names``/``refine_names``)."""

from __future__ import annotations

from typing import Any

__all__ = ["NamesMixin"]


class NamesMixin:
    """Dim names of a :class:`~gpusim.specs.Composite` (mixed into it).

    Examples:
        >>> from gpusim.specs import Composite
        >>> Composite(shape=(3, 4), names=["batch", "time"])[0].names
        ['time']
    """

    _names: list | None
    ndim: int

    def _nested_composites(self) -> list:  # implemented by Composite
        raise NotImplementedError

    @property
    def names(self) -> list:
        """Names of the batch dims (``None`` for unnamed dims).

        Setting it names nested Composites too; ``None`` erases the names.

        Examples:
            >>> from gpusim.specs import Composite
            >>> spec = Composite(shape=(3, 4), names=["env", "time"])
            >>> spec.names
            ['env', 'time']
            >>> spec.names = None
            >>> spec.names
            [None, None]
        """
        if self._names is None:
            return [None] * self.ndim
        return list(self._names)

    @names.setter
    def names(self, value: Any) -> None:
        if value is None:
            self._names = None
            return
        value = list(value)
        if len(value) != self.ndim:
            raise ValueError(f"Expected {self.ndim} names, but got {len(value)} names: {value}")
        self._names = value
        for spec in self._nested_composites():
            if spec.ndim >= self.ndim:
                spec.names = value + [None] * (spec.ndim - self.ndim)

    def _has_names(self) -> bool:
        return self._names is not None

    def _erase_names(self) -> None:
        self._names = None

    def refine_names(self, *names: Any) -> Any:
        """Names the batch dims; a named dim keeps its name, ``...`` fills with current names.

        Returns self (named in place).

        Raises:
            RuntimeError: when a dim already has another name.

        Examples:
            >>> from gpusim.specs import Composite
            >>> Composite(shape=(3, 4)).refine_names(None, "time").names
            [None, 'time']
        """
        given = list(names)
        if any(n is Ellipsis for n in given):
            i = given.index(Ellipsis)
            fill = self.names[i : i + self.ndim - len(given) + 1]
            given = given[:i] + fill + given[i + 1 :]
        if len(given) != self.ndim:
            raise ValueError(f"Expected {self.ndim} names, but got {len(given)} names: {names}")
        current = self.names
        for old, new in zip(current, given):
            if old is not None and old != new:
                raise RuntimeError(f"refine_names: cannot coerce Composite names {current} with {list(names)}.")
        self.names = [new if new is not None else old for old, new in zip(current, given)]
        return self

    def _names_after_index(self, idx: tuple) -> list | None:
        if self._names is None:
            return None
        names = list(self._names)
        out: list = []
        dim = 0
        for item in idx:
            if item is None:
                out.append(None)
            elif isinstance(item, int):
                dim += 1
            elif isinstance(item, slice):
                out.append(names[dim])
                dim += 1
            else:
                return None
        out.extend(names[dim:])
        return out if any(n is not None for n in out) else None
