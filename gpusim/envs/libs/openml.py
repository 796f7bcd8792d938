"""``OpenMLEnv``: classification data sets as contextual bandits (TorchRL's ``OpenMLEnv``).

Each reset draws ``batch_size`` rows of a labelled data set (without replacement; a new shuffled
pass starts when the data runs out): the row's features are the ``"observation"`` (float32) and
its label ``"y"`` (int64) travels along. The action is a class (``Categorical(n_classes)``); the
reward is ``1`` when it is the label, ``0`` otherwise; every episode is one step long (``done``
after each step), so ``step_and_maybe_reset`` draws the next rows.

Data: the data set names TorchRL documents (``"adult_num"``, ``"adult_onehot"``,
``"mushroom_num"``, ``"mushroom_onehot"``, ``"covertype"``, ``"shuttle"``, ``"magic"``) are
fetched from openml.org with scikit-learn's ``fetch_openml`` (cached in ``data_home``) and
prepared the usual way: rows with missing values dropped, categorical columns label-encoded
(one-hot for the ``*_onehot`` variants), numeric columns standardized, labels encoded as
``0..n-1``; ``adult`` predicts ``occupation``. Fetching needs the network on first use.
:meth:`OpenMLEnv.from_arrays` builds the same env on any ``(X, y)``, e.g. the data sets that
ship inside scikit-learn.

Examples:
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> env = OpenMLEnv.from_arrays(X, y, batch_size=[4], seed=0)
    >>> td = env.rand_step(env.reset())
    >>> td["observation"].shape, td["y"].shape, td["next", "reward"].shape, bool(td["next", "done"].all())
    (torch.Size([4, 4]), torch.Size([4]), torch.Size([4, 1]), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.common import EnvBase
from gpusim.envs.libs._optional import import_optional
from gpusim.specs import Categorical, Composite, Unbounded

__all__ = ["OpenMLEnv"]

# name -> (OpenML data set, version, label column or None for the default target, one-hot features)
_DATASETS = {
    "adult_num": ("adult", 1, "occupation", False),
    "adult_onehot": ("adult", 1, "occupation", True),
    "mushroom_num": ("mushroom", 1, None, False),
    "mushroom_onehot": ("mushroom", 1, None, True),
    "covertype": ("covertype", 3, None, False),
    "shuttle": ("shuttle", 1, None, False),
    "magic": ("MagicTelescope", 1, None, False),
}


def _prepare(frame: Any, target: Any, label: str | None, onehot: bool) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of a fetched data set, prepared as the module docstring says."""
    sk = import_optional("sklearn.preprocessing", "scikit-learn", extra="openml", what="OpenMLEnv")
    frame = frame.copy()
    if label is not None:
        frame = frame[~frame.isna().any(axis=1)]
        target = frame.pop(label)
    cat = [c for c in frame.columns if str(frame[c].dtype) in ("category", "object", "str")]
    num = [c for c in frame.columns if c not in cat]
    parts = []
    if num:
        parts.append(sk.StandardScaler().fit_transform(frame[num].to_numpy(dtype=np.float64)))
    if cat:
        codes = np.stack([sk.LabelEncoder().fit_transform(frame[c].astype(str)) for c in cat], 1)
        if onehot:
            parts.append(sk.OneHotEncoder(sparse_output=False).fit_transform(codes))
        else:
            parts.append(sk.StandardScaler().fit_transform(codes.astype(np.float64)))
    X = np.concatenate(parts, 1)
    y = sk.LabelEncoder().fit_transform(np.asarray(target).astype(str))
    return X, y


class OpenMLEnv(EnvBase):
    """A classification data set as a one-step contextual bandit (the module docstring says how
    the data is fetched and prepared).

    Args:
        dataset_name: one of :attr:`available_envs`.
        device: where the data lives.
        batch_size: rows drawn per reset (the env batch dims).
        data_home: scikit-learn's cache folder for the fetched data.
        seed: the seed of the row shuffling.

    Raises:
        ValueError: an unknown data set name (naming the known ones).
        ImportError: scikit-learn or pandas missing (saying ``pip install scikit-learn pandas``).

    Examples:
        >>> OpenMLEnv("iris")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown OpenML data set 'iris'; known: ['adult_num', 'adult_onehot', ...]
        >>> from sklearn.datasets import load_iris  # offline: a data set scikit-learn ships
        >>> env = OpenMLEnv.from_arrays(*load_iris(return_X_y=True), batch_size=[4], seed=0)
        >>> env.action_spec.space.n  # three classes
        3
        >>> td = env.reset()
        >>> env.step(td.set("action", td["y"]))["next", "reward"].flatten().tolist()  # the labels
        [1.0, 1.0, 1.0, 1.0]
    """

    available_envs = list(_DATASETS)

    def __init__(
        self,
        dataset_name: str,
        device: torch.device | str | int | None = "cpu",
        batch_size: Any = None,
        *,
        data_home: str | None = None,
        seed: int | None = None,
        _arrays: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        if _arrays is None:
            if dataset_name not in _DATASETS:
                raise ValueError(f"unknown OpenML data set {dataset_name!r}; known: {list(_DATASETS)}")
            datasets = import_optional("sklearn.datasets", "scikit-learn", extra="openml", what="OpenMLEnv")
            import_optional("pandas", "pandas", extra="openml", what="OpenMLEnv")
            name, version, label, onehot = _DATASETS[dataset_name]
            frame, target = datasets.fetch_openml(
                name, version=version, return_X_y=True, as_frame=True, data_home=data_home
            )
            _arrays = _prepare(frame, target, label, onehot)
        X, y = _arrays
        X = torch.as_tensor(np.asarray(X, dtype=np.float32))
        y = torch.as_tensor(np.asarray(y), dtype=torch.int64)
        if X.ndim != 2 or y.shape != X.shape[:1]:
            raise ValueError(
                f"OpenMLEnv needs X [rows, features] and y [rows], got {list(X.shape)} and {list(y.shape)}"
            )
        super().__init__(device=device, batch_size=batch_size)
        if self.batch_size.numel() > X.shape[0]:
            raise ValueError(f"batch_size {list(self.batch_size)} draws more rows than the data has ({X.shape[0]})")
        self.dataset_name = dataset_name
        self.__dict__["_X"] = X.to(self.device)
        self.__dict__["_y"] = y.to(self.device)
        self.__dict__["_gen"] = torch.Generator().manual_seed(0 if seed is None else int(seed))
        self.__dict__["_order"] = torch.empty(0, dtype=torch.int64)
        self.n_classes = int(y.max()) + 1
        B = self.batch_size
        self.observation_spec = Composite(
            observation=Unbounded((*B, X.shape[1]), device=self.device),
            y=Categorical(self.n_classes, shape=B, device=self.device),
            shape=B,
            device=self.device,
        )
        self.action_spec = Categorical(self.n_classes, shape=B, device=self.device)
        self.reward_spec = Unbounded((*B, 1), device=self.device)

    @classmethod
    def from_arrays(
        cls,
        X: Any,
        y: Any,
        device: torch.device | str | int | None = "cpu",
        batch_size: Any = None,
        seed: int | None = None,
        name: str = "arrays",
    ) -> OpenMLEnv:
        """The bandit env on given features ``X`` ``[rows, features]`` and labels ``y`` ``[rows]``
        (integers ``0..n-1``).

        Examples:
            >>> env = OpenMLEnv.from_arrays(np.eye(3), np.arange(3), batch_size=[3])
            >>> env.n_classes
            3
        """
        return cls(name, device=device, batch_size=batch_size, seed=seed, _arrays=(X, y))

    def _draw(self) -> torch.Tensor:
        n = self.batch_size.numel()
        order = self._order
        if order.numel() < n:  # a new shuffled pass over the rows
            fresh = torch.randperm(self._X.shape[0], generator=self._gen)
            order = torch.cat([order, fresh])
        rows, self.__dict__["_order"] = order[:n], order[n:]
        return rows.to(self.device)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        rows = self._draw()
        B = self.batch_size
        flag = torch.zeros((*B, 1), dtype=torch.bool, device=self.device)
        return new_td(
            {
                "observation": self._X[rows].reshape(*B, -1),
                "y": self._y[rows].reshape(B),
                "done": flag,
                "terminated": flag.clone(),
            },
            B,
            self.device,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        y = tensordict.get("y")
        reward = (tensordict.get("action") == y).to(torch.float32).unsqueeze(-1)
        done = torch.ones_like(reward, dtype=torch.bool)
        return new_td(
            {
                "observation": tensordict.get("observation"),
                "y": y,
                "reward": reward,
                "done": done,
                "terminated": done.clone(),
            },
            self.batch_size,
            self.device,
        )

    def _set_seed(self, seed: int | None) -> None:
        self.__dict__["_gen"] = torch.Generator().manual_seed(0 if seed is None else int(seed))
        self.__dict__["_order"] = torch.empty(0, dtype=torch.int64)
