"""``FrameSkipTransform``: repeats each action ``frame_skip`` times and sums the rewards.

The env up to this transform (``parent``) is stepped ``frame_skip - 1`` more times with the same
action, from the state its previous step produced. Rows whose episode ends stop accumulating:
they keep the data (observation, reward sum, done flags) of the step that finished them. On
tensor envs this is sync-free (masks; the parent keeps its state in the tensordict); on
CPU-backed envs the repetition stops early once every row is done.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import FrameSkipTransform, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), FrameSkipTransform(4))
    >>> env.rollout(2)["next", "reward"].flatten().tolist()  # 4 CartPole steps of reward 1 each
    [4.0, 4.0, 4.0, 4.0]
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs.common import TRANSFORM_HOOKS
from gpusim.envs.episode import AutoResetMode, merge_rows
from gpusim.transforms.transform import Transform

__all__ = ["FrameSkipTransform"]


class FrameSkipTransform(Transform):
    """Repeats the action ``frame_skip`` times; the rewards of the repeats are summed.

    Args:
        frame_skip: number of env steps per transformed step (>= 1).

    Raises:
        ValueError: ``frame_skip < 1``.

    Examples:
        One transformed step equals ``frame_skip`` base steps with the same action:

        >>> from gpusim.envs.native import PendulumEnv
        >>> from gpusim.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), FrameSkipTransform(3))
        >>> td = env.reset().set("action", torch.full((2, 1), 0.5))
        >>> out = env.step(td.clone())["next"]
        >>> base, x, total = env.base_env, td.clone(), 0
        >>> for _ in range(3):
        ...     x = base.step(x)
        ...     total = total + x["next", "reward"]
        ...     x = x["next"].set("action", td["action"])
        >>> torch.allclose(out["observation"], x["observation"]), torch.allclose(out["reward"], total)
        (True, True)
    """

    def __init__(self, frame_skip: int = 1) -> None:
        if isinstance(frame_skip, bool) or not isinstance(frame_skip, int) or frame_skip < 1:
            raise ValueError(
                f"frame_skip should have a value greater or equal to one (an int >= 1), got {frame_skip!r}"
            )
        super().__init__()
        self.frame_skip = frame_skip

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.frame_skip == 1:
            return next_tensordict
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                "parent not found for FrameSkipTransform: it needs a parent env (use it in a TransformedEnv)"
            )
        reward_keys = parent.reward_keys
        episode = parent.episode
        # stopping once every row is done saves steps; only where done rows are read on the host
        may_stop = parent.auto_reset_mode is AutoResetMode.SPARSE and not torch.compiler.is_compiling()
        sums = {k: next_tensordict.get(k) for k in reward_keys if next_tensordict.get(k, None) is not None}
        alive = ~episode.ended(next_tensordict)
        current = next_tensordict
        keys = [k for k, v in current.items(True, True) if isinstance(v, torch.Tensor)]
        for _ in range(self.frame_skip - 1):
            if may_stop and not bool(alive.any()):
                break
            inp = tensordict.clone(False).exclude("next")
            inp.update(current.exclude(*reward_keys))
            nxt = parent._step_output(inp)
            for k in sums:
                r = nxt.get(k)
                m = alive.reshape(*alive.shape, *([1] * (r.ndim - alive.ndim)))
                sums[k] = sums[k] + torch.where(m, r, torch.zeros_like(r))
            # rows still alive take the new step; finished rows keep the step that ended them
            merged = merge_rows(nxt.select(*keys, strict=False), current, alive)
            current = current.clone(False).update(merged)
            alive = alive & ~episode.ended(nxt)
        for k, v in sums.items():
            current.set(k, v)
        return current

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the transform repeats env steps (use it in a ``TransformedEnv``).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from tensordict import TensorDict
            >>> FrameSkipTransform(2)(TensorDict({}, []))
            Traceback (most recent call last):
            ...
            NotImplementedError: FrameSkipTransform can only be used when appended to a transformed env: it repeats env steps; it has no offline forward.
        """
        raise NotImplementedError(
            "FrameSkipTransform can only be used when appended to a transformed env: it repeats env steps; it has no offline forward."
        )

    def __repr__(self) -> str:
        return f"FrameSkipTransform(frame_skip={self.frame_skip})"


def _wrap_frame_skip(env, frame_skip: int):
    """``TransformedEnv(env, FrameSkipTransform(frame_skip))``: the wrap an env gets at construction
    when it stores a ``frame_skip`` it does not apply itself (see ``EnvBase._has_frame_skip``)."""
    from gpusim.transforms.transformed_env import TransformedEnv

    return TransformedEnv(env, FrameSkipTransform(frame_skip))


TRANSFORM_HOOKS["frame_skip"] = _wrap_frame_skip
