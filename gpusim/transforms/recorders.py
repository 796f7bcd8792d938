"""Recorders: transforms that keep a copy of the data passing through, for logging.

``TensorDictRecorder`` stacks step outputs and saves them to a ``.pt`` file on ``dump()``.
``VideoRecorder`` turns pixel observations into uint8 frames (optionally center-cropped and
tiled into one grid image per step for batched envs) and writes them to a logger (e.g.
:class:`~gpusim.transforms.loggers.CSVLogger`) on ``dump()``. Recording copies tensors on the
env device; nothing is read on the host until ``dump()`` (``VideoRecorder(dump_on_done=True)``
reads the done flags once per step).

Examples:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> from gpusim.transforms.loggers import CSVLogger
    >>> from gpusim.transforms.recorders import VideoRecorder
    >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
    >>> rec = VideoRecorder(logger, tag="run", skip=1)
    >>> for _ in range(3):
    ...     _ = rec(TensorDict({"pixels": torch.rand(3, 8, 8)}, []))
    >>> path = rec.dump()
    >>> torch.load(path, weights_only=True).shape  # (1, T, C, H, W)
    torch.Size([1, 3, 3, 8, 8])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, as_tuple, unravel
from gpusim.envs.episode import selects_rows
from gpusim.specs import Composite
from gpusim.transforms._pixel_ops import center_crop as _center_crop
from gpusim.transforms._pixel_ops import make_grid as _make_grid
from gpusim.transforms._spec_utils import OUTPUT_SPECS, require_keys
from gpusim.transforms.loggers import Logger
from gpusim.transforms.transform import Transform

__all__ = ["TensorDictRecorder", "VideoRecorder"]


def _check_positive(value, name: str, owner: str, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
    return value


class TensorDictRecorder(Transform):
    """TensorDict recorder: keeps every ``skip``-th step output and saves the stack on ``dump``.

    Args:
        out_file_base: path prefix of the files; ``dump`` writes ``<out_file_base>_<n>.pt``.
        skip_reset: do not record the outputs of ``reset`` (default ``True``).
        skip: record one step out of ``skip`` (default 4).
        in_keys: the entries to record (default: all).

    The saved file holds ``TensorDict.to_dict()`` of the stacked records (the entries common to
    all of them), on the CPU, with the record index as first dim: reload it with
    ``TensorDict(torch.load(path, weights_only=True), batch_size=[n, *env.batch_size])``.

    Raises:
        ValueError: a non-positive ``skip``.

    Examples:
        >>> import tempfile
        >>> from tensordict import TensorDict
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> rec = TensorDictRecorder(tempfile.mkdtemp() + "/run", skip=1, in_keys=["observation"])
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), rec)
        >>> data = env.rollout(3)
        >>> path = rec.dump()
        >>> path.name
        'run_0.pt'
        >>> saved = TensorDict(torch.load(path, weights_only=True), batch_size=[3, 2])
        >>> torch.equal(saved["observation"], data["next", "observation"].transpose(0, 1))
        True
    """

    def __init__(
        self,
        out_file_base: str | os.PathLike,
        skip_reset: bool = True,
        skip: int = 4,
        in_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        if not isinstance(out_file_base, (str, os.PathLike)):
            raise TypeError(f"TensorDictRecorder: out_file_base must be a path, got {out_file_base!r}")
        super().__init__(in_keys=in_keys)
        self.out_file_base = str(out_file_base)
        self.skip_reset = skip_reset
        self.skip = _check_positive(skip, "skip", "TensorDictRecorder", optional=False)
        self.count = 0
        self.iter = 0
        self.records: list[TensorDictBase] = []

    def _record(self, td: TensorDictBase) -> None:
        data = td.select(*self.in_keys, strict=False) if self.in_keys else td
        self.records.append(data.clone())

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        if self.count % self.skip == 0:
            self._record(next_tensordict)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if not self.skip_reset:
            self._record(tensordict_reset)
        return tensordict_reset

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._step(None, next_tensordict)

    def dump(self, suffix: str | None = None) -> Path | None:
        """Saves the records (then forgets them); returns the file path (``None``: nothing).

        Args:
            suffix: the file suffix (default: the number of earlier dumps).

        Returns:
            ``<out_file_base>_<suffix>.pt``, or ``None`` when nothing was recorded.

        Examples:
            >>> import tempfile
            >>> from tensordict import TensorDict
            >>> rec = TensorDictRecorder(tempfile.mkdtemp() + "/run", skip=1)
            >>> for i in range(3):
            ...     _ = rec(TensorDict({"obs": torch.full((2,), float(i))}, [2]))
            >>> torch.load(rec.dump(suffix="a"), weights_only=True)["obs"][:, 0]
            tensor([0., 1., 2.])
            >>> rec.dump() is None  # the records were forgotten
            True
        """
        if not self.records:
            return None
        common = None
        for td in self.records:
            keys = {unravel(k) for k in td.keys(True, True)}
            common = keys if common is None else common & keys
        stacked = torch.stack([td.select(*common) for td in self.records], 0).cpu()
        path = Path(f"{self.out_file_base}_{self.iter if suffix is None else suffix}.pt")
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(stacked.to_dict(), path)
        self.iter += 1
        self.records = []
        return path

    def __repr__(self) -> str:
        return f"TensorDictRecorder(out_file_base={self.out_file_base!r}, skip={self.skip}, in_keys={self.in_keys})"


class VideoRecorder(Transform):
    """Video recorder: keeps pixel observations as uint8 frames and logs them on ``dump``.

    Each recorded observation becomes a ``(C, H, W)`` uint8 frame: channels-last images are
    permuted, float images are taken in ``[0, 1]`` and scaled by 255, ``center_crop`` crops a
    square, and with ``make_grid`` the batch of images of a batched env is tiled into one image
    (8 per row, no padding).
    Standalone (no env: stored data, a dataset's batches), a batch of images without grid is a
    sequence of consecutive frames (leading dims flattened, in order).
    ``dump`` stacks the frames into ``(1, T, C, H, W)`` (``(*B, T, C, H, W)`` for a batched env
    without grid: one video per env row) and calls ``logger.log_video(tag, video, step=..., fps=..., **kwargs)``.
    Observations pass through unchanged (copied to ``out_keys`` when those differ).

    The output of a full reset is recorded; partial resets inside a rollout are not (their
    other rows are not new frames).

    Args:
        logger: where videos go (a :class:`~gpusim.transforms.loggers.Logger`), or ``None`` to
            keep the frames only (read them from :attr:`obs`, or view them with
            :meth:`to_animation`; ``dump`` then just forgets them).
        tag: the video name in the logger.
        in_keys: the pixel entries (default ``["pixels"]``); with several, each gets its own
            video ``<tag>_<key>``.
        skip: record one frame out of ``skip`` (default 1 for batched envs and standalone use,
            2 for a single env).
        center_crop: size of a square center crop of the frames.
        make_grid: tile the batch into one image (default: ``True`` when attached to an env).
        out_keys: copies of the observations (default ``in_keys``: unchanged).
        fps: the frame rate given to the logger.
        max_frames: frames kept between dumps; later frames are dropped until ``dump``.
        dump_on_done: dump on its own when every ``"done"`` entry of a step is ``True`` (reads
            the flags on the host once per step).
        **kwargs: extra keyword arguments for ``logger.log_video``.

    Raises:
        TypeError: a logger (not ``None``) without ``log_video``.
        ValueError: non-positive ``skip``/``center_crop``/``fps``/``max_frames``.
        KeyError: (when attached) a pixel entry that is not in the specs.

    Examples:
        >>> import tempfile
        >>> from tensordict import TensorDict
        >>> from gpusim.transforms.loggers import CSVLogger
        >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
        >>> rec = VideoRecorder(logger, tag="run", center_crop=4)
        >>> for _ in range(3):  # channels-last float frames in [0, 1]
        ...     _ = rec(TensorDict({"pixels": torch.rand(8, 8, 3)}, []))
        >>> video = torch.load(rec.dump(), weights_only=True)
        >>> video.shape, video.dtype  # (1, T, C, H, W), cropped to 4x4
        (torch.Size([1, 3, 3, 4, 4]), torch.uint8)
    """

    def __init__(
        self,
        logger: Logger | Any,
        tag: str | None,
        in_keys: Sequence[NestedKey] | None = None,
        skip: int | None = None,
        center_crop: int | None = None,
        make_grid: bool | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        fps: int | None = None,
        max_frames: int | None = None,
        dump_on_done: bool = False,
        **kwargs: Any,
    ) -> None:
        if logger is not None and not hasattr(logger, "log_video"):
            raise TypeError(f"VideoRecorder: logger must have a log_video method, got {type(logger).__name__}")
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys, out_keys=out_keys)
        self._check_key_pairs()
        self.logger = logger
        self.tag = "video" if tag is None else str(tag)
        self.skip = _check_positive(skip, "skip", "VideoRecorder")
        self.center_crop = _check_positive(center_crop, "center_crop", "VideoRecorder")
        self.make_grid = make_grid
        self.fps = _check_positive(fps, "fps", "VideoRecorder")
        self.max_frames = _check_positive(max_frames, "max_frames", "VideoRecorder")
        self.dump_on_done = dump_on_done
        self.video_kwargs = kwargs
        self.count = 0
        self.iter = 0
        self.frames: dict = {k: [] for k in self.in_keys}

    # ------------------------------------------------------------------ frames
    def _env_batch_dims(self) -> int | None:
        env = self.container
        return None if env is None else len(env.batch_size)

    def _resolved_skip(self) -> int:
        if self.skip is not None:
            return self.skip
        bd = self._env_batch_dims()
        return 2 if bd == 0 else 1

    @property
    def obs(self) -> list:
        """The frames recorded (and not dumped yet) for the first in_key: ``(C, H, W)`` uint8
        tensors, one-channel images repeated to three channels.

        Examples:
            >>> rec = VideoRecorder(None, None)
            >>> _ = rec._apply_transform(torch.zeros(1, 4, 4, dtype=torch.uint8))  # grayscale
            >>> len(rec.obs), rec.obs[0].shape
            (1, torch.Size([3, 4, 4]))
        """
        return self.frames.setdefault(self.in_keys[0], [])

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        """Records ``obs`` as a frame of the first in_key (kept unchanged)."""
        self._add_frame(self.in_keys[0], obs)
        return obs

    def _add_frame(self, key: NestedKey, value: torch.Tensor) -> None:
        frames = self.frames.setdefault(key, [])
        if self.max_frames is not None and len(frames) >= self.max_frames:
            return
        frame = self._to_frame(value)
        if frame.ndim > 3 and self.container is None:
            # standalone (stored data, a dataset's batch of images): the batch holds
            # consecutive frames, in order
            split = list(frame.reshape(-1, *frame.shape[-3:]).unbind(0))
            if self.max_frames is not None:
                split = split[: self.max_frames - len(frames)]
            frames.extend(split)
            return
        frames.append(frame)

    def _to_frame(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs
        if x.shape[-1] in (1, 3) and x.shape[-3] not in (1, 3):
            x = x.movedim(-1, -3)  # channels last -> channels first
        if x.shape[-3] == 1:  # grayscale: three channels for video codecs
            x = x.expand(*x.shape[:-3], 3, *x.shape[-2:])
        if x.dtype != torch.uint8:
            if x.is_floating_point():
                x = (x * 255).round()
            x = x.clamp(0, 255).to(torch.uint8)
        if self.center_crop is not None:
            x = _center_crop(x, self.center_crop, self.center_crop)
        make_grid = self.make_grid if self.make_grid is not None else self.container is not None
        lead = x.shape[:-3]
        if make_grid and len(lead) > 0:
            x = _make_grid(x.reshape(-1, *x.shape[-3:]), padding=0)  # tiles side by side
        return x.detach().clone()

    def _record(self, td: TensorDictBase) -> None:
        for key in self.in_keys:
            value = td.get(key, None)
            if value is not None:
                self._add_frame(key, value)

    def _copy_out(self, td: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if out_key != in_key:
                value = td.get(in_key, None)
                if value is not None:
                    td.set(out_key, value)
        return td

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        if self.count % self._resolved_skip() == 0:
            self._record(next_tensordict)
        return self._copy_out(next_tensordict)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        next_tensordict = self._call(next_tensordict)
        if self.dump_on_done:
            done = next_tensordict.get("done", None)
            if done is not None and bool(done.all()):
                self.dump()
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if not selects_rows(tensordict):  # frames of whole-env resets only
            self._record(tensordict_reset)
        return self._copy_out(tensordict_reset)

    # ------------------------------------------------------------------ dump
    def dump(self, suffix: str | None = None, step: int | None = None) -> Any:
        """Logs the frames kept so far as videos and forgets them.

        Args:
            suffix: appended to the video name (``<tag>_<suffix>``).
            step: the step given to the logger (default: the number of dumps so far).

        Returns:
            What the logger's ``log_video`` returned for the (last) video, ``None`` when there
            were no frames.

        Examples:
            >>> import tempfile
            >>> from tensordict import TensorDict
            >>> from gpusim.transforms.loggers import CSVLogger
            >>> rec = VideoRecorder(CSVLogger("demo", log_dir=tempfile.mkdtemp()), tag="run")
            >>> _ = rec(TensorDict({"pixels": torch.zeros(3, 8, 8, dtype=torch.uint8)}, []))
            >>> rec.dump(suffix="eval").name
            'run_eval_0.pt'
            >>> rec.dump() is None  # nothing recorded since
            True
        """
        out = None
        for key in self.in_keys:
            frames = self.frames.get(key) or []
            if not frames:
                continue
            video = torch.stack(frames, 0).cpu()  # (T, *lead, C, H, W)
            lead = video.ndim - 4
            video = video.movedim(0, lead) if lead > 0 else video.unsqueeze(0)
            name = self.tag if len(self.in_keys) == 1 else f"{self.tag}_{'_'.join(as_tuple(key))}"
            if suffix is not None:
                name = f"{name}_{suffix}"
            kwargs = dict(self.video_kwargs)
            if self.fps is not None:
                kwargs["fps"] = self.fps
            if self.logger is not None:
                out = self.logger.log_video(name, video, step=self.iter if step is None else step, **kwargs)
            frames.clear()  # in place: `obs` stays the same list
        self.iter += 1
        return out

    def to_animation(self, title: str | None = None, clear: bool = True, interval: int | None = None) -> Any:
        """A matplotlib ``ArtistAnimation`` of the frames of :attr:`obs` (e.g. for a notebook).

        Args:
            title: the figure title.
            clear: forget the frames afterwards (and restart the frame count).
            interval: milliseconds between frames (default: from ``fps``, else 50).

        Raises:
            ImportError: matplotlib is not installed.
            RuntimeError: no frames were recorded.

        Examples:
            >>> rec = VideoRecorder(None, None, fps=10)
            >>> _ = rec._apply_transform(torch.zeros(3, 4, 4, dtype=torch.uint8))
            >>> type(rec.to_animation()).__name__, rec.obs
            ('ArtistAnimation', [])
        """
        try:
            import matplotlib.pyplot as plt
            from matplotlib.animation import ArtistAnimation
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("VideoRecorder.to_animation needs matplotlib (pip install matplotlib)") from err
        frames = self.obs
        if not frames:
            raise RuntimeError("VideoRecorder.to_animation: no frames recorded")
        fig, ax = plt.subplots()
        ax.axis("off")
        if title is not None:
            ax.set_title(title)
        artists = []
        for frame in frames:
            image = frame.reshape(-1, *frame.shape[-3:])[0] if frame.ndim > 3 else frame
            artists.append([ax.imshow(image.permute(1, 2, 0).cpu().numpy(), animated=True)])
        if interval is None:
            interval = int(1000 / self.fps) if self.fps else 50
        anim = ArtistAnimation(fig, artists, interval=interval, blit=True)
        plt.close(fig)
        if clear:
            frames.clear()
            self.count = 0
        return anim

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        found = require_keys(output_spec, OUTPUT_SPECS, self.in_keys, "VideoRecorder")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if out_key != in_key:
                sub = output_spec[found[in_key]]
                sub[out_key] = sub[in_key].clone()
        return output_spec

    def __repr__(self) -> str:
        return f"VideoRecorder(tag={self.tag!r}, in_keys={self.in_keys}, skip={self.skip}, logger={self.logger!r})"
