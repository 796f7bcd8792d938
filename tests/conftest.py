"""Suite-wide guard: JAX is loaded only by the tests under ``tests/jax``.

JAX starts threads when it is imported, and many tests fork (batched envs, async pools, the
rollout cache): a fork after JAX started warns ("os.fork() was called ... JAX is multithreaded,
so this will likely lead to a deadlock") and can hang. ``.ci/run`` runs ``tests/jax`` in a pytest
process of its own; a test elsewhere that loads JAX (directly, or through EnvPool, Brax, Jumanji or
gymnax) fails here, naming itself, instead of putting JAX into the process that forks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_JAX_TESTS = Path(__file__).resolve().parent / "jax"


def _jax_loaded() -> bool:
    return sys.modules.get("jax") is not None  # (None: an import blocked by a test)


def _under_jax_tests(path: object) -> bool:
    return _JAX_TESTS in Path(str(path)).resolve().parents


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    before = _jax_loaded()
    result = yield
    if not before and _jax_loaded() and not _under_jax_tests(item.path):
        raise AssertionError(
            f"{item.nodeid} loaded JAX outside tests/jax: JAX's threads must not meet the tests that fork; "
            "move the test under tests/jax (a pytest process of its own in .ci/run)"
        )
    return result


def pytest_collection_finish(session: pytest.Session) -> None:
    if _jax_loaded() and session.items and not any(_under_jax_tests(i.path) for i in session.items):
        raise pytest.UsageError(
            "a test module outside tests/jax imported JAX when it was collected: JAX's threads must not meet "
            "the tests that fork; move it under tests/jax"
        )
