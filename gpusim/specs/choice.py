"""The :class:`Choice` spec: one of several specs (or non-tensor values), picked at random."""

from __future__ import annotations

from typing import Any

import torch

from gpusim.specs.base import DEVICE_TYPING, TensorSpec

__all__ = ["Choice"]


def _is_data(x: Any) -> bool:
    from tensordict import NonTensorData, NonTensorStack

    return isinstance(x, (NonTensorData, NonTensorStack))


class Choice(TensorSpec):
    """A value drawn from one of ``choices``: specs (a random one samples) or fixed non-tensor
    values (a random one is returned).

    Args:
        choices: a list of :class:`TensorSpec`, or of ``NonTensorData`` / ``NonTensorStack``
            values, all of the same type, shape, dtype and device.

    Raises:
        TypeError: if ``choices`` is not a list, holds something else, or mixes types.
        ValueError: if the choices differ in shape, dtype or device.

    Examples:
        >>> from gpusim.specs import Bounded
        >>> spec = Choice([Bounded(0.0, 1.0, shape=()), Bounded(10.0, 11.0, shape=())])
        >>> spec.is_in(torch.tensor(10.5)), spec.is_in(torch.tensor(5.0))
        (True, False)
        >>> from tensordict import NonTensorData
        >>> words = Choice([NonTensorData("a"), NonTensorData("b")])
        >>> words.rand().data in ("a", "b"), words.cardinality()
        (True, 2)
    """

    def __init__(self, choices: list[Any]) -> None:
        if not isinstance(choices, list):
            raise TypeError(f"Choice: 'choices' must be a list, got {type(choices).__name__}")
        if not choices:
            raise ValueError("Choice: 'choices' must not be empty")
        first = choices[0]
        if not (isinstance(first, TensorSpec) or _is_data(first)):
            raise TypeError(
                "Choice: each choice must be either a TensorSpec, NonTensorData, or "
                f"NonTensorStack, but got {type(first).__name__}"
            )
        for i, choice in enumerate(choices[1:], 1):
            if not isinstance(choice, type(first)):
                raise TypeError(
                    f"Choice: all choices must be the same type: choice 0 is a "
                    f"{type(first).__name__}, choice {i} is a {type(choice).__name__}"
                )
        for attr in ("shape", "dtype", "device"):
            values = [getattr(c, attr) for c in choices]
            if any(v != values[0] for v in values[1:]):
                raise ValueError(f"Choice: all choices must have the same {attr}, got {values}")
        self._choices = [c.clone() for c in choices]
        self.dtype = first.dtype
        self.domain = getattr(first, "domain", "")
        self._memo = None

    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        """The shape of the choices (they all have the same).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.shape
            torch.Size([2])
        """
        return torch.Size(self._choices[0].shape)

    @property
    def device(self) -> torch.device | None:  # type: ignore[override]
        """The device of the choices (None for non-tensor values without a device).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.device
            device(type='cpu')
        """
        return self._choices[0].device

    @property
    def num_choices(self) -> int:
        """Number of choices.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.num_choices
            2
        """
        return len(self._choices)

    @property
    def space(self) -> None:
        """A Choice has no box of its own: always None (each choice has its ``space``).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.space is None
            True
        """
        return None

    def _pick(self) -> Any:
        return self._choices[int(torch.randint(0, len(self._choices), ()).item())]

    def _sample(self, choice: Any, method: str, shape: Any) -> Any:
        if isinstance(choice, TensorSpec):
            return getattr(choice, method)(shape)
        return choice.clone()

    def rand(self, shape: Any = None) -> Any:
        """A sample of a random choice (a copy of the value for non-tensor choices).

        The choice is drawn once for the whole call: every element of the sample comes from the
        same choice.

        Args:
            shape: extra leading dims (default none).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> x = spec.rand((3,))
            >>> x.shape, spec.is_in(x)
            (torch.Size([3, 2]), True)
        """
        return self._sample(self._pick(), "rand", shape)

    def _rand(self, full_shape: torch.Size) -> Any:
        return self.rand(full_shape[: len(full_shape) - self.ndim])

    def zero(self, shape: Any = None) -> Any:
        """The zero of the first choice, with ``shape`` prepended.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.zero()
            tensor([0., 0.])
        """
        return self._sample(self._choices[0], "zero", shape)

    def one(self, shape: Any = None) -> Any:
        """The one of the second choice (the first when there is only one), ``shape`` prepended.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.one((2,))
            tensor([[1., 1.],
                    [1., 1.]])
        """
        return self._sample(self._choices[min(1, len(self._choices) - 1)], "one", shape)

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` is in one of the spec choices / equals one of the value choices.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.is_in(torch.tensor([10.5, 10.0])), spec.is_in(torch.tensor([0.5, 10.0]))
            (True, False)
        """
        if isinstance(self._choices[0], TensorSpec):
            return any(c.is_in(val) for c in self._choices)
        for choice in self._choices:
            try:
                if bool(torch.as_tensor(choice == val).all()):
                    return True
            except (RuntimeError, ValueError, TypeError):
                continue
        return False

    def invalid_reason(self, val: Any) -> str | None:
        """None when :meth:`is_in` holds, else a message.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.invalid_reason(torch.tensor([5.0, 5.0]))
            'value matches none of the 2 choices'
        """
        return None if self.is_in(val) else f"value matches none of the {self.num_choices} choices"

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        return self.invalid_reason(val)

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("Choice specs cannot project values")

    def cardinality(self) -> int | float:
        """The number of value choices, or the summed cardinality of the spec choices.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Choice([Categorical(2), Categorical(5)]).cardinality()
            7
        """
        if _is_data(self._choices[0]):
            return len(self._choices)
        return sum(c.cardinality() for c in self._choices)

    def enumerate(self, use_mask: bool = False) -> list[Any]:
        """Every outcome of every choice, in a list (a copy of each value for value choices).

        Args:
            use_mask: passed on to the ``enumerate`` of spec choices.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> Choice([Categorical(2), Categorical(3)]).enumerate()
            [tensor(0), tensor(1), tensor(0), tensor(1), tensor(2)]
        """
        if _is_data(self._choices[0]):
            return [c.clone() for c in self._choices]
        return [s for c in self._choices for s in c.enumerate(use_mask)]

    def _map(self, fn: Any) -> Choice:
        return Choice([fn(c) for c in self._choices])

    def expand(self, *shape: Any) -> Choice:
        """A Choice of every choice expanded (see :meth:`TensorSpec.expand`).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.expand(4, 2).shape
            torch.Size([4, 2])
        """
        return self._map(lambda c: c.expand(*shape))

    def unsqueeze(self, dim: int) -> Choice:
        """A Choice of every choice unsqueezed at ``dim``.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.unsqueeze(0).shape
            torch.Size([1, 2])
        """
        return self._map(lambda c: c.unsqueeze(dim))

    def squeeze(self, dim: int | None = None) -> Choice:
        """A Choice of every choice squeezed (all size-1 dims, or ``dim``).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.unsqueeze(0).squeeze().shape
            torch.Size([2])
        """
        return self._map(lambda c: c.squeeze(dim) if dim is not None else c.squeeze())

    def reshape(self, *shape: Any) -> Choice:
        """A Choice of every choice reshaped (``view`` is the same method).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.expand(3, 2).reshape(6).shape
            torch.Size([6])
        """
        return self._map(lambda c: c.reshape(*shape))

    view = reshape

    def __getitem__(self, idx: Any) -> Choice:
        """Every choice indexed."""
        return self._map(lambda c: c[idx])

    def unbind(self, dim: int = 0) -> tuple[Choice, ...]:
        """One Choice per slice of ``dim`` (each gathers the matching slices of the choices).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> [c.shape for c in spec.expand(3, 2).unbind(0)]
            [torch.Size([2]), torch.Size([2]), torch.Size([2])]
        """
        parts = [c.unbind(dim) for c in self._choices]
        return tuple(Choice(list(group)) for group in zip(*parts))

    def clone(self) -> Choice:
        """A copy (choices cloned).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> copy = spec.clone()
            >>> copy == spec, copy is spec
            (True, False)
        """
        return self._map(lambda c: c.clone())

    def to(self, dest: DEVICE_TYPING | torch.dtype | None) -> Choice:
        """A Choice of every choice moved to a device or cast to a dtype (self for None).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = Choice([Bounded(0.0, 1.0, shape=(2,)), Bounded(10.0, 11.0, shape=(2,))])
            >>> spec.to(torch.float64).rand().dtype
            torch.float64
        """
        if dest is None:
            return self
        return self._map(lambda c: c.to(dest))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Choice) or self.num_choices != other.num_choices:
            return False
        for a, b in zip(self._choices, other._choices):
            if isinstance(a, TensorSpec):
                if a != b:
                    return False
            elif type(a) is not type(b) or not bool(torch.as_tensor(a == b).all()):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Choice(num_choices={self.num_choices}, shape={tuple(self.shape)}, choices={self._choices!r})"
