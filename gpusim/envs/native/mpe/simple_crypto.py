"""MPE ``simple_crypto``: Alice sends Bob a secret with a shared key; Eve listens in.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_crypto.py`` (MPE "covert communication", Lowe et al.
    2017). Nothing moves: the scenario is communication only.
Entities:
    ``eve_0`` (adversary), ``bob_0`` (listener) and ``alice_0`` (speaker), immovable, all
    speaking on ``dim_c`` channels; no landmarks.
Groups:
    ``"eve"``, ``"bob"`` and ``"alice"``.
Observation (float32):
    alice (``2 dim_c``): the secret then the key; bob (``2 dim_c``): the key then Alice's last
    message; eve (``dim_c``): Alice's last message. Key and secret are 0/1 vectors.
Action:
    continuous ``[..., 2 + dim_c]`` (a force, ignored, then the message in ``[0, 1]^dim_c``) or
    ``Categorical(9 * dim_c)`` (the message one-hot).
Reward (float32 ``[..., 1]``):
    eve: ``-|c_eve - secret|^2``; alice and bob: ``-|c_bob - secret|^2 + |c_eve - secret|^2``,
    where a term counts only when that agent's message is not all zeros.
Start state:
    key and secret uniform 0/1 vectors per row; messages zero.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``dim_c=4``, and ``continuous_actions``, ``categorical_actions``, ``max_steps``.

Examples:
    >>> env = SimpleCryptoEnv(batch_size=[8], seed=0)
    >>> env.group_map
    {'eve': ['eve_0'], 'bob': ['bob_0'], 'alice': ['alice_0']}
    >>> env.rollout(5)["next", "bob", "observation"].shape
    torch.Size([8, 5, 1, 8])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team, check_count
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleCryptoEnv"]


class SimpleCryptoEnv(MpeEnv):
    """VMAS's MPE ``simple_crypto`` scenario, batched (see the module's card).

    Args:
        batch_size: the batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        dim_c: message (and key, secret) length.
        continuous_actions: continuous or discrete actions.
        categorical_actions: discrete actions as indices or one-hot.
        max_steps: horizon (``None``: none).
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        **physics: the world's constants ``dt``, ``drag``, ``collision_force``, ``contact_margin``,
            ``mass_scale``, ``force_scale`` (numbers or ``[*B]`` tensors), ``randomize`` and
            ``expose_params``: see :class:`~gpusim.envs.native.mpe.MpeEnv`.

    Examples:
        >>> SimpleCryptoEnv(batch_size=[2], dim_c=2).observation_spec["alice", "observation"].shape
        torch.Size([2, 1, 4])
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        dim_c: int = 4,
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        **physics: Any,
    ) -> None:
        C = check_count("dim_c", dim_c, 1)
        colors = ((0.75, 0.25, 0.25), (0.25, 0.25, 0.75), (0.25, 0.75, 0.25))
        names = ("eve_0", "bob_0", "alice_0")
        world = ParticleWorld(
            [
                Body(n, movable=False, rotatable=True, collide=False, silent=False, color=c)
                for n, c in zip(names, colors)
            ],
            [],
            dim_c=C,
        )
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[
                Team("eve", 1, C, silent=False),
                Team("bob", 1, 2 * C, silent=False),
                Team("alice", 1, 2 * C, silent=False),
            ],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )

    def _extra_state(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        C = self.world.dim_c
        return {"key": ((C,), torch.int64), "secret": ((C,), torch.int64)}

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        C = self.world.dim_c
        pos = self._uniform_positions(rows, -1.0, 1.0)
        return {"pos": pos, "key": rows.randint(0, 2, C), "secret": rows.randint(0, 2, C)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        key, secret = state["key"].to(torch.float32), state["secret"].to(torch.float32)
        alice_c = state["c"][..., 2, :]
        return [
            alice_c.unsqueeze(-2),
            torch.cat([key, alice_c], -1).unsqueeze(-2),
            torch.cat([secret, key], -1).unsqueeze(-2),
        ]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        c = state["c"]
        secret = state["secret"].to(torch.float32).unsqueeze(-2)
        error = (c - secret).square().sum(-1)  # [*B, 3]
        error = torch.where((c != 0).any(-1), error, 0.0)
        eve, bob = error[..., 0:1], error[..., 1:2]
        good = eve - bob
        return [-eve, good, good.clone()]
