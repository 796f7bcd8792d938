"""Gymnasium vector envs under gpusim's reset semantics.

gpusim (like TorchRL) wants: the step on which an episode ends returns the FINAL observation with
``done=True``; the reset observation comes from ``reset`` with a ``"_reset"`` mask and becomes
the next root. Gymnasium 1.x vector envs follow one of three ``AutoresetMode``s:

* ``DISABLED``: nothing resets by itself; done rows are reset with
  ``reset(options={"reset_mask": mask})``. Exactly gpusim's semantics: the preferred mode, and
  the one :class:`~gpusim.envs.libs.gym.GymEnv` asks for when it builds a sync/async vector env.
* ``SAME_STEP``: the step that ends an episode returns the reset observation and puts the final
  one in ``info["final_obs"]``. The adapter swaps the final observation back in (Python work on
  the done rows only) and keeps the reset observation for the following ``reset``.
  The final observations come either per row (``info["final_obs"]`` an object array with the
  ``info["_final_obs"]`` mask: gymnasium's sync/async envs) or as one batched array whose done
  rows hold them (ale-py's ``AtariVectorEnv``).
* ``NEXT_STEP``: the step after the one that ended an episode resets it and ignores its action.
  That cannot be mapped exactly without a masked reset (a reset observation is needed *before*
  the next action), so NEXT_STEP is accepted only when a masked reset exists: gymnasium's
  ``SyncVectorEnv``/``AsyncVectorEnv`` and ale-py's ``AtariVectorEnv`` (their ``reset_mask``
  also clears the pending autoreset), or an adapter registered in :data:`MASKED_RESETS`
  (gymnasium's numpy ``CartPoleVectorEnv``, whose masked reset redraws the selected rows the
  way its own autoreset does).

Stepping a vector env whose done rows were not reset (a plain ``step`` loop) first resets those
rows, like gymnasium's autoreset: the action then applies to the new episode. Use
``step_and_maybe_reset`` / ``rollout`` (or ``reset`` with ``"_reset"``) to see the reset
observations.

Examples:
    >>> import gymnasium as gym
    >>> env = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync",
    ...                    vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.DISABLED})
    >>> adapter = VectorAdapter(env)
    >>> adapter.mode.name
    'DISABLED'
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from gpusim.envs.libs.gym_backend import import_gymnasium

__all__ = ["VectorAdapter", "MASKED_RESETS", "register_masked_reset", "autoreset_mode_of"]

#: ``{vector env class: fn(env, mask) -> (obs, info)}``: masked resets for vector envs that
#: have none of their own (the env is the ``unwrapped`` vector env).
MASKED_RESETS: dict[type, Callable[[Any, np.ndarray], tuple[Any, dict]]] = {}


def register_masked_reset(cls: type, fn: Callable[[Any, np.ndarray], tuple[Any, dict]]) -> None:
    """Registers ``fn(env, mask) -> (obs, info)`` as the masked reset of vector env class ``cls``.

    A NEXT_STEP vector env of that class is then accepted by :class:`VectorAdapter` (and
    ``GymWrapper``): the reset rows are reset by ``fn`` on the ``unwrapped`` env.

    Args:
        cls: the vector env class.
        fn: ``fn(env, mask) -> (obs, info)``: resets the rows of the bool array ``mask`` and
            returns the observations of all rows.

    Examples:
        >>> import gymnasium as gym
        >>> class MyVectorEnv(gym.vector.VectorEnv):  # a NEXT_STEP env without a masked reset
        ...     pass
        >>> register_masked_reset(MyVectorEnv, lambda env, mask: (env.reset_rows(mask), {}))
        >>> MyVectorEnv in MASKED_RESETS
        True
        >>> del MASKED_RESETS[MyVectorEnv]
    """
    MASKED_RESETS[cls] = fn


def _cartpole_vector_masked_reset(env: Any, mask: np.ndarray) -> tuple[np.ndarray, dict]:
    # Redraws the selected rows with the same draw as CartPoleVectorEnv's own autoreset in ``step``
    # (one uniform of shape (4, n) from its generator), then clears their step counters and flags.
    rows = np.flatnonzero(mask)
    env.state[:, rows] = env.np_random.uniform(low=env.low, high=env.high, size=(4, rows.size))
    env.steps[rows] = 0
    env.prev_done[rows] = False
    return env.state.T.astype(np.float32), {}


def _native_masked_reset(env: Any, mask: np.ndarray) -> tuple[Any, dict]:
    # vector envs whose own ``reset(options={"reset_mask": ...})`` resets the rows of the mask and
    # clears their pending NEXT_STEP autoreset (ale-py's AtariVectorEnv)
    return env.reset(options={"reset_mask": mask})


def _register_builtin() -> None:
    try:
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
    except ImportError:  # pragma: no cover - older gymnasium
        pass
    else:
        MASKED_RESETS.setdefault(CartPoleVectorEnv, _cartpole_vector_masked_reset)
    # ale-py is looked up, never imported here: an AtariVectorEnv exists only once it is imported
    ale_vector = sys.modules.get("ale_py.vector_env")
    if ale_vector is not None and hasattr(ale_vector, "AtariVectorEnv"):
        MASKED_RESETS.setdefault(ale_vector.AtariVectorEnv, _native_masked_reset)


def autoreset_mode_of(env: Any) -> Any:
    """The ``AutoresetMode`` of a vector env (gymnasium's default, NEXT_STEP, when undeclared).

    Examples:
        >>> import gymnasium as gym
        >>> env = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
        >>> autoreset_mode_of(env).name
        'NEXT_STEP'
    """
    gym = import_gymnasium()
    mode = getattr(env, "autoreset_mode", None)
    if mode is None:
        mode = env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
    if not isinstance(mode, gym.vector.AutoresetMode):
        mode = gym.vector.AutoresetMode(mode)
    return mode


def _set_row(batched: Any, index: int, single: Any) -> None:
    """Writes one env's observation into row ``index`` of a batched observation, in place."""
    if isinstance(batched, dict):
        for k in batched:
            _set_row(batched[k], index, single[k])
    elif isinstance(batched, tuple):
        for b, s in zip(batched, single):
            _set_row(b, index, s)
    else:
        batched[index] = single


def _set_rows(batched: Any, mask: np.ndarray, source: Any) -> None:
    """Writes the rows of ``mask`` of the batched ``source`` into ``batched``, in place."""
    if isinstance(batched, dict):
        for k in batched:
            _set_rows(batched[k], mask, source[k])
    elif isinstance(batched, tuple):
        for b, s in zip(batched, source):
            _set_rows(b, mask, s)
    else:
        batched[mask] = source[mask]


def _copy_obs(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _copy_obs(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_copy_obs(v) for v in obs)
    return np.array(obs, copy=True)


class VectorAdapter:
    """Drives a gymnasium vector env with gpusim's reset semantics (see the module docstring).

    Args:
        env: a ``gymnasium.vector.VectorEnv`` (possibly wrapped).

    Raises:
        ValueError: for a NEXT_STEP env without a masked reset, naming what to do instead.

    Examples:
        >>> import gymnasium as gym
        >>> env = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
        ...                    vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
        >>> adapter = VectorAdapter(env)
        >>> obs, info = adapter.reset(seed=0)
        >>> done = np.zeros(2, dtype=bool)
        >>> while not done.any():  # push right until a pole falls
        ...     obs, reward, terminated, truncated, info = adapter.step(np.ones(2, dtype=np.int64))
        ...     done = terminated | truncated
        >>> bool((np.abs(obs[done, 2]) > 0.2).all())  # the FINAL observation (pole down), not the reset one
        True
        >>> obs, _ = adapter.reset(done)  # the rows of the mask start their next episode
        >>> bool((np.abs(obs[done]) <= 0.05).all())
        True
    """

    def __init__(self, env: Any) -> None:
        _register_builtin()
        gym = import_gymnasium()
        self.env = env
        self.num_envs = int(env.num_envs)
        self.mode = autoreset_mode_of(env)
        unwrapped = env.unwrapped
        modes = gym.vector.AutoresetMode
        self._native_mask = isinstance(unwrapped, (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv))
        self._adapter = None
        if not self._native_mask:
            for cls, fn in MASKED_RESETS.items():
                if isinstance(unwrapped, cls):
                    self._adapter = fn
                    break
        if self.mode == modes.NEXT_STEP and not (self._native_mask or self._adapter):
            raise ValueError(
                f"the vector env {type(unwrapped).__name__} uses AutoresetMode.NEXT_STEP and has no masked "
                "reset, so the final and reset observations cannot both be returned exactly. Build it with "
                "autoreset_mode=AutoresetMode.DISABLED or SAME_STEP (e.g. gymnasium.make_vec(..., "
                "vectorization_mode='sync', vector_kwargs={'autoreset_mode': AutoresetMode.DISABLED})), or "
                "register a masked reset with gpusim.envs.libs.gym_vector.register_masked_reset"
            )
        self._same_step = self.mode == modes.SAME_STEP
        self.pending = np.zeros(self.num_envs, dtype=bool)  # done rows not reset yet
        self.has_pending = False
        self._reset_obs: Any = None
        self.last_obs: Any = None
        self.last_done = np.zeros(self.num_envs, dtype=bool)  # terminated | truncated of the last step

    # -------------------------------------------------------------- reset
    def reset(self, mask: np.ndarray | None = None, seed: int | None = None) -> tuple[Any, dict]:
        """Resets every env (``mask=None``) or the rows of ``mask`` (a bool array of shape (N,));
        returns the observations of ALL rows (the current ones for rows not reset).

        Args:
            mask: the rows to reset (``None``: all).
            seed: the seed of a full reset.

        Returns:
            ``(observations, info)``.

        Examples:
            >>> import gymnasium as gym
            >>> env = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync")
            >>> adapter = VectorAdapter(env)
            >>> first, _ = adapter.reset(seed=0)
            >>> obs, _ = adapter.reset(np.array([False, True, False]))
            >>> (obs != first).any(-1).tolist()  # only row 1 was redrawn
            [False, True, False]
        """
        count = self.num_envs if mask is None else np.count_nonzero(mask)
        # a SAME_STEP env has already reset the rows that ended: a mask of every row after a step
        # on which all rows ended takes the reset observations it returned (no second reset)
        same_step_rows = self._same_step and mask is not None and seed is None and self.has_pending
        if count == self.num_envs and not same_step_rows:
            obs, info = self.env.reset(seed=seed)
            # a new array, never ``[:] = False``: ``pending`` may be the array of the last step's
            # done flags, which that step's output tensors view (``torch.from_numpy``)
            self.pending = np.zeros(self.num_envs, dtype=bool)
            self._reset_obs = None
        elif not count:
            return self.last_obs, {}
        elif self._same_step:
            extra = mask & ~self.pending
            if extra.any():
                obs, info = self.env.reset(options={"reset_mask": extra})
            else:
                obs, info = self._reset_obs, {}
            self.pending = self.pending & ~mask
        elif self._adapter is not None:
            obs, info = self._adapter(self.env.unwrapped, mask)
            self.pending = self.pending & ~mask
        else:
            obs, info = self.env.reset(options={"reset_mask": mask})
            self.pending = self.pending & ~mask
        self.has_pending = bool(np.count_nonzero(self.pending))
        self.last_obs = obs
        return obs, info

    # -------------------------------------------------------------- step
    def step(self, action: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """One step; done rows carry their final observation.

        Args:
            action: the batched action.

        Returns:
            ``(observations, rewards, terminated, truncated, info)`` as numpy arrays.

        Examples:
            >>> import gymnasium as gym
            >>> adapter = VectorAdapter(gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync"))
            >>> _ = adapter.reset(seed=0)
            >>> obs, reward, terminated, truncated, info = adapter.step(np.array([0, 1]))
            >>> obs.shape, reward.tolist()
            ((2, 4), [1.0, 1.0])
        """
        if self.has_pending and not self._same_step:
            # done rows stepped without a reset (e.g. a plain ``step`` loop): start their next
            # episode first, as gymnasium's own autoreset would, instead of stepping a finished env
            self.reset(self.pending.copy())
        obs, reward, terminated, truncated, info = self.env.step(action)
        reward = np.asarray(reward)
        # copies (N bools): the wrapper's outputs view these arrays, and a vector env may refill
        # the arrays it returned on its next call
        terminated = np.array(terminated, dtype=bool)
        truncated = np.array(truncated, dtype=bool)
        done = terminated | truncated
        self.has_pending = bool(np.count_nonzero(done))
        if self._same_step and self.has_pending and "final_obs" in info:
            finals = info["final_obs"]
            final_mask = info.get("_final_obs", None)
            if final_mask is None:  # one batched array (ale-py): its done rows hold the final observations
                self._reset_obs = obs
                obs = _copy_obs(obs)
                _set_rows(obs, done, finals)
            elif np.any(final_mask):  # an object array of per-row observations (gymnasium)
                self._reset_obs = obs
                obs = _copy_obs(obs)
                for i in np.flatnonzero(final_mask):
                    _set_row(obs, int(i), finals[i])
        # ``last_done`` is read by the wrapper (its output's ``"done"`` views it): the adapter
        # never writes into it, and ``pending`` starts as its own copy
        self.last_done = done
        self.pending = done.copy()
        self.last_obs = obs
        return obs, reward, terminated, truncated, info
