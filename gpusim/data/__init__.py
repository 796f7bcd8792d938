"""``gpusim.data``: the specs under TorchRL's import path (``torchrl.data``), the same objects as
:mod:`gpusim.specs`, so that ``from torchrl.data import Composite`` becomes
``from gpusim.data import Composite``.

Examples:
    >>> from gpusim.data import Bounded, Composite
    >>> import gpusim.specs
    >>> Composite is gpusim.specs.Composite
    True
"""

import gpusim.specs as _specs
from gpusim.specs import *  # noqa: F401,F403


def __getattr__(name: str):
    """Names added to :mod:`gpusim.specs` are found here too."""
    try:
        return getattr(_specs, name)
    except AttributeError:
        raise AttributeError(f"module 'gpusim.data' has no attribute {name!r}") from None
