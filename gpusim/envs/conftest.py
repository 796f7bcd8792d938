"""pytest (``--doctest-modules gpusim``): the examples of the modules that wrap an optional
library (``gpusim/envs/libs``, ``gpusim/envs/custom``) need that library. Where it is missing,
they are skipped with the reason (what to install); they run where it is installed (``.ci/run``
installs every wrapped library in the venv that runs the doctests).

Importing Brax imports ``mujoco.mjx``, which prints "Failed to import warp" to stdout where the
optional ``warp`` package is absent. That line is the library's, not part of any example's output,
so Brax is imported once, quietly, before the first Brax example runs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io

import pytest

#: module (path relative to this folder, without ".py") -> the libraries its examples import
_NEEDS = {
    "libs/_jax": ("jax",),
    "libs/brax": ("jax", "brax"),
    "libs/dm_control": ("dm_control", "dm_env"),
    "libs/envpool": ("envpool",),
    "libs/jumanji": ("jax", "jumanji"),
    "libs/mo_gym": ("mo_gymnasium",),
    "libs/openml": ("sklearn", "pandas"),
    "libs/openspiel": ("pyspiel",),
    "libs/pettingzoo": ("pettingzoo",),
    "custom/__init__": ("chess",),
    "custom/chess": ("chess",),
}


def _missing(path) -> str | None:
    parts = path.with_suffix("").parts
    needs = _NEEDS.get("/".join(parts[-2:]), ())
    return next((m for m in needs if importlib.util.find_spec(m) is None), None)


def pytest_runtest_setup(item):
    path = getattr(item, "path", None)
    if path is None or not type(item).__name__.startswith("Doctest"):
        return
    module = _missing(path)
    if module:
        pytest.skip(f"{module} is not installed (see the extras in pyproject.toml)")
    if path.stem == "brax":
        with contextlib.redirect_stdout(io.StringIO()):
            import brax.envs  # noqa: F401
