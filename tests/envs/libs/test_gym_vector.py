"""Gymnasium vector envs as one batched env: final vs reset observations under every autoreset
mode, partial resets through ``"_reset"``, CartPole's numpy vector env, misuse errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs import GymEnv, GymWrapper
from tests.envs.libs.gym_envs import sync_vector

MODES = ["DISABLED", "SAME_STEP", "NEXT_STEP"]


@pytest.mark.parametrize("mode", MODES)
def test_final_obs_in_next_and_reset_obs_in_root(mode):
    ep_lens = [2, 3, 5]
    env = GymWrapper(sync_vector(mode=mode, ep_lens=ep_lens))
    assert env.batch_size == (3,)
    check_env_specs(env, seed=0)
    env.set_seed(0)
    td = env.rollout(12, break_when_any_done=False)
    t_next = td["next", "observation"][..., 1]  # the counter after each step
    t_root = td["observation"][..., 1]
    done = td["next", "done"].squeeze(-1)
    for i, L in enumerate(ep_lens):
        # the done step carries the FINAL observation (t == L), then the next root is a reset (t == 0)
        assert torch.equal(done[i], t_next[i] == L)
        assert (t_next[i][done[i]] == L).all()
        after = torch.nonzero(done[i]).squeeze(-1) + 1
        after = after[after < 12]
        assert (t_root[i][after] == 0).all()
        # counters run 0..L, 0..L: root t equals the step index modulo L
        assert t_root[i].tolist() == [float(k % L) for k in range(12)]
    # the reward is t (never a zero "reset step" reward as NEXT_STEP gymnasium loops give)
    assert (td["next", "reward"].squeeze(-1) == t_next).all()
    # each episode keeps its start value across its steps
    start = td["observation"][..., 0]
    assert torch.equal(start, td["next", "observation"][..., 0])


@pytest.mark.parametrize("mode", MODES)
def test_partial_reset_through_reset_mask(mode):
    env = GymWrapper(sync_vector(mode=mode, ep_lens=[9, 9, 9]))
    env.set_seed(1)
    td = env.reset()
    for _ in range(3):
        td = env.rand_step(td)
        td = env._step_mdp(td)
    before = td["observation"].clone()
    assert (before[:, 1] == 3).all()
    td["_reset"] = torch.tensor([[True], [False], [True]])
    out = env.reset(td)
    assert "_reset" not in out.keys()
    obs = out["observation"]
    assert obs[:, 1].tolist() == [0.0, 3.0, 0.0]
    assert torch.equal(obs[1], before[1])
    # the row that was not reset continues its episode
    out = env.rand_step(out)
    assert out["next", "observation"][:, 1].tolist() == [1.0, 4.0, 1.0]


def test_partial_reset_all_false_keeps_everything():
    env = GymWrapper(sync_vector(ep_lens=[9, 9]))
    td = env.rand_step(env.reset())
    td = env._step_mdp(td)
    before = td["observation"].clone()
    td["_reset"] = torch.zeros(2, 1, dtype=torch.bool)
    assert torch.equal(env.reset(td)["observation"], before)


@pytest.mark.parametrize("mode", MODES)
def test_stepping_done_rows_without_reset_starts_a_new_episode(mode):
    env = GymWrapper(sync_vector(mode=mode, ep_lens=[1, 4]))
    td = env.rand_step(env.reset())
    assert td["next", "done"].squeeze(-1).tolist() == [True, False]
    td = env.rand_step(env._step_mdp(td))
    assert td["next", "observation"][:, 1].tolist() == [1.0, 2.0]
    assert td["next", "done"].squeeze(-1).tolist() == [True, False]


def test_next_step_without_masked_reset_is_rejected():
    class NoMaskVec(gym.vector.VectorEnv):
        metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

        def __init__(self):
            self.num_envs = 2
            self.single_observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
            self.single_action_space = gym.spaces.Discrete(2)
            self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, 2)
            self.action_space = gym.vector.utils.batch_space(self.single_action_space, 2)

    with pytest.raises(ValueError, match="NEXT_STEP"):
        GymWrapper(NoMaskVec())


def test_gym_env_num_envs_builds_disabled_sync_env():
    env = GymEnv("CartPole-v1", num_envs=3, vectorization_mode="sync")
    assert isinstance(env.env, gym.vector.SyncVectorEnv)
    assert env.env.autoreset_mode == gym.vector.AutoresetMode.DISABLED
    check_env_specs(env, seed=0)


def _check_cartpole_transitions(td, max_steps=500):
    obs, nxt = td["observation"], td["next", "observation"]
    done = td["next", "done"].squeeze(-1)
    term = td["next", "terminated"].squeeze(-1)
    # terminal states are out of bounds; non-terminal next states are in bounds
    out = (nxt[..., 0].abs() > 2.4) | (nxt[..., 2].abs() > 12 * 2 * np.pi / 360)
    assert torch.equal(out, term)
    # after a done step, the root is a fresh reset state in [-0.05, 0.05]^4
    after_done = torch.zeros_like(done)
    after_done[:, 1:] = done[:, :-1]
    assert (obs[after_done].abs() <= 0.05).all()
    # otherwise the root is the previous next observation (no hidden reset step)
    cont = ~after_done
    cont[:, 0] = False
    prev_next = torch.zeros_like(nxt)
    prev_next[:, 1:] = nxt[:, :-1]
    assert torch.equal(obs[cont], prev_next[cont])
    assert done.any()


def test_cartpole_numpy_vector_env_masked_reset():
    env = GymEnv("CartPole-v1", num_envs=16)
    assert type(env.env.unwrapped).__name__ == "CartPoleVectorEnv"
    check_env_specs(env, seed=0)
    env.set_seed(0)
    td = env.rollout(80, break_when_any_done=False)
    _check_cartpole_transitions(td)
    # the same checks through a DISABLED sync env
    env = GymEnv("CartPole-v1", num_envs=4, vectorization_mode="sync")
    env.set_seed(0)
    _check_cartpole_transitions(env.rollout(80, break_when_any_done=False))


def test_cartpole_vector_env_matches_single_envs_dynamics():
    # the numpy vector env and the single env share the physics: one step from the same state
    venv = GymEnv("CartPole-v1", num_envs=4, categorical_action_encoding=True)
    venv.set_seed(0)
    td = venv.reset()
    state = venv.env.unwrapped.state.T.copy()
    td["action"] = torch.tensor([0, 1, 1, 0])
    nxt = venv.step(td)["next", "observation"]
    for i in range(4):
        single = gym.make("CartPole-v1").unwrapped
        single.reset(seed=0)
        single.state = state[i].astype(np.float64)
        obs, *_ = single.step(int(td["action"][i]))
        assert np.allclose(obs, nxt[i].numpy(), atol=1e-6)


def test_break_when_any_done_and_new_rollout():
    env = GymWrapper(sync_vector(ep_lens=[2, 5]))
    td = env.rollout(10)
    assert td.shape == (2, 2)
    td = env.rollout(10)  # full reset: no pending-row error
    assert td.shape == (2, 2)


def test_step_and_maybe_reset_vector_loop():
    env = GymWrapper(sync_vector(ep_lens=[2, 3]))
    td = env.reset()
    seen = []
    for _ in range(6):
        td = env.rand_action(td)
        stepped, td = env.step_and_maybe_reset(td)
        seen.append(td["observation"][:, 1].tolist())
    assert seen == [[1, 1], [0, 2], [1, 0], [0, 1], [1, 2], [0, 0]]


@pytest.mark.parametrize("mode", ["SAME_STEP", "NEXT_STEP"])
def test_gym_env_sync_autoreset_modes_keep_final_observations(mode):
    env = GymEnv(
        "CartPole-v1",
        num_envs=4,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": getattr(gym.vector.AutoresetMode, mode)},
    )
    assert env.env.autoreset_mode.name == mode
    env.set_seed(0)
    _check_cartpole_transitions(env.rollout(80, break_when_any_done=False))


def test_async_vector_env_partial_reset_and_close():
    env = GymEnv("CartPole-v1", num_envs=2, vectorization_mode="async")
    try:
        assert isinstance(env.env, gym.vector.AsyncVectorEnv)
        check_env_specs(env, seed=0)
        td = env._step_mdp(env.rand_step(env.reset()))
        before = td["observation"].clone()
        td["_reset"] = torch.tensor([[False], [True]])
        out = env.reset(td)
        assert torch.equal(out["observation"][0], before[0])
        assert (out["observation"][1].abs() <= 0.05).all()
    finally:
        env.close()
    assert env.is_closed and all(p.exitcode is not None for p in env.env.processes)


# --------------------------------------------------------------- auto-reset merge fast path
def _loop(env, steps: int, seed: int = 0, edit=None) -> list:
    """``steps`` of ``rand_action`` + ``step_and_maybe_reset``; every root and next data cloned."""
    torch.manual_seed(seed)
    env.set_seed(seed)
    td = env.reset()
    out = []
    for _ in range(steps):
        td = env.rand_action(td)
        stepped = env.step(td)
        nxt = env._step_mdp(stepped)
        if edit is not None:
            edit(nxt)
        td = env.maybe_reset(nxt)
        out.append((stepped.get("next").clone(), td.clone()))
    return out


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for (na, ra), (nb, rb) in zip(a, b):
        assert set(ra.keys(True, True)) == set(rb.keys(True, True))
        assert (na == nb).all() and (ra == rb).all()


def _parity(make, monkeypatch, steps: int = 24, edit=None) -> None:
    """The fast path (reset leaves marked merged) gives the data of the generic merge."""
    fast = _loop(make(), steps, edit=edit)
    with monkeypatch.context() as m:
        m.setattr(GymEnv, "_kept_leaves", lambda self, previous, masks, mask: [])
        slow = _loop(make(), steps, edit=edit)
    _same(fast, slow)
    assert any(bool(r["done"].any()) for _, r in fast) is False  # roots never carry a done flag


def _cartpole():
    return GymEnv("CartPole-v1", num_envs=8, categorical_action_encoding=True)


@pytest.mark.parametrize("mode", MODES)
def test_auto_reset_fast_merge_matches_generic_merge(mode, monkeypatch):
    _parity(_cartpole, monkeypatch, steps=40)
    _parity(lambda: GymWrapper(sync_vector(mode=mode, ep_lens=[2, 3, 5])), monkeypatch)


def test_auto_reset_fast_merge_through_transforms(monkeypatch):
    from gpusim.transforms import ObservationNorm, RewardSum, StepCounter, TransformedEnv

    # StepCounter truncates rows the library did not end (the outer done is another tensor: the
    # flags keep the merge, the observation skips it); ObservationNorm rewrites the observation
    # under its own key (no mark); RewardSum leaves both as the base env gave them
    _parity(lambda: TransformedEnv(_cartpole(), StepCounter(max_steps=5)), monkeypatch, steps=30)
    _parity(lambda: TransformedEnv(_cartpole(), RewardSum()), monkeypatch, steps=30)

    def normed():
        norm = ObservationNorm(loc=1.0, scale=2.0, in_keys=["observation"])
        return TransformedEnv(_cartpole(), StepCounter(max_steps=5)).append_transform(norm)

    _parity(normed, monkeypatch)


def test_auto_reset_fast_merge_keeps_edited_previous_data(monkeypatch):
    # a root edited in place after the step is not the step's data any more: the merge keeps it
    def edit(nxt):
        nxt["observation"].add_(100.0)
        nxt["terminated"].fill_(True)

    _parity(_cartpole, monkeypatch, steps=20, edit=edit)
    for nxt, root in _loop(_cartpole(), 20, edit=edit):
        kept = ~nxt["done"].squeeze(-1)  # ("next" shares the edited tensors)
        assert torch.equal(root["observation"][kept], nxt["observation"][kept])
        assert root["terminated"][kept].all() and not root["terminated"][~kept].any()


def test_auto_reset_marks_only_provable_leaves():
    env = _cartpole()
    env.set_seed(0)
    td = env.reset()
    marked = []
    orig = env._kept_leaves

    def spy(previous, masks, mask):
        keys = orig(previous, masks, mask)
        marked.append((masks.auto, sorted(keys)))
        return keys

    env.__dict__["_kept_leaves"] = spy
    for _ in range(30):
        td = env.rand_action(td)
        _, td = env.step_and_maybe_reset(td)
    # auto-resets: the observation and the three done flags skip the merge
    assert ("observation" in marked[-1][1]) and marked[-1][0]
    assert marked[-1][1] == ["done", "observation", "terminated", "truncated"]
    # a user's reset with "_reset" keeps the generic merge (its input rows are kept as given)
    td["_reset"] = torch.zeros(8, 1, dtype=torch.bool)
    td["_reset"][0] = True
    before = td["observation"].clone()
    out = env.reset(td)
    assert marked[-1] == (False, [])
    assert torch.equal(out["observation"][1:], before[1:])
