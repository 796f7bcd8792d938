"""``DreamerDecoder``: decodes the latents of a :class:`~gpusim.envs.model_based.DreamerEnv` into
observations after every reset and step (the env's ``obs_decoder``).

The decoded entries are added to the observation spec: their shapes and dtypes are read once,
when the spec is transformed, by decoding zero latents of the batch shape.

Examples:
    >>> import torch
    >>> from tensordict.nn import TensorDictModule
    >>> from gpusim.envs.model_based import DreamerEnv
    >>> from gpusim.specs import Bounded
    >>> from gpusim.transforms import TransformedEnv
    >>> world = TensorDictModule(lambda s, b, a: (s.tanh(), b + a, a), ["state", "belief", "action"],
    ...                          ["state", "belief", "reward"])
    >>> decoder = TensorDictModule(torch.nn.Linear(2, 6), ["state"], ["reco_pixels"])
    >>> env = DreamerEnv(world, (2,), (1,), obs_decoder=decoder, batch_size=[3])
    >>> env.action_spec = Bounded(-1.0, 1.0, shape=(3, 1))
    >>> env = TransformedEnv(env, DreamerDecoder())
    >>> env.rollout(4)["next", "reco_pixels"].shape
    torch.Size([3, 4, 6])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.specs import Composite, Unbounded
from gpusim.transforms.transform import Transform

__all__ = ["DreamerDecoder"]


class DreamerDecoder(Transform):
    """Runs the base env's ``obs_decoder`` on every reset and step output (the module docstring
    says how the decoded entries are specified).

    Raises:
        ValueError: (when used) the base env has no ``obs_decoder``.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from gpusim.envs.model_based import DreamerEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> step = lambda s, b, a: (s * 0.5, b + a, -a.abs())
        >>> keys = ["state", "belief", "action"], ["state", "belief", "reward"]
        >>> world = TensorDictModule(step, *keys)
        >>> decoder = TensorDictModule(lambda s: s.sum(-1, keepdim=True), ["state"], ["obs"])
        >>> env = DreamerEnv(world, (2,), (1,), obs_decoder=decoder, batch_size=[3])
        >>> env = TransformedEnv(env, DreamerDecoder())
        >>> env.observation_spec["obs"].shape  # read from the decoder's output on zero latents
        torch.Size([3, 1])
        >>> td = env.reset()
        >>> torch.equal(td["obs"], td["state"].sum(-1, keepdim=True))
        True
    """

    def _decoder(self):
        parent = self.parent
        env = getattr(parent, "base_env", parent)
        decoder = getattr(env, "obs_decoder", None)
        if decoder is None:
            raise ValueError("DreamerDecoder needs a base env with an obs_decoder (DreamerEnv(obs_decoder=...))")
        return decoder

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._decoder()(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        with torch.no_grad():
            data = observation_spec.zero()
            before = set(data.keys(True, True))
            out = self._decoder()(data)
        for key in out.keys(True, True):
            if key not in before:
                value = out.get(key)
                observation_spec[key] = Unbounded(value.shape, dtype=value.dtype, device=value.device)
        return observation_spec

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Decodes ``tensordict`` offline (a replay batch of latents).

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> from tensordict.nn import TensorDictModule
            >>> from gpusim.envs.model_based import DreamerEnv
            >>> from gpusim.transforms import TransformedEnv
            >>> world = TensorDictModule(lambda s, b, a: (s, b, a), ["state", "belief", "action"],
            ...                          ["state", "belief", "reward"])
            >>> decoder = TensorDictModule(lambda s: s.sum(-1, keepdim=True), ["state"], ["obs"])
            >>> t = DreamerDecoder()
            >>> base = DreamerEnv(world, (2,), (1,), obs_decoder=decoder, batch_size=[3])
            >>> env = TransformedEnv(base, t)
            >>> replay = TensorDict({"state": torch.ones(5, 2), "belief": torch.zeros(5, 1)}, [5])
            >>> t(replay)["obs"].flatten().tolist()
            [2.0, 2.0, 2.0, 2.0, 2.0]
        """
        return self._call(tensordict)
