"""``DreamerEnv``: imagination rollouts in a Dreamer world model (latent ``state`` and ``belief``).

As TorchRL documents it: the world model (typically the RSSM prior followed by the reward model)
maps ``("state", "belief", "action")`` to the next ``"state"``, ``"belief"`` and ``"reward"``;
imagination runs for a fixed horizon, so the env never ends an episode (``done`` is always
``False``), ``maybe_reset`` does nothing and rollouts default to ``break_when_any_done=False``
(no host read of the done flags, hence no device sync). A reset starts from the ``state`` and
``belief`` of its input (the posterior states of real data), or from random latents without an
input. ``obs_decoder`` (optional) maps latents back to observations (:meth:`DreamerEnv.decode_obs`,
and the :class:`~gpusim.transforms.DreamerDecoder` transform).

Examples:
    >>> import torch
    >>> from tensordict.nn import TensorDictModule
    >>> from gpusim.specs import Bounded
    >>> net = torch.nn.Linear(4 + 8 + 1, 4 + 8 + 1)
    >>> world = TensorDictModule(lambda s, b, a: net(torch.cat([s, b, a], -1)).split([4, 8, 1], -1),
    ...                          in_keys=["state", "belief", "action"], out_keys=["state", "belief", "reward"])
    >>> env = DreamerEnv(world, prior_shape=(4,), belief_shape=(8,), batch_size=[16])
    >>> env.action_spec = Bounded(-1.0, 1.0, shape=(16, 1))
    >>> env.rollout(10)["next", "belief"].shape
    torch.Size([16, 10, 8])
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.common import EnvBase
from gpusim.envs.model_based.common import ModelBasedEnvBase
from gpusim.specs import Composite, Unbounded

__all__ = ["DreamerEnv"]


class DreamerEnv(ModelBasedEnvBase):
    """The imagination env of Dreamer (the module docstring describes the world model).

    Args:
        world_model: ``("state", "belief", "action") -> ("state", "belief", "reward")``.
        prior_shape: the shape of one latent ``state``.
        belief_shape: the shape of one ``belief``.
        obs_decoder: optional ``td -> td`` module decoding latents into observations.
        device: where the model and the data live.
        batch_size: the number of imagined trajectories (batch dims).

    The action spec is taken from the real env (:meth:`set_specs_from_env`) or set directly
    (``env.action_spec = ...``).

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from gpusim.specs import Bounded
        >>> step = lambda s, b, a: (s * 0.5, b + a, -a.abs())
        >>> keys = ["state", "belief", "action"], ["state", "belief", "reward"]
        >>> world = TensorDictModule(step, *keys)
        >>> from tensordict import TensorDict
        >>> env = DreamerEnv(world, prior_shape=(2,), belief_shape=(1,), batch_size=[3])
        >>> env.action_spec = Bounded(-1.0, 1.0, shape=(3, 1))
        >>> posterior = TensorDict({"state": torch.ones(3, 2), "belief": torch.zeros(3, 1)}, [3])
        >>> start = env.reset(posterior)  # imagination starts from the given latents
        >>> td = env.rollout(4, tensordict=start, auto_reset=False,
        ...                  policy=lambda t: t.set("action", torch.ones(3, 1)))
        >>> td["next", "belief"][0].flatten().tolist(), td["next", "state"][0, -1].tolist()
        ([1.0, 2.0, 3.0, 4.0], [0.0625, 0.0625])
    """

    def __init__(
        self,
        world_model: Any,
        prior_shape: tuple[int, ...],
        belief_shape: tuple[int, ...],
        obs_decoder: Any = None,
        device: torch.device | str | int | None = "cpu",
        batch_size: Any = None,
    ) -> None:
        super().__init__(world_model, device=device, batch_size=batch_size, allow_done_after_reset=True)
        self.prior_shape = tuple(prior_shape)
        self.belief_shape = tuple(belief_shape)
        self.obs_decoder = obs_decoder.to(self.device) if hasattr(obs_decoder, "to") else obs_decoder
        B = self.batch_size
        latents = Composite(
            state=Unbounded((*B, *self.prior_shape), device=self.device),
            belief=Unbounded((*B, *self.belief_shape), device=self.device),
            shape=B,
            device=self.device,
        )
        self.observation_spec = latents
        self.state_spec = latents.clone()
        self.reward_spec = Unbounded((*B, 1), device=self.device)

    def set_specs_from_env(self, env: EnvBase) -> None:
        """Takes the specs of the (transformed) real env, whose observations hold ``"state"`` and
        ``"belief"``; the state spec becomes those two entries.

        Raises:
            ValueError: the env's batch size differs.
            KeyError: its observation spec lacks ``"state"`` or ``"belief"``.

        Examples:
            >>> import torch
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Bounded
            >>> step = lambda s, b, a: (s * 0.5, b + a, -a.abs())
            >>> keys = ["state", "belief", "action"], ["state", "belief", "reward"]
            >>> world = TensorDictModule(step, *keys)
            >>> real = DreamerEnv(world, (2,), (1,), batch_size=[3])  # observes latents
            >>> real.action_spec = Bounded(-2.0, 2.0, shape=(3, 1))
            >>> env = DreamerEnv(world, (2,), (1,), batch_size=[3])
            >>> env.set_specs_from_env(real)
            >>> env.action_spec.space.high.max().item(), sorted(env.state_spec.keys())
            (2.0, ['belief', 'state'])
        """
        super().set_specs_from_env(env)
        obs = self.observation_spec
        missing = [k for k in ("state", "belief") if k not in obs.keys()]
        if missing:
            raise KeyError(f"DreamerEnv.set_specs_from_env: the env's observation spec has no {missing} entry")
        self.state_spec = Composite(
            state=obs["state"].clone(), belief=obs["belief"].clone(), shape=self.batch_size, device=self.device
        )

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        B = self.batch_size
        if tensordict is not None and "state" in tensordict.keys() and "belief" in tensordict.keys():
            src = {"state": tensordict.get("state").clone(), "belief": tensordict.get("belief").clone()}
        else:
            latents = self.state_spec.rand()
            src = {"state": latents.get("state"), "belief": latents.get("belief")}
        flag = torch.zeros((*B, 1), dtype=torch.bool, device=self.device)
        src.update(done=flag, terminated=flag.clone())
        return new_td(src, B, self.device)

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Imagination never ends: nothing to reset (and no read of the done flags).

        Examples:
            >>> import torch
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Bounded
            >>> step = lambda s, b, a: (s * 0.5, b + a, -a.abs())
            >>> keys = ["state", "belief", "action"], ["state", "belief", "reward"]
            >>> world = TensorDictModule(step, *keys)
            >>> env = DreamerEnv(world, (2,), (1,), batch_size=[3])
            >>> td = env.reset()
            >>> env.maybe_reset(td) is td
            True
        """
        return tensordict

    def rollout(self, max_steps: int, policy: Any = None, callback: Any = None, **kwargs: Any) -> TensorDictBase:
        """:meth:`EnvBase.rollout <gpusim.envs.common.EnvBase.rollout>` with
        ``break_when_any_done=False`` by default (imagination runs for the whole horizon).

        Examples:
            >>> import torch
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Bounded
            >>> step = lambda s, b, a: (s * 0.5, b + a, -a.abs())
            >>> keys = ["state", "belief", "action"], ["state", "belief", "reward"]
            >>> world = TensorDictModule(step, *keys)
            >>> env = DreamerEnv(world, (2,), (1,), batch_size=[3])
            >>> env.action_spec = Bounded(-1.0, 1.0, shape=(3, 1))
            >>> td = env.rollout(5)
            >>> td.shape, bool(td["next", "done"].any())
            (torch.Size([3, 5]), False)
        """
        if kwargs.get("break_when_any_done") is None and not kwargs.get("break_when_all_done"):
            kwargs["break_when_any_done"] = False
        return super().rollout(max_steps, policy, callback, **kwargs)

    def decode_obs(self, tensordict: TensorDictBase, compute_latents: bool = False) -> TensorDictBase:
        """Decodes the latents of ``tensordict`` with ``obs_decoder`` (running the world model
        first with ``compute_latents=True``).

        Raises:
            ValueError: the env has no ``obs_decoder``.

        Examples:
            >>> import torch
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.specs import Bounded
            >>> step = lambda s, b, a: (s * 0.5, b + a, -a.abs())
            >>> keys = ["state", "belief", "action"], ["state", "belief", "reward"]
            >>> world = TensorDictModule(step, *keys)
            >>> from tensordict import TensorDict
            >>> decoder = TensorDictModule(lambda s: s.sum(-1, keepdim=True), ["state"], ["obs"])
            >>> env = DreamerEnv(world, (2,), (1,), obs_decoder=decoder, batch_size=[3])
            >>> td = TensorDict({"state": torch.ones(3, 2), "belief": torch.zeros(3, 1)}, [3])
            >>> env.decode_obs(td)["obs"].flatten().tolist()
            [2.0, 2.0, 2.0]
            >>> td["action"] = torch.ones(3, 1)
            >>> env.decode_obs(td, compute_latents=True)["obs"].flatten().tolist()  # state * 0.5
            [1.0, 1.0, 1.0]
        """
        if self.obs_decoder is None:
            raise ValueError("DreamerEnv.decode_obs: the env was built without obs_decoder")
        if compute_latents:
            tensordict = self._run_model(tensordict)
        return self.obs_decoder(tensordict)
