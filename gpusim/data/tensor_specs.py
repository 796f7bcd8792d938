"""``gpusim.data.tensor_specs``: TorchRL's module path of the spec classes
(``torchrl.data.tensor_specs``), the same objects as :mod:`gpusim.specs`.

Examples:
    >>> from gpusim.data.tensor_specs import Unbounded
    >>> Unbounded(shape=(2,)).shape
    torch.Size([2])
"""

import gpusim.specs as _specs
from gpusim.specs import *  # noqa: F401,F403
from gpusim.specs.base import _env_flag

#: TorchRL's switch of the value checks of ``encode``/``to_numpy`` (same name): set it to True
#: to check every encoded value against its spec (see :func:`gpusim.specs.base.check_spec_encode`).
_CHECK_SPEC_ENCODE = _env_flag("CHECK_SPEC_ENCODE")


def __getattr__(name: str):
    """Names added to :mod:`gpusim.specs` are found here too."""
    try:
        return getattr(_specs, name)
    except AttributeError:
        raise AttributeError(f"module 'gpusim.data.tensor_specs' has no attribute {name!r}") from None
