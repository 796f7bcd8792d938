"""OpenMLEnv: the contextual bandit on data that ships with scikit-learn (fetching from openml.org needs
the network, which the tests do not have): layout, rewards, epochs without replacement, seeding, the
preparation of categorical frames, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install 'gpusim[openml]')")
pd = pytest.importorskip("pandas", reason="pandas is not installed (pip install 'gpusim[openml]')")

from sklearn.datasets import load_iris  # noqa: E402

from gpusim.envs.checks import check_env_specs  # noqa: E402
from gpusim.envs.libs import OpenMLEnv  # noqa: E402
from gpusim.envs.libs.openml import _prepare  # noqa: E402


def test_bandit_layout_and_rewards():
    X, y = load_iris(return_X_y=True)
    env = OpenMLEnv.from_arrays(X, y, batch_size=[2, 3], seed=0)
    assert env.n_classes == 3 and env.action_spec.shape == (2, 3)
    td = env.reset()
    assert td["observation"].shape == (2, 3, 4) and td["observation"].dtype == torch.float32
    out = env.step(td.set("action", td["y"].clone()))["next"]
    assert out["reward"].shape == (2, 3, 1) and bool((out["reward"] == 1).all()) and bool(out["done"].all())
    out = env.step(td.set("action", (td["y"] + 1) % 3))["next"]
    assert not out["reward"].any()
    # the features are the data set's rows, with their own labels
    rows = [int(np.flatnonzero((np.abs(X - o.numpy()) < 1e-6).all(1))[0]) for o in td["observation"].reshape(-1, 4)]
    assert [int(y[r]) for r in rows] == td["y"].reshape(-1).tolist()
    check_env_specs(env, seed=0)


def test_one_pass_without_replacement_and_seeding():
    X, y = load_iris(return_X_y=True)
    env = OpenMLEnv.from_arrays(X, y, batch_size=[50], seed=1)
    data = env.rollout(3, break_when_any_done=False)
    seen = data["observation"].reshape(150, 4)
    assert torch.unique(seen, dim=0).shape[0] == torch.unique(torch.as_tensor(X, dtype=torch.float32), dim=0).shape[0]
    env.set_seed(1)
    again = env.rollout(3, break_when_any_done=False)
    assert torch.equal(again["observation"], data["observation"])


def test_prepare_categorical_frames():
    frame = pd.DataFrame(
        {"size": [1.0, 2.0, 3.0, 4.0], "color": pd.Categorical(["r", "g", "r", "b"]), "job": ["a", "b", None, "a"]}
    )
    X, y = _prepare(frame, None, "job", onehot=True)
    assert X.shape == (3, 1 + 3) and y.tolist() == [0, 1, 0]  # the row with a missing value is dropped
    assert np.allclose(X[:, 0].mean(), 0.0)
    Xn, _ = _prepare(frame.drop(columns="job"), pd.Series(["x", "y", "x", "y"]), None, onehot=False)
    assert Xn.shape == (4, 2)


def test_errors():
    with pytest.raises(ValueError, match="unknown OpenML data set"):
        OpenMLEnv("nope")
    with pytest.raises(ValueError, match="more rows"):
        OpenMLEnv.from_arrays(np.zeros((2, 3)), np.zeros(2), batch_size=[5])
    with pytest.raises(ValueError, match="rows, features"):
        OpenMLEnv.from_arrays(np.zeros(4), np.zeros(4))
