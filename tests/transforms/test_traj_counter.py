"""TrajCounter: unique trajectory ids across rows, partial resets and clones."""

import pickle

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import Compose, StepCounter, TrajCounter, TransformedEnv


def test_ids_follow_episodes_and_partial_resets():
    env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), Compose(StepCounter(3), TrajCounter()))
    td = env.rollout(7, break_when_any_done=False)
    ids = td["traj_count"].squeeze(-1)
    # episodes of 3 steps; both rows truncate together: ids (0,1), then (2,3), then (4,5)
    assert ids[0].tolist() == [0, 0, 0, 2, 2, 2, 4] and ids[1].tolist() == [1, 1, 1, 3, 3, 3, 5]
    assert torch.equal(td["next", "traj_count"], td["traj_count"])
    state = td[:, -1]["next"].clone()
    state["_reset"] = torch.tensor([[False], [True]])
    out = env.reset(state)
    assert out["traj_count"].flatten().tolist() == [4, 6]


def test_clones_and_pickles_share_the_counter():
    t = TrajCounter()
    a = TransformedEnv(CartPoleEnv(batch_size=[2]), t.clone())
    b = TransformedEnv(CartPoleEnv(batch_size=[3]), pickle.loads(pickle.dumps(t.clone())))
    first = a.reset()["traj_count"].flatten().tolist()
    second = b.reset()["traj_count"].flatten().tolist()
    assert first == [0, 1] and second == [2, 3, 4] and t.state_dict() == {"traj_count": 5}


def test_offline_call_and_missing_done_prefix():
    with pytest.raises(RuntimeError, match="within an environment step or reset"):
        TrajCounter()(TensorDict())
    with pytest.raises(RuntimeError, match="no done entry"):
        TransformedEnv(CartPoleEnv(), TrajCounter(("agents", "traj_count")))


def test_env_creator_and_its_variants_share_one_counter():
    import gc
    import os

    from gpusim.envs import EnvCreator, SerialEnv
    from gpusim.envs.native import CartPoleEnv
    from gpusim.transforms import Compose, StepCounter, TrajCounter, TransformedEnv

    def make(seed=0):  # a fresh TrajCounter per env: the creator's shared state links them
        return TransformedEnv(CartPoleEnv(seed=seed), Compose(StepCounter(3), TrajCounter()))

    first = EnvCreator(make)
    (state,) = first.shared_state.values()
    path = str(state["counter_path"])
    env = SerialEnv(2, [first, first.make_variant(seed=1)])
    data = env.rollout(9, break_when_any_done=False)
    ids = [set(data[i]["traj_count"].flatten().tolist()) for i in range(2)]
    assert not ids[0] & ids[1] and len(ids[0] | ids[1]) == 6  # 3 episodes each, no id twice
    env.close()
    del env, first, state
    gc.collect()
    assert not os.path.exists(path)  # the creators' shared state owned the counter file
