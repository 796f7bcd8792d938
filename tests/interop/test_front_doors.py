"""The front doors' errors: a missing or broken optional library says what to do; a non-gpusim
env is refused before anything is imported. The torchrl suite is in ``tests/interop_torchrl``."""

from __future__ import annotations

import sys

import pytest

import gpusim as gs
from gpusim.interop import to_gymnasium, to_torchrl


@pytest.mark.parametrize(
    "front_door, module, hint",
    [(to_torchrl, "torchrl", "pip install torchrl"), (to_gymnasium, "gymnasium", "pip install gymnasium")],
)
def test_missing_library_says_what_to_install(monkeypatch, front_door, module, hint):
    monkeypatch.setitem(sys.modules, module, None)  # what `import` meets when it is not installed
    with pytest.raises(ImportError, match=f"{front_door.__name__}.*not installed: {hint}"):
        front_door(gs.make("CartPole-v1", num_envs=2))


def test_broken_library_reports_its_own_error(tmp_path, monkeypatch):
    (tmp_path / "torchrl").mkdir()
    (tmp_path / "torchrl" / "__init__.py").write_text("import tensordict._no_such_submodule\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torchrl", raising=False)
    with pytest.raises(ImportError, match="installed but fails to import: No module named 'tensordict._no_such"):
        to_torchrl(gs.make("CartPole-v1", num_envs=2))


@pytest.mark.parametrize("front_door", [to_torchrl, to_gymnasium])
def test_refuses_what_is_not_a_gpusim_env(front_door):
    with pytest.raises(TypeError, match=f"{front_door.__name__} takes a gpusim env .*got dict"):
        front_door({})


def test_exported_at_the_top_level():
    assert gs.to_torchrl is to_torchrl and gs.to_gymnasium is to_gymnasium
    assert {"to_torchrl", "to_gymnasium"} <= set(gs.__all__)
