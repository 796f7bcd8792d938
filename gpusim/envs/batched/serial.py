"""``SerialEnv``: a batch of envs stepped one after the other in the calling process.

Examples:
    >>> from gpusim.envs.batched import SerialEnv
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = SerialEnv(3, CartPoleEnv)
    >>> td = env.rollout(4, break_when_any_done=False)
    >>> td.batch_size
    torch.Size([3, 4])
    >>> env.set_seed(0) != 0
    True
"""

from __future__ import annotations

from typing import Any

from gpusim.envs.batched._runner import WorkerRunner
from gpusim.envs.batched._shared import Buffers
from gpusim.envs.batched.base import BatchedEnvBase
from gpusim.envs.batched.metadata import EnvMetaData
from gpusim.envs.common import EnvBase

__all__ = ["SerialEnv"]


class SerialEnv(BatchedEnvBase):
    """Runs ``num_workers`` envs sequentially in this process, as one env of batch
    ``[num_workers, *sub_batch]``.

    No inter-process cost: the right choice for light envs and for debugging. Arguments are
    those of :class:`~gpusim.envs.batched.base.BatchedEnvBase`.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> env = SerialEnv(2, [PendulumEnv, lambda: PendulumEnv(g=9.81)])
        >>> env.g
        [10.0, 9.81]
    """

    def __init__(self, *args: Any, mp_start_method: str | None = None, **kwargs: Any) -> None:
        if mp_start_method is not None:
            raise ValueError(
                f"SerialEnv runs its envs in this process: mp_start_method={mp_start_method!r} is a ParallelEnv "
                "option (None is accepted, as TorchRL's SerialEnv does)"
            )
        super().__init__(*args, **kwargs)
        if self.__dict__.get("_live_workers"):  # metadata_from_workers: the envs exist already
            self.start()

    @staticmethod
    def _build_envs(fns: list, kwargs: list) -> list[EnvBase]:
        envs = []
        try:
            for i, (fn, kw) in enumerate(zip(fns, kwargs)):
                env = fn(**kw)
                if not isinstance(env, EnvBase):
                    raise TypeError(f"create_env_fn[{i}] returned a {type(env).__name__}, not a gpusim EnvBase")
                envs.append(env)
        except BaseException:
            for env in envs:
                env.close()
            raise
        return envs

    def _live_worker_metadata(self, fns: list, kwargs: list) -> list[EnvMetaData]:
        envs = self._build_envs(fns, kwargs)
        self.__dict__["_live_envs"] = envs
        try:
            return [EnvMetaData.metadata_from_env(env) for env in envs]
        except BaseException:
            self._stop_live_workers()
            raise

    def _stop_live_workers(self) -> None:
        for env in self.__dict__.pop("_live_envs", []):
            env.close()

    def _start_workers(self) -> None:
        envs = self.__dict__.pop("_live_envs", None)
        self.__dict__.pop("_live_workers", None)
        if envs is None:
            envs = self._build_envs(self.create_env_fn, self.create_env_kwargs)
        buffers = None
        if self._use_buffers:
            buffers = Buffers.allocate(
                self._plan, self.meta_data, self.num_workers, share_memory=self.shared_memory, memmap=self.memmap
            )
        self.__dict__["_exchange"] = buffers
        runners = [WorkerRunner(env, self._plan, buffers, i) for i, env in enumerate(envs)]
        self.__dict__["_runners"] = runners
        self._note_observation_readers([runner.reads_observations for runner in runners] if buffers else [])

    def _shutdown_workers(self) -> None:
        runners = self.__dict__.pop("_runners", [])
        errors = []
        for runner in runners:
            try:
                runner.close()
            except Exception as err:  # close every env even if one fails
                errors.append(err)
        if errors:
            raise errors[0]

    @property
    def _envs(self) -> list[EnvBase]:
        """The worker envs (started on access)."""
        self._ensure_started()
        return [runner.env for runner in self.__dict__["_runners"]]

    # ------------------------------------------------------------------ commands
    def _run_step(self, present: tuple | None, workers: list[int] | None = None, extras: list | None = None) -> list:
        runners = self.__dict__["_runners"]
        chosen = range(len(runners)) if workers is None else workers
        return [runners[i].step(present, None if extras is None else extras[i]) for i in chosen]

    def _run_reset(self, workers: list[int], present: tuple, kwargs: dict, extras: list | None = None) -> list:
        runners = self.__dict__["_runners"]
        return [runners[i].reset(present, kwargs, None if extras is None else extras[i]) for i in workers]

    def _run_step_td(self, items: list) -> list:
        runners = self.__dict__["_runners"]
        return [runners[i].step_td(td) for i, td in items]

    def _run_reset_td(self, items: list, kwargs: dict) -> list:
        runners = self.__dict__["_runners"]
        return [runners[i].reset_td(td, kwargs) for i, td in items]

    def _chosen(self, workers: list[int] | None) -> list:
        runners = self.__dict__["_runners"]
        return runners if workers is None else [runners[i] for i in workers]

    def _run_set_seed(self, seed: int | None, static_seed: bool, workers: list[int] | None = None) -> int | None:
        for runner in self._chosen(workers):
            seed = runner.set_seed(seed, static_seed)
        return seed

    def _run_getattr(self, name: str | tuple, workers: list[int] | None = None) -> list[tuple[bool, Any]]:
        return [runner.getattr(name) for runner in self._chosen(workers)]

    def _run_call(self, name: str | tuple, args: tuple, kwargs: dict, workers: list[int] | None = None) -> list:
        return [runner.call(name, args, kwargs) for runner in self._chosen(workers)]
