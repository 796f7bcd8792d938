"""The front doors to other RL stacks: :func:`to_torchrl`, :func:`to_gymnasium` and :func:`to_sb3`.

Each loads its optional library on call (an ``ImportError`` says what to ``pip install``) and
returns an adapter around the same gpusim env: nothing is copied or re-created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusim.envs.common import EnvBase
from gpusim.envs.libs._optional import import_optional

if TYPE_CHECKING:
    from gpusim.interop.gymnasium_env import GymnasiumVectorEnv
    from gpusim.interop.sb3_env import SB3VecEnv
    from gpusim.interop.torchrl_env import TorchRLEnv

__all__ = ["to_torchrl", "to_gymnasium", "to_sb3"]


def _check_env(env: Any, what: str) -> None:
    if not isinstance(env, EnvBase):
        raise TypeError(f"{what} takes a gpusim env (a gpusim.EnvBase), got {type(env).__name__}")


def to_torchrl(env: EnvBase, *, allow_done_after_reset: bool = False) -> TorchRLEnv:
    """A TorchRL view of a gpusim env: a ``torchrl.envs.EnvBase`` that TorchRL's stack takes as is.

    ``check_env_specs``, collectors (``torchrl.collectors.Collector``), ``TransformedEnv`` and
    TorchRL transforms, ``SerialEnv`` / ``ParallelEnv``, objectives (``GAE``, ``ClipPPOLoss``)
    and replay buffers work on the result. Steps and resets hand the gpusim env's tensors
    through (same tensors, same device); specs are converted once. See
    :class:`~gpusim.interop.torchrl_env.TorchRLEnv` for the details, and why gpusim envs are
    adapted rather than accepted by TorchRL directly.

    Args:
        env: the gpusim env.
        allow_done_after_reset: TorchRL's flag: do not raise when a reset leaves ``done`` set.

    Returns:
        A :class:`~gpusim.interop.torchrl_env.TorchRLEnv` around ``env``.

    Raises:
        ImportError: torchrl is not installed (saying what to ``pip install``).
        TypeError: ``env`` is not a gpusim env, or it has a spec with no TorchRL equivalent.

    Examples:
        >>> import gpusim as gs
        >>> from gpusim.interop import to_torchrl  # also gpusim.to_torchrl
        >>> from torchrl.collectors import Collector
        >>> env = to_torchrl(gs.make("CartPole-v1", num_envs=4, seed=0))
        >>> collector = Collector(env, policy=None, frames_per_batch=32, total_frames=64)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([4, 8]), torch.Size([4, 8])]
        >>> collector.shutdown()
    """
    _check_env(env, "to_torchrl")
    import_optional("torchrl", "torchrl", what="gpusim.to_torchrl (tested with torchrl 0.14.1)")
    from gpusim.interop.torchrl_env import TorchRLEnv

    return TorchRLEnv(env, allow_done_after_reset=allow_done_after_reset)


def to_gymnasium(
    env: EnvBase,
    *,
    observation_keys: Any = None,
    autoreset_mode: Any = "same_step",
    as_torch: bool = False,
    copy: bool = True,
    render_mode: str | None = None,
    render_key: Any = "pixels",
    compile: bool | dict = False,
) -> GymnasiumVectorEnv:
    """A gymnasium view of a gpusim env: a ``gymnasium.vector.VectorEnv`` over its batch.

    Spaces come from the specs, ``metadata["autoreset_mode"]`` declares the auto-reset mode
    (``SAME_STEP`` by default: gpusim's ``step_and_maybe_reset``, with ``infos["final_obs"]``),
    ``reset(seed=, options=)``, ``step``, ``render`` and ``close`` follow gymnasium's vector API,
    and gymnasium's vector wrappers work on it (``NormalizeObservation`` and the other
    observation wrappers need ``autoreset_mode="next_step"``). Numpy arrays by default; tensors
    on the env's device with ``as_torch=True``. For gymnasium's ``RecordEpisodeStatistics``,
    use ``autoreset_mode="next_step"`` (gymnasium releases before 1.4 miscount ``SAME_STEP``
    episodes). ``state_dict()``/``load_state_dict()`` reach the env's transform state (a
    ``VecNorm``'s statistics). See
    :class:`~gpusim.interop.gymnasium_env.GymnasiumVectorEnv` for the arguments.

    Args:
        env: the gpusim env (one batch dim: ``num_envs``).
        observation_keys: the observation entries returned (default: all but the ``step_count``
            time-limit counters; several give a ``Dict``).
        autoreset_mode: ``"same_step"``, ``"next_step"`` or ``"disabled"`` (or a
            ``gymnasium.vector.AutoresetMode``).
        as_torch: return tensors on the env's device instead of numpy arrays.
        copy: numpy mode: return arrays the caller owns.
        render_mode: ``None`` or ``"rgb_array"`` (frames from the ``render_key`` observation).
        render_key: the observation entry holding ``(num_envs, H, W, C)`` uint8 frames.
        compile: ``same_step`` mode: run each step as one compiled graph (``True`` or a dict of
            :class:`~gpusim.envs.compiled.CompiledRollout` arguments).

    Returns:
        A :class:`~gpusim.interop.gymnasium_env.GymnasiumVectorEnv` around ``env``.

    Raises:
        ImportError: gymnasium is not installed (saying what to ``pip install``).
        TypeError, ValueError, KeyError: see ``GymnasiumVectorEnv``.

    Examples:
        >>> import gpusim as gs
        >>> from gpusim.interop import to_gymnasium  # also gpusim.to_gymnasium
        >>> from gymnasium.wrappers.vector import NormalizeObservation
        >>> envs = to_gymnasium(gs.make("CartPole-v1", num_envs=4, seed=0),
        ...                     observation_keys="observation", autoreset_mode="next_step")
        >>> envs = NormalizeObservation(envs)
        >>> obs, infos = envs.reset(seed=0)
        >>> obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
        >>> obs.shape, obs.dtype
        ((4, 4), dtype('float32'))
    """
    _check_env(env, "to_gymnasium")
    import_optional("gymnasium", "gymnasium", extra="gym", what="gpusim.to_gymnasium")
    from gpusim.interop.gymnasium_env import GymnasiumVectorEnv

    return GymnasiumVectorEnv(
        env,
        observation_keys=observation_keys,
        autoreset_mode=autoreset_mode,
        as_torch=as_torch,
        copy=copy,
        render_mode=render_mode,
        render_key=render_key,
        compile=compile,
    )


def to_sb3(
    env: EnvBase,
    *,
    observation_keys: Any = None,
    render_mode: str | None = None,
    render_key: Any = "pixels",
    compile: bool | dict = False,
) -> SB3VecEnv:
    """A Stable-Baselines3 view of a gpusim env: a ``stable_baselines3`` ``VecEnv`` over its batch.

    SB3's algorithms (``PPO``, ``A2C``, ``DQN``, ``SAC``, ...) and vector wrappers
    (``VecMonitor``, ``VecNormalize``, ``VecFrameStack``) take the result. Episode ends follow
    SB3's conventions: ``dones = terminated | truncated``, the next episode's first observation
    returned on the same step, ``infos[i]["terminal_observation"]`` and
    ``infos[i]["TimeLimit.truncated"]``. ``seed(s)`` seeds the batch at the next ``reset()``. See
    :class:`~gpusim.interop.sb3_env.SB3VecEnv` for the details.

    Args:
        env: the gpusim env (one batch dim: ``num_envs``).
        observation_keys: the observation entries SB3 sees (default: those of
            :func:`to_gymnasium`; several give a ``Dict`` space).
        render_mode: ``None`` or ``"rgb_array"`` (frames from the ``render_key`` observation).
        render_key: the observation entry holding ``(num_envs, H, W, C)`` uint8 frames.
        compile: run each step as one compiled graph (``True``, or a dict of
            :class:`~gpusim.envs.compiled.CompiledRollout` arguments): the same data; at 8-256
            envs on a CPU the step is several times faster than eager, after a compilation of
            seconds (``venv.compile_seconds``).

    Returns:
        A :class:`~gpusim.interop.sb3_env.SB3VecEnv` around ``env``.

    Raises:
        ImportError: stable-baselines3 is not installed (saying what to ``pip install``).
        TypeError, ValueError, KeyError: see ``GymnasiumVectorEnv``.

    Examples:
        >>> import gpusim as gs
        >>> from stable_baselines3 import PPO
        >>> from stable_baselines3.common.vec_env import VecMonitor
        >>> venv = VecMonitor(gs.to_sb3(gs.make("CartPole-v1", num_envs=8, seed=0)))
        >>> model = PPO("MlpPolicy", venv, n_steps=16, batch_size=64, n_epochs=1, seed=0)
        >>> model = model.learn(total_timesteps=256)
        >>> model.num_timesteps
        256
    """
    _check_env(env, "to_sb3")
    import_optional("stable_baselines3", "stable-baselines3", extra="sb3", what="gpusim.to_sb3")
    import_optional("gymnasium", "gymnasium", extra="gym", what="gpusim.to_sb3")
    from gpusim.interop.sb3_env import SB3VecEnv

    return SB3VecEnv(
        env, observation_keys=observation_keys, render_mode=render_mode, render_key=render_key, compile=compile
    )
