"""Toy envs for the stateless-transform tests: every one records the input its ``_step`` got,
so inverse transforms can be checked on what the base env actually receives."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from gpusim.envs.common import EnvBase
from gpusim.specs import Binary, Bounded, Categorical, Composite, OneHot, Unbounded


def _flag(shape):
    return Categorical(2, shape=shape, dtype=torch.bool)


class _Recording(EnvBase):
    """Keeps the last ``_step`` input in ``self.last_input``."""

    last_input: TensorDict | None = None

    def _record(self, td):
        self.__dict__["last_input"] = td.clone()

    def _set_seed(self, seed):
        pass


class VectorEnv(_Recording):
    """A continuous-control toy: ``state += action``; done when ``|state| > 3``.

    Entries: ``observation`` (Unbounded, 3), ``bounded`` (Bounded [-1, 1], 2), ``("nested",
    "obs")`` (Unbounded, 2), state ``state`` (1), action Bounded [-2, 2] (1), reward, done,
    terminated, truncated. ``dtype=torch.float64`` makes every float entry double.
    """

    def __init__(self, batch_size=(), dtype=torch.float32, device=None):
        super().__init__(batch_size=batch_size, device=device)
        B = self.batch_size
        self.fdtype = dtype
        self.observation_spec = Composite(
            observation=Unbounded((*B, 3), dtype=dtype),
            bounded=Bounded(-1.0, 1.0, shape=(*B, 2), dtype=dtype),
            nested=Composite(obs=Unbounded((*B, 2), dtype=dtype), shape=B),
            shape=B,
        )
        self.state_spec = Composite(state=Unbounded((*B, 1), dtype=dtype), shape=B)
        self.action_spec = Bounded(-2.0, 2.0, shape=(*B, 1), dtype=dtype)
        self.reward_spec = Unbounded((*B, 1), dtype=dtype)
        self.done_spec = Composite(done=_flag((*B, 1)), terminated=_flag((*B, 1)), truncated=_flag((*B, 1)), shape=B)

    def _obs(self, state):
        B = self.batch_size
        return {
            "observation": torch.cat([state, 2 * state, -state], -1),
            "bounded": torch.tanh(state).expand(*B, 2).clone(),
            "nested": {"obs": torch.cat([state, state + 1], -1)},
            "state": state,
        }

    def _reset(self, td):
        B = self.batch_size
        state = torch.zeros(*B, 1, dtype=self.fdtype, device=self.device)
        false = torch.zeros(*B, 1, dtype=torch.bool, device=self.device)
        return TensorDict(
            {**self._obs(state), "done": false, "terminated": false.clone(), "truncated": false.clone()},
            B,
            device=self.device,
        )

    def _step(self, td):
        self._record(td)
        action = td["action"]
        state = td["state"] + action.to(self.fdtype)
        done = state.abs() > 3
        return TensorDict(
            {
                **self._obs(state),
                "reward": -(action.to(self.fdtype) ** 2),
                "done": done,
                "terminated": done.clone(),
                "truncated": torch.zeros_like(done),
            },
            self.batch_size,
            device=self.device,
        )


class PixelEnv(_Recording):
    """Random uint8 images ``pixels`` of shape ``(*B, H, W, 3)`` (channels last, like gym's
    renders); a step counter ``t`` in the state; done after 5 steps."""

    def __init__(self, batch_size=(), H=12, W=16, device=None):
        super().__init__(batch_size=batch_size, device=device)
        B = self.batch_size
        self.H, self.W = H, W
        self.observation_spec = Composite(pixels=Bounded(0, 255, shape=(*B, H, W, 3), dtype=torch.uint8), shape=B)
        self.state_spec = Composite(t=Unbounded((*B, 1), dtype=torch.int64), shape=B)
        self.action_spec = Categorical(2, shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=_flag((*B, 1)), shape=B)

    def _pixels(self):
        return torch.randint(0, 256, (*self.batch_size, self.H, self.W, 3), dtype=torch.uint8, device=self.device)

    def _reset(self, td):
        B = self.batch_size
        return TensorDict(
            {
                "pixels": self._pixels(),
                "t": torch.zeros(*B, 1, dtype=torch.int64, device=self.device),
                "done": torch.zeros(*B, 1, dtype=torch.bool, device=self.device),
            },
            B,
            device=self.device,
        )

    def _step(self, td):
        self._record(td)
        t = td["t"] + 1
        return TensorDict(
            {
                "pixels": self._pixels(),
                "t": t,
                "reward": torch.ones(*self.batch_size, 1, device=self.device),
                "done": t >= 5,
            },
            self.batch_size,
            device=self.device,
        )


class MaskedEnv(_Recording):
    """Discrete actions with an ``action_mask`` observation.

    ``grow=True``: action ``a`` is allowed once ``t >= a`` (the mask only grows within an
    episode, so earlier actions stay legal). ``grow=False``: TorchRL's documented example, every
    action taken is removed from the mask; done when the mask is empty.
    ``one_hot=True`` uses a ``OneHot`` action spec.
    """

    def __init__(self, batch_size=(), n=4, grow=True, one_hot=False, device=None):
        super().__init__(batch_size=batch_size, device=device)
        B = self.batch_size
        self.n, self.grow, self.one_hot = n, grow, one_hot
        self.action_spec = OneHot(n, shape=(*B, n)) if one_hot else Categorical(n, shape=B)
        self.observation_spec = Composite(action_mask=Binary(n, shape=(*B, n), dtype=torch.bool), shape=B)
        self.state_spec = Composite(t=Unbounded((*B, 1), dtype=torch.int64), shape=B)
        self.reward_spec = Unbounded((*B, 1))
        self.done_spec = Composite(done=_flag((*B, 1)), shape=B)

    def _mask_for(self, t):
        return torch.arange(self.n, device=self.device) <= t

    def _reset(self, td):
        B = self.batch_size
        dev = self.device
        t = torch.zeros(*B, 1, dtype=torch.int64, device=dev)
        mask = self._mask_for(t) if self.grow else torch.ones(*B, self.n, dtype=torch.bool, device=dev)
        done = torch.zeros(*B, 1, dtype=torch.bool, device=dev)
        return TensorDict({"action_mask": mask, "t": t, "done": done}, B, device=dev)

    def _step(self, td):
        self._record(td)
        t = td["t"] + 1
        action = td["action"]
        if self.one_hot:
            action = action.long().argmax(-1)
        if self.grow:
            mask = self._mask_for(t)
            done = t >= 2 * self.n
        else:
            mask = td["action_mask"].scatter(-1, action.unsqueeze(-1), False)
            done = ~mask.any(-1, keepdim=True)
        return TensorDict(
            {"action_mask": mask, "t": t, "reward": torch.zeros(*self.batch_size, 1, device=self.device), "done": done},
            self.batch_size,
            device=self.device,
        )
