"""Every stateless transform (pixels and recorders included) keeps the env's spec contract:
``check_env_specs`` passes on a ``TransformedEnv`` with it, at batch sizes 1 and 1000."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import ProbabilisticTensorDictModule

from gpusim.envs.checks import check_env_specs
from gpusim.transforms import (
    ActionMask,
    BinarizeReward,
    CatTensors,
    CenterCrop,
    ClipTransform,
    Compose,
    CSVLogger,
    DeviceCastTransform,
    DiscreteActionProjection,
    DoubleToFloat,
    DTypeCastTransform,
    ExcludeTransform,
    FiniteTensorDictCheck,
    FlattenObservation,
    GrayScale,
    KLRewardTransform,
    ObservationNorm,
    PermuteTransform,
    PinMemoryTransform,
    RenameTransform,
    Resize,
    RewardClipping,
    RewardScaling,
    SelectTransform,
    SqueezeTransform,
    TensorDictRecorder,
    ToTensorImage,
    TransformedEnv,
    UnsqueezeTransform,
    VideoRecorder,
)
from tests.envs.toy_envs import NestedCountingEnv
from tests.transforms._stateless_envs import MaskedEnv, PixelEnv, VectorEnv


def _vec(B):
    return VectorEnv(B)


def _vec64(B):
    return VectorEnv(B, dtype=torch.float64)


def _pix(B):
    return PixelEnv(B, H=5, W=6)


def _pixels_chw():
    return ToTensorImage()


def _kl_actor():
    return ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=torch.distributions.Normal
    )


CASES = {
    "ObservationNorm": (_vec, lambda: ObservationNorm(loc=0.5, scale=-2.0, in_keys=["observation", "bounded"])),
    "ObservationNorm-standard-inv": (
        _vec,
        lambda: ObservationNorm(
            loc=1.0, scale=4.0, in_keys=[("nested", "obs")], in_keys_inv=["action"], standard_normal=True
        ),
    ),
    "RewardScaling": (_vec, lambda: RewardScaling(loc=1.0, scale=-0.5)),
    "RewardClipping": (_vec, lambda: RewardClipping(-0.5, 0.25)),
    "BinarizeReward": (_vec, lambda: BinarizeReward()),
    "ClipTransform": (
        _vec,
        lambda: ClipTransform(in_keys=["observation", "bounded"], in_keys_inv=["action"], low=-0.5, high=1.5),
    ),
    "DoubleToFloat-auto": (_vec64, lambda: DoubleToFloat()),
    "DoubleToFloat-keys": (_vec64, lambda: DoubleToFloat(in_keys=["observation", "state"], in_keys_inv=["action"])),
    "DTypeCastTransform": (
        _pix,
        lambda: DTypeCastTransform(torch.int64, torch.int32, in_keys=["t"], in_keys_inv=["action"]),
    ),
    "DeviceCastTransform": (_vec, lambda: DeviceCastTransform("cpu")),
    "DeviceCastTransform-keys": (
        _vec,
        lambda: DeviceCastTransform("cpu", in_keys=["observation"], in_keys_inv=["action"]),
    ),
    "PinMemoryTransform": (_vec, lambda: PinMemoryTransform()),
    "CatTensors": (_vec, lambda: CatTensors(["observation", "bounded", ("nested", "obs")], out_key="vec")),
    "CatTensors-auto-keep": (_vec, lambda: CatTensors(del_keys=False)),
    "RenameTransform": (
        _vec,
        lambda: RenameTransform(
            ["observation", "reward"], ["obs", "rew"], in_keys_inv=["action", "state"], out_keys_inv=["act", "st"]
        ),
    ),
    "RenameTransform-copy-done": (
        _vec,
        lambda: RenameTransform(["done", "reward"], ["done_copy", "reward_copy"], create_copy=True),
    ),
    "RenameTransform-nested": (
        lambda B: NestedCountingEnv(B),
        lambda: RenameTransform([("agents", "reward")], [("agents", "r")]),
    ),
    "ExcludeTransform": (_vec, lambda: ExcludeTransform("truncated", ("nested", "obs"), "not_there")),
    "ExcludeTransform-inverse": (_vec, lambda: ExcludeTransform("bounded", inverse=True)),
    "SelectTransform": (_vec, lambda: SelectTransform("observation", keep_dones=False)),
    "SelectTransform-no-rewards": (_vec, lambda: SelectTransform("bounded", keep_rewards=False)),
    "UnsqueezeTransform": (_vec, lambda: UnsqueezeTransform(-1, in_keys=["observation"], in_keys_inv=["action"])),
    "UnsqueezeTransform-positive": (_vec, lambda: UnsqueezeTransform(0, allow_positive_dim=True, in_keys=["bounded"])),
    "UnsqueezeTransform-nested": (
        lambda B: NestedCountingEnv(B),
        lambda: UnsqueezeTransform(-2, in_keys=[("agents", "obs")], out_keys=[("agents", "obs_u")]),
    ),
    "SqueezeTransform": (
        _vec,
        lambda: SqueezeTransform(-1, in_keys=["reward"], out_keys=["r"], in_keys_inv=["action"]),
    ),
    "FlattenObservation": (_pix, lambda: FlattenObservation(-3, -2)),
    "PermuteTransform": (_pix, lambda: PermuteTransform([-1, -3, -2], in_keys=["pixels"])),
    "ActionMask": (lambda B: MaskedEnv(B), lambda: ActionMask()),
    "ActionMask-onehot": (lambda B: MaskedEnv(B, one_hot=True), lambda: ActionMask()),
    "DiscreteActionProjection-onehot": (
        lambda B: MaskedEnv(B, n=3, one_hot=True),
        lambda: DiscreteActionProjection(3, 7),
    ),
    "DiscreteActionProjection-categorical": (lambda B: MaskedEnv(B, n=3), lambda: DiscreteActionProjection(3, 5)),
    "FiniteTensorDictCheck": (_vec, lambda: FiniteTensorDictCheck()),
    "KLRewardTransform": (_vec, lambda: KLRewardTransform(_kl_actor(), coef=0.1)),
    "ToTensorImage": (_pix, lambda: ToTensorImage()),
    "GrayScale": (_pix, lambda: Compose(_pixels_chw(), GrayScale())),
    "Resize-bilinear": (_pix, lambda: Compose(_pixels_chw(), Resize(4, 5))),
    "Resize-bicubic": (_pix, lambda: Compose(_pixels_chw(), Resize(9, 3, "bicubic"))),
    "Resize-nearest-uint8": (
        _pix,
        lambda: Compose(PermuteTransform([-1, -3, -2], in_keys=["pixels"]), Resize(3, 8, "nearest")),
    ),
    "CenterCrop": (_pix, lambda: Compose(_pixels_chw(), CenterCrop(4, 10))),
    "pixel-pipeline": (
        _pix,
        lambda: Compose(
            _pixels_chw(),
            Resize(5, 5),
            GrayScale(),
            CenterCrop(3),
            FlattenObservation(-3, -1),
            ObservationNorm(0.0, 2.0, in_keys=["pixels"]),
        ),
    ),
    "stateless-pipeline": (
        _vec64,
        lambda: Compose(
            DoubleToFloat(),
            CatTensors(["observation", "bounded"], out_key="vec"),
            UnsqueezeTransform(-2, in_keys=["vec"]),
            RewardScaling(0.0, 2.0),
            ClipTransform(in_keys_inv=["action"], low=-1.0, high=1.0),
            ExcludeTransform("truncated"),
        ),
    ),
}


def _recorder_case(kind, tmp_path):
    if kind == "VideoRecorder":
        return VideoRecorder(CSVLogger("specs", log_dir=tmp_path), tag="v", center_crop=4)
    return TensorDictRecorder(str(tmp_path / "td"), skip=2)


@pytest.mark.parametrize("batch", [(1,), (1000,)], ids=["B1", "B1000"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_check_env_specs(case, batch):
    make_env, make_transform = CASES[case]
    env = TransformedEnv(make_env(batch), make_transform())
    check_env_specs(env)
    if batch == (1,):
        check_env_specs(env, break_when_any_done=True)


@pytest.mark.parametrize("batch", [(1,), (1000,)], ids=["B1", "B1000"])
@pytest.mark.parametrize("kind", ["VideoRecorder", "TensorDictRecorder"])
def test_check_env_specs_recorders(kind, batch, tmp_path):
    env = TransformedEnv(_pix(batch), _recorder_case(kind, tmp_path))
    check_env_specs(env)


@pytest.mark.parametrize("batch", [(1,), (1000,)], ids=["B1", "B1000"])
def test_check_env_specs_init_stats(batch):
    env = TransformedEnv(_vec(batch), ObservationNorm(in_keys=["observation"]))
    env.transform.init_stats(5, reduce_dim=(0, 1), cat_dim=1)
    check_env_specs(env)
