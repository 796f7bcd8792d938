"""gpusim's JAX edge shares the GPU with torch: JAX's 75 % preallocation is off unless the user
asked for it (a preallocating JAX left the other processes on a shared H100 out of memory)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install 'gpusim[brax]')")

from gpusim.envs.libs._jax import JAX_PREALLOCATE, import_jax  # noqa: E402


def test_import_jax_turns_preallocation_off(monkeypatch):
    monkeypatch.delenv(JAX_PREALLOCATE, raising=False)
    jax = import_jax("BraxEnv", "brax")
    assert jax.__name__ == "jax"
    assert os.environ[JAX_PREALLOCATE] == "false"


def test_import_jax_keeps_the_users_choice(monkeypatch):
    monkeypatch.setenv(JAX_PREALLOCATE, "true")
    import_jax("BraxEnv", "brax")
    assert os.environ[JAX_PREALLOCATE] == "true"
