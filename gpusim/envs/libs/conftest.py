"""pytest (``--doctest-modules gpusim``): importing Brax imports ``mujoco.mjx``, which prints
"Failed to import warp" to stdout where the optional ``warp`` package is absent. That line is
the library's, not part of any example's output, so Brax is imported once, quietly, before the
first Brax example runs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io


def pytest_runtest_setup(item):
    if "brax" in item.name and importlib.util.find_spec("brax") is not None:
        with contextlib.redirect_stdout(io.StringIO()):
            import brax.envs  # noqa: F401
