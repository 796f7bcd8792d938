"""Transforms: ``Transform``, ``TransformedEnv``, ``Compose`` and the transform families.

Examples:
    >>> from gpusim.transforms import Compose, Transform, TransformedEnv
    >>> isinstance(Compose(), Transform)
    True
"""

from gpusim.transforms.transform import Transform
from gpusim.transforms.compose import Compose
from gpusim.transforms.transformed_env import TransformedEnv
from gpusim.transforms.step_counter import StepCounter
from gpusim.transforms.reward_sum import Reward2GoTransform, RewardSum, TargetReturn
from gpusim.transforms.init_tracker import InitTracker
from gpusim.transforms.cat_frames import CatFrames
from gpusim.transforms.vecnorm import VecNorm
from gpusim.transforms.time_max_pool import TimeMaxPool
from gpusim.transforms.primer import TensorDictPrimer, gSDENoise
from gpusim.transforms.end_of_life import EndOfLifeTransform
from gpusim.transforms.noop_reset import NoopResetEnv
from gpusim.transforms.frame_skip import FrameSkipTransform
from gpusim.transforms.normalization import (
    BinarizeReward,
    ClipTransform,
    ObservationNorm,
    RewardClipping,
    RewardScaling,
)
from gpusim.transforms.dtype_device import (
    DeviceCastTransform,
    DoubleToFloat,
    DTypeCastTransform,
    PinMemoryTransform,
)
from gpusim.transforms.keys import CatTensors, ExcludeTransform, RenameTransform, SelectTransform
from gpusim.transforms.shape import (
    FlattenObservation,
    PermuteTransform,
    SqueezeTransform,
    UnsqueezeTransform,
)
from gpusim.transforms.actions import ActionMask, DiscreteActionProjection
from gpusim.transforms.checks import FiniteTensorDictCheck
from gpusim.transforms.crop import RandomCropTensorDict
from gpusim.transforms.pixels import CenterCrop, GrayScale, Resize, ToTensorImage
from gpusim.transforms.rl_models import KLRewardTransform, R3MTransform, VC1Transform, VIPRewardTransform, VIPTransform
from gpusim.transforms.loggers import CSVLogger, Logger
from gpusim.transforms.recorders import TensorDictRecorder, VideoRecorder
from gpusim.transforms.dreamer import DreamerDecoder
