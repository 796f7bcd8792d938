"""Pickling of env factories (lambdas and closures included) for worker processes.

``cloudpickle`` is used when it is importable (it ships with ``tensordict``). Otherwise a small
fallback pickles functions that cannot be found by name (lambdas, nested functions) by value:
their code object (``marshal``), the name of their module (whose globals they get back), their
defaults and the contents of their closure cells. That is enough for factories defined in an
importable module; workers always run the same interpreter, so ``marshal`` is safe.

Examples:
    >>> fn = lambda x=1: x + 1
    >>> loads(dumps(fn))()
    2
"""

from __future__ import annotations

import copyreg
import importlib
import io
import marshal
import pickle
import types
from typing import Any

__all__ = ["dumps", "loads", "fallback_dumps", "HAS_CLOUDPICKLE"]

try:  # pragma: no cover - depends on the environment
    import cloudpickle as _cloudpickle

    HAS_CLOUDPICKLE = True
except ImportError:  # pragma: no cover
    _cloudpickle = None
    HAS_CLOUDPICKLE = False

_EMPTY_CELL = "__gpusim_empty_cell__"


def _lookup(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _importable(fn: types.FunctionType) -> bool:
    """Whether ``fn`` can be pickled by reference (found again by module + qualified name)."""
    if "<" in fn.__qualname__:  # <lambda>, <locals>
        return False
    try:
        return _lookup(fn.__module__, fn.__qualname__) is fn
    except Exception:
        return False


def _cell(value: Any) -> types.CellType:
    if isinstance(value, str) and value == _EMPTY_CELL:
        return types.CellType()
    return types.CellType(value)


def _make_function(
    code: bytes,
    module: str,
    name: str,
    qualname: str,
    defaults: tuple | None,
    kwdefaults: dict | None,
    closure: tuple | None,
    attrs: dict,
) -> types.FunctionType:
    globals_ = importlib.import_module(module).__dict__
    fn = types.FunctionType(
        marshal.loads(code),
        globals_,
        name,
        defaults,
        None if closure is None else tuple(_cell(v) for v in closure),
    )
    fn.__qualname__ = qualname
    fn.__kwdefaults__ = kwdefaults
    fn.__dict__.update(attrs)
    return fn


class _FunctionPickler(pickle.Pickler):
    """A pickler that serialises non-importable functions by value."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.FunctionType) and not _importable(obj):
            closure = None
            if obj.__closure__ is not None:
                values = []
                for cell in obj.__closure__:
                    try:
                        values.append(cell.cell_contents)
                    except ValueError:  # empty cell
                        values.append(_EMPTY_CELL)
                closure = tuple(values)
            return _make_function, (
                marshal.dumps(obj.__code__),
                obj.__module__,
                obj.__name__,
                obj.__qualname__,
                obj.__defaults__,
                obj.__kwdefaults__,
                closure,
                dict(obj.__dict__),
            )
        return NotImplemented


def fallback_dumps(obj: Any) -> bytes:
    """Pickles ``obj`` without cloudpickle (lambdas and closures by value)."""
    buffer = io.BytesIO()
    pickler = _FunctionPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = copyreg.dispatch_table.copy()
    pickler.dump(obj)
    return buffer.getvalue()


def dumps(obj: Any) -> bytes:
    """Pickles ``obj`` with cloudpickle when available, else with :func:`fallback_dumps`.

    Raises:
        TypeError: when ``obj`` (or something it references) cannot be pickled.
    """
    try:
        if _cloudpickle is not None:
            return _cloudpickle.dumps(obj)
        return fallback_dumps(obj)
    except Exception as err:
        raise TypeError(f"cannot pickle {obj!r} to send it to a worker process: {type(err).__name__}: {err}") from err


def loads(data: bytes) -> Any:
    """Unpickles what :func:`dumps` or :func:`fallback_dumps` produced."""
    return pickle.loads(data)
