"""Batched rendering on the env's device: a rasterizer and the drawings of the native envs.

:mod:`gpusim.render.raster` draws shapes for every row of a batch by testing each pixel
(polygons by half-planes, disks by distance, lines by rows and columns);
:mod:`gpusim.render.classic_control` holds one drawing function per native env, registered
with :func:`register_drawing`; native envs get ``render(tensordict=None)`` from
:class:`Renderable`. The :class:`~gpusim.transforms.PixelRenderTransform` (what
``gpusim.make(..., from_pixels=True)`` adds) puts the frames in every step.

Examples:
    >>> import gpusim as gs
    >>> env = gs.PendulumEnv(batch_size=[8], seed=0)
    >>> frames = env.render(env.reset())
    >>> frames.shape, frames.dtype
    (torch.Size([8, 500, 500, 3]), torch.uint8)
"""

from gpusim.render.drawings import Drawing, Renderable, drawing_for, register_drawing
from gpusim.render.raster import Canvas, rotate

__all__ = ["Canvas", "Drawing", "Renderable", "drawing_for", "register_drawing", "rotate"]
