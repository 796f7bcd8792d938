"""Domain-specific ports of TorchRL components, kept out of gpusim's core.

What lives here serves one application domain, not the env framework: a UR-style arm's macro
actions (:mod:`~gpusim.contrib.robot_macros`), satellite attitude slews with control-moment gyros
(:mod:`~gpusim.contrib.satellite`), the synthetic vision-language-action env ``ToyVLAEnv``
(:mod:`~gpusim.contrib.vla`), and the names of TorchRL's pretrained-embedding transforms, which
gpusim does not provide (:mod:`~gpusim.contrib.pretrained`: building one raises
``NotImplementedError``).

TorchRL's import paths keep working: ``gpusim.transforms`` (``gpusim.envs.transforms``) re-exports
the transforms and ``gpusim.envs`` the env, as ``torchrl.envs`` does, and every name is also
``gpusim.<name>``. This package imports its modules on first use of a name.

Examples:
    >>> import gpusim
    >>> from gpusim.contrib import ToyVLAEnv
    >>> ToyVLAEnv is gpusim.ToyVLAEnv is gpusim.envs.ToyVLAEnv
    True
    >>> from gpusim.contrib import SatelliteAttitudeTransform
    >>> SatelliteAttitudeTransform is gpusim.transforms.SatelliteAttitudeTransform
    True
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_HOMES = {
    "CartesianSolver": "robot_macros",
    "RobotMacroAction": "robot_macros",
    "RobotMacroActionMode": "robot_macros",
    "URScriptPrimitive": "robot_macros",
    "URScriptPrimitiveTransform": "robot_macros",
    "SatelliteAttitudeTransform": "satellite",
    "SatelliteMacroAction": "satellite",
    "ToyVLAEnv": "vla",
    "R3MTransform": "pretrained",
    "VC1Transform": "pretrained",
    "VIPRewardTransform": "pretrained",
    "VIPTransform": "pretrained",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    # modules load on first use: the core's re-exports import them one by one, and no import
    # cycle runs through this package's own __init__
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gpusim.contrib' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gpusim.contrib.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
