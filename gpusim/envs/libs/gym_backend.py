"""``set_gym_backend`` / ``gym_backend``: which gym library the wrappers use.

gpusim supports two backends: `gymnasium <https://gymnasium.farama.org>`_ (the default) and
OpenAI ``gym`` 0.26 (the last gym release, whose API gymnasium kept: ``reset`` returns
``(obs, info)``, ``step`` returns five values). The API mirrors TorchRL's so that code written
for it runs unchanged: ``set_gym_backend`` is a context manager and a decorator, ``gym_backend()``
returns the module (or one of its submodules). ``GymEnv`` builds its env with the current
backend (gym 0.26: single envs, with gym's environment checker disabled, as TorchRL does);
``GymWrapper`` accepts an env of either library. Other backends (``"gym3"``, older gym) raise an
error that says what to install.

Examples:
    >>> from gpusim.envs.libs.gym_backend import gym_backend, set_gym_backend
    >>> with set_gym_backend("gymnasium"):
    ...     gym_backend().__name__
    'gymnasium'
    >>> gym_backend("spaces").__name__
    'gymnasium.spaces'
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from gpusim.envs.libs._optional import import_optional

__all__ = ["set_gym_backend", "gym_backend", "import_gymnasium", "import_gym_backend", "current_backend"]

_SUPPORTED = ("gymnasium", "gym")
_current = "gymnasium"


def import_gymnasium(what: str = "gpusim's gym wrappers") -> ModuleType:
    """Imports gymnasium or raises an ``ImportError`` saying ``pip install gymnasium``.

    Args:
        what: the feature that needs gymnasium (named in the error message).

    Returns:
        The ``gymnasium`` module.

    Raises:
        ImportError: gymnasium is not installed; the message says what to install.

    Examples:
        >>> import_gymnasium().__name__
        'gymnasium'
    """
    return import_optional("gymnasium", "gymnasium", extra="gym", what=what)


def import_gym_backend(name: str, what: str = "gpusim's gym wrappers") -> ModuleType:
    """Imports the backend ``name`` (``"gymnasium"`` or ``"gym"``), checking gym's version.

    Args:
        name: ``"gymnasium"`` or ``"gym"``.
        what: who needs it (named in the error).

    Returns:
        The imported module.

    Raises:
        ImportError: the library is missing, or gym is not 0.26 (naming what to install).

    Examples:
        >>> gym = import_gym_backend("gymnasium")
        >>> gym.__name__, gym.spaces.Discrete(3).contains(2)
        ('gymnasium', True)
    """
    if name == "gymnasium":
        return import_gymnasium(what)
    gym = import_optional("gym", "gym==0.26.2", extra="gym026", what=what)
    version = getattr(gym, "__version__", "")
    if not version.startswith("0.26"):
        raise ImportError(
            f"{what}: the 'gym' backend needs gym 0.26 (the API gymnasium kept), found gym {version}: "
            "pip install gym==0.26.2"
        )
    return gym


def current_backend() -> str:
    """The name of the current gym backend (``"gymnasium"`` unless set otherwise).

    Examples:
        >>> current_backend()
        'gymnasium'
    """
    return _current


def _backend_name(backend: str | ModuleType) -> str:
    if isinstance(backend, ModuleType):
        name = backend.__name__.split(".")[0]
    elif isinstance(backend, str):
        name = backend
    else:
        raise TypeError(f"set_gym_backend expects a module or a module name, got {type(backend).__name__}")
    if name not in _SUPPORTED:
        raise ImportError(
            f"gpusim supports the 'gymnasium' and 'gym' (0.26) backends, got {name!r}: "
            "pip install gymnasium and use set_gym_backend('gymnasium')."
        )
    return name


class set_gym_backend:  # noqa: N801 (TorchRL's name)
    """Selects the gym backend, as a context manager, a decorator or globally with ``set()``.

    ``"gymnasium"`` and ``"gym"`` (0.26), or those modules, are accepted; the check happens
    here, at call time, not when an env is built.

    Args:
        backend: ``"gymnasium"``, ``"gym"``, or one of those modules.

    Raises:
        ImportError: for any other backend, or when the library is not installed (naming what
            to install).

    Examples:
        >>> @set_gym_backend("gymnasium")
        ... def make():
        ...     return gym_backend().__name__
        >>> make()
        'gymnasium'
    """

    def __init__(self, backend: str | ModuleType) -> None:
        self.backend = _backend_name(backend)
        import_gym_backend(self.backend, "set_gym_backend")
        self._previous: list[str] = []

    def set(self) -> None:
        """Makes the backend the global default.

        Examples:
            >>> set_gym_backend("gymnasium").set()
            >>> gym_backend().__name__
            'gymnasium'
        """
        global _current
        _current = self.backend

    def __enter__(self) -> set_gym_backend:
        global _current
        self._previous.append(_current)
        _current = self.backend
        return self

    def __exit__(self, *exc: Any) -> None:
        global _current
        _current = self._previous.pop()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with set_gym_backend(self.backend):
                return fn(*args, **kwargs)

        return wrapped


def gym_backend(submodule: str | None = None) -> ModuleType:
    """Returns the current gym backend module, or ``backend.<submodule>``.

    Args:
        submodule: dotted name below the backend (``"spaces"``, ``"vector"``, ``"wrappers"``).

    Returns:
        The module.

    Raises:
        ImportError: when gymnasium (or the submodule) cannot be imported.

    Examples:
        >>> gym_backend().__name__, gym_backend("vector").__name__
        ('gymnasium', 'gymnasium.vector')
    """
    module = import_gym_backend(_current, "gym_backend")
    if submodule is None:
        return module
    return importlib.import_module(f"{_current}.{submodule}")
