"""Wrappers of external simulators: gymnasium (``GymEnv``, ``GymWrapper``) and VMAS
(``VmasEnv``, ``VmasWrapper``), plus the multi-agent grouping helpers.

Importing this package imports neither gymnasium nor vmas: they are loaded when an env is built,
and a missing one raises an ``ImportError`` saying what to ``pip install``.

Examples:
    >>> from gpusim.envs.libs import MarlGroupMapType
    >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["a_0", "a_1"])
    {'agents': ['a_0', 'a_1']}
"""

from gpusim.envs.libs.brax import BraxEnv, BraxWrapper
from gpusim.envs.libs.dm_control import DMControlEnv, DMControlWrapper
from gpusim.envs.libs.envpool import MultiThreadedEnv, MultiThreadedEnvWrapper
from gpusim.envs.libs.gym import GymEnv, GymWrapper
from gpusim.envs.libs.gym_backend import gym_backend, set_gym_backend
from gpusim.envs.libs.gym_info import default_info_dict_reader
from gpusim.envs.libs.jumanji import JumanjiEnv, JumanjiWrapper
from gpusim.envs.libs.marl import MarlGroupMapType, check_marl_grouping
from gpusim.envs.libs.mo_gym import MOGymEnv, MOGymWrapper
from gpusim.envs.libs.openml import OpenMLEnv
from gpusim.envs.libs.openspiel import OpenSpielEnv, OpenSpielWrapper
from gpusim.envs.libs.pettingzoo import PettingZooEnv, PettingZooWrapper
from gpusim.envs.libs.vmas import VmasEnv, VmasWrapper

__all__ = [
    "GymEnv",
    "GymWrapper",
    "set_gym_backend",
    "gym_backend",
    "default_info_dict_reader",
    "MarlGroupMapType",
    "check_marl_grouping",
    "VmasEnv",
    "VmasWrapper",
    "PettingZooEnv",
    "PettingZooWrapper",
    "DMControlEnv",
    "DMControlWrapper",
    "MultiThreadedEnv",
    "MultiThreadedEnvWrapper",
    "BraxEnv",
    "BraxWrapper",
    "JumanjiEnv",
    "JumanjiWrapper",
    "MOGymEnv",
    "MOGymWrapper",
    "OpenSpielEnv",
    "OpenSpielWrapper",
    "OpenMLEnv",
]
