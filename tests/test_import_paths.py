"""TorchRL's import paths: ``sed s/torchrl/gpusim/`` on a script's imports is the switch."""

from __future__ import annotations

import importlib

import pytest

import gpusim

TRANSFORM_NAMES = [
    "Transform",
    "TransformedEnv",
    "Compose",
    "StepCounter",
    "RewardSum",
    "InitTracker",
    "CatFrames",
    "VecNorm",
    "ObservationNorm",
    "DoubleToFloat",
    "RenameTransform",
    "ExcludeTransform",
    "AutoResetEnv",
    "AutoResetTransform",
]


@pytest.mark.parametrize(
    "module, names",
    [
        (
            "gpusim.envs",
            [
                "EnvBase",
                "SerialEnv",
                "ParallelEnv",
                "EnvCreator",
                "GymEnv",
                "GymWrapper",
                "VmasEnv",
                "PendulumEnv",
                "check_env_specs",
                "step_mdp",
                "AsyncEnvPool",
                "ThreadingAsyncEnvPool",
                "ProcessorAsyncEnvPool",
                *TRANSFORM_NAMES,
            ],
        ),
        ("gpusim.envs.transforms", TRANSFORM_NAMES),
        ("gpusim.envs.transforms.transforms", TRANSFORM_NAMES),
        (
            "gpusim.envs.utils",
            [
                "check_env_specs",
                "step_mdp",
                "StepMDP",
                "MarlGroupMapType",
                "check_marl_grouping",
                "terminated_or_truncated",
                "make_composite_from_td",
                "RandomPolicy",
                "ExplorationType",
                "exploration_type",
                "set_exploration_type",
            ],
        ),
        ("gpusim.envs.libs.gym", ["GymEnv", "GymWrapper", "set_gym_backend", "gym_backend"]),
        ("gpusim.envs.libs.vmas", ["VmasEnv", "VmasWrapper"]),
        ("gpusim.data", ["Composite", "Bounded", "Unbounded", "Categorical", "OneHot", "NonTensor", "TensorSpec"]),
        ("gpusim.data.tensor_specs", ["Composite", "Bounded", "Unbounded", "Binary"]),
        ("gpusim", ["set_auto_unwrap_transformed_env", "auto_unwrap_transformed_env", "StepMDP"]),
        ("gpusim.transforms.functional", ["cat_frames", "rgb_to_grayscale"]),
    ],
)
def test_torchrl_import_paths(module, names):
    mod = importlib.import_module(module)
    for name in names:
        assert getattr(mod, name) is getattr(gpusim, name), (module, name)


def test_envs_resolves_the_transforms_lazily_and_rejects_unknown_names():
    import gpusim.envs as envs

    assert envs.transforms is importlib.import_module("gpusim.envs.transforms")
    with pytest.raises(AttributeError, match="NoSuchTransform"):
        envs.NoSuchTransform
    with pytest.raises(AttributeError, match="nothing"):
        importlib.import_module("gpusim.envs.utils").nothing


CONTRIB = {
    "gpusim.contrib.robot_macros": [
        "CartesianSolver",
        "RobotMacroAction",
        "RobotMacroActionMode",
        "URScriptPrimitive",
        "URScriptPrimitiveTransform",
    ],
    "gpusim.contrib.satellite": ["SatelliteAttitudeTransform", "SatelliteMacroAction"],
    "gpusim.contrib.pretrained": ["R3MTransform", "VC1Transform", "VIPRewardTransform", "VIPTransform"],
    "gpusim.contrib.vla": ["ToyVLAEnv"],
}


@pytest.mark.parametrize("home", sorted(CONTRIB))
def test_domain_ports_live_in_contrib_and_keep_torchrl_paths(home):
    import gpusim.contrib as contrib

    torchrl_paths = ["gpusim.envs"] + (
        ["gpusim.transforms", "gpusim.envs.transforms"] if home != "gpusim.contrib.vla" else []
    )
    for name in CONTRIB[home]:
        obj = getattr(importlib.import_module(home), name)
        assert obj.__module__ == home, name  # defined in contrib, not in the core
        assert getattr(contrib, name) is obj and name in contrib.__all__
        assert name in gpusim.__all__ and getattr(gpusim, name) is obj  # the torchrl shim maps torchrl.X.name here
        for module in torchrl_paths:
            assert getattr(importlib.import_module(module), name) is obj, (module, name)
    with pytest.raises(AttributeError, match="NoSuchPort"):
        contrib.NoSuchPort


def test_core_modules_no_longer_hold_the_domain_ports():
    for gone in ["gpusim.transforms.robot_macros", "gpusim.transforms.satellite", "gpusim.envs.custom.vla"]:
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(gone)
    assert not hasattr(importlib.import_module("gpusim.transforms.rl_models"), "R3MTransform")
