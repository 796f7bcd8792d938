"""File-based loggers for the recorders (no network, no video codec needed).

``CSVLogger`` writes scalars to one CSV file per name and videos as uint8 tensors
(``.pt``, loadable with ``torch.load(..., weights_only=True)``) or numpy arrays (``.npy``),
with an index file recording each video's shape and fps.

Layout under ``log_dir/exp_name``::

    scalars/<name>.csv        "step,value" lines
    videos/<name>_<step>.pt   (or .npy) uint8 tensor, e.g. (1, T, C, H, W)
    videos/index.csv          "file,fps,shape" lines
    hparams.txt               "key: value" lines

Examples:
    >>> import tempfile, torch
    >>> from gpusim.transforms.loggers import CSVLogger
    >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
    >>> logger.log_scalar("loss", 0.5, step=1)
    >>> path = logger.log_video("run", torch.zeros(1, 4, 3, 8, 8, dtype=torch.uint8))
    >>> torch.load(path, weights_only=True).shape
    torch.Size([1, 4, 3, 8, 8])
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["Logger", "CSVLogger"]

_VIDEO_FORMATS = ("pt", "npy")


class Logger(abc.ABC):
    """Base class of loggers: scalars, videos and hyperparameters under an experiment name.

    Subclasses implement :meth:`log_scalar`, :meth:`log_video` and :meth:`log_hparams`.

    Args:
        exp_name: the experiment name.
        log_dir: where the logs go.

    Raises:
        ValueError: an empty ``exp_name`` or one holding a path separator.

    Examples:
        >>> class PrintLogger(Logger):
        ...     def log_scalar(self, name, value, step=None):
        ...         print(f"{self.exp_name}/{name}@{step}: {value}")
        ...     def log_video(self, name, video, step=None, **kwargs):
        ...         print(f"{name}: video {tuple(video.shape)}")
        ...     def log_hparams(self, cfg):
        ...         print(dict(cfg))
        >>> PrintLogger("demo", log_dir=None).log_scalar("return", 12.5, step=3)
        demo/return@3: 12.5
    """

    def __init__(self, exp_name: str, log_dir: str | os.PathLike | None) -> None:
        if not isinstance(exp_name, str) or not exp_name or os.sep in exp_name:
            raise ValueError(
                f"{type(self).__name__}: exp_name must be a non-empty name without '{os.sep}', got {exp_name!r}"
            )
        self.exp_name = exp_name
        self.log_dir = log_dir

    @abc.abstractmethod
    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Logs one scalar value.

        Args:
            name: the series name.
            value: the value (a number or a one-element tensor).
            step: the step of the value (``None``: the logger counts).

        Examples:
            >>> import tempfile
            >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
            >>> logger.log_scalar("return", 12.5, step=3)
            >>> (logger.experiment_dir / "scalars" / "return.csv").read_text()
            '3,12.5\\n'
        """

    @abc.abstractmethod
    def log_video(self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any) -> Any:
        """Logs a video (uint8 frames, ``(T, C, H, W)`` or ``(B, T, C, H, W)``).

        Args:
            name: the video name.
            video: the frames.
            step: the step of the video (``None``: the logger counts).
            **kwargs: logger-specific options (``fps``).

        Returns:
            Whatever the logger returns (a file path for :class:`CSVLogger`).

        Examples:
            >>> import tempfile
            >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
            >>> logger.log_video("run", torch.zeros(4, 3, 8, 8, dtype=torch.uint8), step=0).name
            'run_0.pt'
        """

    @abc.abstractmethod
    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Logs hyperparameters.

        Args:
            cfg: a mapping of names to values.

        Examples:
            >>> import tempfile
            >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
            >>> logger.log_hparams({"lr": 0.001, "gamma": 0.99})
            >>> (logger.experiment_dir / "hparams.txt").read_text().splitlines()
            ['lr: 0.001', 'gamma: 0.99']
        """


class CSVLogger(Logger):
    """A minimal file logger (see the module docstring for the layout).

    Args:
        exp_name: the experiment name (a directory under ``log_dir``).
        log_dir: the root directory (default ``"csv_logs"``).
        video_format: ``"pt"`` (default) or ``"npy"``.
        video_fps: the default frame rate recorded for videos.

    Raises:
        ValueError: an unknown ``video_format`` (naming it), a bad ``exp_name`` or fps.

    Examples:
        >>> import tempfile
        >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp(), video_format="npy")
        >>> for step, value in enumerate([1.0, 0.5]):
        ...     logger.log_scalar("loss", value, step=step)
        >>> (logger.experiment_dir / "scalars" / "loss.csv").read_text().split()
        ['0,1.0', '1,0.5']
        >>> logger.log_video("run", torch.zeros(1, 4, 3, 8, 8, dtype=torch.uint8)).name
        'run_0.npy'
        >>> CSVLogger("demo", log_dir=tempfile.mkdtemp(), video_format="mp4")
        Traceback (most recent call last):
        ...
        ValueError: CSVLogger: video_format must be one of ('pt', 'npy') (encoded formats such as mp4 need a codec gpusim does not depend on), got 'mp4'
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike | None = None,
        video_format: str = "pt",
        video_fps: int = 30,
    ) -> None:
        super().__init__(exp_name, "csv_logs" if log_dir is None else log_dir)
        if video_format not in _VIDEO_FORMATS:
            raise ValueError(
                f"CSVLogger: video_format must be one of {_VIDEO_FORMATS} (encoded formats such as mp4 need a "
                f"codec gpusim does not depend on), got {video_format!r}"
            )
        if isinstance(video_fps, bool) or not isinstance(video_fps, int) or video_fps < 1:
            raise ValueError(f"CSVLogger: video_fps must be a positive int, got {video_fps!r}")
        self.video_format = video_format
        self.video_fps = video_fps
        self.experiment_dir = Path(self.log_dir) / exp_name
        self.experiment_dir.mkdir(parents=True, exist_ok=True)
        self._counters: dict[str, int] = {}

    def _next_step(self, kind: str, name: str, step: int | None) -> int:
        key = f"{kind}/{name}"
        if step is None:
            step = self._counters.get(key, 0)
        self._counters[key] = int(step) + 1
        return int(step)

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Appends ``step,value`` to ``scalars/<name>.csv`` (reads a tensor value on the host).

        Args:
            name: the series name (the file name).
            value: a number or a one-element tensor.
            step: the step (``None``: one more than the previous step of ``name``, from 0).

        Examples:
            >>> import tempfile
            >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
            >>> logger.log_scalar("loss", torch.tensor(0.25))
            >>> logger.log_scalar("loss", 0.125)
            >>> (logger.experiment_dir / "scalars" / "loss.csv").read_text().split()
            ['0,0.25', '1,0.125']
        """
        step = self._next_step("scalar", name, step)
        if isinstance(value, torch.Tensor):
            value = value.item()
        folder = self.experiment_dir / "scalars"
        folder.mkdir(exist_ok=True)
        with open(folder / f"{name}.csv", "a") as f:
            f.write(f"{step},{float(value)}\n")

    def log_video(self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any) -> Path:
        """Saves ``video`` to ``videos/<name>_<step>.<format>`` and returns the path.

        Args:
            name: the video name.
            video: uint8 frames, e.g. ``(1, T, C, H, W)``.
            step: the step (``None``: one more than the previous step of ``name``, from 0).

        Keyword Args:
            fps: frame rate recorded in the index (default ``video_fps``).

        Returns:
            The path of the saved file.

        Raises:
            TypeError: ``video`` is not a tensor, or an unknown keyword argument.

        Examples:
            >>> import tempfile
            >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
            >>> path = logger.log_video("run", torch.zeros(1, 4, 3, 8, 8, dtype=torch.uint8), fps=15)
            >>> torch.load(path, weights_only=True).shape
            torch.Size([1, 4, 3, 8, 8])
            >>> (path.parent / "index.csv").read_text()
            'run_0.pt,15,1x4x3x8x8\\n'
        """
        fps = kwargs.pop("fps", None) or self.video_fps
        if kwargs:
            raise TypeError(f"CSVLogger.log_video got unexpected keyword arguments {sorted(kwargs)}")
        if not isinstance(video, torch.Tensor):
            raise TypeError(f"CSVLogger.log_video: video must be a tensor, got {type(video).__name__}")
        step = self._next_step("video", name, step)
        folder = self.experiment_dir / "videos"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}_{step}.{self.video_format}"
        video = video.detach().cpu()
        if self.video_format == "pt":
            torch.save(video.clone(), path)
        else:
            np.save(path, video.numpy())
        with open(folder / "index.csv", "a") as f:
            f.write(f"{path.name},{fps},{'x'.join(map(str, video.shape))}\n")
        return path

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Writes ``key: value`` lines to ``hparams.txt`` (replacing the previous file).

        Args:
            cfg: a mapping of names to values.

        Examples:
            >>> import tempfile
            >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
            >>> logger.log_hparams({"batch": 4096, "steps": 100})
            >>> (logger.experiment_dir / "hparams.txt").read_text()
            'batch: 4096\\nsteps: 100\\n'
        """
        with open(self.experiment_dir / "hparams.txt", "w") as f:
            for key, value in dict(cfg).items():
                f.write(f"{key}: {value}\n")

    def __repr__(self) -> str:
        return (
            f"CSVLogger(exp_name={self.exp_name!r}, log_dir={str(self.log_dir)!r}, video_format={self.video_format!r})"
        )
