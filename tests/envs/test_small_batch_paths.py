"""The small-batch fast paths of the step loop give what their reference paths give: the flat
``step_mdp`` merge (``_fasttd._merge_flat``) against the general merge, the ``SPARSE`` done
shortcut (``EpisodePlan.nothing_done``) against ``done_masks(...).any()``, and the step
boundary's direct reads of a plain input against tensordict's public reads."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.envs import _fasttd, common
from gpusim.envs.episode import EpisodePlan
from gpusim.specs import Categorical, Composite


def _flag(shape):
    return Categorical(2, shape=shape, dtype=torch.bool)


def _general(monkeypatch, *args):
    with monkeypatch.context() as m:
        m.setattr(_fasttd, "_merge_flat", lambda *a: None)
        return _fasttd.merge_plain(*args)


def _same_td(a, b):
    assert list(a.keys()) == list(b.keys())  # same keys, same order
    assert a.batch_size == b.batch_size and a.device == b.device
    for key in a.keys():
        va, vb = a.get(key), b.get(key)
        if isinstance(va, torch.Tensor) and not isinstance(va, TensorDict):
            assert va is vb, key  # the input's tensors, not copies
        else:
            _same_td(va, vb)


@pytest.mark.parametrize(
    "root_exclude, root_include, next_exclude",
    [
        ({"next": True, "action": True}, None, {"reward": True}),
        ({"next": True}, None, {}),
        ({"next": True, "obs": {"x": True}}, None, {"reward": {"y": True}}),  # sub-trees on leaves keep them
        ({"next": True}, {"action": True}, {"reward": True}),  # the root contributes its actions only
        ({"next": True}, {"nope": True}, {"reward": True, "obs": True, "done": True}),  # nothing left
    ],
)
def test_flat_merge_equals_the_general_merge(monkeypatch, root_exclude, root_include, next_exclude):
    nxt = TensorDict({"obs": torch.ones(2, 3), "reward": torch.ones(2, 1), "done": torch.zeros(2, 1, dtype=torch.bool)}, [2])
    root = TensorDict({"obs": torch.zeros(2, 3), "action": torch.zeros(2), "hidden": torch.ones(2, 4), "next": nxt}, [2])
    args = (root, nxt, root_exclude, root_include, next_exclude)
    flat = _fasttd._merge_flat(*args)
    assert flat is not None
    _same_td(flat, _general(monkeypatch, *args))
    _same_td(_fasttd.merge_plain(*args), flat)


@pytest.mark.parametrize(
    "extra",
    [
        {"sub": TensorDict({"x": torch.ones(2)}, [2])},  # a container
        {"p": torch.nn.Parameter(torch.ones(2))},  # a tensor subclass
    ],
)
def test_flat_merge_leaves_anything_else_to_the_general_merge(monkeypatch, extra):
    nxt = TensorDict({"obs": torch.ones(2), "reward": torch.ones(2), **extra}, [2])
    root = TensorDict({"obs": torch.zeros(2), "next": nxt, **extra}, [2])
    args = (root, nxt, {"next": True}, None, {"reward": True})
    assert _fasttd._merge_flat(*args) is None
    _same_td(_fasttd.merge_plain(*args), _general(monkeypatch, *args))


def _plans():
    root = EpisodePlan(Composite(done=_flag((3, 1)), shape=(3,)), torch.Size([3]))
    trunc = EpisodePlan(Composite(done=_flag((3, 1)), truncated=_flag((3, 1)), shape=(3,)), torch.Size([3]))
    nested = EpisodePlan(
        Composite(done=_flag((3, 1)), agents=Composite(done=_flag((3, 2, 1)), shape=(3, 2)), shape=(3,)), torch.Size([3])
    )
    return root, trunc, nested


@pytest.mark.parametrize("seed", range(4))
def test_nothing_done_agrees_with_done_masks(seed):
    gen = torch.Generator().manual_seed(seed)

    def flags(*shape):
        return torch.rand(*shape, generator=gen) < 0.3

    root, trunc, nested = _plans()
    one = EpisodePlan(Composite(done=_flag((1, 1)), truncated=_flag((1, 1)), shape=(1,)), torch.Size([1]))
    cases = [
        (one, TensorDict({"done": flags(1, 1), "truncated": flags(1, 1)}, [1])),  # one flag: read with item()
        (one, TensorDict({"done": torch.ones(1, 1, dtype=torch.bool)}, [1])),
        (root, TensorDict({"done": flags(3, 1)}, [3])),
        (root, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool)}, [3])),
        (trunc, TensorDict({"done": flags(3, 1), "truncated": flags(3, 1)}, [3])),
        (trunc, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool), "truncated": flags(3, 1)}, [3])),
        (trunc, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool)}, [3])),  # no truncated entry
        (nested, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool),
                             "agents": {"done": torch.zeros(3, 2, 1, dtype=torch.bool)}}, [3])),
    ]
    for plan, td in cases:
        reference = plan.done_masks(td, True).any()
        got = plan.nothing_done(td)
        if plan is nested:  # nested levels always take the general path
            assert got is None
        else:
            assert got is (not reference)


def test_nothing_done_leaves_bad_flags_to_done_masks():
    root, trunc, _ = _plans()
    for plan, td in [
        (root, TensorDict({}, [3])),  # no done entry
        (root, TensorDict({"done": torch.zeros(3, 2, dtype=torch.bool)}, [3])),  # not the mask's size
        (trunc, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool), "truncated": torch.zeros(3, dtype=torch.bool)}, [3])),
    ]:
        assert plan.nothing_done(td) is None
        with pytest.raises((KeyError, RuntimeError)):
            plan.done_masks(td, True)


def _loop(env, steps=40):
    env.set_seed(3)
    torch.manual_seed(0)
    td = env.reset()
    out = []
    for _ in range(steps):
        data, td = env.step_and_maybe_reset(env.rand_action(td))
        out.append(data.clone())
    return torch.stack(out)


@pytest.mark.parametrize("make", [
    lambda: gs.make("CartPole-v1", num_envs=1, seed=3),
    lambda: gs.TransformedEnv(gs.CartPoleEnv(batch_size=[3], seed=3), gs.StepCounter(7)),
    lambda: gs.GymEnv("CartPole-v1", num_envs=2),
])
def test_step_loop_equals_the_reference_paths(monkeypatch, make):
    env = make()
    fast = _loop(env)
    with monkeypatch.context() as m:
        m.setattr(_fasttd, "_merge_flat", lambda *a: None)
        m.setattr(EpisodePlan, "nothing_done", lambda self, td: None)
        m.setattr(common, "inner", lambda td: None)
        slow = _loop(env)
    env.close()
    assert fast["next", "done"].any()  # the loop went through resets
    assert set(fast.keys(True, True)) == set(slow.keys(True, True))
    for key in fast.keys(True, True):
        assert torch.equal(fast[key], slow[key]), key


def test_step_boundary_errors_equal_the_public_read_path(monkeypatch):
    env = gs.CartPoleEnv(batch_size=[2], seed=0)
    bad = [
        env.reset(),  # no action
        env.reset().set("action", torch.zeros(2, 1, dtype=torch.long)),  # shape
        env.reset().set("action", torch.zeros(2)),  # dtype
        TensorDict({"action": torch.zeros(2, dtype=torch.long)}, [2]),  # not reset
    ]

    def errors():
        out = []
        for td in bad:
            with pytest.raises((KeyError, ValueError, TypeError)) as info:
                env.step(td.clone(False))
            out.append((info.type, str(info.value)))
        return out

    fast = errors()
    with monkeypatch.context() as m:
        m.setattr(common, "inner", lambda td: None)
        assert errors() == fast
    assert [t for t, _ in fast] == [KeyError, ValueError, TypeError, KeyError]
