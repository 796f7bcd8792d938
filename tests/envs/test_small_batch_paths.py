"""The small-batch fast paths of the step loop give what their reference paths give: the flat
``step_mdp`` merge (``_fasttd._merge_flat``) against the general merge, the ``SPARSE`` done
masks (``EpisodePlan.sparse_done_masks``, numpy reads of CPU flags) against ``done_masks``, and the step
boundary's direct reads of a plain input against tensordict's public reads."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import gpusim as gs
from gpusim.envs import _boundary, _fasttd, common
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
    nxt = TensorDict(
        {"obs": torch.ones(2, 3), "reward": torch.ones(2, 1), "done": torch.zeros(2, 1, dtype=torch.bool)}, [2]
    )
    root = TensorDict(
        {"obs": torch.zeros(2, 3), "action": torch.zeros(2), "hidden": torch.ones(2, 4), "next": nxt}, [2]
    )
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
        Composite(done=_flag((3, 1)), agents=Composite(done=_flag((3, 2, 1)), shape=(3, 2)), shape=(3,)),
        torch.Size([3]),
    )
    return root, trunc, nested


def _reference_sparse(plan, td):
    masks = plan.done_masks(td, True)
    return masks if masks.any() else None


@pytest.mark.parametrize("seed", range(4))
def test_sparse_done_masks_agree_with_done_masks(seed):
    gen = torch.Generator().manual_seed(seed)

    def flags(*shape):
        return torch.rand(*shape, generator=gen) < 0.3

    root, trunc, nested = _plans()
    one = EpisodePlan(Composite(done=_flag((1, 1)), truncated=_flag((1, 1)), shape=(1,)), torch.Size([1]))
    scalar = EpisodePlan(Composite(done=_flag((1,)), truncated=_flag((1,)), shape=()), torch.Size([]))
    cases = [
        (one, TensorDict({"done": flags(1, 1), "truncated": flags(1, 1)}, [1])),
        (one, TensorDict({"done": torch.ones(1, 1, dtype=torch.bool)}, [1])),
        (scalar, TensorDict({"done": flags(1), "truncated": torch.ones(1, dtype=torch.bool)}, [])),  # 0-d OR
        (root, TensorDict({"done": flags(3, 1)}, [3])),
        (root, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool)}, [3])),
        (root, TensorDict({"done": flags(3)}, [3])),  # the mask's size in another shape
        (trunc, TensorDict({"done": flags(3, 1), "truncated": flags(3, 1)}, [3])),
        (trunc, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool), "truncated": flags(3, 1)}, [3])),
        (
            trunc,
            TensorDict(
                {"done": torch.zeros(3, 1, dtype=torch.bool), "truncated": torch.ones(3, 1, dtype=torch.bool)}, [3]
            ),
        ),
        (trunc, TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool)}, [3])),  # no truncated entry
        (
            nested,
            TensorDict({"done": torch.zeros(3, 1, dtype=torch.bool), "agents": {"done": flags(3, 2, 1)}}, [3]),
        ),  # nested levels: the general path
    ]
    for plan, td in cases:
        reference = _reference_sparse(plan, td)
        got = plan.sparse_done_masks(td)
        if reference is None:
            assert got is None
            continue
        assert got is not None and got.sparse and got.auto
        assert torch.equal(got.env_rows(), reference.env_rows())
        for a, b in zip(got.masks, reference.masks):
            assert torch.equal(a, b)
        assert (got.root is None) == (reference.root is None)
        host = got.host_rows()  # handed over read (root flags) or read now: the env rows, in numpy
        assert host.dtype == bool and host.shape == tuple(plan.batch_size)
        assert torch.equal(torch.from_numpy(host), reference.env_rows().reshape(plan.batch_size))


def test_sparse_done_masks_leave_bad_flags_to_done_masks():
    root, trunc, _ = _plans()
    for plan, td in [
        (root, TensorDict({}, [3])),  # no done entry
        (root, TensorDict({"done": torch.zeros(3, 2, dtype=torch.bool)}, [3])),  # not the mask's size
        (root, TensorDict({"done": torch.zeros(3, 1)}, [3])),  # not bool
        (
            trunc,
            TensorDict(
                {"done": torch.zeros(3, 1, dtype=torch.bool), "truncated": torch.zeros(3, dtype=torch.bool)}, [3]
            ),
        ),
    ]:
        with pytest.raises((KeyError, ValueError, TypeError)) as fast:
            plan.sparse_done_masks(td)
        with pytest.raises(fast.type) as ref:
            plan.done_masks(td, True)
        assert str(fast.value) == str(ref.value)


def test_host_rows_is_sparse_only():
    root, _, _ = _plans()
    masks = root.done_masks(TensorDict({"done": torch.ones(3, 1, dtype=torch.bool)}, [3]), sparse=False)
    with pytest.raises(RuntimeError, match="SPARSE"):
        masks.host_rows()


def _loop(env, steps=40):
    env.set_seed(3)
    torch.manual_seed(0)
    td = env.reset()
    out = []
    for _ in range(steps):
        data, td = env.step_and_maybe_reset(env.rand_action(td))
        out.append(data.clone())
    return torch.stack(out)


@pytest.mark.parametrize(
    "make",
    [
        lambda: gs.make("CartPole-v1", num_envs=1, seed=3),
        lambda: gs.TransformedEnv(gs.CartPoleEnv(batch_size=[3], seed=3), gs.StepCounter(7)),
        lambda: gs.GymEnv("CartPole-v1", num_envs=2),
    ],
)
def test_step_loop_equals_the_reference_paths(monkeypatch, make):
    env = make()
    fast = _loop(env)
    with monkeypatch.context() as m:
        m.setattr(_fasttd, "_merge_flat", lambda *a: None)
        m.setattr(EpisodePlan, "sparse_done_masks", _reference_sparse)
        m.setattr(_boundary, "inner", lambda td: None)
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
        m.setattr(_boundary, "inner", lambda td: None)
        assert errors() == fast
    assert [t for t, _ in fast] == [KeyError, ValueError, TypeError, KeyError]


@pytest.mark.parametrize("mode", ["sparse", "masked"])
def test_maybe_reset_names_a_bad_done_flag(mode):
    env = gs.TransformedEnv(gs.CartPoleEnv(batch_size=[3], auto_reset_mode=mode), gs.StepCounter(10))
    assert "truncated" in env.done_keys
    td = env.reset()
    td["done"] = torch.ones(3, 1)  # float flags: once a silent reset of every row
    with pytest.raises(TypeError, match="'done' entry must be a bool tensor, got dtype torch.float32"):
        env.maybe_reset(td)
    td["done"] = torch.zeros(3, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"'done' entry must have the done spec's shape \[3, 1\], got shape \[3, 2\]"):
        env.maybe_reset(td)
    td["done"] = torch.zeros(3, 1, dtype=torch.bool)
    td["truncated"] = torch.ones(3, dtype=torch.bool)  # ORed with done: would broadcast to [3, 3]
    with pytest.raises(ValueError, match="share one shape"):
        env.maybe_reset(td)


def _counter_env(reward_shape, with_terminated):
    from gpusim.specs import Unbounded

    class Counter(gs.EnvBase):
        def __init__(self):
            super().__init__(batch_size=[2])
            self.observation_spec = Composite(observation=Unbounded((2, 1)), shape=(2,))
            self.action_spec = Categorical(2, shape=(2,))
            self.reward_spec = Unbounded((2, 1))
            self.done_spec = Composite(
                done=_flag((2, 1)), terminated=_flag((2, 1)), truncated=_flag((2, 1)), shape=(2,)
            )

        def _reset(self, td):
            return TensorDict({"observation": torch.zeros(2, 1)}, [2])

        def _step(self, td):
            obs = td["observation"] + 1
            out = {
                "observation": obs,
                "reward": torch.ones(reward_shape),
                "done": obs >= 3,
                "truncated": torch.zeros(2, 1, dtype=torch.bool),
            }
            if with_terminated:
                out["terminated"] = obs >= 3
            return TensorDict(out, [2])

        def _set_seed(self, seed):
            pass

    return Counter()


@pytest.mark.parametrize("reward_shape, with_terminated", [((2, 1), True), ((2,), True), ((2, 1), False)])
def test_complete_step_outputs_skip_nothing_the_reference_does(monkeypatch, reward_shape, with_terminated):
    # a complete output (every reward/done leaf, the specs' shapes) skips reshaping and done
    # completion: the data equal those of the reference path, which always runs both
    env = _counter_env(reward_shape, with_terminated)
    fast = _loop(env, 8)
    with monkeypatch.context() as m:
        m.setattr(common.EnvBase, "_output_complete", lambda self, td: False)
        slow = _loop(env, 8)
    assert fast["next", "reward"].shape == (8, 2, 1) and fast["next", "terminated"].any()
    assert set(fast.keys(True, True)) == set(slow.keys(True, True))
    for key in fast.keys(True, True):
        assert torch.equal(fast[key], slow[key]), key
    complete = reward_shape == (2, 1) and with_terminated
    td = env.rand_action(env.reset())
    assert env._output_complete(env._step(td)) is complete
