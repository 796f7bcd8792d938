"""gpusim envs seen by other RL stacks: TorchRL (:func:`to_torchrl`), gymnasium (:func:`to_gymnasium`) and
Stable-Baselines3 (:func:`to_sb3`).

Importing this package imports none of torchrl, gymnasium or stable_baselines3: each front door loads its library
when called and says what to ``pip install`` when it is missing.
"""

from gpusim.interop.front_doors import to_gymnasium, to_sb3, to_torchrl

__all__ = ["to_torchrl", "to_gymnasium", "to_sb3"]
