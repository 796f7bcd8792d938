"""``Collector``: batches of ``[*B, T]`` experience for a training loop, TorchRL's collector API
on gpusim envs, from an eager or a compiled engine.

The collector steps one batched env with a policy ``frames_per_batch`` frames at a time and
yields the data laid out like ``env.rollout``'s (``[*batch_size, T]``, last dim ``"time"``) plus
TorchRL's ``("collector", "traj_ids")``, collected under ``torch.no_grad()`` as TorchRL's
collectors do. Episodes carry over from one batch to the next (unless
``reset_at_each_iter``). The policy is called as it is at each batch: a training loop that
updates its weights in place (an optimizer step) is read by the next batch, in both engines.

Engines (``compile=False|True``, or TorchRL's ``compile_policy=``):

* eager: ``policy`` then ``env.step_and_maybe_reset`` per step, in Python: the env's one eager loop,
  :meth:`StepPipeline.run <gpusim.envs.pipeline.StepPipeline.run>` (as ``env.rollout`` runs).
* compiled: ``policy + step_and_maybe_reset + transforms`` in one ``torch.compile(fullgraph=True)``
  graph (:class:`~gpusim.envs.compiled.CompiledRollout`), several steps per call at small batch,
  CUDA graphs (``mode="reduce-overhead"``) on CUDA, writing each step into a buffer allocated
  once per batch. No recompilation between batches and no host read per step: the policy's
  parameters are graph inputs. The first batch runs its first step eagerly to learn the data
  layout; a line on stderr tells when the compilation starts and ends (``compile={"verbose":
  False}`` or ``GPUSIM_COMPILE_VERBOSE=0`` silences it, ``compile={"log": callable}`` sends it
  elsewhere) and :attr:`Collector.compile_seconds` keeps the time. A later process reuses
  Inductor's persistent cache (``docs/compile.md``).

Both engines give the same data for the same seed and a deterministic policy where the arithmetic
is exact (integers, random actions, plain ``+ - * /``); float ops that eager and compiled code
round differently (``sin``, ``cos``, fused multiply-adds, reductions) differ in the last bit,
which a chaotic env can grow into other actions over a long run: ``docs/determinism.md`` lists
them. Each engine repeats its own data bit for bit. Random actions (no policy, or
``init_random_frames``) follow the env's seed, not ``torch.manual_seed``.

Episode statistics for logging: :meth:`Collector.episode_stats` gives the returns and lengths of
the episodes that ended in the last batch (running sums per row are carried across batches, so
an episode that spans batches is counted whole).

Examples:
    >>> import torch
    >>> import gpusim as gs
    >>> env = gs.make("CartPole-v1", num_envs=4, seed=0)
    >>> policy = lambda td: td.set("action", torch.zeros(4, dtype=torch.long))
    >>> collector = gs.Collector(env, policy, frames_per_batch=40, total_frames=80)
    >>> for data in collector:
    ...     print(data.shape, collector.episode_stats()["lengths"].tolist())
    torch.Size([4, 10]) [9, 10, 10, 9]
    torch.Size([4, 10]) [9, 10, 10, 10]
    >>> collector.shutdown()
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModule, TensorDictModuleBase, set_interaction_type
from torch import nn

from gpusim.collectors._episodes import EpisodeTracker, TrajIds, ended_rows, split_trajectories, step_reward
from gpusim.envs.common import EnvBase
from gpusim.envs.compiled import CompiledRollout, default_steps_per_call
from gpusim.envs.random_actions import rollout_actions
from gpusim.envs.rollout import stack_rollout
from gpusim.envs.utils import ExplorationType

__all__ = ["Collector", "SyncDataCollector"]

_COMPILE_OPTIONS = ("steps_per_call", "mode", "verbose")


def _exploration(value: Any) -> InteractionType:
    """tensordict's interaction type for an exploration type given as the enum (gpusim's and
    TorchRL's ``ExplorationType`` are tensordict's ``InteractionType``) or its name."""
    name = value.value if isinstance(value, InteractionType) else value
    if isinstance(name, str):
        try:
            return InteractionType(name.lower())
        except ValueError:
            pass
    names = [t.value for t in ExplorationType]
    raise ValueError(f"exploration_type must be one of {names} (or an ExplorationType), got {value!r}")


def _takes_tensordict(module: nn.Module) -> bool:
    """Whether ``module``'s forward reads one tensordict (TorchRL's rule: one argument named
    ``tensordict``/``td`` or annotated with a TensorDictBase type)."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return True
    if len(params) != 1:
        return False
    param = params[0]
    if param.name in ("tensordict", "td"):
        return True
    ann = param.annotation
    if isinstance(ann, str):
        return "TensorDict" in ann
    return isinstance(ann, type) and issubclass(ann, TensorDictBase)


def _tensor_in_keys(module: nn.Module, env: EnvBase) -> list:
    """The observation keys a tensor-to-tensor module reads: its forward's required argument
    names when they are all observation keys (TorchRL's rule), else ``"observation"`` for a
    module of one argument."""
    params = inspect.signature(module.forward).parameters
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD]
    obs = {k for k in env.observation_keys if isinstance(k, str)}
    if required and set(required) <= obs:
        return required
    if len(required) == 1 and "observation" in obs:
        return ["observation"]
    raise TypeError(
        f"policy {type(module).__name__} takes tensors {required}, which are not observation keys of the env "
        f"{sorted(map(str, env.observation_keys))}: wrap it in a TensorDictModule with its in_keys/out_keys"
    )


def _as_policy(policy: Any, env: EnvBase) -> Callable[[TensorDictBase], TensorDictBase] | None:
    if policy is None or isinstance(policy, TensorDictModuleBase):
        return policy
    if isinstance(policy, nn.Module) and not _takes_tensordict(policy):
        # a tensor-to-tensor module: read the observations, write the actions
        return TensorDictModule(policy, in_keys=_tensor_in_keys(policy, env), out_keys=list(env.action_keys))
    if not callable(policy):
        raise TypeError(
            f"policy must be a callable reading and writing a tensordict (or None), got {type(policy).__name__}"
        )
    return policy


def _positive_int(name: str, value: Any, allow: tuple = ()) -> int:
    if value in allow and not isinstance(value, bool):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        extra = f" or one of {list(allow)}" if allow else ""
        raise ValueError(f"{name} must be a positive int{extra}, got {value!r}")
    return value


class Collector:
    """Collects ``[*B, T]`` batches from a batched env with a policy, carrying episodes over.

    Args:
        create_env_fn: the env (a gpusim :class:`~gpusim.envs.EnvBase`, usually batched: ``T`` is
            ``frames_per_batch / batch_size.numel()``) or a callable that returns one.
        policy: a callable reading and writing a tensordict (a ``TensorDictModule``, a
            ``ProbabilisticTensorDictSequential``, a function); an ``nn.Module`` whose forward
            takes tensors is wrapped in a ``TensorDictModule`` writing the actions and reading
            the observation keys its arguments are named after (TorchRL's rule), or
            ``"observation"`` when it takes one tensor. ``None``: uniform random actions.

    Keyword Args:
        frames_per_batch: frames (env steps summed over the batch) per yielded batch; rounded up
            to a multiple of the env's batch numel (with a warning, as TorchRL does).
        total_frames: frames to collect before the iterator stops; ``-1`` (default): endless.
            A value that is not a multiple of ``frames_per_batch`` collects the last batch whole.
        device: the device of the env and policy (the env and policy are moved there).
        create_env_kwargs: keyword arguments of ``create_env_fn`` (when it is a callable).
        init_random_frames: frames collected with uniform random actions (``env.rand_action``,
            eagerly) before the policy is used, rounded up to whole batches. Those batches hold
            the env's entries only (no policy outputs).
        reset_at_each_iter: reset every env at the start of each batch (episodes then never
            span batches).
        postproc: a callable applied to each batch before it is yielded.
        split_trajs: yield ``[n_traj, max_len]`` zero-padded trajectories with a
            ``("collector", "mask")`` entry instead of ``[*B, T]`` (reads sizes on the host).
        exploration_type: the interaction type the policy runs under
            (``"random"``, the default, ``"deterministic"``, ``"mode"``, ``"mean"``; gpusim's,
            TorchRL's or tensordict's enum, which are one): sets tensordict's interaction type
            (read by ``ProbabilisticTensorDictModule`` and by ``exploration_type()``).
        track_traj_ids: write ``("collector", "traj_ids")`` (unique per trajectory, the same
            across batches for a trajectory that spans them).
        compile: ``False`` (eager engine), ``True`` or a dict (compiled engine). Dict keys:
            ``steps_per_call`` (steps fused per compiled call; default 2 up to 64 envs, else 1,
            reduced to a divisor of ``T``), ``mode`` (``torch.compile`` mode; default
            ``"reduce-overhead"`` on CUDA), ``verbose`` (compile start/end lines), ``log``
            (where they go), and other ``torch.compile`` options.
        compile_policy: TorchRL's name for the switch (``True`` or a dict of ``torch.compile``
            options): the compiled engine, which compiles the env step with the policy.

    Raises:
        TypeError: an unknown keyword argument, a ``create_env_fn`` that is neither a gpusim
            env nor gives one, a policy that is not callable.
        ValueError: a bad ``frames_per_batch``/``total_frames``/``init_random_frames``/
            ``exploration_type``, ``compile`` and ``compile_policy`` both given.

    Examples:
        >>> import torch
        >>> import gpusim as gs
        >>> from tensordict.nn import TensorDictModule
        >>> env = gs.make("CartPole-v1", num_envs=8, seed=0)
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 2))
        >>> policy = TensorDictModule(lambda obs: net(obs).argmax(-1), ["observation"], ["action"])
        >>> collector = gs.Collector(env, policy, frames_per_batch=64, total_frames=128)
        >>> batches = list(collector)
        >>> [data.shape for data in batches]
        [torch.Size([8, 8]), torch.Size([8, 8])]
        >>> batches[1]["collector", "traj_ids"].shape
        torch.Size([8, 8])
        >>> collector.shutdown()
    """

    def __init__(
        self,
        create_env_fn: EnvBase | Callable[..., EnvBase],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        device: torch.device | str | None = None,
        create_env_kwargs: dict | None = None,
        init_random_frames: int | None = None,
        reset_at_each_iter: bool = False,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        split_trajs: bool = False,
        exploration_type: Any = ExplorationType.RANDOM,
        track_traj_ids: bool = True,
        compile: bool | dict = False,
        compile_policy: bool | dict | None = None,
    ) -> None:
        self.env = self._make_env(create_env_fn, create_env_kwargs, device)
        env = self.env
        self.policy = _as_policy(policy, env)
        if device is not None and isinstance(self.policy, nn.Module):
            self.policy.to(env.device)
        n_env = max(1, env.batch_size.numel())
        frames_per_batch = _positive_int("frames_per_batch", frames_per_batch)
        if frames_per_batch % n_env:
            warnings.warn(
                f"frames_per_batch ({frames_per_batch}) is not a multiple of the env's batch numel ({n_env}): "
                f"each batch holds {math.ceil(frames_per_batch / n_env) * n_env} frames",
                stacklevel=2,
            )
        self.steps_per_batch = math.ceil(frames_per_batch / n_env)
        self.frames_per_batch = self.steps_per_batch * n_env
        self.total_frames = _positive_int("total_frames", total_frames, allow=(-1,))
        if self.total_frames > 0 and self.total_frames % self.frames_per_batch:
            warnings.warn(
                f"total_frames ({total_frames}) is not a multiple of frames_per_batch ({self.frames_per_batch}): "
                f"the last batch is collected whole ({math.ceil(total_frames / self.frames_per_batch) * self.frames_per_batch} frames)",
                stacklevel=2,
            )
        if init_random_frames is None:
            init_random_frames = 0
        if isinstance(init_random_frames, bool) or not isinstance(init_random_frames, int) or init_random_frames < 0:
            raise ValueError(f"init_random_frames must be a non-negative int or None, got {init_random_frames!r}")
        self.init_random_frames = init_random_frames
        self.reset_at_each_iter = bool(reset_at_each_iter)
        if postproc is not None and not callable(postproc):
            raise TypeError(f"postproc must be callable, got {type(postproc).__name__}")
        self.postproc = postproc
        self.split_trajs = bool(split_trajs)
        self.track_traj_ids = bool(track_traj_ids)
        if self.split_trajs and not self.track_traj_ids:
            raise ValueError("split_trajs=True needs track_traj_ids=True (trajectories are split by their ids)")
        self.exploration_type = _exploration(exploration_type)
        self.compile_options = self._compile_options(compile, compile_policy)
        self._runner: CompiledRollout | None = None
        self._root: TensorDictBase | None = None
        self._frames = 0
        self._iter = 0
        self._closed = False
        self._episodes = EpisodeTracker(env.batch_size, env.device)
        self._traj_ids = TrajIds(env.batch_size, env.device)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _make_env(create_env_fn: Any, kwargs: dict | None, device: Any) -> EnvBase:
        if isinstance(create_env_fn, EnvBase):
            if kwargs:
                raise TypeError("create_env_kwargs is only used with an env factory, not an env instance")
            env = create_env_fn
        elif callable(create_env_fn):
            env = create_env_fn(**(kwargs or {}))
            if not isinstance(env, EnvBase):
                raise TypeError(f"create_env_fn must return a gpusim EnvBase, got {type(env).__name__}")
        else:
            raise TypeError(
                f"create_env_fn must be a gpusim EnvBase or a callable returning one, got {type(create_env_fn).__name__}"
            )
        if device is not None and torch.device(device) != env.device:
            env = env.to(device)
        return env

    def _compile_options(self, compile: Any, compile_policy: Any) -> dict | None:
        if compile_policy not in (None, False) and compile not in (False, None):
            raise ValueError("pass either compile= or compile_policy= (TorchRL's name), not both")
        options = compile if compile not in (False, None) else compile_policy
        if options in (None, False):
            return None
        if options is True:
            options = {}
        if not isinstance(options, dict):
            raise TypeError(f"compile must be a bool or a dict of options, got {type(options).__name__}")
        options = dict(options)
        if "mode" not in options and self.env.device.type == "cuda":
            options["mode"] = "reduce-overhead"
        return options

    # ------------------------------------------------------------------ engines
    @property
    def compiled(self) -> bool:
        """Whether the compiled engine runs the policy batches.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> gs.Collector(env, frames_per_batch=4).compiled
            False
            >>> gs.Collector(env, frames_per_batch=4, compile=True).compiled  # compiles lazily
            True
        """
        return self.compile_options is not None

    @property
    def compile_seconds(self) -> float:
        """Seconds the compiled engine spent compiling so far (every compilation and
        recompilation of its graph: Dynamo's trace, Inductor's code generation or cache lookups,
        the C++ build); ``0.0`` for the eager engine or before the first batch. Each compilation
        also prints one line with its duration (``compile={"verbose": False}`` silences it).

        A second process compiling the same env and policy reuses Inductor's persistent caches
        (``docs/compile.md``) and compiles in a few seconds.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=4, seed=0)
            >>> collector = gs.Collector(env, frames_per_batch=8, compile={"verbose": False})
            >>> collector.compile_seconds  # nothing compiled yet
            0.0
            >>> batch = next(iter(collector))      # doctest: +SKIP
            >>> collector.compile_seconds > 0      # doctest: +SKIP
            True
        """
        return 0.0 if self._runner is None else self._runner.compile_seconds

    def _compiled_runner(self) -> CompiledRollout:
        if self._runner is None:
            options = dict(self.compile_options)
            T = self.steps_per_batch
            rows = max(1, self.env.batch_size.numel())
            k = options.pop("steps_per_call", None) or default_steps_per_call(rows, with_policy=self.policy is not None)
            k = max(d for d in range(1, min(k, T) + 1) if T % d == 0)  # no remainder call to compile
            self._runner = CompiledRollout(self.env, self.policy, steps_per_call=k, **options)
        return self._runner

    def _eager(self, root: TensorDictBase, policy: Callable) -> tuple[TensorDictBase, TensorDictBase]:
        steps, root = self.env.step_pipeline.run(root, policy, self.steps_per_batch)
        return stack_rollout(self.env, steps, True), root

    # ------------------------------------------------------------------ collection
    def rollout(self) -> TensorDictBase:
        """Collects one batch (``[*B, T]``) and returns it (the iterator calls this).

        Raises:
            RuntimeError: the collector was shut down.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> collector = gs.Collector(env, frames_per_batch=6)
            >>> data = collector.rollout()
            >>> data.batch_size, collector.frames
            (torch.Size([2, 3]), 6)
        """
        if self._closed:
            raise RuntimeError("the collector was shut down; make a new one")
        env = self.env
        if self._root is not None and self.reset_at_each_iter:
            self._restart()
        if self._root is None:
            self._root = env.reset()
        random_batch = self._frames < self.init_random_frames
        with torch.no_grad(), set_interaction_type(self.exploration_type):
            if random_batch:
                data, self._root = self._eager(self._root, rollout_actions(env, self.steps_per_batch))
            elif self.compiled:
                data, self._root = self._compiled_runner().run(self.steps_per_batch, self._root)
            elif self.policy is None:
                data, self._root = self._eager(self._root, rollout_actions(env, self.steps_per_batch))
            else:
                data, self._root = self._eager(self._root, self.policy)
        nb = len(env.batch_size)
        ended = ended_rows(data, env.done_keys, nb)
        self._episodes.update(step_reward(data, env.reward_keys, nb), ended)
        if self.track_traj_ids:
            data.set(("collector", "traj_ids"), self._traj_ids.update(ended))
        self._frames += self.frames_per_batch
        self._iter += 1
        if self.split_trajs:
            data = split_trajectories(data, nb)
        if self.postproc is not None:
            data = self.postproc(data)
        return data

    def __iter__(self) -> Iterator[TensorDictBase]:
        """Yields batches until ``total_frames`` are collected (endlessly for ``-1``).

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> collector = gs.Collector(env, frames_per_batch=4, total_frames=12)
            >>> [data.batch_size for data in collector.iterator()]
            [torch.Size([2, 2]), torch.Size([2, 2]), torch.Size([2, 2])]
        """
        while self.total_frames < 0 or self._frames < self.total_frames:
            yield self.rollout()

    iterator = __iter__

    def next(self) -> TensorDictBase:
        """The next batch (TorchRL's ``collector.next()``).

        Raises:
            StopIteration: ``total_frames`` were collected.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> collector = gs.Collector(env, frames_per_batch=4, total_frames=4)
            >>> collector.next().batch_size
            torch.Size([2, 2])
            >>> collector.next()
            Traceback (most recent call last):
            ...
            StopIteration: the collector has collected its total_frames (4)
        """
        if 0 < self.total_frames <= self._frames:
            raise StopIteration(f"the collector has collected its total_frames ({self.total_frames})")
        return self.rollout()

    def __len__(self) -> int:
        if self.total_frames < 0:
            raise TypeError("an endless collector (total_frames=-1) has no length")
        return math.ceil(self.total_frames / self.frames_per_batch)

    # ------------------------------------------------------------------ logging
    def episode_stats(self) -> dict[str, torch.Tensor]:
        """The episodes that ended in the last batch: ``{"returns": float [n], "lengths": long
        [n]}`` (row-major, then by time). Episodes that began in an earlier batch are counted
        whole. A row's reward is the mean of its reward entries (over agents). Reads the count
        on the host.

        Examples:
            >>> import gpusim as gs
            >>> collector = gs.Collector(gs.make("CartPole-v1", num_envs=2, seed=0), frames_per_batch=100)
            >>> stats = collector.episode_stats()   # nothing collected yet
            >>> stats["returns"].numel()
            0
        """
        return {"returns": self._episodes.returns(), "lengths": self._episodes.lengths()}

    @property
    def frames(self) -> int:
        """Frames collected so far.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> collector = gs.Collector(env, frames_per_batch=4)
            >>> _ = collector.rollout(); _ = collector.rollout()
            >>> collector.frames
            8
        """
        return self._frames

    # ------------------------------------------------------------------ control
    def update_policy_weights_(self, policy_or_weights: Any = None) -> None:
        """Brings new weights into the collector's policy.

        The collector holds the policy object itself, so weights an optimizer updated in place
        are already read by the next batch (both engines); with no argument this does nothing.
        Given a module, a ``state_dict`` or a ``TensorDict`` of weights
        (``TensorDict.from_module`` layout), copies them into the policy's tensors in place (the
        compiled graph keeps its inputs: no recompilation).

        Raises:
            KeyError: a weight of the policy is missing from the source (named).
            TypeError: the policy is not an ``nn.Module`` and weights were given.

        Examples:
            >>> import torch
            >>> import gpusim as gs
            >>> from tensordict.nn import TensorDictModule
            >>> policy = TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["action"])
            >>> collector = gs.Collector(gs.make("Pendulum-v1", num_envs=2), policy, frames_per_batch=4)
            >>> collector.update_policy_weights_({"module.weight": torch.zeros(1, 3), "module.bias": torch.ones(1)})
            >>> collector.next()["action"].unique().tolist()
            [1.0]
        """
        if policy_or_weights is None or policy_or_weights is self.policy:
            return
        if not isinstance(self.policy, nn.Module):
            raise TypeError(
                f"the collector's policy ({type(self.policy).__name__}) is not an nn.Module: it has no weights to update"
            )
        if isinstance(policy_or_weights, nn.Module):
            source = policy_or_weights.state_dict()
        elif isinstance(policy_or_weights, TensorDictBase):
            source = dict(policy_or_weights.flatten_keys(".").items())
        elif isinstance(policy_or_weights, dict):
            source = policy_or_weights
        else:
            raise TypeError(
                f"expected a module, a state_dict or a TensorDict of weights, got {type(policy_or_weights).__name__}"
            )
        with torch.no_grad():
            for name, tensor in self.policy.state_dict(keep_vars=True).items():
                if name not in source:
                    raise KeyError(f"update_policy_weights_: the weights given have no entry {name!r}")
                tensor.copy_(source[name])

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds the env (see ``EnvBase.set_seed``); the next batch starts from a reset.

        Examples:
            >>> import gpusim as gs
            >>> collector = gs.Collector(gs.make("CartPole-v1", num_envs=2), frames_per_batch=4)
            >>> _ = collector.set_seed(7)
            >>> first = collector.rollout()["observation"][:, 0]  # the reset observations
            >>> _ = collector.set_seed(7)
            >>> collector.rollout()["observation"][:, 0].equal(first)
            True
        """
        out = self.env.set_seed(seed, static_seed=static_seed)
        self._restart()
        return out

    def reset(self) -> None:
        """Resets every env: the next batch starts new episodes.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> collector = gs.Collector(env, frames_per_batch=4)
            >>> collector.rollout()["next", "step_count"][:, -1].flatten().tolist()
            [2, 2]
            >>> collector.reset()
            >>> collector.rollout()["next", "step_count"][:, 0].flatten().tolist()  # new episodes
            [1, 1]
        """
        self._restart()

    def _restart(self) -> None:
        if self._root is not None:
            self._episodes.reset()
            self._traj_ids.restart()
        self._root = None

    def shutdown(self, close_env: bool = True) -> None:
        """Releases the compiled graph and (``close_env``) closes the env. Later batches raise.

        Examples:
            >>> import gpusim as gs
            >>> collector = gs.Collector(gs.make("CartPole-v1", num_envs=2), frames_per_batch=4)
            >>> collector.shutdown()
            >>> collector.env.is_closed
            True
        """
        self._closed = True
        self._runner = None
        self._root = None
        if close_env:
            self.env.close()

    def __repr__(self) -> str:
        engine = "compiled" if self.compiled else "eager"
        return (
            f"Collector(env={type(self.env).__name__}, batch_size={list(self.env.batch_size)}, "
            f"frames_per_batch={self.frames_per_batch}, total_frames={self.total_frames}, engine={engine!r})"
        )


#: TorchRL's older name of the single-process collector.
SyncDataCollector = Collector
