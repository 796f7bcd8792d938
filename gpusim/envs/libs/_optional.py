"""Optional dependencies of the wrappers: imported on first use, with an error saying what to
install when they are missing.

Examples:
    >>> from gpusim.envs.libs._optional import import_optional
    >>> import_optional("math", "python").sqrt(4.0)
    2.0
    >>> import_optional("no_such_module", "no-such-dist")
    Traceback (most recent call last):
    ...
    ImportError: the optional dependency 'no_such_module', which is not installed: pip install no-such-dist
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_optional"]


def import_optional(module: str, pip_name: str, extra: str | None = None, what: str | None = None) -> ModuleType:
    """Imports ``module``, raising an ``ImportError`` that says what to ``pip install``.

    Args:
        module: the module to import (``"gymnasium"``).
        pip_name: the distribution to install (``"gymnasium"``).
        extra: the gpusim extra that pulls it in (``"gym"``), mentioned in the message.
        what: the gpusim feature that needs it, mentioned in the message.

    Raises:
        ImportError: when the module cannot be imported, naming the package to install (or, when
            it is installed but its import fails, the error it raised).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        need = f"{what} needs " if what else ""
        hint = f"pip install {pip_name}"
        if extra:
            hint += f"  (or: pip install 'gpusim[{extra}]')"
        missing = isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] == module.split(".")[0]
        if not missing:  # installed, but broken (e.g. built against other versions of its dependencies)
            raise ImportError(
                f"{need}the optional dependency {module!r}, which is installed but fails to import: {err}"
            ) from err
        raise ImportError(f"{need}the optional dependency {module!r}, which is not installed: {hint}") from err
