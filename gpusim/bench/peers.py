"""The peers ``gpusim compare`` times against, each with the loop its users write.

===========  =====================================================================================
peer         what is timed (T steps of B envs, random actions, the library's own auto-reset)
===========  =====================================================================================
torchrl      CartPole-v1 as a TorchRL ``EnvBase`` with the same physics + ``StepCounter(500)``
             (:mod:`gpusim.bench.torchrl_cartpole`), or TorchRL's ``VmasEnv``;
             ``rollout(T, break_when_any_done=False)``, ``[B, T]`` output
gymnasium    ``gymnasium.make_vec``: the numpy vector env where gymnasium has one (CartPole-v1),
             else ``SyncVectorEnv`` (Python loop over envs; batches above 4096 skipped);
             a ``step`` loop, nothing stored
envpool      ``envpool.make(id, env_type="gymnasium", num_envs=B, num_threads=threads)``;
             a ``step`` loop, nothing stored
gymnax       ``jax.jit`` of a ``lax.scan`` over ``vmap(env.step)`` (observations, rewards and
             dones stacked, like a rollout); compile time reported apart
vmas         raw VMAS: ``env.step(env.get_random_actions())`` loop on the requested device
             (``vmas:<scenario>`` ids, and ``MPE/<scenario>-v0``: the same scenario, defaults)
vmasenv      gpusim's own ``VmasEnv`` wrapping VMAS's scenario of an ``MPE/<scenario>-v0`` id;
             ``rollout(T, break_when_any_done=False)``, ``[B, T]`` output
brax         ``inverted_pendulum`` (a MuJoCo-model cart-pole: continuous force, rigid-body
             pipeline, NOT CartPole-v1's equations), ``jax.jit`` of a ``lax.scan``; shown beside
             CartPole-v1 as the nearest Brax env
minatar      the ``minatar`` package's gymnasium envs (``MinAtar/<Game>-v0/-v1``) in a
             ``SyncVectorEnv`` (batches above 4096 skipped); a ``step`` loop, nothing stored
===========  =====================================================================================

For the MinAtar ids, gymnax runs ``<Game>-MinAtar`` (its minimal action set, so ``-v1`` ids only;
no sticky actions, a 1000-step time limit (Freeway: 2500) where gpusim and the ``minatar`` package
have sticky actions (0.1) and no time limit: the same games, not the same transition law).

Numpy and C++ peers (gymnasium, envpool) run on the CPU whatever device is requested; JAX peers
run on JAX's default backend when it matches the requested device type, else on JAX's CPU.

Examples:
    >>> from gpusim.bench.envs import parse_env_id
    >>> [p.peer for p in PEERS]
    ['torchrl', 'gymnasium', 'envpool', 'gymnax', 'vmas', 'brax', 'minatar', 'vmasenv']
    >>> GYMNASIUM.skip_reason(parse_env_id("TicTacToe-v0"), 8, BenchOptions())
    'no TicTacToe-v0 in gymnasium'
    >>> gymnax_id(parse_env_id("MinAtar/Breakout-v1")), minatar_id(parse_env_id("MinAtar/Breakout-v0"))
    ('Breakout-MinAtar', 'MinAtar/Breakout-v0')
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from gpusim.bench.contenders import CLASSIC_IDS, BenchOptions, Contender
from gpusim.bench.envs import EnvRef, build_transforms
from gpusim.bench.timing import Runner

__all__ = [
    "PEERS",
    "TORCHRL",
    "GYMNASIUM",
    "ENVPOOL",
    "GYMNAX",
    "VMAS",
    "BRAX",
    "MINATAR",
    "VMASENV",
    "numpy_action_sampler",
    "gymnax_id",
    "minatar_id",
    "vmas_scenario",
]

SYNC_VECTOR_MAX_BATCH = 4096
MINATAR_GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
"""The MinAtar games gpusim, gymnax and the ``minatar`` package all have."""


def minatar_id(ref: EnvRef) -> str | None:
    """The ``minatar`` package's gymnasium id of a native MinAtar id (the same id), else ``None``.

    Examples:
        >>> from gpusim.bench.envs import parse_env_id
        >>> minatar_id(parse_env_id("MinAtar/Freeway-v1")), minatar_id(parse_env_id("CartPole-v1"))
        ('MinAtar/Freeway-v1', None)
    """
    if ref.kind != "native" or not ref.name.startswith("MinAtar/"):
        return None
    game, _, version = ref.name[len("MinAtar/") :].rpartition("-")
    return ref.name if game in MINATAR_GAMES and version in ("v0", "v1") else None


def gymnax_id(ref: EnvRef) -> str | None:
    """gymnax's id for a native id: the classic ids as they are, ``MinAtar/<Game>-v1`` as
    ``<Game>-MinAtar`` (gymnax's MinAtar has the minimal action set only), else ``None``.

    Examples:
        >>> from gpusim.bench.envs import parse_env_id
        >>> [gymnax_id(parse_env_id(i)) for i in ("Acrobot-v1", "MinAtar/Seaquest-v1", "MinAtar/Seaquest-v0")]
        ['Acrobot-v1', 'Seaquest-MinAtar', None]
    """
    if ref.kind == "native" and ref.name in CLASSIC_IDS:
        return ref.name
    name = minatar_id(ref)
    if name is not None and name.endswith("-v1"):
        return f"{name[len('MinAtar/') : -len('-v1')]}-MinAtar"
    return None


def numpy_action_sampler(space: Any, batch: int, seed: int) -> Callable[[], np.ndarray]:
    """Random batched actions for one env's gymnasium-style action space.

    Args:
        space: a single env's ``Discrete`` or ``Box`` space (gymnasium's or EnvPool's).
        batch: the number of envs.
        seed: the seed of the numpy generator.

    Raises:
        TypeError: for other spaces (naming the space).

    Examples:
        >>> import gymnasium as gym
        >>> sample = numpy_action_sampler(gym.spaces.Discrete(3), batch=5, seed=0)
        >>> sample().shape
        (5,)
    """
    rng = np.random.default_rng(seed)
    n = getattr(space, "n", None)
    if n is not None and tuple(getattr(space, "shape", ())) == ():  # Discrete (MultiBinary has n too)
        start = int(getattr(space, "start", 0))
        return lambda: rng.integers(start, start + int(n), size=batch)
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if low is not None and high is not None:
        low = np.broadcast_to(np.asarray(low, dtype=np.float32), space.shape)
        high = np.broadcast_to(np.asarray(high, dtype=np.float32), space.shape)
        return lambda: rng.uniform(low, high, size=(batch, *space.shape)).astype(np.float32)
    raise TypeError(f"no random batched actions for the action space {space!r} (Discrete or Box expected)")


def _step_loop(step: Callable[[Any], Any], sample: Callable[[], Any]) -> Callable[[int], None]:
    def run(steps: int) -> None:
        for _ in range(steps):
            step(sample())

    return run


# ------------------------------------------------------------------------------------ torchrl
def _torchrl_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if ref.label == "CartPole-v1" or ref.kind == "vmas":
        return None
    return f"no TorchRL env with the same physics for {ref.label} (CartPole-v1 and vmas:<scenario> only)"


def _torchrl_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import torchrl.envs as tenvs

    if ref.kind == "vmas":
        from torchrl.envs.libs.vmas import VmasEnv

        env = VmasEnv(ref.name, num_envs=batch, device=options.device, seed=options.seed)
    else:
        from gpusim.bench.torchrl_cartpole import make_torchrl_cartpole

        env = make_torchrl_cartpole(batch, device=options.device)
        env.set_seed(options.seed)
    if options.transforms:
        if not isinstance(env, tenvs.TransformedEnv):
            env = tenvs.TransformedEnv(env)
        for t in build_transforms(options.transforms, tenvs, env.observation_keys[0]):
            env.append_transform(t)
    return Runner(lambda steps: env.rollout(steps, break_when_any_done=False), device=str(env.device), close=env.close)


TORCHRL = Contender(
    name="torchrl",
    peer="torchrl",
    modules=("torchrl",),
    install="torchrl==0.14.1 in an environment of its own (it pins tensordict<0.15; see the peers extra)",
    what="rollout(T, break_when_any_done=False) of a TorchRL EnvBase with the same physics + StepCounter(500)",
    build=_torchrl_build,
    supports=_torchrl_supports,
    transforms=True,
)


# ---------------------------------------------------------------------------------- gymnasium
def _gym_id(ref: EnvRef) -> str | None:
    if ref.kind == "gym" or (ref.kind == "native" and ref.name in CLASSIC_IDS):
        return ref.name
    return None


def _gymnasium_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    gym_id = _gym_id(ref)
    if gym_id is None:
        return f"no {ref.label} in gymnasium"
    import gymnasium as gym

    if gym.spec(gym_id).vector_entry_point is None and batch > SYNC_VECTOR_MAX_BATCH:
        return (
            f"{gym_id} has no numpy vector env in gymnasium; its SyncVectorEnv loops over Python envs, "
            f"so batches above {SYNC_VECTOR_MAX_BATCH} are skipped"
        )
    return None


def _gymnasium_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import gymnasium as gym

    gym_id = _gym_id(ref)
    mode = "vector_entry_point" if gym.spec(gym_id).vector_entry_point is not None else "sync"
    venv = gym.make_vec(gym_id, num_envs=batch, vectorization_mode=mode)
    venv.reset(seed=options.seed)
    sample = numpy_action_sampler(venv.single_action_space, batch, options.seed)
    return Runner(_step_loop(venv.step, sample), device="cpu", close=venv.close)


GYMNASIUM = Contender(
    name="gymnasium",
    peer="gymnasium",
    modules=("gymnasium",),
    install="gymnasium",
    what="gymnasium.make_vec (numpy vector env, else SyncVectorEnv): step loop, nothing stored",
    build=_gymnasium_build,
    supports=_gymnasium_supports,
    host_only=True,
)


# ------------------------------------------------------------------------------------ envpool
def _envpool_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    gym_id = _gym_id(ref)
    if gym_id is None:
        return f"no {ref.label} in EnvPool"
    import envpool

    if gym_id not in envpool.list_all_envs():
        return f"no {gym_id} in EnvPool"
    return None


def _envpool_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import envpool

    env = envpool.make(
        _gym_id(ref), env_type="gymnasium", num_envs=batch, num_threads=max(1, options.threads), seed=options.seed
    )
    env.reset()
    sample = numpy_action_sampler(env.action_space, batch, options.seed)
    return Runner(_step_loop(env.step, sample), device="cpu", close=env.close)


ENVPOOL = Contender(
    name="envpool",
    peer="envpool",
    modules=("envpool",),
    install="envpool",
    what="envpool.make(num_envs=B, num_threads=threads): step loop, nothing stored",
    build=_envpool_build,
    supports=_envpool_supports,
    host_only=True,
)


# ------------------------------------------------------------------------------------ JAX peers
def _jax_device(options: BenchOptions):
    from gpusim.envs.libs._jax import share_gpu_with_torch

    share_gpu_with_torch()  # before JAX's first computation: it would take 75 % of the GPU
    import jax

    wanted = options.torch_device.type
    backend = jax.default_backend()
    if wanted == "cuda" and backend == "gpu":
        return jax.devices()[0], "jax:gpu"
    return jax.devices("cpu")[0], "jax:cpu"


def _device_put(tree: Any, device: Any) -> Any:
    """``jax.device_put`` (imported on call)."""
    import jax

    return jax.device_put(tree, device)


class _JaxScan:
    """``run(steps)`` = one jitted ``lax.scan`` of ``steps`` transitions, compiled once per length.

    ``transition(key, state) -> (state, outputs)`` is one batched step (random actions drawn from
    ``key`` inside); the outputs of every step are stacked, like a rollout's.
    """

    def __init__(self, transition: Callable, state: Any, seed: int, device: Any) -> None:
        import jax

        self._transition = transition
        self._carry = _device_put((jax.random.PRNGKey(seed), state), device)
        self._compiled: dict[int, Callable] = {}
        self.compile_seconds = 0.0

    def _scan(self, steps: int) -> Callable:
        import jax

        transition = self._transition

        def body(carry, _):
            key, state = carry
            key, sub = jax.random.split(key)
            state, out = transition(sub, state)
            return (key, state), out

        return lambda carry: jax.lax.scan(body, carry, None, length=steps)

    def __call__(self, steps: int) -> None:
        import jax

        fn = self._compiled.get(steps)
        if fn is None:
            start = time.perf_counter()
            fn = jax.jit(self._scan(steps)).lower(self._carry).compile()  # runs where the carry lives
            self.compile_seconds += time.perf_counter() - start
            self._compiled[steps] = fn
        self._carry, out = fn(self._carry)
        jax.block_until_ready((self._carry, out))

    def runner(self, label: str) -> Runner:
        """This scan as a :class:`~gpusim.bench.timing.Runner` (it waits for its own results)."""
        return Runner(self, device=label, sync=lambda: None, compile_seconds=lambda: self.compile_seconds)


def _gymnax_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if gymnax_id(ref) is None:
        if minatar_id(ref) is not None:
            return f"no {ref.label} in gymnax (its MinAtar games have the minimal action set only: the -v1 ids)"
        return f"no {ref.label} in gymnax"
    return None


def _gymnax_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import gymnax
    import jax

    device, label = _jax_device(options)
    env, params = gymnax.make(gymnax_id(ref))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    sample = jax.vmap(env.action_space(params).sample)

    def transition(key, state):
        k_act, k_step = jax.random.split(key)
        action = sample(jax.random.split(k_act, batch))
        obs, state, reward, terminated, truncated, _ = step(jax.random.split(k_step, batch), state, action, params)
        return state, (obs, reward, terminated | truncated)

    k_reset = jax.random.PRNGKey(options.seed + 1)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, batch), params)
    return _JaxScan(transition, state, options.seed, device).runner(label)


GYMNAX = Contender(
    name="gymnax",
    peer="gymnax",
    modules=("jax", "gymnax"),
    install="jax gymnax",
    what="jax.jit(lax.scan(vmap(env.step))): observations, rewards and dones stacked",
    build=_gymnax_build,
    supports=_gymnax_supports,
)


def _brax_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if ref.label != "CartPole-v1":
        return f"no Brax counterpart of {ref.label} (CartPole-v1 only, as inverted_pendulum)"
    return None


def _brax_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import jax
    from brax import envs

    device, label = _jax_device(options)
    env = envs.create("inverted_pendulum", batch_size=batch, auto_reset=True)

    def transition(key, state):
        action = jax.random.uniform(key, (batch, env.action_size), minval=-1.0, maxval=1.0)
        state = env.step(state, action)
        return state, (state.obs, state.reward, state.done)

    # brax's VmapWrapper splits the reset key into one per env
    state = jax.jit(env.reset)(_device_put(jax.random.PRNGKey(options.seed + 1), device))
    return _JaxScan(transition, state, options.seed, device).runner(label)


BRAX = Contender(
    name="brax (inverted_pendulum)",
    peer="brax",
    modules=("jax", "brax"),
    install="jax brax",
    what="Brax inverted_pendulum (other physics: a MuJoCo-model cart-pole), jax.jit(lax.scan(env.step))",
    build=_brax_build,
    supports=_brax_supports,
)


# --------------------------------------------------------------------------------------- VMAS
def vmas_scenario(ref: EnvRef) -> str | None:
    """The VMAS scenario an env id names: ``vmas:<scenario>``, or the native ``MPE/<scenario>-v0``
    (whose defaults are VMAS's), else ``None``.

    Examples:
        >>> from gpusim.bench.envs import parse_env_id
        >>> vmas_scenario(parse_env_id("MPE/simple_tag-v0")), vmas_scenario(parse_env_id("CartPole-v1"))
        ('simple_tag', None)
    """
    if ref.kind == "vmas":
        return ref.name
    if ref.kind == "native" and ref.name.startswith("MPE/") and ref.name.endswith("-v0"):
        return ref.name[len("MPE/") : -len("-v0")]
    return None


def _vmas_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if vmas_scenario(ref) is None:
        return f"no {ref.label} in VMAS (vmas:<scenario> and MPE/<scenario>-v0 only)"
    return None


def _vmas_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import vmas

    env = vmas.make_env(vmas_scenario(ref), num_envs=batch, device=options.device, seed=options.seed)
    env.reset()
    return Runner(_step_loop(env.step, env.get_random_actions), device=str(torch.device(options.device)))


def _vmasenv_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if ref.kind == "native" and vmas_scenario(ref) is not None:
        return None
    return f"{ref.label} is not a native MPE id (MPE/<scenario>-v0 only; vmas:<scenario> is gpusim eager's)"


def _vmasenv_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    from gpusim.envs.libs import VmasEnv

    env = VmasEnv(vmas_scenario(ref), num_envs=batch, device=options.device, seed=options.seed)
    return Runner(lambda steps: env.rollout(steps, break_when_any_done=False), device=str(env.device), close=env.close)


VMAS = Contender(
    name="vmas",
    peer="vmas",
    modules=("vmas",),
    install="vmas",
    what="raw VMAS: env.step(env.get_random_actions()) loop, nothing stored",
    build=_vmas_build,
    supports=_vmas_supports,
)


# ------------------------------------------------------------------------------------ minatar
def _minatar_supports(ref: EnvRef, batch: int, options: BenchOptions) -> str | None:
    if minatar_id(ref) is None:
        return f"no {ref.label} in the minatar package (MinAtar/<Game>-v0/-v1 only)"
    if batch > SYNC_VECTOR_MAX_BATCH:
        return (
            f"the minatar package has no vector env; its SyncVectorEnv loops over Python envs, "
            f"so batches above {SYNC_VECTOR_MAX_BATCH} are skipped"
        )
    return None


def _minatar_build(ref: EnvRef, batch: int, options: BenchOptions) -> Runner:
    import gymnasium as gym
    from minatar.gym import register_envs

    if minatar_id(ref) not in gym.registry:
        register_envs()  # the package registers its MinAtar/ ids with gymnasium on request
    venv = gym.make_vec(minatar_id(ref), num_envs=batch, vectorization_mode="sync")
    venv.reset(seed=options.seed)
    sample = numpy_action_sampler(venv.single_action_space, batch, options.seed)
    return Runner(_step_loop(venv.step, sample), device="cpu", close=venv.close)


MINATAR = Contender(
    name="minatar",
    peer="minatar",
    modules=("gymnasium", "minatar"),
    install="minatar gymnasium",
    what="the minatar package's gymnasium envs in a SyncVectorEnv: step loop, nothing stored",
    build=_minatar_build,
    supports=_minatar_supports,
    host_only=True,
)


VMASENV = Contender(
    name="gpusim VmasEnv",
    peer="vmasenv",
    modules=("vmas",),
    install="vmas",
    what="gpusim's VmasEnv of the same scenario: rollout(T, break_when_any_done=False), [B, T] output",
    build=_vmasenv_build,
    supports=_vmasenv_supports,
)

PEERS: tuple[Contender, ...] = (TORCHRL, GYMNASIUM, ENVPOOL, GYMNAX, VMAS, BRAX, MINATAR, VMASENV)
"""Every peer, in column order."""
