"""Batched env options (``use_buffers``, ``shared_memory``, ``memmap``, ``share_individual_td``,
``serial_for_single``), non-tensor entries, partial steps by worker, argument errors."""

from __future__ import annotations

from contextlib import closing
from functools import partial

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict, set_capture_non_tensor_stack

import gpusim as gs
from gpusim.specs import Categorical, Composite, NonTensor, Unbounded
from tests.envs.toy_envs import StatelessCounter


class _Texty(gs.EnvBase):
    """An env with a non-tensor observation (the step count, as text)."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(x=Unbounded((1,)), text=NonTensor(example_data="0"))
        self.action_spec = Categorical(2)
        self.n = 0

    def _reset(self, td):
        self.n = 0
        out = TensorDict({"x": torch.zeros(1)}, [])
        out.set_non_tensor("text", "0")
        return out

    def _step(self, td):
        self.n += 1
        out = TensorDict(
            {"x": torch.full((1,), float(self.n)), "reward": torch.ones(1), "done": torch.zeros(1, dtype=torch.bool)},
            [],
        )
        out.set_non_tensor("text", str(self.n))
        return out

    def _set_seed(self, seed):
        pass


def _rollout(env, steps=12):
    env.set_seed(0)
    torch.manual_seed(0)
    try:
        return env.rollout(steps, break_when_any_done=False)
    finally:
        env.close()


@pytest.mark.parametrize("cls", [gs.SerialEnv, gs.ParallelEnv])
@pytest.mark.parametrize(
    "options",
    [{"use_buffers": False}, {"memmap": True, "shared_memory": False}, {"shared_memory": False}],
)
def test_transports_give_the_same_rollout(cls, options):
    reference = _rollout(cls(2, StatelessCounter))
    assert reference["next", "done"].any()  # the rollouts go through partial resets
    other = cls(2, StatelessCounter, **options)
    assert other._use_buffers == (options.get("use_buffers", True) and (cls is gs.SerialEnv or "memmap" in options))
    assert (_rollout(other) == reference).all()


def test_share_individual_td_and_serial_for_single():
    env = gs.SerialEnv(2, StatelessCounter, share_individual_td=True)
    assert isinstance(env.reset(), LazyStackedTensorDict)
    env.close()
    single = gs.ParallelEnv(1, StatelessCounter, serial_for_single=True, mp_start_method="fork")
    assert isinstance(single, gs.SerialEnv) and single.batch_size == (1,)
    two = gs.ParallelEnv(2, StatelessCounter, serial_for_single=True)
    assert isinstance(two, gs.ParallelEnv)


@pytest.mark.parametrize("cls", [gs.SerialEnv, gs.ParallelEnv])
@pytest.mark.parametrize("use_buffers", [None, True, False])
def test_non_tensor_entries(cls, use_buffers):
    with set_capture_non_tensor_stack(False), closing(cls(2, _Texty, use_buffers=use_buffers)) as env:
        assert env._use_buffers is bool(use_buffers)  # default: no buffers for non-tensor specs
        r = env.rollout(3)
        assert r["next", "text"] == [["1", "2", "3"]] * 2
        td = env.step_mdp(env.step(env.rand_action(env.reset())))
        td["_reset"] = torch.tensor([[True], [False]])
        assert env.reset(td)["text"] == ["0", "1"]


@pytest.mark.parametrize("cls", [gs.SerialEnv, gs.ParallelEnv])
def test_partial_steps_step_selected_workers(cls):
    with closing(cls(3, StatelessCounter)) as env:
        td = env.reset()
        td["action"] = torch.ones(3, dtype=torch.long)
        td["_step"] = torch.tensor([True, False, True])
        out = env.step(td)
        assert out["next", "state"].flatten().tolist() == [1.0, 0.0, 1.0]
        assert out["next", "reward"].flatten().tolist()[1] == 0.0


def test_argument_errors():
    with pytest.raises(RuntimeError, match=r"len\(create_env_fn\) and num_workers mismatch"):
        gs.SerialEnv(3, [StatelessCounter, StatelessCounter])
    with pytest.raises(ValueError, match=r"len\(create_env_kwargs\) and num_workers mismatch"):
        gs.SerialEnv(3, StatelessCounter, [{}, {}])
    with pytest.raises(RuntimeError, match="mutually exclusive"):
        gs.SerialEnv(2, StatelessCounter, memmap=True)
    env = gs.SerialEnv(2, StatelessCounter)
    env.close()
    env.close()
    with pytest.raises(RuntimeError, match="already closed"):
        env.close(raise_if_closed=True)


class _Nested:
    value = 42

    def get_value(self):
        return self.value


def _with_nested(seed=0):
    env = StatelessCounter()
    env.nested = _Nested()
    env.seed_used = seed
    return env


@pytest.mark.parametrize("cls", [gs.SerialEnv, gs.ParallelEnv])
def test_worker_attributes_chain_and_update_kwargs(cls):
    with closing(cls(2, _with_nested)) as env:
        env.update_kwargs([{"seed": 3}, {"seed": 4}])
        assert env.seed_used == [3, 4] and env.nested.value == [42, 42]
        assert env.nested.get_value() == [42, 42]
        with pytest.raises(RuntimeError, match=r"len\(kwargs\) and num_workers mismatch"):
            env.update_kwargs([{"seed": 1}])


@pytest.mark.parametrize("cls", [gs.SerialEnv, gs.ParallelEnv])
def test_indexed_views(cls):
    import numpy as np

    with closing(cls(4, StatelessCounter)) as env:
        env.reset()
        for index, selected in [
            (2, [2]),
            (-1, [3]),
            (slice(1, 3), [1, 2]),
            (np.array([0, 3]), [0, 3]),
            (torch.tensor([1, 3]), [1, 3]),
        ]:
            view = env[index]
            assert type(view) is cls and view.num_workers == len(selected) and view.batch_size == (len(selected),)
            td = view.reset()
            out = view.step(td.set("action", torch.ones(len(selected), dtype=torch.long)))
            assert out["next", "state"].flatten().tolist() == [1.0] * len(selected)
            view.close()  # the parent keeps its workers
            assert not env.is_closed
            with pytest.raises(RuntimeError, match="closed indexed"):
                view.reset()
        assert env[1:][1:].num_workers == 2  # a view of a view
        with pytest.raises(NotImplementedError, match="Boolean masks"):
            env[torch.ones(4, dtype=torch.bool)]
        with pytest.raises(NotImplementedError, match="snapshot writeback"):
            env[0] = StatelessCounter()
        with pytest.raises(IndexError, match="out of range"):
            env[7]
        view = env[:2]
    with pytest.raises(RuntimeError, match="parent environment has been closed"):
        view.reset()


class _NoAction(gs.EnvBase):
    """No action and no state: a clock that ends its episode after ``n`` steps."""

    def __init__(self, n: int = 2):
        super().__init__()
        self.n, self.t = n, 0
        self.observation_spec = Composite(t=Unbounded((1,)))

    def _reset(self, td):
        self.t = 0
        return TensorDict({"t": torch.zeros(1)}, [])

    def _step(self, td):
        self.t += 1
        return TensorDict(
            {
                "t": torch.full((1,), float(self.t)),
                "reward": torch.zeros(1),
                "done": torch.full((1,), self.t >= self.n),
            },
            [],
        )

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("cls", [gs.SerialEnv, gs.ParallelEnv])
def test_env_without_action(cls):
    with closing(cls(2, [partial(_NoAction, 2), partial(_NoAction, 3)])) as env:
        r = env.rollout(4, break_when_any_done=False)
        assert r["next", "t"][..., 0].tolist() == [[1.0, 2.0, 1.0, 2.0], [1.0, 2.0, 3.0, 1.0]]


def test_serial_env_takes_no_start_method():
    gs.SerialEnv(2, StatelessCounter, mp_start_method=None).close()
    with pytest.raises(ValueError, match="ParallelEnv option"):
        gs.SerialEnv(2, StatelessCounter, mp_start_method="spawn")


# ------------------------------------------------------------------ metadata_from_workers
from gpusim.envs.batched import ParallelEnv, SerialEnv  # noqa: E402
from gpusim.envs.native import CartPoleEnv, PendulumEnv  # noqa: E402


class _CountedPendulum(PendulumEnv):
    """Counts the envs built in this process."""

    built = 0

    def __init__(self, **kwargs):
        type(self).built += 1
        super().__init__(**kwargs)


class _FailingEnv(PendulumEnv):
    def __init__(self, **kwargs):
        raise RuntimeError("the simulator cannot start")


@pytest.mark.parametrize("cls", ["SerialEnv", "ParallelEnv"])
def test_metadata_from_workers_reads_the_live_envs(cls):
    _CountedPendulum.built = 0
    make = {"SerialEnv": SerialEnv, "ParallelEnv": ParallelEnv}[cls]
    env = make(2, _CountedPendulum, [{"g": 1.0}, {"g": 2.0}], metadata_from_workers=True)
    try:
        assert env.is_started and env.g == [1.0, 2.0]  # the workers run from construction
        assert _CountedPendulum.built == (2 if cls == "SerialEnv" else 0)  # no extra env built here
        assert env.rollout(2)["next", "observation"].shape == (2, 2, 3)
        env.close()
        assert env.rollout(2).shape == (2, 2)  # a restart builds the workers as usual
    finally:
        env.close()


def test_metadata_from_workers_errors():
    with pytest.raises(RuntimeError, match=r"requires use_buffers=False: .* \(got use_buffers=True\)"):
        ParallelEnv(2, PendulumEnv, metadata_from_workers=True, use_buffers=True)
    with pytest.raises(RuntimeError, match="the worker metadata are incompatible: worker 1 differs from worker 0"):
        SerialEnv(2, [PendulumEnv, CartPoleEnv], metadata_from_workers=True)
    with pytest.raises(RuntimeError, match="the worker metadata are incompatible"):
        ParallelEnv(2, [PendulumEnv, CartPoleEnv], metadata_from_workers=True)
    with pytest.raises(
        RuntimeError, match="worker 1 .* failed while creating its env: RuntimeError: the simulator cannot start"
    ):
        ParallelEnv(2, [PendulumEnv, _FailingEnv], metadata_from_workers=True)
    single = ParallelEnv(1, PendulumEnv, serial_for_single=True, metadata_from_workers=True)
    assert type(single).__name__ == "SerialEnv" and single.is_started
    single.close()


class _MarkedPendulum(PendulumEnv):
    """Writes a file when closed (in whatever process it lives)."""

    def __init__(self, marker: str = "", fail: bool = False, **kwargs):
        if fail:
            raise RuntimeError("the simulator cannot start")
        self.marker = marker
        super().__init__(**kwargs)

    def close(self, **kwargs):
        if self.marker:
            open(self.marker, "w").close()
        super().close(**kwargs)


def test_metadata_from_workers_closes_the_built_envs_when_another_fails(tmp_path):
    marker = str(tmp_path / "closed-0")
    with pytest.raises(RuntimeError, match="worker 1 .* the simulator cannot start"):
        ParallelEnv(2, _MarkedPendulum, [{"marker": marker}, {"fail": True}], metadata_from_workers=True)
    assert (tmp_path / "closed-0").exists()
