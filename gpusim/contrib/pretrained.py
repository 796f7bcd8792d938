"""TorchRL's pretrained-embedding transforms, which gpusim does not provide.

``R3MTransform``, ``VIPTransform``, ``VIPRewardTransform`` and ``VC1Transform`` wrap pretrained
vision networks that TorchRL downloads; gpusim ships no model weights and downloads nothing, so
building one raises ``NotImplementedError`` saying what to do instead (compute the embedding with
your own module in a :class:`~gpusim.transforms.Transform`, or use TorchRL's). The names exist so
that TorchRL scripts importing them fail at the line that builds one, with that message.

Examples:
    >>> from gpusim.contrib.pretrained import VC1Transform
    >>> VC1Transform()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    NotImplementedError: VC1Transform embeds observations with the pretrained VC-1 ViT; ...
"""

from __future__ import annotations

from typing import Any

from gpusim.transforms.transform import Transform

__all__ = ["R3MTransform", "VC1Transform", "VIPRewardTransform", "VIPTransform"]


class _PretrainedModelTransform(Transform):
    """A transform that needs pretrained weights gpusim does not provide."""

    _model = "a pretrained network"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"{type(self).__name__} embeds observations with {self._model}; pretrained-model transforms "
            "are out of scope for gpusim for now (gpusim ships no weights and downloads nothing). "
            "Compute the embedding with your own module in a Transform subclass, or use TorchRL's "
            f"{type(self).__name__}."
        )


class R3MTransform(_PretrainedModelTransform):
    """R3M embedding transform (out of scope: raises ``NotImplementedError``).

    Raises:
        NotImplementedError: always (gpusim ships no pretrained weights).

    Examples:
        >>> R3MTransform()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: R3MTransform embeds observations with the pretrained R3M ResNet; ...
    """

    _model = "the pretrained R3M ResNet"


class VIPTransform(_PretrainedModelTransform):
    """VIP embedding transform (out of scope: raises ``NotImplementedError``).

    Raises:
        NotImplementedError: always (gpusim ships no pretrained weights).

    Examples:
        >>> VIPTransform()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: VIPTransform embeds observations with the pretrained VIP ResNet; ...
    """

    _model = "the pretrained VIP ResNet"


class VIPRewardTransform(_PretrainedModelTransform):
    """VIP embedding-similarity reward (out of scope: raises ``NotImplementedError``).

    Raises:
        NotImplementedError: always (gpusim ships no pretrained weights).

    Examples:
        >>> VIPRewardTransform()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: VIPRewardTransform embeds observations with the pretrained VIP ResNet; ...
    """

    _model = "the pretrained VIP ResNet"


class VC1Transform(_PretrainedModelTransform):
    """VC-1 embedding transform (out of scope: raises ``NotImplementedError``).

    Raises:
        NotImplementedError: always (gpusim ships no pretrained weights).

    Examples:
        >>> VC1Transform()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: VC1Transform embeds observations with the pretrained VC-1 ViT; ...
    """

    _model = "the pretrained VC-1 ViT"
