"""Asynchronous env pools: ``AsyncEnvPool``, ``ThreadingAsyncEnvPool``, ``ProcessorAsyncEnvPool``.

A pool runs ``num_envs`` independent envs, each in its own worker (a thread, or a process), and
lets the caller send work to some of them and collect whatever is ready: ``async_*_send``
queues a reset / step / step-and-reset on the envs named by the input's ``"env_index"`` entry
(or ``env_index=``), ``async_*_recv`` returns the results of at least ``min_get`` of them as one
tensordict (stacked along a leading pool dim, each row carrying its ``"env_index"``), in env
order. ``reset``, ``step``, ``step_and_maybe_reset`` and ``rollout`` are the synchronous
``EnvBase`` interface over all envs, so a pool is also an env of batch ``[num_envs, *env_batch]``
(nestable in a :class:`~gpusim.transforms.TransformedEnv`).

Receiving: ``recv(min_get, max_get=None, timeout=None)`` waits for ``min_get`` results, then
takes the results already there (``timeout=None``) or those arriving within ``timeout`` seconds,
up to ``max_get``. ``recv(env_index=i)`` waits for the result of env ``i`` sent with
``send(..., env_index=i)`` (per-env traffic, for one consumer thread per env).

Data exchange (``exchange``): ``"queue"`` pickles the tensordicts through the queues;
``"shm"`` (processes only) moves their tensors to shared memory, so that only handles travel.

Examples:
    >>> from functools import partial
    >>> from gpusim import CartPoleEnv
    >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(3)], backend="threading")
    >>> pool.batch_size
    torch.Size([3])
    >>> pool.async_reset_send(env_index=[0, 2])
    >>> list(pool.async_reset_recv(min_get=2)["env_index"])
    [0, 2]
    >>> pool.close()
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.multiprocessing
from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, TensorDictBase

from gpusim.envs.batched import _serialize
from gpusim.envs.common import EnvBase
from gpusim.specs import NonTensor

__all__ = ["AsyncEnvPool", "ThreadingAsyncEnvPool", "ProcessorAsyncEnvPool"]

_KINDS = ("reset", "step", "step_and_maybe_reset")
_STACKS = ("dense", "maybe_dense", "lazy")


class _Factory:
    """A picklable ``maker(**kwargs)`` (cloudpickle), for processes started by ``spawn``."""

    def __init__(self, maker: Any, kwargs: dict) -> None:
        self.payload = _serialize.dumps((maker, kwargs))

    def __call__(self) -> EnvBase:
        maker, kwargs = _serialize.loads(self.payload)
        return maker if isinstance(maker, EnvBase) else maker(**kwargs)


def _build(maker: Any, kwargs: dict) -> EnvBase:
    env = maker if isinstance(maker, EnvBase) else maker(**kwargs)
    if not isinstance(env, EnvBase):
        raise TypeError(f"an env maker returned a {type(env).__name__}, not a gpusim EnvBase")
    return env


def _serve(index: int, make: Callable[[], EnvBase], inbox: Any, shared: dict, private: Any, share: bool) -> None:
    """Worker loop of env ``index``: runs the commands of ``inbox`` and answers on the queue of
    the command's kind (``shared[kind]``) or on ``private`` (per-env and control commands)."""
    try:
        env = make()
    except BaseException as err:  # reported on the first command
        env, failure = None, err
    else:
        failure = None
    while True:
        command, kind, data, per_env = inbox.get()
        if command == "close":
            if env is not None:
                env.close()
            private.put(("ok", index, None))
            return
        try:
            if failure is not None:
                raise RuntimeError(f"env {index} could not be built: {failure!r}") from failure
            value = _run(env, index, command, data)
            if share:
                value = _share_result(value)
            answer = ("ok", index, value)
        except BaseException as err:
            answer = ("error", index, f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
        (private if per_env or kind is None else shared[kind]).put(answer)


def _run(env: EnvBase, index: int, command: str, data: Any) -> Any:
    if command == "reset":
        return _tag(env.reset(data), index)
    if command == "step":
        return _tag(env.step(data), index)
    if command == "step_and_maybe_reset":
        out, nxt = env.step_and_maybe_reset(data)
        return _tag(out, index), _tag(nxt, index)
    if command == "step_next":  # the "next" data only (the pool as the base of a TransformedEnv)
        return env._step_output(data)
    if command == "specs":
        return env.specs.clone(), env.batch_size, env.device
    if command == "seed":
        return env.set_seed(*data)
    raise ValueError(f"unknown pool command {command!r}")


def _tag(td: TensorDictBase, index: int) -> TensorDictBase:
    return td.set(AsyncEnvPool._env_idx_key, NonTensorData(index, batch_size=td.batch_size))


def _share_result(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_share_result(v) for v in value)
    if isinstance(value, TensorDictBase):  # the tensors only (non-tensor data is pickled)
        for tensor in value.values(True, True):
            if isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu":
                tensor.share_memory_()
    return value


class AsyncEnvPool(EnvBase):
    """A pool of independent envs stepped and reset asynchronously (the module docstring
    describes sending and receiving).

    ``AsyncEnvPool(...)`` builds the pool of the chosen ``backend``: a
    :class:`ThreadingAsyncEnvPool` or a :class:`ProcessorAsyncEnvPool`.

    Args:
        env_makers: an env maker (callable returning an ``EnvBase``) or env, or a list of them
            (one per env). Their specs must be equal.
        backend: ``"threading"`` (default; one thread per env: for envs that release the
            GIL) or ``"multiprocessing"`` (one process per env).
        stack: how results are stacked: ``"dense"`` (``torch.stack``), ``"maybe_dense"``
            (dense when the results have the same structure, else a lazy stack) or ``"lazy"``.
        exchange: ``"queue"`` or ``"shm"`` (processes only, see the module docstring).
        create_env_kwargs: keyword arguments of the makers (one dict, or one per env).

    Attributes:
        num_envs: the number of envs.
        min_get: the default ``min_get`` of the ``recv`` methods (1).

    Examples:
        >>> import torch
        >>> from functools import partial
        >>> from gpusim import CartPoleEnv
        >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
        >>> pool
        ThreadingAsyncEnvPool(num_envs=2, batch_size=[2], stack='dense')
        >>> td = pool.reset()  # the synchronous EnvBase interface over every env
        >>> td["env_index"].tolist(), td["observation"].shape
        ([0, 1], torch.Size([2, 4]))
        >>> pool.async_step_send(td[1:].set("action", torch.tensor([1])))  # env 1 only
        >>> out = pool.async_step_recv(min_get=1)
        >>> out["env_index"].tolist(), out["next", "observation"].shape
        ([1], torch.Size([1, 4]))
        >>> pool.close()
    """

    #: The entry naming the env of each row of the inputs and results.
    _env_idx_key = "env_index"
    _backend = "threading"

    @classmethod
    def _redirect_construction(cls, args: tuple, kwargs: dict) -> EnvBase | None:
        if cls is not AsyncEnvPool:
            return None
        backend = kwargs.get("backend", "threading")
        classes = {"threading": ThreadingAsyncEnvPool, "multiprocessing": ProcessorAsyncEnvPool}
        if backend not in classes:
            raise ValueError(f"AsyncEnvPool backend must be one of {sorted(classes)}, got {backend!r}")
        return classes[backend](*args, **kwargs)

    def __init__(
        self,
        env_makers: Any,
        *,
        backend: str | None = None,
        stack: str = "dense",
        exchange: str = "queue",
        create_env_kwargs: dict | Sequence[dict] | None = None,
    ) -> None:
        if backend is None:
            backend = self._backend
        elif backend != self._backend:
            raise ValueError(f"{type(self).__name__} runs the {self._backend!r} backend, got backend={backend!r}")
        makers = list(env_makers) if isinstance(env_makers, (list, tuple)) else [env_makers]
        if not makers:
            raise ValueError("AsyncEnvPool needs at least one env maker")
        if stack not in _STACKS:
            raise ValueError(f"stack must be one of {list(_STACKS)}, got {stack!r}")
        if exchange not in ("queue", "shm"):
            raise ValueError(f"exchange must be 'queue' or 'shm', got {exchange!r}")
        if exchange == "shm" and backend != "multiprocessing":
            raise ValueError("exchange='shm' is only supported with backend='multiprocessing'")
        n = len(makers)
        if create_env_kwargs is None:
            create_env_kwargs = {}
        if isinstance(create_env_kwargs, dict):
            create_env_kwargs = [create_env_kwargs] * n
        if len(create_env_kwargs) != n:
            raise ValueError(f"create_env_kwargs must be a dict or a list of {n} dicts, got {len(create_env_kwargs)}")
        d = self.__dict__
        d["env_makers"] = makers
        d["create_env_kwargs"] = list(create_env_kwargs)
        d["num_envs"] = n
        d["backend"] = backend
        d["stack"] = stack
        d["exchange"] = exchange
        d["min_get"] = 1
        d["_pending"] = dict.fromkeys(_KINDS, 0)
        d["_busy"] = set()
        d["_lock"] = threading.Lock()
        d["_workers"] = []
        self._start()
        specs = [self._control(i, "specs") for i in range(n)]
        first, env_batch, env_device = specs[0]
        for i, (spec, batch, _device) in enumerate(specs[1:], 1):
            if batch != env_batch or spec != first:
                self._maybe_shutdown()
                raise ValueError(
                    f"the envs of an AsyncEnvPool must have the same specs and batch size: env {i} differs from env 0"
                )
        d["env_batch_size"] = torch.Size(env_batch)
        super().__init__(device=env_device, batch_size=(n, *env_batch))
        full = first.expand(n, *env_batch)
        full["input_spec", "full_state_spec"].set(
            self._env_idx_key, NonTensor(shape=(n, *env_batch), device=env_device, example_data=0)
        )
        self.input_spec = full["input_spec"]
        self.output_spec = full["output_spec"]

    # ------------------------------------------------------------------ backend
    def _parts(self) -> tuple[Callable[[], Any], Callable[..., Any], Callable[[Any, dict], Any]]:
        """The backend: a queue class, a worker class (``threading.Thread``-like) and a factory
        turning ``(maker, kwargs)`` into what the worker calls to build its env."""
        raise NotImplementedError

    def _start(self) -> None:
        """Starts one worker per env, with its inbox and private outbox, and the outboxes
        shared by the envs (one per command kind)."""
        make_queue, make_worker, factory = self._parts()
        share = self.exchange == "shm"
        d = self.__dict__
        d["_inboxes"] = [make_queue() for _ in range(self.num_envs)]
        d["_private"] = [make_queue() for _ in range(self.num_envs)]
        d["_shared"] = {kind: make_queue() for kind in _KINDS}
        workers = []
        for i, (maker, kwargs) in enumerate(zip(self.env_makers, self.create_env_kwargs)):
            worker = make_worker(
                target=_serve,
                args=(i, factory(maker, kwargs), self._inboxes[i], self._shared, self._private[i], share),
                name=f"gpusim-AsyncEnvPool-env-{i}",
                daemon=True,
            )
            worker.start()
            workers.append(worker)
        d["_workers"] = workers

    @property
    def env_batch_sizes(self) -> list[torch.Size]:
        """The batch size of every env.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, batch_size=[3])] * 2)
            >>> pool.batch_size, pool.env_batch_sizes
            (torch.Size([2, 3]), [torch.Size([3]), torch.Size([3])])
            >>> pool.close()
        """
        return [self.env_batch_size] * self.num_envs

    def _send_command(self, i: int, command: str, kind: str | None, data: Any, per_env: bool) -> None:
        self._inboxes[i].put((command, kind, data, per_env))

    def _control(self, i: int, command: str, data: Any = None) -> Any:
        self._send_command(i, command, None, data, True)
        return self._unwrap(self._private[i].get())

    @staticmethod
    def _unwrap(answer: tuple) -> Any:
        status, index, value = answer
        if status == "error":
            raise RuntimeError(f"AsyncEnvPool env {index} failed: {value}")
        return value

    def shutdown(self) -> None:
        """Closes the envs and stops the workers.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> pool.shutdown()
            >>> pool.is_closed
            True
        """
        workers = self.__dict__.get("_workers", [])
        if not workers:
            return
        for i in range(len(workers)):
            self._send_command(i, "close", None, None, True)
        for i, worker in enumerate(workers):
            try:
                self._private[i].get(timeout=10.0)
            except queue.Empty:
                pass
            worker.join(timeout=10.0)
        self.__dict__["_workers"] = []
        self.__dict__["_closed"] = True

    def _maybe_shutdown(self) -> None:
        """:meth:`shutdown`, ignoring errors (a pool being torn down)."""
        try:
            self.shutdown()
        except Exception:
            pass

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Closes the envs and stops the workers (``raise_if_closed``: raise when already closed).

        Raises:
            RuntimeError: ``raise_if_closed`` and the pool is already closed.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> pool.close()
            >>> pool.close(raise_if_closed=True)
            Traceback (most recent call last):
            ...
            RuntimeError: AsyncEnvPool.close: the pool is already closed
        """
        if raise_if_closed and self.is_closed:
            raise RuntimeError("AsyncEnvPool.close: the pool is already closed")
        self._maybe_shutdown()
        self.__dict__["_closed"] = True

    def __del__(self) -> None:
        self._maybe_shutdown()

    # ------------------------------------------------------------------ sending
    def _targets(self, tensordict: TensorDictBase | None, env_index: int | Sequence[int] | None) -> list:
        """``[(env, its input or None)]`` for a send."""
        if isinstance(env_index, int):
            return [(self._check_index(env_index), tensordict)]
        if env_index is not None:
            indices = [self._check_index(i) for i in env_index]
            rows = [None] * len(indices) if tensordict is None else list(tensordict.unbind(0))
            if len(rows) != len(indices):
                raise ValueError(f"{len(indices)} env indices for a tensordict of {len(rows)} rows")
            return list(zip(indices, rows))
        if tensordict is None:
            raise ValueError("a send needs a tensordict with an 'env_index' entry, or env_index=")
        indices = self._indices_of(tensordict)
        return list(zip(indices, tensordict.unbind(0)))

    def _indices_of(self, tensordict: TensorDictBase) -> list[int]:
        value = tensordict.get(self._env_idx_key, None)
        if value is None:
            raise KeyError(
                f"the tensordict has no {self._env_idx_key!r} entry naming the envs of its rows (or pass env_index=)"
            )
        if isinstance(value, torch.Tensor):
            values = value.reshape(value.shape[0], -1)[:, 0].tolist()
        else:
            values = value.tolist() if hasattr(value, "tolist") else list(value)
        out = []
        for v in values:
            while isinstance(v, (list, tuple)):
                v = v[0]
            out.append(self._check_index(int(v)))
        return out

    def _check_index(self, i: int) -> int:
        if not 0 <= int(i) < self.num_envs:
            raise IndexError(f"env index {i} out of range for a pool of {self.num_envs} envs")
        return int(i)

    def _send(self, kind: str, tensordict: TensorDictBase | None, env_index: Any) -> None:
        targets = self._targets(tensordict, env_index)
        per_env = isinstance(env_index, int)
        with self._lock:
            indices = [i for i, _ in targets]
            if not per_env:
                busy = self._busy.intersection(indices)
                if busy:
                    raise RuntimeError(f"envs {sorted(busy)} are still busy with a previous command")
                self._busy.update(indices)
                self._pending[kind] += len(indices)
        for i, data in targets:
            if data is not None:
                data = data.exclude(self._env_idx_key)
            self._send_command(i, kind, kind, data, per_env)

    def async_reset_send(
        self, tensordict: TensorDictBase | None = None, env_index: int | Sequence[int] | None = None
    ) -> None:
        """Queues a reset of the envs named by ``tensordict["env_index"]`` or ``env_index``.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> pool.async_reset_send(env_index=[1])
            >>> pool.async_reset_recv(min_get=1)["env_index"].tolist()
            [1]
            >>> pool.close()
        """
        self._send("reset", tensordict, env_index)

    def async_step_send(self, tensordict: TensorDictBase, env_index: int | Sequence[int] | None = None) -> None:
        """Queues a step of the envs named by ``tensordict["env_index"]`` or ``env_index``.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> td = pool.reset()
            >>> td = td.set("action", pool.action_spec.zero())
            >>> pool.async_step_send(td)  # every env (the rows' "env_index")
            >>> pool.async_step_recv(min_get=2)["next", "reward"].flatten().tolist()
            [1.0, 1.0]
            >>> pool.close()
        """
        self._send("step", tensordict, env_index)

    def async_step_and_maybe_reset_send(
        self, tensordict: TensorDictBase, env_index: int | Sequence[int] | None = None
    ) -> None:
        """Queues a ``step_and_maybe_reset`` of the envs named by the input or ``env_index``.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> td = pool.reset().set("action", pool.action_spec.zero())
            >>> pool.async_step_and_maybe_reset_send(td[:1])  # env 0 only
            >>> stepped, root = pool.async_step_and_maybe_reset_recv(min_get=1)
            >>> stepped["env_index"].tolist(), root["observation"].shape
            ([0], torch.Size([1, 4]))
            >>> pool.close()
        """
        self._send("step_and_maybe_reset", tensordict, env_index)

    # ------------------------------------------------------------------ receiving
    def _receive(
        self, kind: str, min_get: int | None, max_get: int | None, timeout: float | None, env_index: int | None
    ):
        if env_index is not None:
            return self._unwrap(self._private[self._check_index(env_index)].get())
        min_get = self.min_get if min_get is None else min_get
        if min_get < 1:
            raise ValueError(f"min_get must be positive, got {min_get}")
        if max_get is not None and max_get < min_get:
            raise ValueError(
                f"max_get must be greater than or equal to min_get, got min_get={min_get}, max_get={max_get}"
            )
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be non-negative, got {timeout}")
        if min_get > self._pending[kind]:
            raise RuntimeError(f"cannot await {min_get} {kind} results: only {self._pending[kind]} are pending")
        source = self._shared[kind]
        answers = [source.get() for _ in range(min_get)]
        limit = self._pending[kind] if max_get is None else min(max_get, self._pending[kind])
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(answers) < limit:
            try:
                if deadline is None:
                    answers.append(source.get_nowait())
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    answers.append(source.get(timeout=remaining))
            except queue.Empty:
                break
        with self._lock:
            self._pending[kind] -= len(answers)
            self._busy.difference_update(index for _, index, _ in answers)
        answers.sort(key=lambda a: a[1])
        values = [self._unwrap(a) for a in answers]
        if kind == "step_and_maybe_reset":
            return self._stack([v[0] for v in values]), self._stack([v[1] for v in values])
        return self._stack(values)

    def _stack(self, tds: list) -> TensorDictBase:
        if self.stack == "lazy":
            return LazyStackedTensorDict.lazy_stack(tds, 0)
        if self.stack == "maybe_dense":
            return LazyStackedTensorDict.maybe_dense_stack(tds, 0)
        return torch.stack(tds, 0)

    def async_reset_recv(
        self,
        min_get: int | None = None,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> TensorDictBase:
        """The results of queued resets, stacked in env order.

        Args:
            min_get: wait for at least this many results (default: ``self.min_get``).
            env_index: wait for the result of this env only, sent with ``env_index=`` (returned
                unstacked).
            max_get: take at most this many.
            timeout: after ``min_get`` results, also take those arriving within ``timeout``
                seconds (``None``: only those already there).

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> pool.async_reset_send(env_index=1)
            >>> pool.async_reset_recv(env_index=1)["observation"].shape  # one env's result
            torch.Size([4])
            >>> pool.close()
        """
        return self._receive("reset", min_get, max_get, timeout, env_index)

    def async_step_recv(
        self,
        min_get: int | None = None,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> TensorDictBase:
        """The results of queued steps (arguments as :meth:`async_reset_recv`).

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> td = pool.reset().set("action", pool.action_spec.zero())
            >>> pool.async_step_send(td, env_index=[0, 1])
            >>> pool.async_step_recv(min_get=2)["env_index"].tolist()
            [0, 1]
            >>> pool.close()
        """
        return self._receive("step", min_get, max_get, timeout, env_index)

    def async_step_and_maybe_reset_recv(
        self,
        min_get: int | None = None,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """The results of queued ``step_and_maybe_reset`` calls: ``(stepped, next roots)``
        (arguments as :meth:`async_reset_recv`).

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> td = pool.reset().set("action", pool.action_spec.zero())
            >>> pool.async_step_and_maybe_reset_send(td)
            >>> stepped, root = pool.async_step_and_maybe_reset_recv(min_get=2)
            >>> stepped["next", "done"].shape, root["env_index"].tolist()
            (torch.Size([2, 1]), [0, 1])
            >>> pool.close()
        """
        return self._receive("step_and_maybe_reset", min_get, max_get, timeout, env_index)

    # ------------------------------------------------------------------ synchronous interface
    def _all(self, tensordict: TensorDictBase | None) -> TensorDictBase:
        if tensordict is None:
            tensordict = TensorDict({}, batch_size=self.batch_size, device=self.device)
        self._check_batch(tensordict)
        return tensordict

    def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Resets every env (synchronously) and returns the stacked results.

        Raises:
            TypeError: keyword arguments (the pool's envs take none through it).

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> pool.reset()["observation"].shape
            torch.Size([2, 4])
            >>> pool.close()
        """
        if kwargs:
            raise TypeError(f"AsyncEnvPool.reset takes no keyword arguments, got {sorted(kwargs)}")
        self.async_reset_send(self._all(tensordict), env_index=list(range(self.num_envs)))
        return self.async_reset_recv(min_get=self.num_envs)

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Steps every env (synchronously) and returns the stacked results.

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> td = pool.reset().set("action", pool.action_spec.zero())
            >>> pool.step(td)["next", "observation"].shape
            torch.Size([2, 4])
            >>> pool.close()
        """
        self._check_batch(tensordict)
        self.async_step_send(tensordict, env_index=list(range(self.num_envs)))
        return self.async_step_recv(min_get=self.num_envs)

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """``step_and_maybe_reset`` of every env (synchronously).

        Examples:
            >>> from functools import partial
            >>> from gpusim import CartPoleEnv
            >>> pool = AsyncEnvPool([partial(CartPoleEnv, seed=i) for i in range(2)])
            >>> td = pool.reset().set("action", pool.action_spec.zero())
            >>> stepped, root = pool.step_and_maybe_reset(td)
            >>> stepped["next", "reward"].flatten().tolist(), root["observation"].shape
            ([1.0, 1.0], torch.Size([2, 4]))
            >>> pool.close()
        """
        self._check_batch(tensordict)
        self.async_step_and_maybe_reset_send(tensordict, env_index=list(range(self.num_envs)))
        return self.async_step_and_maybe_reset_recv(min_get=self.num_envs)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        rows = tensordict.exclude(self._env_idx_key).unbind(0)
        for i, row in enumerate(rows):
            self._send_command(i, "step_next", None, row, True)
        return self._stack([self._unwrap(self._private[i].get()) for i in range(self.num_envs)])

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        return self._reset_rows(tensordict, self.episode.resolve(tensordict), **kwargs)

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: Any, **kwargs: Any) -> TensorDictBase:
        """Resets the envs with a selected row (the pool as the base of a ``TransformedEnv``);
        the rows of the other envs hold zeros (the episode merge keeps their previous data)."""
        if kwargs:
            raise TypeError(f"AsyncEnvPool reset takes no keyword arguments, got {sorted(kwargs)}")
        rows = masks.env_rows()
        if rows is None:
            chosen = list(range(self.num_envs))
        else:
            chosen = [i for i, s in enumerate(rows.reshape(self.num_envs, -1).any(-1).tolist()) if s]
        data = None if tensordict is None else tensordict.exclude(self._env_idx_key).unbind(0)
        for i in chosen:
            self._send_command(i, "reset", None, None if data is None else data[i], True)
        results = {i: self._unwrap(self._private[i].get()) for i in chosen}
        if len(results) < self.num_envs:
            filler = self.fake_tensordict().exclude("next", *self.action_keys)
            for i in range(self.num_envs):
                if i not in results:
                    results[i] = _tag(filler[i].clone(), i)
        return self._complete_done(self._stack([results[i] for i in range(self.num_envs)]))

    def _set_seed(self, seed: int | None) -> None:
        self.set_seed(seed)

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the envs in order, chaining the seeds; returns the last env's next seed.

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> a, b = AsyncEnvPool([CartPoleEnv] * 2), AsyncEnvPool([CartPoleEnv] * 2)
            >>> a.set_seed(3) == b.set_seed(3)
            True
            >>> a.reset()["observation"].equal(b.reset()["observation"])
            True
            >>> a.close(); b.close()
        """
        from gpusim.envs.random_actions import note_seed

        note_seed(self, seed)  # rollout()'s random actions follow the seed (EnvBase.set_seed)
        for i in range(self.num_envs):
            seed = self._control(i, "seed", (seed, static_seed))
        return seed

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_envs={self.num_envs}, batch_size={list(self.batch_size)}, stack={self.stack!r})"
        )


class ThreadingAsyncEnvPool(AsyncEnvPool):
    """An :class:`AsyncEnvPool` whose envs run in threads of this process (one per env): for
    envs that release the GIL (native simulators, I/O).

    Examples:
        >>> from gpusim import PendulumEnv
        >>> pool = ThreadingAsyncEnvPool([PendulumEnv, PendulumEnv])
        >>> pool.rollout(3).shape
        torch.Size([2, 3])
        >>> pool.close()
    """

    _backend = "threading"

    def _parts(self) -> tuple[Callable[[], Any], Callable[..., Any], Callable[[Any, dict], Any]]:
        return queue.Queue, threading.Thread, lambda maker, kwargs: lambda: _build(maker, kwargs)


class ProcessorAsyncEnvPool(AsyncEnvPool):
    """An :class:`AsyncEnvPool` whose envs run in worker processes (one per env), started with
    the default start method of ``multiprocessing``; makers are sent with cloudpickle, so
    lambdas work with ``spawn`` too.

    Examples:
        >>> from gpusim import PendulumEnv
        >>> pool = ProcessorAsyncEnvPool([PendulumEnv, PendulumEnv], exchange="shm")
        >>> pool.reset()["observation"].shape
        torch.Size([2, 3])
        >>> pool.close()
    """

    _backend = "multiprocessing"

    def _parts(self) -> tuple[Callable[[], Any], Callable[..., Any], Callable[[Any, dict], Any]]:
        share = self.exchange == "shm"
        ctx = torch.multiprocessing.get_context() if share else multiprocessing.get_context()
        return ctx.Queue, ctx.Process, _Factory
