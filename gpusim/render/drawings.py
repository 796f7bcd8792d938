"""Which env class is drawn how: the drawing registry and the ``render`` method of native envs.

A drawing is a function ``draw(env, data) -> [*B, H, W, 3] uint8`` that reads the entries it
needs (``keys``) from ``data`` (a tensordict of the env's state, any leading shape) and
returns one frame per row; :func:`register_drawing` ties it to an env class with its frame size.
:class:`Renderable` gives envs ``render(tensordict=None)``: the frames of the given data, or of
the last data an eager ``reset``/``step`` of the env produced (compiled graphs record nothing:
pass their data, e.g. ``env.render(data[..., -1]["next"])``).

Examples:
    >>> import gpusim as gs
    >>> env = gs.CartPoleEnv(batch_size=[4], seed=0)
    >>> td = env.reset()
    >>> env.render().shape  # the frames of the last reset
    torch.Size([4, 400, 600, 3])
    >>> drawing_for(env).size(env)
    (400, 600)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._fasttd import inner
from gpusim.render.raster import check_size

__all__ = ["Drawing", "Renderable", "drawing_for", "register_drawing"]

#: env class -> its drawing (looked up along the MRO)
_DRAWINGS: dict[type, Drawing] = {}
# rows of a batch rendered at once in eager mode (bounds the [rows, H, W] temporaries of the
# pixel tests to a few hundred MB); a compiled graph fuses the tests and renders all rows at once
_EAGER_PIXELS = 1 << 22


@dataclasses.dataclass(frozen=True)
class Drawing:
    """How an env class is drawn.

    Attributes:
        draw: ``draw(env, data) -> [*B, H, W, 3] uint8`` (``*B``: the leading dims of ``data``).
        keys: the entries of the data it reads.
        size: ``size(env) -> (H, W)``, the frame size.
        resizable: ``draw(env, data, size=(h, w))`` draws the frames at another size.

    Examples:
        >>> d = Drawing(lambda env, td: None, ("state",), lambda env: (4, 4))
        >>> d.keys
        ('state',)
    """

    draw: Callable[[Any, TensorDictBase], torch.Tensor]
    keys: tuple[str, ...]
    size: Callable[[Any], tuple[int, int]]
    resizable: bool = False


def register_drawing(
    env_cls: type, keys: Sequence[str], size: Callable[[Any], tuple[int, int]], resizable: bool = False
) -> Callable[[Callable], Callable]:
    """Decorator: registers ``draw(env, data)`` as the drawing of ``env_cls`` (and subclasses).

    Args:
        env_cls: the env class.
        keys: the entries of the data the drawing reads.
        size: ``size(env) -> (H, W)``.
        resizable: the drawing takes ``size=(h, w)`` (``render(..., size=)``).

    Examples:
        >>> class Dot:  # any class: the registry does not care what an env is
        ...     pass
        >>> @register_drawing(Dot, keys=("state",), size=lambda env: (2, 2))
        ... def draw_dot(env, data):
        ...     return torch.zeros(*data.batch_size, 2, 2, 3, dtype=torch.uint8)
        >>> drawing_for(Dot()).draw is draw_dot
        True
    """

    def decorator(draw: Callable) -> Callable:
        _DRAWINGS[env_cls] = Drawing(draw, tuple(keys), size, resizable)
        return draw

    return decorator


def drawing_for(env: Any) -> Drawing | None:
    """The drawing registered for ``env``'s class (or a base class), ``None`` if none.

    Examples:
        >>> import gpusim as gs
        >>> drawing_for(gs.PendulumEnv()).size(gs.PendulumEnv())
        (500, 500)
        >>> drawing_for(object()) is None
        True
    """
    from gpusim.render import classic_control as _classic  # noqa: F401  (registers the built-in drawings)
    from gpusim.render import mpe as _mpe  # noqa: F401

    for cls in type(env).__mro__:
        found = _DRAWINGS.get(cls)
        if found is not None:
            return found
    return None


def _rows_at_once(lead: torch.Size, size: tuple[int, int]) -> int:
    return max(1, _EAGER_PIXELS // max(1, size[0] * size[1]))


def draw_rows(env: Any, drawing: Drawing, data: TensorDictBase, size: tuple[int, int] | None = None) -> torch.Tensor:
    """``drawing.draw(env, data)`` (at ``size`` when given); in eager mode, over the rows in
    chunks that bound memory."""
    lead = data.batch_size
    n = lead.numel()
    chunk = _rows_at_once(lead, drawing.size(env) if size is None else size)

    def draw(part: TensorDictBase) -> torch.Tensor:
        return drawing.draw(env, part) if size is None else drawing.draw(env, part, size=size)

    if torch.compiler.is_compiling() or n <= chunk or len(lead) == 0:
        return draw(data)
    flat = data.reshape(-1)
    parts = [draw(flat[i : i + chunk]) for i in range(0, n, chunk)]
    frames = torch.cat(parts, 0)
    return frames.reshape(*lead, *frames.shape[1:])


class Renderable:
    """Mixin of envs that have a registered drawing: ``render()`` and the data it draws.

    The last data of an eager ``reset`` or ``step`` is remembered (references to its tensors,
    no copy) so that ``render()`` without arguments draws the current frames; compiled graphs
    skip the bookkeeping (their data is not Python-visible): pass the data explicitly.

    Examples:
        >>> import gpusim as gs
        >>> issubclass(gs.CartPoleEnv, Renderable)
        True
        >>> env = gs.CartPoleEnv(batch_size=[2], seed=0)
        >>> td = env.step(env.rand_action(env.reset()))
        >>> bool((env.render() == env.render(td["next"])).all())  # the last step's frames
        True
    """

    def render(self, tensordict: TensorDictBase | None = None, *, size: tuple[int, int] | None = None) -> torch.Tensor:
        """Frames of every row, ``[*B, H, W, 3]`` uint8, drawn on the env device in one pass.

        Args:
            tensordict: the data to draw (its state entries: ``"state"``, or a board); any
                leading shape. ``None``: the data of the env's last eager ``reset``/``step``.

        Keyword Args:
            size: the frame size ``(H, W)`` (default: the env's, gymnasium's for the classic
                control envs): the scene is drawn directly at that size, each pixel sampling
                the full-size scene at its centre (no full-size frame is made). Classic-control
                drawings take it.

        Raises:
            NotImplementedError: the env class has no registered drawing.
            RuntimeError: no data given and the env has not been reset yet.
            KeyError: the data lacks an entry the drawing reads (naming it).
            ValueError: ``size`` is not two positive ints, or the drawing has one size only.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.AcrobotEnv(batch_size=[2, 3], seed=0)
            >>> data = env.rollout(4)
            >>> env.render(data["next"]).shape  # any leading shape: [2, 3, 4] rows
            torch.Size([2, 3, 4, 500, 500, 3])
            >>> env.render(data["next"], size=(64, 64)).shape  # drawn at 64x64
            torch.Size([2, 3, 4, 64, 64, 3])
        """
        drawing = drawing_for(self)
        if drawing is None:
            raise NotImplementedError(f"{type(self).__name__} has no drawing: render() is not available")
        if size is not None:
            size = check_size(size)
            if not drawing.resizable:
                raise ValueError(
                    f"{type(self).__name__}.render: the drawing has one frame size, {drawing.size(self)}; "
                    f"got size={size}"
                )
        if tensordict is None:
            tensordict = self._render_data(drawing)
        for key in drawing.keys:
            if key not in tensordict.keys():
                raise KeyError(
                    f"{type(self).__name__}.render: the data has no {key!r} entry (expected the entries "
                    f"{list(drawing.keys)}); received keys {sorted(map(str, tensordict.keys()))}"
                )
        return draw_rows(self, drawing, tensordict, size)

    def _render_data(self, drawing: Drawing) -> TensorDictBase:
        last = self.__dict__.get("_render_last")
        if last is None:
            raise RuntimeError(
                f"{type(self).__name__}.render(): nothing to draw yet; reset the env first or pass the data "
                "(env.render(td))"
            )
        values, previous, masks = last
        mask = None if masks is None else masks.env_rows()  # None: every row was reset
        out = {}
        for key in drawing.keys:
            value = values.get(key)
            if value is None:
                continue
            before = previous.get(key) if previous is not None else None
            if mask is not None and before is not None:  # a partial reset: new rows over the old ones
                value = torch.where(mask.reshape(*mask.shape, *[1] * (value.ndim - mask.ndim)), value, before)
            out[key] = value
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    def _remember(self, data: TensorDictBase | None, previous: TensorDictBase | None = None, masks=None) -> None:
        # per eager step and reset: keep references to the drawn entries (no copy, no op); the
        # partial-reset mask is resolved when render() asks for it
        if data is None or torch.compiler.is_compiling():
            return
        keys = self.__dict__.get("_render_keys")
        if keys is None:  # looked up once per env (an empty tuple: no drawing)
            drawing = drawing_for(self)
            keys = self.__dict__["_render_keys"] = tuple(drawing.keys) if drawing else ()
        if not keys:
            return
        values = _entries(data, keys)
        before = None if previous is None else _entries(previous, keys)
        self.__dict__["_render_last"] = (values, before, masks)

    # the hooks every reset and step goes through (see gpusim.envs.common.EnvBase)
    def _reset_rows(self, tensordict, masks, **kwargs):
        out = super()._reset_rows(tensordict, masks, **kwargs)
        self._remember(out, tensordict, masks)
        return out

    def _step_output(self, tensordict):
        out = super()._step_output(tensordict)
        self._remember(out)
        return out

    def _step_rows(self, tensordict, mask):
        out = super()._step_rows(tensordict, mask)
        self._remember(out)
        return out


def _entries(data: TensorDictBase, keys: tuple) -> dict:
    """``{key: data[key]}`` for the string ``keys`` present (a dict read for plain tensordicts)."""
    plain = inner(data)
    if plain is not None:
        return {k: plain.get(k) for k in keys}
    return {k: data.get(k, None) for k in keys}
