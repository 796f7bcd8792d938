"""Per-env physical constants of the native envs and their randomization.

Each native env class names the physical constants that may vary per env (``params``, e.g.
CartPole's ``("gravity", "masscart", "masspole", "length", "force_mag", "tau")``). Each may be

* a Python number (the default): the same value for every row, read from the env attribute, at
  the speed of a constant (compiled graphs bake it in);
* a ``[*B]`` tensor on the env device: one value per row;
* randomized: re-drawn for exactly the rows that reset, from a :class:`Distribution`
  (:func:`uniform`, :func:`log_uniform`, :func:`normal`, :func:`choice`).

Per-env values travel with the data: the env's state spec gains a ``"params"`` entry (a
``[*B]`` float32 leaf per per-env constant, also in the observation spec with
``expose_params=True``), written at reset and read by the step. So partial resets keep the
other rows' values, steps stay pure functions of the data (``compile=True`` works), and saved
states (``get_state``) carry them.

Draws come from the env's reset stream (keyed by seed, row, episode index of the row and the
parameter), in a sub-stream of their own: a row's values do not depend on the batch size, on the
other rows, or on the env's own start-state draws, eager or compiled. A distribution's numbers
are device buffers changed in place by ``env.set_ranges(...)``: a curriculum never recompiles a
graph and never reads the device from the host.

Examples:
    >>> import gpusim as gs
    >>> env = gs.make("CartPole-v1", num_envs=4, seed=0, randomize={"length": gs.uniform(0.3, 0.9)})
    >>> td = env.reset()
    >>> length = td["params", "length"]
    >>> length.shape, bool(((length >= 0.3) & (length <= 0.9)).all())
    (torch.Size([4]), True)
    >>> env.base_env.set_ranges(length=(1.0, 1.0))  # a curriculum step: the next resets draw 1.0
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from gpusim.specs import Composite, Unbounded

__all__ = ["Distribution", "uniform", "log_uniform", "normal", "choice", "ParamTable"]

_KINDS = ("uniform", "log_uniform", "normal", "choice")
#: the reset sub-stream of the randomized parameters (see ``ResetRows.substream``)
PARAMS_STREAM = 1


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


class Distribution(torch.nn.Module):
    """A distribution of one parameter: its kind and its numbers (device buffers).

    Build one with :func:`uniform`, :func:`log_uniform`, :func:`normal` or :func:`choice`.

    Args:
        kind: ``"uniform"``, ``"log_uniform"``, ``"normal"`` or ``"choice"``.
        values: ``(low, high)``, ``(low, high)``, ``(mean, std)``, or the choices.

    Examples:
        >>> d = uniform(1.0, 3.0)
        >>> d.sample(torch.tensor([[0.0, 0.5], [0.5, 0.5]])).tolist()
        [1.0, 2.0]
        >>> d.update((2.0, 2.0)); d.sample(torch.tensor([[0.7, 0.1]])).tolist()
        [2.0]
    """

    def __init__(self, kind: str, values: Sequence[float]) -> None:
        super().__init__()
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {list(_KINDS)}, got {kind!r}")
        self.kind = kind
        self.register_buffer("numbers", self._checked(values))

    def _checked(self, values: Sequence[float]) -> torch.Tensor:
        values = [_finite(f"{self.kind} value", v) for v in values]
        kind = self.kind
        if kind == "choice":
            if not values:
                raise ValueError("choice needs at least one value")
        elif len(values) != 2:
            raise ValueError(f"{kind} takes two numbers, got {values!r}")
        elif kind in ("uniform", "log_uniform") and not values[0] <= values[1]:
            raise ValueError(f"{kind}: low must be <= high, got low={values[0]!r}, high={values[1]!r}")
        elif kind == "log_uniform" and not values[0] > 0:
            raise ValueError(f"log_uniform: low must be > 0, got {values[0]!r}")
        elif kind == "normal" and not values[1] >= 0:
            raise ValueError(f"normal: std must be >= 0, got {values[1]!r}")
        numbers = torch.tensor(values, dtype=torch.float32)
        return numbers.log() if kind == "log_uniform" else numbers

    def update(self, values: Sequence[float]) -> None:
        """Changes the numbers in place (a curriculum step): same kind, same count of choices.

        Raises:
            ValueError: invalid numbers, or another count of choices (naming both).

        Examples:
            >>> d = choice([1.0, 2.0])
            >>> d.update([3.0, 4.0]); d.numbers.tolist()
            [3.0, 4.0]
        """
        new = self._checked(values)
        if new.shape != self.numbers.shape:
            raise ValueError(
                f"{self.kind}: expected {self.numbers.numel()} numbers (as when the env was built), got {len(values)}"
            )
        self.numbers.copy_(new)

    def sample(self, u: torch.Tensor) -> torch.Tensor:
        """Values ``[*B]`` from uniforms ``u`` ``[*B, 2]`` in ``[0, 1)``.

        Examples:
            >>> log_uniform(1.0, 100.0).sample(torch.tensor([[0.5, 0.0]])).tolist()
            [10.0]
        """
        a, b = self.numbers[0], self.numbers[-1]
        kind = self.kind
        if kind == "uniform":
            return a + u[..., 0] * (b - a)
        if kind == "log_uniform":
            return torch.exp(a + u[..., 0] * (b - a))
        if kind == "normal":  # Box-Muller: 1 - u is in (0, 1]
            radius = torch.sqrt(-2.0 * torch.log1p(-u[..., 0]))
            return a + b * radius * torch.cos((2.0 * math.pi) * u[..., 1])
        n = self.numbers.numel()
        index = (u[..., 0] * n).to(torch.int64).clamp_max_(n - 1)
        return self.numbers[index]

    def extra_repr(self) -> str:
        numbers = self.numbers.exp() if self.kind == "log_uniform" else self.numbers
        return f"{self.kind}{tuple(round(v, 6) for v in numbers.tolist())}"


def uniform(low: float, high: float) -> Distribution:
    """Uniform in ``[low, high]``.

    Examples:
        >>> uniform(0.5, 1.5)
        Distribution(uniform(0.5, 1.5))
    """
    return Distribution("uniform", (low, high))


def log_uniform(low: float, high: float) -> Distribution:
    """Log-uniform in ``[low, high]`` (``0 < low``): uniform in ``log`` space.

    Examples:
        >>> log_uniform(0.1, 10.0)
        Distribution(log_uniform(0.1, 10.0))
    """
    return Distribution("log_uniform", (low, high))


def normal(mean: float, std: float) -> Distribution:
    """Normal with ``mean`` and ``std`` (values are not clipped: keep ``std`` small enough).

    Examples:
        >>> normal(9.8, 0.1)
        Distribution(normal(9.8, 0.1))
    """
    return Distribution("normal", (mean, std))


def choice(values: Sequence[float]) -> Distribution:
    """One of ``values``, each with the same probability.

    Examples:
        >>> choice([5.0, 10.0])
        Distribution(choice(5.0, 10.0))
    """
    return Distribution("choice", tuple(values))


def _as_distribution(name: str, value: Any) -> Distribution:
    if isinstance(value, Distribution):
        return value
    raise TypeError(
        f"randomize[{name!r}] must be a distribution (gs.uniform, gs.log_uniform, gs.normal, gs.choice), got {value!r}"
    )


class ParamTable(torch.nn.Module):
    """The per-env constants of one env: the tensors given per env and the distributions.

    Built by :class:`~gpusim.envs.native.NativeEnv` when its specs lock; env code reads values
    through ``NativeEnv.physics``.

    Args:
        env_name: the env class name (for messages).
        names: the env's parameter names (its class ``params``).
        values: every parameter's current value (a number or a tensor).
        randomize: name -> :class:`Distribution` of the randomized parameters.
        batch_size: the env batch dims.
        device: the env device.

    Raises:
        KeyError: a randomized name that is not a parameter (the message lists them).
        ValueError: a tensor value whose shape is not the batch shape (the env checks the values).

    Examples:
        >>> table = ParamTable("Toy", ("g", "m"), {"g": 9.8, "m": torch.ones(3)}, {"g": uniform(9, 10)}, (3,), "cpu")
        >>> table.per_env
        ('g', 'm')
    """

    def __init__(
        self,
        env_name: str,
        names: Sequence[str],
        values: Mapping[str, Any],
        randomize: Mapping[str, Any] | None,
        batch_size: torch.Size | Sequence[int],
        device: torch.device | str | None,
    ) -> None:
        super().__init__()
        self.env_name = env_name
        self.names = tuple(names)
        self.batch_size = torch.Size(batch_size)
        randomize = dict(randomize or {})
        unknown = sorted(set(randomize) - set(self.names))
        if unknown:
            raise KeyError(
                f"{env_name}: randomize names {unknown}, which are not parameters of the env; its parameters are "
                f"{list(self.names)}"
            )
        # each env owns copies: set_ranges on one env never changes another built from the same dict
        self.dists = torch.nn.ModuleDict(
            {
                name: copy.deepcopy(_as_distribution(name, randomize[name])).to(device)
                for name in self.names
                if name in randomize
            }
        )
        for name in self.names:
            value = values[name]
            if isinstance(value, torch.Tensor) and name not in self.dists:
                self.register_buffer(f"value_{name}", self._per_env(name, value, device))
        self.per_env = tuple(n for n in self.names if n in self.dists or f"value_{n}" in self._buffers)

    def _per_env(self, name: str, value: torch.Tensor, device: Any) -> torch.Tensor:
        shape = self.batch_size
        if value.shape != shape and value.numel() != 1:
            raise ValueError(
                f"{self.env_name}: the per-env value of {name!r} must have the batch shape {list(shape)} (or one "
                f"element), got shape {list(value.shape)}"
            )
        return value.to(device=device, dtype=torch.float32).expand(shape).clone()

    def spec(self, device: Any) -> Composite:
        """``Composite`` of one ``[*B]`` float32 leaf per per-env parameter.

        Examples:
            >>> table = ParamTable("Toy", ("g",), {"g": torch.ones(2)}, None, (2,), "cpu")
            >>> table.spec("cpu")["g"].shape
            torch.Size([2])
        """
        B = self.batch_size
        leaves = {name: Unbounded(shape=B, dtype=torch.float32, device=device) for name in self.per_env}
        return Composite(leaves, shape=B, device=device)

    def start(self, rows: Any) -> dict[str, torch.Tensor]:
        """The values ``[*B]`` of a reset: drawn for the randomized parameters (a sub-stream of
        ``rows``), the given tensors for the others. Rows that do not reset are restored by the
        reset's merge.

        Examples:
            >>> from gpusim.envs.native.rng import CounterRNG, ResetRows
            >>> table = ParamTable("Toy", ("g",), {"g": 9.8}, {"g": uniform(5.0, 6.0)}, (3,), "cpu")
            >>> g = table.start(ResetRows.start(CounterRNG((3,), seed=0)))["g"]
            >>> g.shape, bool(((g >= 5.0) & (g <= 6.0)).all())
            (torch.Size([3]), True)
        """
        stream = rows.substream(PARAMS_STREAM)
        out = {}
        for name in self.per_env:
            dist = self.dists[name] if name in self.dists else None
            if dist is None:
                out[name] = self._buffers[f"value_{name}"]
            else:
                out[name] = dist.sample(stream.uniform(0.0, 1.0, 2, bits=24))
        return out

    def set_ranges(self, **ranges: Any) -> None:
        """Changes randomized parameters' numbers in place (see :meth:`Distribution.update`).

        Raises:
            KeyError: a name that is not randomized (listing those that are).

        Examples:
            >>> table = ParamTable("Toy", ("g",), {"g": 9.8}, {"g": uniform(5.0, 6.0)}, (2,), "cpu")
            >>> table.set_ranges(g=(7.0, 8.0)); table.dists["g"].numbers.tolist()
            [7.0, 8.0]
        """
        for name, value in ranges.items():
            if name not in self.dists:
                raise KeyError(
                    f"{self.env_name}.set_ranges: {name!r} is not randomized; randomized parameters: "
                    f"{sorted(self.dists)} (pass randomize={{...}} when building the env)"
                )
            dist = self.dists[name]
            if isinstance(value, Distribution):
                if value.kind != dist.kind:
                    raise ValueError(
                        f"{self.env_name}.set_ranges: {name!r} is drawn from a {dist.kind} distribution, got a "
                        f"{value.kind} one (the kind is fixed when the env is built)"
                    )
                numbers = value.numbers.exp() if value.kind == "log_uniform" else value.numbers
                value = numbers.tolist()
            if not isinstance(value, (tuple, list)):
                raise TypeError(f"{self.env_name}.set_ranges: {name}= takes a tuple of numbers, got {value!r}")
            dist.update(value)
