"""``EndOfLifeTransform``: an end-of-life signal for games with lives (Atari).

``end-of-life = lives decreased at this step OR done``. The lives are read from the data when
the parent env has a ``lives_key`` observation (tensor envs: sync-free), else from the
attribute ``eol_attribute`` of the base env (gymnasium ``"unwrapped.ale.lives"``; CPU-backed
envs only), and then written under ``lives_key``. The signal goes into the done spec (it does
not trigger resets); point a loss or value estimator at it with :meth:`register_keys`.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> from gpusim.transforms import EndOfLifeTransform, TransformedEnv
    >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]), EndOfLifeTransform())
    >>> env.done_keys  # the signal is a done entry that resets nothing
    ['done', 'terminated', 'end-of-life']
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._keys import NestedKey
from gpusim.specs import Composite, Unbounded
from gpusim.transforms._levels import tget, tset
from gpusim.transforms.transform import Transform

__all__ = ["EndOfLifeTransform"]


class EndOfLifeTransform(Transform):
    """Registers the end-of-life signal of an env with lives.

    Args:
        eol_key: where the signal is written (added to the done spec).
        lives_key: the lives entry (read from the data if the env has it, else written).
        done_key: the done entry OR-ed into the signal; its shape is the signal's.
        eol_attribute: dotted path of the lives on the base env (an int, array or callable),
            used when the env has no ``lives_key`` entry.

    Raises:
        ValueError: an empty ``eol_attribute``.
        KeyError: (when attached) a ``done_key`` that is not in the parent's done spec.

    Examples:
        An inline env that loses a life every second step and ends after the last one:

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from gpusim.envs import EnvBase
        >>> from gpusim.specs import Categorical, Composite, Unbounded
        >>> from gpusim.transforms import TransformedEnv
        >>> class Lives(EnvBase):
        ...     def __init__(self):
        ...         super().__init__(batch_size=[1])
        ...         self.observation_spec = Composite(t=Unbounded((1, 1)), lives=Unbounded((1, 1)), shape=(1,))
        ...         self.state_spec = Composite(t=Unbounded((1, 1)), shape=(1,))
        ...         self.action_spec = Categorical(2, shape=(1,))
        ...     def _reset(self, td):
        ...         t = torch.zeros(1, 1)
        ...         return TensorDict({"t": t, "lives": t + 3, "done": t.bool()}, [1])
        ...     def _step(self, td):
        ...         t = td["t"] + 1
        ...         return TensorDict({"t": t, "lives": 3 - t // 2, "reward": t, "done": t >= 6}, [1])
        ...     def _set_seed(self, seed):
        ...         pass
        >>> env = TransformedEnv(Lives(), EndOfLifeTransform())
        >>> td = env.rollout(6)
        >>> td["next", "lives"].flatten().tolist()
        [3.0, 2.0, 2.0, 1.0, 1.0, 0.0]
        >>> td["next", "end-of-life"].flatten().tolist()  # a life lost, or done
        [False, True, False, True, False, True]
    """

    def __init__(
        self,
        eol_key: NestedKey = "end-of-life",
        lives_key: NestedKey = "lives",
        done_key: NestedKey = "done",
        eol_attribute: str = "unwrapped.ale.lives",
    ) -> None:
        if not isinstance(eol_attribute, str) or not eol_attribute:
            raise ValueError(f"eol_attribute must be a dotted attribute path, got {eol_attribute!r}")
        super().__init__()
        self.eol_key = _keys.unravel(eol_key)
        self.lives_key = _keys.unravel(lives_key)
        self.done_key = _keys.unravel(done_key)
        self.eol_attribute = eol_attribute
        self.__dict__["_lives_in_data"] = True

    @property
    def out_keys(self) -> list:
        """``[eol_key]`` (read-only).

        Examples:
            >>> EndOfLifeTransform(eol_key="eol").out_keys
            ['eol']
        """
        return [self.__dict__.get("eol_key", "end-of-life")]

    @out_keys.setter
    def out_keys(self, value) -> None:
        pass

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        done_spec = output_spec["full_done_spec"]
        if self.done_key not in done_spec.keys(True, True):
            raise KeyError(
                f"EndOfLifeTransform: done_key {self.done_key!r} is not in the parent's done spec "
                f"({_keys.leaf_keys(done_spec)})"
            )
        done = done_spec[self.done_key]
        done_spec[self.eol_key] = done.clone()
        obs_spec = output_spec["full_observation_spec"]
        in_data = self.lives_key in obs_spec.keys(True, True)
        self.__dict__["_lives_in_data"] = in_data
        if not in_data:
            obs_spec[self.lives_key] = Unbounded(shape=done.shape, dtype=torch.int64, device=done.device)
        return output_spec

    # ------------------------------------------------------------------ lives
    def _attribute_lives(self, like: torch.Tensor) -> torch.Tensor:
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                f"EndOfLifeTransform: no {self.lives_key!r} entry in the data and no parent env to "
                f"read {self.eol_attribute!r} from"
            )
        obj: Any = parent.base_env
        for i, name in enumerate(self.eol_attribute.split(".")):
            if hasattr(obj, name):
                obj = getattr(obj, name)
            elif i == 0 and hasattr(obj, "_env") and hasattr(obj._env, name):
                obj = getattr(obj._env, name)
            else:
                raise AttributeError(
                    f"EndOfLifeTransform: the base env has no attribute path {self.eol_attribute!r} (missing {name!r})"
                )
        if callable(obj):
            obj = obj()
        return torch.as_tensor(obj, dtype=torch.int64).to(like.device).reshape(like.shape)

    def _lives(self, data: TensorDictBase, like: torch.Tensor) -> torch.Tensor:
        lives = tget(data, self.lives_key)
        if lives is not None and self.__dict__["_lives_in_data"]:
            return lives
        lives = self._attribute_lives(like)
        tset(data, self.lives_key, lives)
        return lives

    # ------------------------------------------------------------------ data
    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        done = tensordict_reset.get(self.done_key)
        self._lives(tensordict_reset, done)
        tset(tensordict_reset, self.eol_key, done.clone())
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        done = next_tensordict.get(self.done_key)
        lives = self._lives(next_tensordict, done)
        prev = tget(tensordict, self.lives_key)
        eol = done if prev is None else done | (lives < prev).reshape(done.shape)
        tset(next_tensordict, self.eol_key, eol)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Not available: the signal compares lives across env steps (use a ``TransformedEnv``).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from tensordict import TensorDict
            >>> EndOfLifeTransform()(TensorDict({}, []))
            Traceback (most recent call last):
            ...
            NotImplementedError: EndOfLifeTransform reads env lives; it has no offline forward. Use it in a TransformedEnv.
        """
        raise NotImplementedError(
            "EndOfLifeTransform reads env lives; it has no offline forward. Use it in a TransformedEnv."
        )

    def register_keys(self, loss_or_advantage: Any) -> None:
        """Points a loss / value estimator's ``done`` and ``terminated`` keys at the signal.

        Args:
            loss_or_advantage: an object with ``set_keys(done=..., terminated=...)`` (a TorchRL
                loss module or value estimator).

        Raises:
            TypeError: an object without ``set_keys``.

        Examples:
            >>> class Loss:  # stands in for a TorchRL loss module
            ...     def set_keys(self, **keys):
            ...         self.keys = keys
            >>> loss = Loss()
            >>> EndOfLifeTransform().register_keys(loss)
            >>> loss.keys
            {'done': 'end-of-life', 'terminated': 'end-of-life'}
        """
        set_keys = getattr(loss_or_advantage, "set_keys", None)
        if set_keys is None:
            raise TypeError(
                f"register_keys needs an object with set_keys (a loss or value estimator), got "
                f"{type(loss_or_advantage).__name__}"
            )
        set_keys(done=self.eol_key, terminated=self.eol_key)

    def __repr__(self) -> str:
        return (
            f"EndOfLifeTransform(eol_key={self.eol_key!r}, lives_key={self.lives_key!r}, "
            f"done_key={self.done_key!r}, eol_attribute={self.eol_attribute!r})"
        )
