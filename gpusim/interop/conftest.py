"""pytest (``--doctest-modules gpusim``): the examples of the interop modules need their optional
library. Where it is missing, modules that subclass its classes (``torchrl_*.py``, ``sb3_*.py``,
``gymnasium_*.py``) are not collected and the other examples naming it are skipped with the
reason; they run where the library is installed (``.ci/run`` runs the torchrl ones in its torchrl
virtualenv).
"""

from __future__ import annotations

import importlib.util

import pytest

_NEEDS = {"torchrl": "torchrl", "gymnasium": "gymnasium", "sb3": "stable_baselines3"}  # name part -> module needed


def _missing(name: str) -> str | None:
    for prefix, module in _NEEDS.items():
        if prefix in name and importlib.util.find_spec(module) is None:
            return module
    return None


def pytest_ignore_collect(collection_path, config):  # noqa: ARG001 (pytest's signature)
    if collection_path.suffix == ".py" and _missing(collection_path.stem):
        return True
    return None


def pytest_runtest_setup(item):
    module = _missing(item.name)
    if module:
        pytest.skip(f"{module} is not installed (pip install {module})")
