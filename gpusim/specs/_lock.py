"""Locking of :class:`~gpusim.specs.Composite` specs, with TorchRL's lock graphs.

Locking a Composite with ``recurse=True`` locks its nested Composites and records, in each of
them, the Composites that locked it. A nested Composite cannot be unlocked while one of those is
still locked (unlock the root first), so a sub-spec shared by two locked specs stays locked until
both are unlocked.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["LockMixin"]


class LockMixin:
    """Lock state and the lock graph of a Composite (mixed into :class:`Composite`).

    Examples:
        >>> from gpusim.specs import Composite
        >>> inner = Composite()
        >>> outer = Composite(inner=inner).lock_()
        >>> inner.is_locked
        True
        >>> inner.unlock_()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot unlock a Composite that is part of a locked graph. ...
    """

    _locked: bool
    _lock_parents: list

    def __getstate__(self) -> dict[str, Any]:
        # The lock graph's weak references cannot be pickled: they are rebuilt on load.
        state = dict(self.__dict__)
        state["_lock_parents"] = []
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._locked:  # children are loaded first: link them to this composite again
            for child in self._nested_composites():
                child._propagate_lock(True, [weakref.ref(self)])

    def _nested_composites(self) -> list[Any]:  # implemented by Composite
        raise NotImplementedError

    @property
    def is_locked(self) -> bool:
        """Whether modifications raise (see :meth:`lock_`); setting it locks or unlocks.

        Examples:
            >>> from gpusim.specs import Composite
            >>> spec = Composite()
            >>> spec.is_locked
            False
            >>> spec.is_locked = True
            >>> spec.is_locked
            True
        """
        return self._locked

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        if value:
            self.lock_()
        else:
            self.unlock_()

    @property
    def locked(self) -> bool:
        """Alias of :attr:`is_locked` (read only).

        Examples:
            >>> from gpusim.specs import Composite
            >>> Composite().locked, Composite().lock_().locked
            (False, True)
        """
        return self._locked

    def _check_unlocked(self, what: str) -> None:
        if self._locked:
            raise RuntimeError(f"Cannot modify a locked Composite (tried to {what}).")

    def _propagate_lock(self, recurse: bool, parents: list | None) -> None:
        object.__setattr__(self, "_locked", True)
        if parents is None:
            chain: list = []
        else:
            known = [r() for r in self._lock_parents]
            new = [r for r in parents if not any(r() is k for k in known)]
            object.__setattr__(self, "_lock_parents", self._lock_parents + new)
            chain = list(parents)
        chain.append(weakref.ref(self))
        if recurse:
            for child in self._nested_composites():
                child._propagate_lock(True, chain)

    def lock_(self, recurse: bool | None = None) -> Any:
        """Locks the composite (and nested Composites unless ``recurse=False``); returns self.

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> c = Composite(a=Unbounded()).lock_()
            >>> c["b"] = Unbounded()
            Traceback (most recent call last):
            ...
            RuntimeError: Cannot modify a locked Composite (tried to set key 'b').
        """
        if self._locked:
            return self
        self._propagate_lock(True if recurse is None else bool(recurse), None)
        return self

    def _propagate_unlock(self, recurse: bool) -> list[Any]:
        object.__setattr__(self, "_locked", False)
        subs: list = []
        if recurse:
            for child in self._nested_composites():
                subs.extend(child._propagate_unlock(True))
                subs.append(child)
        return subs

    def _check_unlock(self) -> None:
        for ref in self._lock_parents:
            parent = ref()
            if parent is not None and parent._locked:
                raise RuntimeError(
                    "Cannot unlock a Composite that is part of a locked graph. Graphs are locked "
                    "when a Composite is locked with recurse=True: unlock the root Composite "
                    "first (if the Composite belongs to several graphs, unlock every root)."
                )
        object.__setattr__(self, "_lock_parents", [])

    def unlock_(self, recurse: bool | None = None) -> Any:
        """Unlocks the composite (and nested Composites unless ``recurse=False``); returns self.

        Raises:
            RuntimeError: when a Composite that locked this one (or a nested one) is still
                locked; nothing is unlocked then.

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> c = Composite(a=Unbounded()).lock_().unlock_()
            >>> c.is_locked
            False
        """
        recurse = True if recurse is None else bool(recurse)
        try:
            subs = self._propagate_unlock(recurse)
            for sub in subs:
                sub._check_unlock()
            self._check_unlock()
        except RuntimeError:
            self.lock_(recurse=recurse)
            raise
        return self
