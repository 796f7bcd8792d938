"""gpusim envs seen by other RL stacks: TorchRL (:func:`to_torchrl`) and gymnasium (:func:`to_gymnasium`).

Importing this package imports neither torchrl nor gymnasium: each front door loads its library
when called and says what to ``pip install`` when it is missing.
"""

from gpusim.interop.front_doors import to_gymnasium, to_torchrl

__all__ = ["to_torchrl", "to_gymnasium"]
