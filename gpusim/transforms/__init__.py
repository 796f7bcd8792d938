"""Transforms: ``Transform``, ``TransformedEnv``, ``Compose`` and the transform families.

A ``TransformedEnv`` applies a chain of transforms to the data coming out of a base env (and,
inverted, to the data going in), and to its specs.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import Compose, RewardSum, StepCounter, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[8], seed=0), Compose(StepCounter(200), RewardSum()))
    >>> td = env.rollout(5)
    >>> td["next", "step_count"][0].flatten().tolist(), td["next", "episode_reward"][0, -1].item()
    ([1, 2, 3, 4, 5], 5.0)
"""

# domain-specific ports live in gpusim.contrib; re-exported here because TorchRL users import
# them from torchrl.envs(.transforms)
from gpusim.contrib.pretrained import R3MTransform, VC1Transform, VIPRewardTransform, VIPTransform
from gpusim.contrib.robot_macros import (
    CartesianSolver,
    RobotMacroAction,
    RobotMacroActionMode,
    URScriptPrimitive,
    URScriptPrimitiveTransform,
)
from gpusim.contrib.satellite import SatelliteAttitudeTransform, SatelliteMacroAction
from gpusim.transforms import functional
from gpusim.transforms.action_discretizer import ActionDiscretizer
from gpusim.transforms.action_maps import ActionScaling, FlattenAction
from gpusim.transforms.actions import ActionMask, DiscreteActionProjection
from gpusim.transforms.auto_reset import AutoResetEnv, AutoResetTransform
from gpusim.transforms.batch_size import BatchSizeTransform
from gpusim.transforms.cat_frames import CatFrames
from gpusim.transforms.checks import FiniteTensorDictCheck
from gpusim.transforms.compose import Compose
from gpusim.transforms.conditional import ConditionalSkip
from gpusim.transforms.crop import RandomCropTensorDict
from gpusim.transforms.dreamer import DreamerDecoder
from gpusim.transforms.dtype_device import (
    DeviceCastTransform,
    DoubleToFloat,
    DTypeCastTransform,
    PinMemoryTransform,
)
from gpusim.transforms.end_of_life import EndOfLifeTransform
from gpusim.transforms.expand_as import ExpandAs
from gpusim.transforms.frame_skip import FrameSkipTransform
from gpusim.transforms.functional import cat_frames, rgb_to_grayscale
from gpusim.transforms.init_tracker import InitTracker
from gpusim.transforms.keys import CatTensors, ExcludeTransform, RenameTransform, SelectTransform
from gpusim.transforms.loggers import CSVLogger, Logger
from gpusim.transforms.macro import (
    HumanoidMacroAction,
    MacroAction,
    MacroPrimitive,
    MacroPrimitiveTransform,
    TargetMacroAction,
)
from gpusim.transforms.module import ModuleTransform
from gpusim.transforms.multi_action import MultiAction
from gpusim.transforms.multi_step import MultiStepTransform
from gpusim.transforms.next_obs_delta import NextObservationDelta
from gpusim.transforms.noop_reset import NoopResetEnv
from gpusim.transforms.normalization import (
    BinarizeReward,
    ClipTransform,
    ObservationNorm,
    RewardClipping,
    RewardScaling,
)
from gpusim.transforms.pixels import CenterCrop, GrayScale, Resize, ToTensorImage
from gpusim.transforms.policy_switch import ConditionalPolicySwitch
from gpusim.transforms.primer import TensorDictPrimer, gSDENoise
from gpusim.transforms.random_truncation import RandomTruncationTransform
from gpusim.transforms.recorders import TensorDictRecorder, VideoRecorder
from gpusim.transforms.remove_empty import RemoveEmptySpecs
from gpusim.transforms.render import PixelRenderTransform
from gpusim.transforms.reward_ops import LineariseRewards, SignTransform, SuccessReward
from gpusim.transforms.reward_sum import Reward2GoTransform, RewardSum, TargetReturn
from gpusim.transforms.rl_models import KLRewardTransform
from gpusim.transforms.shape import (
    FlattenObservation,
    PermuteTransform,
    SqueezeTransform,
    UnsqueezeTransform,
)
from gpusim.transforms.step_counter import StepCounter
from gpusim.transforms.tensor_ops import Hash, Stack, UnaryTransform
from gpusim.transforms.terminate import TerminateTransform
from gpusim.transforms.time_max_pool import TimeMaxPool
from gpusim.transforms.timer import Timer
from gpusim.transforms.traj_counter import TrajCounter
from gpusim.transforms.transform import Transform
from gpusim.transforms.transformed_env import (
    TransformedEnv,
    auto_unwrap_transformed_env,
    set_auto_unwrap_transformed_env,
)
from gpusim.transforms.vecnorm import VecNorm
from gpusim.transforms.vecnorm_v2 import VecNormV2

__all__ = [
    "Transform",
    "Compose",
    "TransformedEnv",
    "auto_unwrap_transformed_env",
    "set_auto_unwrap_transformed_env",
    "AutoResetEnv",
    "AutoResetTransform",
    "StepCounter",
    "RewardSum",
    "TargetReturn",
    "Reward2GoTransform",
    "InitTracker",
    "CatFrames",
    "VecNorm",
    "TimeMaxPool",
    "TensorDictPrimer",
    "gSDENoise",
    "EndOfLifeTransform",
    "NoopResetEnv",
    "FrameSkipTransform",
    "BinarizeReward",
    "ClipTransform",
    "ObservationNorm",
    "RewardClipping",
    "RewardScaling",
    "DeviceCastTransform",
    "DoubleToFloat",
    "DTypeCastTransform",
    "PinMemoryTransform",
    "CatTensors",
    "ExcludeTransform",
    "RenameTransform",
    "SelectTransform",
    "FlattenObservation",
    "PermuteTransform",
    "SqueezeTransform",
    "UnsqueezeTransform",
    "ActionMask",
    "DiscreteActionProjection",
    "FiniteTensorDictCheck",
    "RandomCropTensorDict",
    "CenterCrop",
    "GrayScale",
    "Resize",
    "ToTensorImage",
    "PixelRenderTransform",
    "KLRewardTransform",
    "R3MTransform",
    "VC1Transform",
    "VIPRewardTransform",
    "VIPTransform",
    "CSVLogger",
    "Logger",
    "TensorDictRecorder",
    "VideoRecorder",
    "ActionScaling",
    "FlattenAction",
    "ActionDiscretizer",
    "LineariseRewards",
    "SignTransform",
    "SuccessReward",
    "Hash",
    "Stack",
    "UnaryTransform",
    "DreamerDecoder",
    "ConditionalSkip",
    "ExpandAs",
    "RemoveEmptySpecs",
    "Timer",
    "TerminateTransform",
    "RandomTruncationTransform",
    "ModuleTransform",
    "BatchSizeTransform",
    "VecNormV2",
    "ConditionalPolicySwitch",
    "TrajCounter",
    "MacroPrimitive",
    "MacroAction",
    "TargetMacroAction",
    "HumanoidMacroAction",
    "MacroPrimitiveTransform",
    "CartesianSolver",
    "URScriptPrimitive",
    "RobotMacroActionMode",
    "RobotMacroAction",
    "URScriptPrimitiveTransform",
    "SatelliteMacroAction",
    "SatelliteAttitudeTransform",
    "NextObservationDelta",
    "MultiAction",
    "MultiStepTransform",
    "cat_frames",
    "rgb_to_grayscale",
]
