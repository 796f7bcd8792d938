"""Batched rasterizer: shapes drawn for every row of a batch by testing each pixel.

A :class:`Canvas` holds the pixel grid of one frame size and what is drawn on it (a colour
index per pixel over a background), turned into ``[*B, H, W, 3]`` uint8 frames at the end. Each primitive evaluates "is this pixel inside the shape?" for every
pixel of every row at once (a polygon by its edges' half-plane tests, a disk by its distance, a
line by its rows or columns), from per-row parameters of shape ``[*B]`` (or Python numbers),
and :meth:`Canvas.paint` writes a colour where the mask holds. No Python loop runs over rows or
pixels, nothing is read on the host, and a compiled graph fuses a whole drawing into one loop
over the output bytes.

Eager and compiled, the canvas runs two programs with the same frames, bit for bit: eager, each
shape paints a colour index per pixel (one byte per pixel of each temporary) and the frame is
looked up once at the end; compiled, each shape is tested on every byte of the frame (a pixel's
three channels test the same point) and paints the byte itself, and the per-row parameters of
each shape are stored once. Every value the compiled loop reads is then indexed by the byte's
position, so Inductor makes one contiguous vectorized loop over the bytes of each frame row
whatever layout the consumer reads (``[.., W, 3]`` or ``[.., W * 3]``), without recomputing a
row's trigonometry per vector of pixels.

Coordinates are those of gymnasium's classic-control drawings: pygame surface pixels, ``x`` to
the right and ``y`` upwards, with the frame flipped vertically at the end (surface row ``y`` is
image row ``H - 1 - y``). Pixel ``(x, y)`` is sampled at its integer coordinates, as
pygame's ``gfxdraw`` fills scanlines: a polygon covers the pixels whose centre lies inside it
or within half a pixel of it along the row (``gfxdraw`` rounds the ends of each span), a disk
of integer radius ``r`` the pixels with ``dx^2 + dy^2 <= r^2 + r``. Anti-aliased edges are not
blended (shapes are drawn hard-edged); lines given as function graphs can be (:meth:`Canvas.graph_line`).

Examples:
    >>> import torch
    >>> canvas = Canvas(torch.Size([2]), height=8, width=10)
    >>> left = torch.tensor([1.0, 5.0])
    >>> canvas.paint(canvas.polygon([left, left + 3, left + 3, left], [1.0, 1.0, 4.0, 4.0]), (255, 0, 0))
    >>> frames = canvas.frames()
    >>> frames.shape, frames.dtype
    (torch.Size([2, 8, 10, 3]), torch.uint8)
    >>> frames[..., 1].eq(0).sum(dim=(-2, -1)).tolist()  # 4 x 4 red pixels per row
    [16, 16]
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["Canvas", "Colour", "check_size", "rotate"]

#: an RGB colour, three ints in [0, 255]
Colour = tuple[int, int, int]

Number = float | torch.Tensor


def _col(value: Number) -> Number:
    """A per-row parameter ``[*B]`` as ``[*B, 1, 1]`` (broadcast over the pixel grid)."""
    if isinstance(value, torch.Tensor):
        return value[..., None, None]
    return float(value)


def rotate(x: Number, y: Number, angle: Number) -> tuple[Number, Number]:
    """``(x, y)`` rotated counter-clockwise by ``angle`` radians (pygame's ``Vector2.rotate_rad``).

    Examples:
        >>> import math
        >>> x, y = rotate(1.0, 0.0, torch.tensor(math.pi / 2))
        >>> round(abs(float(x)), 6), round(float(y), 6)
        (0.0, 1.0)
    """
    angle = torch.as_tensor(angle)
    c, s = torch.cos(angle), torch.sin(angle)
    return x * c - y * s, x * s + y * c


def check_size(size: object) -> tuple[int, int]:
    """A frame size ``(H, W)``: two positive ints (a tuple or list), checked.

    Raises:
        ValueError: naming the value received.

    Examples:
        >>> check_size((64, 64))
        (64, 64)
        >>> check_size(64)
        Traceback (most recent call last):
        ...
        ValueError: a frame size is (height, width), two positive ints, got 64
    """
    ok = isinstance(size, (tuple, list)) and len(size) == 2
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)
    if not ok:
        raise ValueError(f"a frame size is (height, width), two positive ints, got {size!r}")
    return int(size[0]), int(size[1])


class Canvas:
    """A batch of frames being drawn: ``[*B, H, W, 3]`` uint8, pixel tests on a shared grid.

    Args:
        batch_shape: the leading dims ``B`` of the frames (those of the per-row parameters).
        height: frame height ``H`` in pixels.
        width: frame width ``W`` in pixels.
        device: where the frames live.
        background: the starting image: an RGB colour (default white) or a ``[H, W, 3]`` uint8
            tensor (a static scene drawn once, e.g. by another canvas).
        flip: surface row ``y`` is image row ``H - 1 - y`` (gymnasium flips its pygame surface);
            ``False``: image rows are surface rows.
        size: the frame size ``(h, w)`` in pixels, when not ``(height, width)``: shapes keep
            their coordinates on the ``height x width`` surface and each pixel tests the surface
            point at its centre (drawn directly at that size, nearest-sample: no anti-aliasing;
            lines stay one pixel wide, other shapes thinner than a pixel may vanish).

    Examples:
        >>> canvas = Canvas(torch.Size([3]), height=5, width=5, background=(0, 0, 0))
        >>> canvas.paint(canvas.disk(2, 2, torch.tensor([0, 1, 2])), (255, 255, 255))
        >>> canvas.frames()[..., 0].eq(255).sum(dim=(-2, -1)).tolist()  # radius 0, 1, 2
        [1, 9, 21]
        >>> small = Canvas((), height=40, width=60, size=(4, 6), background=(0, 0, 0))
        >>> small.paint(small.hline(20), (255, 255, 255))  # a surface row, at a tenth of the size
        >>> small.frames()[..., 0].eq(255).sum(-1).tolist()
        [0, 6, 0, 0]
    """

    def __init__(
        self,
        batch_shape: torch.Size | Sequence[int],
        height: int,
        width: int,
        device: torch.device | str | None = None,
        background: Colour | torch.Tensor = (255, 255, 255),
        flip: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        self.batch_shape = torch.Size(batch_shape)
        surface_h, surface_w = int(height), int(width)
        self.surface_width = surface_w
        self.height, self.width = (surface_h, surface_w) if size is None else check_size(size)
        self.device = torch.device("cpu") if device is None else torch.device(device)
        # the surface point at each pixel's centre (the pixel index itself at full size)
        step_y, step_x = surface_h / self.height, surface_w / self.width
        self._half_y, self._half_x = 0.5 * step_y, 0.5 * step_x
        cols = torch.arange(self.width, dtype=torch.float32, device=self.device)
        self.x = cols if step_x == 1.0 else (cols + 0.5) * step_x - 0.5  # [W]
        rows = torch.arange(self.height, dtype=torch.float32, device=self.device)
        rows = rows if step_y == 1.0 else (rows + 0.5) * step_y - 0.5
        self.y = ((surface_h - 1) - rows if flip else rows)[:, None]  # [H, 1]: surface y of each image row
        if isinstance(background, torch.Tensor):
            if background.shape != (self.height, self.width, 3) or background.dtype != torch.uint8:
                raise ValueError(
                    f"Canvas: a background image must be uint8 of shape [{self.height}, {self.width}, 3], "
                    f"got {background.dtype} {list(background.shape)}"
                )
            self.background = background.to(self.device)
        else:
            self.background = self.colour(background).expand(self.height, self.width, 3)
        self._background_rgb: Colour | None = None if isinstance(background, torch.Tensor) else tuple(background)
        # what is painted. Eager: a colour index per pixel (0: the background) and the colours.
        # Compiled: the frame's bytes themselves, ``[*B, H, W * 3]`` int32, tested and painted
        # byte by byte (see _bytes)
        self.labels: torch.Tensor | None = None
        self.colours: list[Colour] = []
        self._bytes = torch.compiler.is_compiling()
        self._image: torch.Tensor | None = None
        self._channel_masks: tuple[torch.Tensor, torch.Tensor] | None = None
        # the x of each column of the masks the shapes return: each pixel's x, or, on the byte
        # grid, each pixel's x three times (once per channel)
        # (a constant tensor, so that a compiled loop reads it where the byte index points instead
        # of recomputing a pixel index k // 3 from it: the loops over [.., W, 3] and [.., W * 3]
        # stay one contiguous loop)
        self._step_x = step_x
        self._mask_j, self._mask_x = cols, self.x  # each mask column's pixel index and x
        if self._bytes:
            base = torch.tensor([float(c) for c in range(self.width) for _ in range(3)], device=self.device)
            self._mask_j, self._mask_x = base, self._x_at(base)

    def colour(self, rgb: Colour) -> torch.Tensor:
        """``rgb`` as a uint8 ``[3]`` tensor on the canvas device.

        Raises:
            ValueError: not three ints in ``[0, 255]`` (naming the value).

        Examples:
            >>> Canvas((), 2, 2).colour((204, 77, 77))
            tensor([204,  77,  77], dtype=torch.uint8)
        """
        if len(rgb) != 3 or not all(isinstance(v, int) and 0 <= v <= 255 for v in rgb):
            raise ValueError(f"Canvas: a colour is three ints in [0, 255], got {rgb!r}")
        return torch.tensor(rgb, dtype=torch.uint8, device=self.device)

    def _x_at(self, j: torch.Tensor) -> torch.Tensor:
        """The surface x of pixel column ``j`` (a float tensor of column indices), as ``self.x``."""
        return j if self._step_x == 1.0 else (j + 0.5) * self._step_x - 0.5

    def _first(self, test, guess: torch.Tensor) -> torch.Tensor:
        """The first column ``j`` in ``[0, W]`` where ``test(x_j)`` holds (``W``: none), for a
        ``test`` false then true along the row, given a ``guess`` of it within a column (per
        row, float): the test is evaluated on the three columns from ``floor(guess) - 1``."""
        start = torch.clamp(torch.floor(torch.nan_to_num(guess, nan=0.0)) - 1.0, 0.0, float(self.width))
        first = start
        for d in range(3):
            j = start + d
            first = first + ((j < self.width) & ~test(self._x_at(j))).to(torch.float32)
        return first

    def _column(self, x: torch.Tensor) -> torch.Tensor:
        """The (fractional) column index of surface ``x``: the inverse of ``_x_at``."""
        return x if self._step_x == 1.0 else (x + 0.5) / self._step_x - 0.5

    def _span_polygon(self, vx: list, vy: list, clockwise: bool) -> torch.Tensor:
        # The pixels of a convex polygon in each row are a run of columns [lo, hi): each edge's
        # test (the one of the per-pixel path, ``polygon``) is monotone along a row, so its
        # boundary is found per row (its guess x = ax + K / ey, then the exact test on three
        # columns around it) and each pixel compares its column with the run's two ends.
        # Same pixels as the per-pixel tests, for two comparisons per pixel instead of one per edge.
        lo = hi = None
        n = len(vx)
        width = float(self.width)
        for i in range(n):
            ax, ay, bx, by = vx[i], vy[i], vx[(i + 1) % n], vy[(i + 1) % n]
            ex, ey = bx - ax, by - ay
            slack = 0.5 * abs(ey) + 1e-3
            rows = ex * (self.y - ay)  # [*B, H, 1]
            bound = rows - slack if clockwise else rows + slack

            def inside(x, ey=ey, ax=ax, bound=bound):
                cols = ey * (x - ax)
                return bound <= cols if clockwise else bound >= cols

            # the edge's pixels are a suffix of the row (true from some column on) or a prefix
            suffix = (ey > 0) if clockwise else (ey < 0)
            guess = self._column(ax + bound / ey)
            first = self._first(lambda x, f=inside, s=suffix: f(x) == s, guess)  # false, then true
            flat = ey == 0  # the test is the same along the row
            everywhere = inside(self._x_at(torch.zeros((), device=self.device)))
            edge_lo = torch.where(flat, torch.where(everywhere, 0.0, width), torch.where(suffix, first, 0.0))
            edge_hi = torch.where(flat, width, torch.where(suffix, width, first))
            lo = edge_lo if lo is None else torch.maximum(lo, edge_lo)
            hi = edge_hi if hi is None else torch.minimum(hi, edge_hi)
        return self._run(lo, hi)

    def _run(self, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        """The mask of the columns ``lo <= j < hi`` of each row (``[*B, H, 1]`` float bounds),
        the bounds computed once (pinned) and compared with each pixel's column."""
        lo, hi = torch.broadcast_tensors(lo, hi)
        lo, hi = self._pin([lo, hi])
        return (self._mask_j >= lo) & (self._mask_j < hi)

    def _pin(self, values: list[Number]) -> list[Number]:
        """Compiled: the float per-row parameters among ``values`` computed once, into one buffer.

        Inductor inlines a per-row value into every pixel loop iteration that reads it (a
        vertex's ``sin``/``cos``, the physics that produced the state), unless it is stored; a
        ``stack`` is stored (on CPU a cat is a kernel of its own), so the pixel loop reads each
        parameter instead of recomputing it per vector of pixels. Eager: ``values`` unchanged.
        """
        if not self._bytes:
            return values
        at = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor) and v.dtype == torch.float32]
        if len(at) == 0:
            return values
        pinned = torch.stack(torch.broadcast_tensors(*(values[i] for i in at)), -1).unbind(-1)
        out = list(values)
        for i, value in zip(at, pinned, strict=True):
            out[i] = value
        return out

    # ------------------------------------------------------------------ shapes (bool masks)
    def polygon(
        self, xs: Sequence[Number], ys: Sequence[Number], truncate: bool = True, clockwise: bool | None = None
    ) -> torch.Tensor:
        """Pixels of a convex polygon, ``[*B, H, W]`` bool.

        Args:
            xs: the vertices' x, each ``[*B]`` or a number.
            ys: the vertices' y, each ``[*B]`` or a number.
            truncate: truncate the vertices to integers first, as ``gfxdraw`` does.
            clockwise: the winding of the vertices (``y`` up), when every row shares it (a
                rotated rectangle keeps its winding): one test per edge instead of two;
                ``None``: either winding.

        Examples:
            >>> canvas = Canvas((), 6, 6)
            >>> canvas.polygon([1.0, 1.0, 4.0], [1.0, 4.0, 1.0]).sum().item()  # a right triangle
            10
        """
        if len(xs) != len(ys) or len(xs) < 3:
            raise ValueError(f"Canvas.polygon needs >= 3 vertices with as many xs as ys, got {len(xs)} and {len(ys)}")
        vertices = [
            torch.trunc(v) if truncate and isinstance(v, torch.Tensor) else (int(v) if truncate else v)
            for v in (*xs, *ys)
        ]
        vertices = [_col(v) for v in self._pin(vertices)]
        vx, vy = vertices[: len(xs)], vertices[len(xs) :]
        if clockwise is not None:
            vx = [torch.as_tensor(v, dtype=torch.float32, device=self.device) for v in vx]
            vy = [torch.as_tensor(v, dtype=torch.float32, device=self.device) for v in vy]
            return self._span_polygon(vx, vy, clockwise)
        pos = neg = None
        n = len(vx)
        for i in range(n):
            ax, ay, bx, by = vx[i], vy[i], vx[(i + 1) % n], vy[(i + 1) % n]
            ex, ey = bx - ax, by - ay
            # side of the pixel relative to the edge (the cross product ex*(y-ay) - ey*(x-ax)),
            # widened by half a pixel along the row; its row and column terms are computed
            # apart ([*B, H, 1] and [*B, 1, W]), so that each pixel costs one comparison
            slack = 0.5 * abs(ey) + 1e-3
            rows, cols = ex * (self.y - ay), ey * (self._mask_x - ax)
            if clockwise is not True:
                inside_ccw = rows + slack >= cols
                pos = inside_ccw if pos is None else pos & inside_ccw
            if clockwise is not False:
                inside_cw = rows - slack <= cols
                neg = inside_cw if neg is None else neg & inside_cw
        if clockwise is None:
            return pos | neg
        return neg if clockwise else pos

    def disk(self, cx: Number, cy: Number, radius: Number) -> torch.Tensor:
        """Pixels of a filled circle of integer centre and radius (``gfxdraw.filled_circle``),
        ``[*B, H, W]`` bool: ``dx^2 + dy^2 <= r^2 + r``.

        Examples:
            >>> Canvas((), 20, 20).disk(10, 10, 5).sum().item()
            97
        """
        cx, cy, radius = self._pin([cx, cy, radius])
        r, cx = _col(radius), _col(cx)
        dy = self.y - _col(cy)
        row = dy * dy - (r * r + r)  # [*B, H, 1]: a pixel is inside when row <= -(dx * dx)

        def inside(x):
            dx = x - cx
            return row <= -(dx * dx)

        # a run of columns per row (see _span_polygon): from the first column inside or right of
        # the centre, to the first one right of the centre and outside
        half = torch.sqrt(torch.clamp(-row, min=0.0))
        lo = self._first(lambda x: inside(x) | (x >= cx), self._column(cx - half))
        hi = self._first(lambda x: ~inside(x) & (x > cx), self._column(cx + half))
        hi = torch.where(row > 0, lo, hi)  # no pixel (not even one on the centre's column)
        return self._run(lo, hi)

    def hline(self, y: Number, x0: Number = 0, x1: Number | None = None) -> torch.Tensor:
        """Pixels of surface row ``y`` between columns ``x0`` and ``x1`` (inclusive; default: the
        whole row).

        Examples:
            >>> mask = Canvas((), 4, 6).hline(0, 1, 3)  # surface row 0 is the bottom image row
            >>> mask[-1].tolist()
            [False, True, True, True, False, False]
        """
        x1 = self.surface_width - 1 if x1 is None else x1
        y, x0, x1 = self._pin([y, x0, x1])
        x0, x1 = (torch.as_tensor(v, dtype=torch.float32, device=self.device)[..., None, None] for v in (x0, x1))
        lo = self._first(lambda x: x >= x0, self._column(x0))
        hi = self._first(lambda x: x > x1, self._column(x1))
        # the image row nearest the surface row (at full size: the row itself)
        on_row = (self.y - _col(y)).abs() < self._half_y  # [*B, H, 1]
        return self._run(lo, torch.where(on_row, hi, lo))

    def vline(self, x: Number, y0: Number, y1: Number) -> torch.Tensor:
        """Pixels of surface column ``x`` between rows ``y0`` and ``y1`` (inclusive).

        Examples:
            >>> Canvas((), 5, 3).vline(1, 0, 2)[:, 1].tolist()  # image rows, top to bottom
            [False, False, True, True, True]
        """
        x, y0, y1 = self._pin([x, y0, y1])
        return ((self._mask_x - _col(x)).abs() < self._half_x) & (self.y >= _col(y0)) & (self.y <= _col(y1))

    def graph_line(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Anti-aliased ink ``[H, W]`` float in ``[0, 1]`` of a polyline that is the graph of a
        function of ``x`` (one vertex per increasing ``xs``): each column is inked on the two
        rows around the line, in proportion to their distance across it (Wu's lines), like
        ``pygame.draw.aalines`` on a mostly horizontal curve. A static drawing: no batch dims.

        Examples:
            >>> canvas = Canvas((), 4, 4, flip=False)
            >>> ink = canvas.graph_line(torch.tensor([0.0, 3.0]), torch.tensor([1.5, 1.5]))
            >>> ink[:, 0].tolist()  # halfway between rows 1 and 2
            [0.0, 0.5, 0.5, 0.0]
        """
        xs, ys = xs.to(self.device, torch.float32), ys.to(self.device, torch.float32)
        x = self.x.clamp(float(xs[0]), float(xs[-1]))
        seg = torch.searchsorted(xs, x, right=True).clamp(1, xs.numel() - 1)
        x0, x1, y0, y1 = xs[seg - 1], xs[seg], ys[seg - 1], ys[seg]
        slope = (y1 - y0) / (x1 - x0)
        line_y = y0 + slope * (x - x0)  # [W]
        inside = (self.x >= xs[0]) & (self.x <= xs[-1])
        # the two rows around the line, inked by their distance across it (the vertical gap
        # shrunk by the slope)
        gap = (self.y - line_y).abs()
        return torch.where(gap < 1.0, 1.0 - gap / torch.sqrt(1.0 + slope * slope), 0.0) * inside

    # ------------------------------------------------------------------ painting
    def paint(self, mask: torch.Tensor, rgb: Colour) -> None:
        """Paints ``rgb`` on the pixels of ``mask`` (``[*B, H, W]`` or ``[H, W]`` bool), over what
        was painted before.

        Eager, painting records a colour index per pixel (one byte); :meth:`frames` turns the
        indices into colours once, so that each shape costs a pass over bytes, not over RGB
        triples. Compiled, it paints the frame's bytes (masks of the shapes are then on the byte
        grid, ``[*B, H, W * 3]``; a pixel mask, e.g. from ``canvas.x``, is widened to it).

        Examples:
            >>> canvas = Canvas(torch.Size([2]), 1, 2)
            >>> canvas.paint(torch.tensor([[[True, False]], [[False, True]]]), (0, 0, 255))
            >>> canvas.frames()[:, 0, :, 2].tolist(), canvas.frames()[:, 0, :, 0].tolist()
            ([[255, 255], [255, 255]], [[0, 255], [255, 0]])
        """
        if rgb not in self.colours:
            self.colour(rgb)  # checks it
            self.colours.append(rgb)
            if len(self.colours) > 255:
                raise ValueError("Canvas: at most 255 colours per drawing")
        if self._bytes:
            self._paint_bytes(mask, rgb)
            return
        index = self.colours.index(rgb) + 1
        labels = self.labels
        if labels is None:
            labels = torch.zeros((), dtype=torch.uint8, device=self.device)
        self.labels = torch.where(mask, torch.tensor(index, dtype=torch.uint8, device=self.device), labels)

    def _row(self, rgb: Colour) -> torch.Tensor:
        """A surface row of colour ``rgb`` on the byte grid, ``[W * 3]`` int32 (an int for a grey).

        Made from one constant shared by every colour (each byte's channel as a bit mask),
        not one constant per colour: each buffer a fused loop reads counts towards Inductor's
        limit of reads per expression (12 on CPU), past which it stores the half-painted
        frame (as int32: four bytes per byte) and reads it back.
        """
        if self._channel_masks is None:
            channel = torch.tensor([0, 1, 2] * self.width, dtype=torch.int32, device=self.device)
            self._channel_masks = (-(channel == 0).to(torch.int32), -(channel == 1).to(torch.int32))
        red, green = self._channel_masks
        r, g, b = rgb
        row = b
        # few ops per colour (a grey is a number): Inductor stores an expression past 100 ops
        for mask, delta in ((red, r - b), (green, g - b)):
            if delta != 0:
                row = (mask & delta) + row
        return row

    def _paint_bytes(self, mask: torch.Tensor, rgb: Colour) -> None:
        # compiled: the frame bytes are painted directly, each byte tested on its own (the shapes'
        # masks are on the byte grid). Every value a loop reads is then indexed by the byte's
        # position (no pixel index k // 3, no colour lookup), so that Inductor makes one
        # contiguous vectorized loop over the bytes of a row whatever the consumer's layout
        # ([.., W, 3] or [.., W * 3]); a labels-then-lookup frame fused into a [.., W, 3] consumer
        # (the where of a reset) became a loop of 3-byte partial vectors (~100x slower). int32
        # bytes: as wide as the float tests' lanes (uint8 made Inductor convert each mask to 64
        # byte lanes one lane at a time)
        if mask.shape[-1] != self._mask_x.shape[-1]:  # a pixel mask (drawn from canvas.x): per byte
            mask = mask.unsqueeze(-1).expand(*mask.shape, 3).flatten(-2)
        image = self._image
        if image is None:
            if self._background_rgb is not None:
                image = torch.as_tensor(self._row(self._background_rgb), dtype=torch.int32, device=self.device)
            else:
                image = self.background.reshape(self.height, self.width * 3).to(torch.int32)
        colour = self._row(rgb)
        if not isinstance(colour, torch.Tensor):
            colour = torch.tensor(colour, dtype=torch.int32, device=self.device)
        self._image = torch.where(mask, colour, image)

    def blend(self, ink: torch.Tensor, rgb: Colour) -> None:
        """Blends ``rgb`` over the background with opacity ``ink`` (float in ``[0, 1]``, ``[H, W]``),
        rounding to the nearest integer: for static layers, drawn before any :meth:`paint`.

        Examples:
            >>> canvas = Canvas((), 1, 2)
            >>> canvas.blend(torch.tensor([[0.5, 1.0]]), (0, 0, 0))
            >>> canvas.frames()[0, :, 0].tolist()
            [128, 0]
        """
        if self.labels is not None or self._image is not None:
            raise RuntimeError("Canvas.blend draws on the background: call it before paint()")
        alpha = ink[..., None]
        mixed = self.background.to(torch.float32) * (1.0 - alpha) + self.colour(rgb).to(torch.float32) * alpha
        self.background = mixed.round().to(torch.uint8).expand(self.height, self.width, 3)

    def frames(self) -> torch.Tensor:
        """The drawn frames, ``[*B, H, W, 3]`` uint8 (contiguous, owned by the caller).

        Eager, one indexing of the colour table turns the colour indices into the frames;
        compiled, the painted bytes are the frames (converted to uint8).

        Examples:
            >>> Canvas(torch.Size([4, 2]), 3, 5, background=(9, 9, 9)).frames().shape
            torch.Size([4, 2, 3, 5, 3])
        """
        shape = (*self.batch_shape, self.height, self.width, 3)
        background = self.background
        if self._image is not None:  # compiled: the painted bytes
            image = self._image.to(torch.uint8).expand(*self.batch_shape, self.height, self.width * 3)
            return image.reshape(shape)
        if self.labels is None:
            return background.expand(shape).contiguous()
        labels = self.labels.expand(*self.batch_shape, self.height, self.width)
        table = torch.tensor([(0, 0, 0), *self.colours], dtype=torch.uint8, device=self.device)
        return torch.where((labels == 0)[..., None], background, table[labels.long()])
