"""``MultiStepTransform``: n-step returns over streamed trajectory batches (a replay-buffer transform).

Data arrive as ``[*batch, T]`` tensordicts whose last batch dimension is time (rollouts, collector
batches). For every frame ``t`` the transform looks ``n_steps`` transitions ahead, stopping after
the first ``("next", done_key)`` it meets, so that a window never crosses an episode end (each row
of the batch ends its own episodes: partial resets are per row). With ``m`` the number of
transitions in the window:

* ``("next", reward)`` becomes ``sum_{k<m} gamma**k * reward[t + k]``; the one-step reward is kept
  as ``("next", "original_reward")`` (with several reward keys, as ``("next", ..., "<name>_orig")``
  beside each);
* every other ``"next"`` entry except the done keys is taken from frame ``t + m - 1`` (the state the
  n-step target bootstraps from); the done entries are left as they are;
* ``"steps_to_next_obs"`` = ``m``, ``"gamma"`` = ``gamma ** m`` (the bootstrap discount) and
  ``"nonterminal"`` = the window did not end on a done frame (and the frame is valid under the
  optional ``mask_key``).

The transform keeps the last ``n_steps`` frames it was given and prepends them to the next call:
a call returns the frames whose windows are complete (``n_steps`` frames fewer than it holds), so
the output does not depend on how the trajectories were cut into batches. Everything is tensor
arithmetic on the data's device: no host read.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import StepCounter, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), StepCounter())
    >>> t = MultiStepTransform(n_steps=3, gamma=0.9)
    >>> out = t.inv(env.rollout(10, break_when_any_done=False))
    >>> out.shape  # the last 3 frames wait for the next batch
    torch.Size([2, 7])
    >>> out["next", "step_count"][0, :3].flatten().tolist()  # 3 steps ahead
    [3, 4, 5]
    >>> round(out["next", "reward"][0, 0].item(), 2)  # 1 + 0.9 + 0.81
    2.71
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey, as_tuple
from gpusim.transforms.transform import Transform

__all__ = ["MultiStepTransform"]

_DEFAULT_DONE_KEYS = ("done", "terminated", "truncated")


def _next_key(key: NestedKey) -> tuple:
    return ("next", *as_tuple(key))


class MultiStepTransform(Transform):
    """Rewrites streamed ``[*batch, T]`` data into n-step transitions (for replay buffers).

    It is an inverse-only transform, applied where data is stored (``t.inv(data)``, or
    ``_inv_call`` as a replay buffer does on ``extend``): it cannot sit in an environment.

    Args:
        n_steps: the look-ahead, a positive int (``n_steps=1`` keeps one-step transitions and adds
            the bookkeeping entries). It may be changed between calls.
        gamma: the discount, in ``[0, 1]``.

    Keyword Args:
        reward_keys: the rewards to accumulate (under ``"next"``). Default ``["reward"]``.
        done_key: the entry that ends a trajectory (under ``"next"``). Default ``"done"``.
        done_keys: the end-of-episode entries left untouched (under ``"next"``). Default
            ``["done", "terminated", "truncated"]``.
        mask_key: an optional root entry marking valid frames (shape ``[*batch, T]`` or that
            with a trailing 1): invalid frames get ``nonterminal=False``. Default ``"mask"``.

    Raises:
        ValueError: ``n_steps`` or ``gamma`` out of range; the transform put in an environment.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict({"obs": torch.arange(6.0), "next": {
        ...     "obs": torch.arange(1.0, 7.0), "reward": torch.ones(6, 1),
        ...     "done": torch.tensor([[False], [False], [True], [False], [False], [False]])}}, [6])
        >>> out = MultiStepTransform(n_steps=2, gamma=0.5).inv(data)
        >>> out["next", "obs"].tolist()  # frame 2 ends its episode: its window stops there
        [2.0, 3.0, 3.0, 5.0]
        >>> out["next", "reward"].flatten().tolist(), out["steps_to_next_obs"].tolist()
        ([1.5, 1.5, 1.0, 1.5], [2, 2, 1, 2])
        >>> out["nonterminal"].tolist()
        [True, False, False, True]
    """

    ENV_ERR = (
        "MultiStepTransform is a replay-buffer (inverse-only) transform: it rewrites stored "
        "trajectories and cannot be part of an environment"
    )

    def __init__(
        self,
        n_steps: int,
        gamma: float,
        *,
        reward_keys: Sequence[NestedKey] | None = None,
        done_key: NestedKey | None = None,
        done_keys: Sequence[NestedKey] | None = None,
        mask_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        self.n_steps = n_steps
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
            raise ValueError(f"MultiStepTransform: gamma must be a number in [0, 1], got {gamma!r}")
        self.gamma = float(gamma)
        self.reward_keys = [as_tuple(k) for k in (reward_keys if reward_keys is not None else ["reward"])]
        self.done_key = as_tuple(done_key if done_key is not None else "done")
        self.done_keys = [as_tuple(k) for k in (done_keys if done_keys is not None else _DEFAULT_DONE_KEYS)]
        self.mask_key = as_tuple(mask_key if mask_key is not None else "mask")
        self._buffer: TensorDictBase | None = None

    @property
    def n_steps(self) -> int:
        """The look-ahead window (a positive int); it may be changed between calls.

        Examples:
            >>> t = MultiStepTransform(3, 0.99)
            >>> t.n_steps = 5
            >>> t.n_steps
            5
        """
        return self._n_steps

    @n_steps.setter
    def n_steps(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"MultiStepTransform: n_steps must be an int >= 1, got {value!r}")
        self._n_steps = value

    # ------------------------------------------------------------------ not an env transform
    def set_container(self, container) -> None:  # noqa: D102 (documented on Transform)
        super().set_container(container)
        if self._env_container() is not None:
            self._detach_container()
            raise ValueError(self.ENV_ERR)

    def transform_output_spec(self, output_spec):  # noqa: D102 (reached only inside an env)
        raise ValueError(self.ENV_ERR)

    # ------------------------------------------------------------------ the inverse
    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        if self._env_container() is not None:
            raise ValueError(self.ENV_ERR)
        if tensordict.batch_dims < 1:
            raise ValueError(
                "MultiStepTransform: the data needs a time dimension (its last batch dimension), "
                f"got batch_size={list(tensordict.batch_size)}"
            )
        total = self._append(tensordict)
        n = self.n_steps
        if total.shape[-1] <= n:
            return None
        return self._multi_step(total, n)[..., : total.shape[-1] - n]

    def _append(self, data: TensorDictBase) -> TensorDictBase:
        buffer = self._buffer
        if buffer is None:
            total = data
        else:
            if buffer.batch_size[:-1] != data.batch_size[:-1]:
                raise ValueError(
                    "MultiStepTransform: the data's batch (all but time) must stay the same across "
                    f"calls: expected {list(buffer.batch_size[:-1])}, received {list(data.batch_size[:-1])}"
                )
            held, got = set(buffer.keys(True, True)), set(data.keys(True, True))
            if held != got:
                raise ValueError(
                    "MultiStepTransform: the data's entries must stay the same across calls: "
                    f"missing {sorted(map(str, held - got))}, new {sorted(map(str, got - held))}"
                )
            total = torch.cat([buffer, data.to(buffer.device) if buffer.device != data.device else data], -1)
        self._buffer = total[..., -self.n_steps :].clone()
        return total

    def _multi_step(self, data: TensorDictBase, n: int) -> TensorDictBase:
        batch = data.batch_size
        bdims = len(batch)
        T = batch[-1]
        done = data.get(_next_key(self.done_key), None)
        if done is None:
            raise KeyError(f"MultiStepTransform: the data has no {_next_key(self.done_key)} entry")
        if done.shape == batch + (1,):
            done = done.squeeze(-1)
        elif done.shape != batch:
            raise ValueError(
                f"MultiStepTransform: {_next_key(self.done_key)} must have shape {list(batch)} or "
                f"{list(batch) + [1]}, received {list(done.shape)}"
            )
        done = done.bool()
        t = torch.arange(T, device=done.device)
        # first done frame at or after t (T where none): a reversed running minimum
        ends = torch.where(done, t, torch.full_like(t, T))
        next_done = ends.flip(-1).cummin(-1).values.flip(-1)
        steps = torch.minimum(torch.minimum(next_done - t + 1, T - t), torch.full_like(next_done, n))
        last = t + steps - 1  # the frame whose "next" the n-step target bootstraps from

        nxt = data.get("next").clone(False)
        gathered = nxt.exclude(*self.reward_keys, *self.done_keys).apply(
            lambda x: torch.gather(x, bdims - 1, _expand_right(last, x))
        )
        several = len(self.reward_keys) > 1
        for key in self.reward_keys:
            reward = nxt.get(key, None)
            if reward is None:
                raise KeyError(f"MultiStepTransform: the data has no {_next_key(key)} entry")
            nxt.set(key[:-1] + (f"{key[-1]}_orig",) if several else ("original_reward",), reward)
            nxt.set(key, self._discounted(reward, steps, bdims, n))
        nxt.update(gathered)

        out = data.clone(False)
        out.set("next", nxt)
        out.set("steps_to_next_obs", steps)
        out.set("gamma", torch.pow(torch.tensor(self.gamma, device=steps.device), steps))
        nonterminal = ~torch.gather(done, bdims - 1, last)
        mask = data.get(self.mask_key, None)
        if mask is not None:
            nonterminal = nonterminal & mask.reshape(batch).bool()
        out.set("nonterminal", nonterminal)
        return out

    def _discounted(self, reward: torch.Tensor, steps: torch.Tensor, bdims: int, n: int) -> torch.Tensor:
        """``sum_{k < steps} gamma**k * reward[t + k]`` along the time dim (``bdims - 1``)."""
        dim = bdims - 1
        T = reward.shape[dim]
        window = _expand_right(steps, reward)
        total = reward.clone()
        for k in range(1, min(n, T)):
            ahead = torch.cat([reward.narrow(dim, k, T - k), torch.zeros_like(reward.narrow(dim, 0, k))], dim)
            total = total + (self.gamma**k) * ahead * (window > k)
        return total

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_steps={self.n_steps}, gamma={self.gamma})"


def _expand_right(index: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``index`` ([*batch]) viewed with trailing singletons and expanded to ``like``'s shape."""
    extra = like.ndim - index.ndim
    return index.reshape(*index.shape, *([1] * extra)).expand(*index.shape, *like.shape[index.ndim :])
