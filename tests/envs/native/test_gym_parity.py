"""Native classic-control envs step exactly like gymnasium's (float32 vs float64 tolerance).

Two checks per env:
- trajectory parity: 8 gymnasium envs run in lockstep with one native env of batch 8 for 200
  steps; before every step gymnasium's state is rounded to float32 and injected into both (so
  both start each step from the same state), the same random actions are applied, and
  observation, reward and terminated are compared; gymnasium envs are reset when they end;
- state-space parity: one step from states drawn over the whole state space (termination
  regions, clipping and wall cases included).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tests.envs.native._gym_cases import CASES, GymCase

ATOL = 1e-4
RTOL = 1e-4  # float32 vs gymnasium's float64: Acrobot at ~28 rad/s differs by ~3e-5 relative


def _step_native(env, states: np.ndarray, actions: torch.Tensor) -> TensorDict:
    td = TensorDict(
        {"state": torch.as_tensor(states, dtype=torch.float32), "action": actions},
        batch_size=env.batch_size,
    )
    return env.step(td)["next"]


def _step_gym(case: GymCase, genvs, states: np.ndarray, actions: np.ndarray):
    obs, rew, term = [], [], []
    for i, genv in enumerate(genvs):
        case.inject(genv, states[i])
        o, r, t, _, _ = genv.step(case.gym_action(actions, i))
        obs.append(np.asarray(o, dtype=np.float64))
        rew.append(float(r))
        term.append(bool(t))
    return np.stack(obs), np.array(rew)[:, None], np.array(term)[:, None]


def _compare(nxt: TensorDict, obs, rew, term, where: str) -> None:
    torch.testing.assert_close(
        nxt["observation"].double(), torch.as_tensor(obs), atol=ATOL, rtol=RTOL, msg=lambda m: f"{where}: {m}"
    )
    torch.testing.assert_close(
        nxt["reward"].double(), torch.as_tensor(rew), atol=ATOL, rtol=RTOL, msg=lambda m: f"{where}: {m}"
    )
    assert torch.equal(nxt["terminated"], torch.as_tensor(term)), f"{where}: terminated differs"
    assert torch.equal(nxt["done"], nxt["terminated"]), f"{where}: done != terminated"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_trajectory_parity(case: GymCase) -> None:
    n, steps = 8, 200
    rng = np.random.default_rng(0)
    genvs = [case.make_gym() for _ in range(n)]
    for i, genv in enumerate(genvs):
        genv.reset(seed=i)
    env = case.env_cls(batch_size=[n], seed=0)
    terminations = 0
    for t in range(steps):
        states = np.stack([np.asarray(g.state, dtype=np.float32) for g in genvs])
        actions = case.actions(rng, genvs[0], n)
        nxt = _step_native(env, states, case.torch_action(actions))
        obs, rew, term = _step_gym(case, genvs, states, actions)
        _compare(nxt, obs, rew, term, f"{case.gym_id} step {t}")
        for i in np.flatnonzero(term[:, 0]):
            genvs[i].reset(seed=1000 + t * n + int(i))
        terminations += int(term.sum())
    if case.gym_id == "CartPole-v1":  # random play rarely ends the others in 200 steps
        assert terminations > 0, "the trajectories never terminated: termination was not compared"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_state_space_parity(case: GymCase) -> None:
    rng = np.random.default_rng(1)
    states = case.random_states(rng, 400)
    n = len(states)
    genv = case.make_gym()
    genv.reset(seed=0)
    actions = case.actions(rng, genv, n)
    env = case.env_cls(batch_size=[n], seed=0)
    nxt = _step_native(env, states, case.torch_action(actions))
    obs, rew, term = _step_gym(case, [genv] * n, states, actions)
    _compare(nxt, obs, rew, term, case.gym_id)
    if case.can_terminate:
        assert 0 < term.sum() < n, f"{case.gym_id}: the drawn states do not cover both outcomes"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_state_is_gymnasium_state(case: GymCase) -> None:
    """``next["state"]`` is gymnasium's ``unwrapped.state`` after the step (angles wrapped alike)."""
    rng = np.random.default_rng(2)
    states = case.random_states(rng, 64)
    n = len(states)
    genv = case.make_gym()
    genv.reset(seed=0)
    actions = case.actions(rng, genv, n)
    env = case.env_cls(batch_size=[n], seed=0)
    nxt = _step_native(env, states, case.torch_action(actions))
    expected = []
    for i in range(n):
        case.inject(genv, states[i])
        genv.step(case.gym_action(actions, i))
        expected.append(np.asarray(genv.state, dtype=np.float64))
    torch.testing.assert_close(nxt["state"].double(), torch.as_tensor(np.stack(expected)), atol=ATOL, rtol=RTOL)


# gymnasium make-kwargs (or unwrapped attributes) and the matching native constructor kwargs
_CHANGED = {  # (gymnasium attributes, a different native constant, the matching native kwargs)
    "CartPole-v1": ({"gravity": 12.0}, {"masspole": 0.2}, {"gravity": 12.0}),
    "Pendulum-v1": ({"g": 9.81}, {"m": 1.1}, {"g": 9.81}),
    "MountainCar-v0": ({"goal_velocity": 0.01}, {"force": 0.0012}, {"goal_velocity": 0.01}),
    "MountainCarContinuous-v0": ({"goal_velocity": 0.01}, {"power": 0.002}, {"goal_velocity": 0.01}),
    "Acrobot-v1": ({"book_or_nips": "nips"}, {"link_mass_2": 1.5}, {"book_or_nips": "nips"}),
}


def _set_attrs(genv, attrs: dict) -> None:
    for name, value in attrs.items():
        attr = name if hasattr(genv, name) else "_" + name
        if not hasattr(genv, attr):
            attr = name.upper()
        setattr(genv, attr, value)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_parity_with_changed_constants(case: GymCase) -> None:
    """A changed constant is honoured (parity holds with it) and matters (parity fails without it)."""
    gym_attrs, native_only, native_kwargs = _CHANGED[case.gym_id]
    rng = np.random.default_rng(3)
    states = case.random_states(rng, 200)
    n = len(states)
    genv = case.make_gym()
    genv.reset(seed=0)
    _set_attrs(genv, gym_attrs)
    actions = case.actions(rng, genv, n)
    obs, rew, term = _step_gym(case, [genv] * n, states, actions)
    env = case.env_cls(batch_size=[n], seed=0, **native_kwargs)
    _compare(_step_native(env, states, case.torch_action(actions)), obs, rew, term, case.gym_id)
    for kwargs in ({}, native_only):
        env = case.env_cls(batch_size=[n], seed=0, **kwargs)
        with pytest.raises(AssertionError):
            _compare(_step_native(env, states, case.torch_action(actions)), obs, rew, term, case.gym_id)


def test_cartpole_sutton_barto_reward() -> None:
    case = CASES[0]
    rng = np.random.default_rng(4)
    states = case.random_states(rng, 200)
    n = len(states)
    genv = case.make_gym(sutton_barto_reward=True)
    genv.reset(seed=0)
    actions = case.actions(rng, genv, n)
    obs, rew, term = _step_gym(case, [genv] * n, states, actions)
    assert set(rew[:, 0].tolist()) == {0.0, -1.0}
    env = case.env_cls(batch_size=[n], seed=0, sutton_barto_reward=True)
    _compare(_step_native(env, states, case.torch_action(actions)), obs, rew, term, case.gym_id)
