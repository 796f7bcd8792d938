"""``PixelRenderTransform``: the env's rendered frames as an observation of every step.

After each step and reset the transform calls the base env's ``render`` method on the data
(``render(tensordict)``: the state entries it holds, every row at once, on the env device) and
writes the frames, ``[*B, H, W, 3]`` uint8, under ``"pixels"``. The frames are a pure function
of the data, so the transform runs the same eager and inside compiled graphs. A partial reset
in the eager sparse mode draws the reset rows only; otherwise every row is drawn (the others
get the frames they had).
:func:`gpusim.make` adds it for ``from_pixels=True``.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), PixelRenderTransform())
    >>> env.observation_spec["pixels"].shape
    torch.Size([2, 400, 600, 3])
    >>> env.rollout(3)["next", "pixels"].shape
    torch.Size([2, 3, 400, 600, 3])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey
from gpusim.envs.episode import mask_at
from gpusim.render.raster import check_size
from gpusim.specs import Bounded, Composite
from gpusim.transforms.transform import Transform

__all__ = ["PixelRenderTransform"]


def _base_env(env: Any) -> Any:
    while hasattr(env, "base_env"):
        env = env.base_env
    return env


class PixelRenderTransform(Transform):
    """Adds the env's rendered frames (``[*B, H, W, 3]`` uint8) to every step and reset.

    Args:
        out_keys: where the frames go (default ``["pixels"]``; one key).

    Keyword Args:
        pixels_only: drop the observations that are not part of the env's state (the vector
            ``"observation"`` of the classic-control envs); state entries stay, the frames are
            drawn from them.
        render_method: the name of the base env's method that draws ``render(tensordict)``.
        size: the frame size ``(H, W)``, passed on as ``render(tensordict, size=size)`` (the
            frames are drawn directly at that size); ``None``: the env's own size.

    Raises:
        ValueError: more than one out key.
        AttributeError: (when attached) a base env without ``render_method``.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[3]), PixelRenderTransform(pixels_only=True))
        >>> sorted(env.observation_spec.keys())
        ['pixels']
        >>> td = env.reset()
        >>> td["pixels"].shape, "observation" in td.keys()
        (torch.Size([3, 500, 500, 3]), False)
    """

    def __init__(
        self,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        *,
        pixels_only: bool = False,
        render_method: str = "render",
        size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(out_keys=["pixels"] if out_keys is None else out_keys)
        if len(self.out_keys) != 1:
            raise ValueError(f"PixelRenderTransform writes one entry, got out_keys={self.out_keys}")
        if not isinstance(pixels_only, bool):
            raise TypeError(f"PixelRenderTransform: pixels_only must be a bool, got {pixels_only!r}")
        self.pixels_only = pixels_only
        self.render_method = str(render_method)
        self.size = None if size is None else check_size(size)
        self.__dict__["_dropped"] = ()
        self.__dict__["_render_fn"] = None
        self.__dict__["_size"] = None

    def _renderer(self) -> Callable[[TensorDictBase], torch.Tensor]:
        parent = self.parent
        if parent is None:
            raise RuntimeError("PixelRenderTransform renders through its env: attach it to one first")
        base = _base_env(parent)
        method = getattr(base, self.render_method, None)
        if method is None:
            raise AttributeError(
                f"PixelRenderTransform: the base env {type(base).__name__} has no {self.render_method!r} method "
                "to draw frames with"
            )
        if self.size is None:
            return method
        size = self.size
        return lambda tensordict: method(tensordict, size=size)

    # ------------------------------------------------------------------ data
    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        render = self.__dict__.get("_render_fn") or self._renderer()
        next_tensordict.set(self.out_keys[0], render(next_tensordict))
        for key in self.__dict__["_dropped"]:
            next_tensordict.pop(key, None)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        key = self.out_keys[0]
        base = self.__dict__.get("_base")
        if torch.compiler.is_compiling() or base is None or not base._sparse_now():
            # every row (compiled, or masked mode: the rows not reset draw the frames they had)
            return self._call(tensordict_reset)
        previous = None if tensordict is None else tensordict.get(key, None)
        if previous is not None and (previous.dtype != torch.uint8 or previous.shape[-3:] != self.__dict__["_size"]):
            previous = None  # the input holds what later transforms made of the frames
        mask = None if previous is None else mask_at(tensordict, "_reset", tensordict_reset.batch_size)
        if mask is None:
            return self._call(tensordict_reset)
        # eager sparse mode: draw the reset rows only (reading the mask on the host is allowed)
        frames = previous.clone()
        if bool(mask.any()):
            render = self.__dict__.get("_render_fn") or self._renderer()
            frames[mask] = render(tensordict_reset[mask])
        tensordict_reset.set(key, frames)
        for dropped in self.__dict__["_dropped"]:
            tensordict_reset.pop(dropped, None)
        return tensordict_reset

    # ------------------------------------------------------------------ specs
    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        """Adds the frames' spec (``Bounded(0, 255)``, uint8 ``[*B, H, W, 3]``); with
        ``pixels_only``, drops the observations that are not state entries.

        The frame size comes from one frame drawn from the zero state (which also builds the
        drawing's cached static layers, outside any compiled graph).

        Examples:
            >>> from gpusim.envs.native import TicTacToeEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> env = TransformedEnv(TicTacToeEnv(batch_size=[2]), PixelRenderTransform(pixels_only=True))
            >>> env.observation_spec["pixels"].shape, "board" in env.observation_spec.keys()  # board: a state
            (torch.Size([2, 96, 96, 3]), True)
        """
        parent = self.parent
        base = _base_env(parent)
        batch, device = observation_spec.shape, observation_spec.device
        probe = base.full_state_spec.zero()
        probe = probe.reshape(-1)[:1] if probe.batch_dims else probe
        render = self.__dict__["_render_fn"] = self._renderer()
        self.__dict__["_base"] = base
        frame = render(probe)
        size = self.__dict__["_size"] = tuple(frame.shape[-3:])
        observation_spec[self.out_keys[0]] = Bounded(0, 255, shape=(*batch, *size), dtype=torch.uint8, device=device)
        dropped = ()
        if self.pixels_only:
            state = set(base.full_state_spec.keys(True, True))
            dropped = tuple(
                k for k in list(observation_spec.keys(True, True)) if k not in state and k != self.out_keys[0]
            )
            for key in dropped:
                del observation_spec[key]
        self.__dict__["_dropped"] = dropped
        return observation_spec

    def reset_parent(self) -> None:
        """Forgets the cached parent and its render method.

        Examples:
            >>> t = PixelRenderTransform()
            >>> t.reset_parent()
            >>> t.parent is None
            True
        """
        super().reset_parent()
        self.__dict__["_render_fn"] = None
        self.__dict__["_base"] = None

    def __repr__(self) -> str:
        size = "" if self.size is None else f", size={self.size}"
        return f"PixelRenderTransform(out_keys={self.out_keys}, pixels_only={self.pixels_only}{size})"
