"""gpusim envs seen by other RL stacks: TorchRL (:func:`to_torchrl`).

Importing this package does not import torchrl: the front door loads it when called and says
what to ``pip install`` when it is missing.
"""

from gpusim.interop.front_doors import to_torchrl

__all__ = ["to_torchrl"]
