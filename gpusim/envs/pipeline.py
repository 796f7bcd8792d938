"""The step pipeline: ``step → step_mdp → post-step_mdp hook → reset``, planned once per env.

:class:`StepPipeline` is built from an env when its specs lock (``env.step_pipeline``, kept with
the other key plans and planned again when the specs or a transform chain change). Everything
that decides *how* a step runs is chosen here, once: the ``step_mdp`` key plan, whether a
post-step_mdp hook runs (transformed envs whose transforms define one), and the reset strategy:

* ``masked``: every row goes through the reset and a masked merge (no host read);
* ``sparse``: the done rows are read on the host once; no reset work when none is done (inside a
  ``torch.compile`` graph, where nothing can be read on the host, it runs ``masked``);
* ``native``: the env resets its finished rows inside its own ``_step``
  (:attr:`~gpusim.envs.common.EnvBase.native_autoreset`): no reset runs; the finished rows'
  ``"next"`` observations are blanked (NaN, or 0 for other dtypes), the next root takes the
  first observation of the new episode, the transforms restart their state in those rows through
  the ``_reset_on_native_autoreset`` hook, and the done flags of the next root are cleared (an
  ``is_init`` entry at a done level is set where that level was done).

:meth:`StepPipeline.run` is the one eager loop: ``rollout``, the eager
:class:`~gpusim.collectors.Collector`, :func:`~gpusim.envs.check_env_specs` and the eager steps
of a compiled runner all step through it.

The env hooks the pipeline calls (documented on :class:`~gpusim.envs.common.EnvBase`): ``step``,
``maybe_reset`` (when a class overrides it), ``_reset_rows(tensordict, masks, **kwargs)``,
``_post_step_mdp`` with its flag ``_post_mdp_hook``, ``_reset_on_native_autoreset``.

Examples:
    >>> from gpusim import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[4], seed=0)
    >>> pipe = env.step_pipeline
    >>> pipe.strategy, pipe is env.step_pipeline  # planned once
    ('sparse', True)
    >>> steps, root = pipe.run(env.reset(), env.rand_action, 30)  # the eager loop
    >>> len(steps), root["done"].any().item()  # finished rows were reset
    (30, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get
from gpusim.envs.episode import AutoResetMode, EpisodePlan, ResetMasks
from gpusim.envs.utils import StepMDP

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["StepPipeline", "PolicyExhausted"]


class PolicyExhausted(Exception):
    """Raised by a policy that has no action left (an open-loop replay): :meth:`StepPipeline.run`
    ends the loop there.

    Examples:
        >>> from gpusim import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0)
        >>> actions = iter([env.rand_action, env.rand_action])
        >>> def replay(td):
        ...     try:
        ...         return next(actions)(td)
        ...     except StopIteration:
        ...         raise PolicyExhausted from None
        >>> len(env.step_pipeline.run(env.reset(), replay, 10)[0])  # two actions, two steps
        2
    """


class StepPipeline:
    """``step_and_maybe_reset`` of one env, planned once (see the module docstring).

    Args:
        env: the env (an :class:`~gpusim.envs.common.EnvBase`); read when planning only.

    Attributes:
        strategy: ``"masked"``, ``"sparse"`` or ``"native"`` (the reset strategy).
        sparse: whether the env's :attr:`~gpusim.envs.common.EnvBase.auto_reset_mode` is sparse.
        step: the env's ``step``.
        step_mdp: the ``step_mdp`` plan of the loop (actions and rewards dropped).
        post_step_mdp: the env's ``_post_step_mdp`` hook, or ``None`` when it has none.
        episode: the env's :class:`~gpusim.envs.episode.EpisodePlan`.
        reset_done: the reset strategy (``maybe_reset`` of a next root: masked or sparse).
        maybe_reset: what ``step_and_maybe_reset`` resets with: ``reset_done``, or the env's own
            ``maybe_reset`` where its class overrides it.
        run_step: what ``env.step_and_maybe_reset`` runs: :meth:`step_and_maybe_reset`, or the
            function of :meth:`~gpusim.envs.common.EnvBase.compile_step_and_maybe_reset`.

    Examples:
        >>> from gpusim import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2], seed=0, auto_reset_mode="masked")
        >>> stepped, root = env.step_pipeline.step_and_maybe_reset(env.rand_action(env.reset()))
        >>> env.step_pipeline.strategy, stepped["next", "reward"].shape
        ('masked', torch.Size([2, 1]))
    """

    def __init__(self, env: EnvBase) -> None:
        self._plan(env)

    def _plan(self, env: EnvBase) -> None:
        from gpusim.envs.common import EnvBase

        cls = type(env)
        self.env = env
        self.step = env.step
        self.step_mdp = StepMDP(env).plan
        self.post_step_mdp = env._post_step_mdp if env._post_mdp_hook else None
        self.episode: EpisodePlan = env.episode
        self.sparse = env.auto_reset_mode is AutoResetMode.SPARSE
        self.native = env.native_autoreset
        self.strategy = "native" if self.native else ("sparse" if self.sparse else "masked")
        self.reset_done = self._sparse_reset if self.sparse else self._masked_reset
        # an env class with its own maybe_reset (imagination envs that never reset) keeps it
        own = cls.maybe_reset is not EnvBase.maybe_reset
        self.maybe_reset = env.maybe_reset if own else self.reset_done
        if not own and not self.native and not env.ends_episodes:  # no row can be done
            self.maybe_reset = _no_reset
        self._reset_rows = env._reset_rows
        self._batched_episodes: dict = {}
        # ``compile_step_and_maybe_reset`` stores its function in the env's ``__dict__`` (a plain
        # attribute would go through ``nn.Module.__setattr__``): what ``env.step_and_maybe_reset`` runs
        compiled = env.__dict__.get("_compiled_step_and_maybe_reset")
        self.run_step = self.step_and_maybe_reset if compiled is None else compiled

    def __getstate__(self) -> dict:
        return {"env": self.env}  # pickled or copied: planned again on first use

    def __getattr__(self, name: str) -> Any:  # only reached for a name the plan has not set
        planned = "step" in self.__dict__
        if planned or name == "env" or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        self._plan(self.__dict__["env"])  # unpickled or copied: planned again, once
        return object.__getattribute__(self, name)

    # ------------------------------------------------------------------ one step
    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, builds the next root, runs the post-step_mdp hook and resets the done rows.

        Returns:
            ``(stepped, next_root)`` as :meth:`EnvBase.step_and_maybe_reset
            <gpusim.envs.common.EnvBase.step_and_maybe_reset>`.

        Examples:
            >>> import torch
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2], seed=0)
            >>> td = env.reset()
            >>> td["state"][0, 2] = 0.5  # row 0 leans past the limit: it ends on this step
            >>> stepped, root = env.step_pipeline.step_and_maybe_reset(env.rand_action(td))
            >>> stepped["next", "done"].flatten().tolist(), root["done"].flatten().tolist()
            ([True, False], [False, False])
        """
        stepped = self.step(tensordict)
        first_obs = self._blank_ended(stepped) if self.native else None
        stepped, root = self.advance(stepped)
        if first_obs is not None:
            return stepped, self._native_reset(root, first_obs)
        return stepped, self.maybe_reset(root)

    def advance(self, stepped: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """``step_mdp`` of a stepped tensordict, then the post-step_mdp hook (no reset).

        Returns:
            ``(stepped, next_root)`` (the hook may edit both).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2], seed=0)
            >>> stepped, root = env.step_pipeline.advance(env.step(env.rand_action(env.reset())))
            >>> sorted(root.keys())  # no action, no reward: the root of the next step
            ['done', 'observation', 'state', 'terminated']
        """
        root = self.step_mdp(stepped)
        if self.post_step_mdp is not None:
            stepped, root = self.post_step_mdp(stepped, root)
        return stepped, root

    # ------------------------------------------------------------------ the eager loop
    def run(
        self,
        root: TensorDictBase,
        policy: Callable[[TensorDictBase], TensorDictBase],
        max_steps: int,
        *,
        reset: bool = True,
        reset_last: bool = True,
        break_when_any_done: bool = False,
        break_when_all_done: bool = False,
        callback: Callable[[Any, TensorDictBase], Any] | None = None,
        set_truncated: bool = False,
    ) -> tuple[list[TensorDictBase], TensorDictBase]:
        """The one eager loop: ``policy`` then a step, ``max_steps`` times.

        Args:
            root: the first root (reset data).
            policy: writes the action into the root it receives (a :class:`PolicyExhausted`
                it raises ends the loop).
            max_steps: the number of steps.
            reset: reset the finished rows between steps (``env.step_and_maybe_reset``);
                ``False``: never reset (the steps go on from the finished rows).
            reset_last: also reset after the last step (``False``: the last root is the plain
                ``step_mdp`` of the last step, so that a later run continues the episodes).
            break_when_any_done: stop after the step on which any row finished (no resets).
            break_when_all_done: stop once every row has finished at least once.
            callback: called as ``callback(env, stepped)`` after each step.
            set_truncated: mark the last step truncated (when it is not reset).

        Returns:
            ``(steps, next_root)``: the stepped tensordicts, and the root of the next step.

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3], seed=0)
            >>> steps, root = env.step_pipeline.run(env.reset(), env.rand_action, 500, break_when_any_done=True)
            >>> steps[-1]["next", "done"].any().item(), len(steps) < 500
            (True, True)
        """
        env = self.env
        resets = reset and not break_when_any_done
        steps: list[TensorDictBase] = []
        seen = None
        for i in range(max_steps):
            try:
                td = policy(root)
            except PolicyExhausted:
                if not steps:
                    raise ValueError("rollout(actions=...) got an iterator that yields no action") from None
                break
            last = i == max_steps - 1
            if resets and (reset_last or not last):
                stepped, root = env.step_and_maybe_reset(td)  # (compiled or overridden by the env)
            else:
                stepped = self.step(td)
                if set_truncated and last:
                    _set_truncated(env, fast_get(stepped, "next"))
                stepped, root = self.advance(stepped)
            steps.append(stepped)
            if callback is not None:
                callback(env, stepped)
            if break_when_any_done and bool(self.ended(stepped).any()):
                break
            if break_when_all_done:
                done_now = self.ended(stepped)
                seen = done_now if seen is None else seen | done_now
                if bool(seen.all()):
                    break
        return steps, root

    def ended(self, stepped: TensorDictBase) -> torch.Tensor:
        """Which rows of a stepped tensordict finished (any done flag of any level).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3], seed=0)
            >>> env.step_pipeline.ended(env.step(env.rand_action(env.reset()))).tolist()
            [False, False, False]
        """
        return self.episode_for(stepped).ended(fast_get(stepped, "next"))

    # ------------------------------------------------------------------ resets
    def sparse_now(self) -> bool:
        """Whether this call may read reset rows on the host (sparse, and not compiling).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> CartPoleEnv().step_pipeline.sparse_now(), CartPoleEnv(auto_reset_mode="masked").step_pipeline.sparse_now()
            (True, False)
        """
        return self.sparse and not torch.compiler.is_compiling()

    def episode_for(self, tensordict: TensorDictBase | None) -> EpisodePlan:
        """The episode plan for ``tensordict``: the env's, or for a batch-unlocked env without
        batch dims run on batched data, the plan of the data's batch (kept in the pipeline).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> env.step_pipeline.episode_for(env.reset()) is env.episode
            True
        """
        episode = self.episode
        env = self.env
        if tensordict is None or env.batch_size or env.batch_locked:
            return episode
        batch = tensordict.batch_size
        if batch == env.batch_size:
            return episode
        plan = self._batched_episodes.get(batch)
        if plan is None:
            spec = env.full_done_spec
            plan = self._batched_episodes[batch] = EpisodePlan(spec.expand(*batch, *spec.shape), batch)
        return plan

    def reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        """The env's ``_reset_rows`` for the rows of ``masks``, merged with ``tensordict`` (what
        ``reset`` and the reset strategies run; the debug mode checks the reset data).

        Examples:
            >>> import torch
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2], seed=0)
            >>> td = env.reset().set("_reset", torch.tensor([[True], [False]]))
            >>> before = td["state"].clone()
            >>> masks = env.episode.resolve(td)
            >>> (env.step_pipeline.reset_rows(td, masks)["state"] != before).any(-1).tolist()
            [True, False]
        """
        reset_out = self._reset_rows(tensordict, masks, **kwargs)
        if self.env.run_type_checks:
            from gpusim.envs._boundary import check_output

            check_output(self.env, reset_out, reset=True)
        if tensordict is None:
            return reset_out
        return self.episode_for(tensordict).merge(reset_out, tensordict, masks)

    def _masked_reset(self, root: TensorDictBase) -> TensorDictBase:
        episode = self.episode_for(root)
        masks = episode.done_masks(root)
        episode.write(root, masks)
        return self.reset_rows(root, masks)

    def _sparse_reset(self, root: TensorDictBase) -> TensorDictBase:
        if torch.compiler.is_compiling():  # no host read inside a graph
            return self._masked_reset(root)
        episode = self.episode_for(root)
        masks = episode.sparse_done_masks(root)  # the done flags, read on the host once
        if masks is None:
            return root
        episode.write(root, masks)
        return self.reset_rows(root, masks)

    # ------------------------------------------------------------------ native auto-reset
    def _blank_ended(self, stepped: TensorDictBase) -> dict:
        """Blanks the ``"next"`` observations of the finished rows; returns the env's values
        (the first observations of the new episodes)."""
        next_td = fast_get(stepped, "next")
        ended = self.episode.ended(next_td)
        first_obs = {}
        for key in self.env.observation_keys:
            obs = next_td.get(key, None)
            if not isinstance(obs, torch.Tensor):
                continue
            first_obs[key] = obs
            rows = ended.reshape(*ended.shape, *([1] * (obs.ndim - ended.ndim)))
            blank = torch.full_like(obs, float("nan")) if obs.is_floating_point() else torch.zeros_like(obs)
            next_td.set(key, torch.where(rows, blank, obs))
        return first_obs

    def _native_reset(self, root: TensorDictBase, first_obs: dict) -> TensorDictBase:
        """The next root of a native auto-reset (see the module docstring)."""
        env, plan = self.env, self.episode
        for key, obs in first_obs.items():
            if isinstance(root.get(key, None), torch.Tensor):  # kept by step_mdp
                root.set(key, obs)
        masks = plan.done_masks(root, sparse=False)
        done_flags = {key: root.get(key) for key in env.done_keys}
        hook_input = root.copy()
        plan.write(hook_input, masks)
        reset_out = env._reset_on_native_autoreset(hook_input, root.copy())
        root = plan.merge(reset_out, root, masks)
        for key, done in done_flags.items():
            tkey = _keys.as_tuple(key)
            init_key = (*tkey[:-1], "is_init")
            if tkey[-1] == "done" and root.get(init_key, None) is not None:
                root.set(init_key, done.clone())
            root.set(key, torch.zeros_like(done))
        return root


def _no_reset(root: TensorDictBase) -> TensorDictBase:
    """The auto-reset of an env whose rows never end (``EnvBase.ends_episodes`` is ``False``)."""
    return root


def _set_truncated(env: EnvBase, next_td: TensorDictBase) -> None:
    """Marks every row of ``next_td`` truncated and done (at the levels with a ``truncated``)."""
    for level in env.done_levels:
        node = next_td if level.prefix == () else next_td.get(level.prefix)
        trunc = node.get("truncated", None)
        if trunc is None:
            continue
        node.set("truncated", torch.ones_like(trunc))
        node.set("done", torch.ones_like(node.get("done")))
