"""Transform base class, Compose and TransformedEnv: keys, inverse path, specs, parent/clone
semantics (the seed documentation's "Cloning transforms" section), chain edits, seeding."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from gpusim.envs.checks import check_env_specs
from gpusim.specs import Unbounded
from gpusim.transforms import Compose, StepCounter, Transform, TransformedEnv
from tests.envs.toy_envs import StatelessCounter
from tests.transforms._stateful_envs import TickEnv


class AddConst(Transform):
    """obs + c forward; action - c inverse; out spec copied."""

    invertible = True

    def __init__(self, c, in_keys=None, out_keys=None, in_keys_inv=None, out_keys_inv=None):
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.c = c
        self.register_buffer("calls", torch.zeros(()))

    def _apply_transform(self, obs):
        self.calls += 1
        return obs + self.c

    def _inv_apply_transform(self, action):
        return action - self.c

    def transform_observation_spec(self, spec):
        for i, o in zip(self.in_keys, self.out_keys):
            if i in spec.keys(True, True) and o != i:
                spec[o] = spec[i].clone()
        return spec


class ScaleAction(Transform):
    """Inverse: action * s (to check the order of inverse transforms)."""

    def __init__(self, s):
        super().__init__(in_keys_inv=["action"])
        self.s = s

    def _inv_apply_transform(self, action):
        return action * self.s


# ---------------------------------------------------------------------------------- Transform
def test_keys_are_unravelled_and_out_keys_default_to_in_keys():
    t = Transform(in_keys=[("a", ("b", "c")), "d"], in_keys_inv=("x",))
    assert t.in_keys == [("a", "b", "c"), "d"]
    assert t.out_keys == t.in_keys
    assert t.in_keys_inv == ["x"] and t.out_keys_inv == ["x"]
    with pytest.raises(TypeError, match="in_keys"):
        Transform(in_keys=[3])


def test_apply_transform_default_raises_naming_the_class():
    with pytest.raises(NotImplementedError, match="Transform"):
        Transform(in_keys=["a"])(TensorDict({"a": torch.zeros(1)}, [1]))


def test_forward_rejects_absent_keys_unless_tolerant():
    t = AddConst(1.0, in_keys=["a", "missing"], out_keys=["b", "c"])
    with pytest.raises(KeyError, match="'missing'"):
        t(TensorDict({"a": torch.zeros(2)}, [2]))
    t.set_missing_tolerance(True)
    td = t(TensorDict({"a": torch.zeros(2)}, [2]))
    assert torch.equal(td["b"], torch.ones(2)) and "c" not in td.keys() and t.missing_tolerance


def test_inv_never_writes_into_its_input():
    t = AddConst(1.0, in_keys_inv=["action"])
    td = TensorDict({"action": torch.ones(3)}, [3])
    out = t.inv(td)
    assert torch.equal(out["action"], torch.zeros(3))
    assert torch.equal(td["action"], torch.ones(3))


def test_clone_has_no_parent_and_shares_buffers():
    env = TransformedEnv(StatelessCounter(batch_size=[2]), AddConst(1.0, in_keys=["observation"]))
    t = env.transform  # a single transform is not wrapped (TorchRL's behaviour)
    assert t.parent is not None
    c = t.clone()
    assert c.parent is None and c.container is None
    assert c.calls is t.calls
    t.calls += 5  # in place: the clone sees it
    assert c.calls.item() == t.calls.item()


def test_reusing_a_transform_with_a_parent_raises_clone_works():
    base = StatelessCounter(batch_size=[2])
    env = TransformedEnv(base, Compose(AddConst(1.0, in_keys=["observation"]), StepCounter()))
    third = env.transform[1]
    assert third.parent is not None
    with pytest.raises(RuntimeError, match="clone"):
        TransformedEnv(StatelessCounter(batch_size=[2]), third)
    env2 = TransformedEnv(StatelessCounter(batch_size=[2]), third.clone())
    assert env2.transform.parent is not None


def test_parent_is_the_env_up_to_the_transform():
    base = StatelessCounter(batch_size=[3])
    t1, t2 = AddConst(1.0, in_keys=["observation"], out_keys=["o1"]), StepCounter()
    env = TransformedEnv(base, Compose(t1, t2))
    assert t1.parent.transform.transforms.__len__() == 0
    p = t2.parent
    assert isinstance(p, TransformedEnv) and p.base_env is base
    assert "o1" in p.observation_keys and "step_count" not in p.observation_keys
    assert t2.container is env and t1.container is env
    assert Transform().parent is None


def test_parent_of_a_nested_compose_member():
    base = StatelessCounter(batch_size=[2])
    inner = Compose(AddConst(1.0, in_keys=["observation"], out_keys=["o1"]), StepCounter())
    env = TransformedEnv(base, Compose(AddConst(2.0, in_keys=["observation"], out_keys=["o0"]), inner))
    p = inner[1].parent
    assert {"o0", "o1"} <= set(p.observation_keys)
    assert "step_count" in env.observation_keys


# ---------------------------------------------------------------------------------- Compose
def test_compose_indexing_keeps_parent_slicing_clones():
    ts = [AddConst(float(i), in_keys=["observation"], out_keys=[f"o{i}"]) for i in range(3)]
    env = TransformedEnv(StatelessCounter(batch_size=[2]), Compose(*ts))
    assert env.transform[2] is ts[2] and env.transform[2].parent is not None
    last_two = env.transform[-2:]
    assert isinstance(last_two, Compose) and last_two.parent is None
    assert last_two[0] is not ts[1] and isinstance(last_two[0], AddConst)
    assert last_two[0].calls is ts[1].calls  # buffers match
    assert len(env.transform) == 3 and list(env.transform) == ts


def test_compose_runs_forward_in_order_and_inverse_in_reverse():
    env = TransformedEnv(TickEnv(batch_size=[2]), Compose(AddConst(1.0, in_keys_inv=["action"]), ScaleAction(10.0)))
    td = env.reset()
    td["action"] = torch.full((2, 1), 3.0)
    env.step(td)
    # reverse order: ScaleAction first (30), then AddConst inverse (29)
    assert torch.equal(env.base_env.last_action, torch.full((2, 1), 29.0))
    assert torch.equal(td["action"], torch.full((2, 1), 3.0))  # the user's data is untouched
    c = Compose(AddConst(1.0, in_keys=["x"]), AddConst(10.0, in_keys=["x"]))
    assert c(TensorDict({"x": torch.zeros(1)}, [1]))["x"].item() == 11.0


def test_compose_append_insert_recompute_specs_and_parents():
    env = TransformedEnv(StatelessCounter(batch_size=[2]))
    assert "step_count" not in env.observation_keys
    env.append_transform(StepCounter(max_steps=5))
    assert "step_count" in env.observation_keys and "truncated" in [k for k in env.done_keys]
    a = AddConst(1.0, in_keys=["observation"], out_keys=["o"])
    env.insert_transform(0, a)
    assert env.transform[0] is a and "o" in env.observation_keys
    assert "o" in env.transform[1].parent.observation_keys
    env.transform.append(AddConst(1.0, in_keys=["observation"], out_keys=["p"]))  # through the Compose
    assert "p" in env.observation_keys
    assert env.output_spec.is_locked
    with pytest.raises(TypeError):
        env.append_transform("not a transform")
    with pytest.raises(IndexError):
        env.insert_transform(10, StepCounter())


def test_nested_compose_in_env_steps():
    env = TransformedEnv(
        StatelessCounter(batch_size=[3]),
        Compose(
            Compose(AddConst(1.0, in_keys=["observation"], out_keys=["a"])),
            AddConst(2.0, in_keys=["a"], out_keys=["b"]),
        ),
    )
    check_env_specs(env)
    td = env.rollout(3)
    assert torch.equal(td["next", "b"], td["next", "observation"] + 3)


# ---------------------------------------------------------------------------------- TransformedEnv
@pytest.mark.parametrize("batch", [[], [1], [7], [3, 4]])
def test_transformed_env_inherits_batch_device_and_keeps_contract(batch):
    base = StatelessCounter(batch_size=batch)
    env = TransformedEnv(base, AddConst(1.0, in_keys=["observation"], out_keys=["o"]))
    assert env.batch_size == base.batch_size and env.device == base.device
    assert env.auto_reset_mode is base.auto_reset_mode and env.functional_step is base.functional_step
    assert isinstance(env.transform, AddConst) and env.transform.container is env
    check_env_specs(env)
    # the base env's specs are not modified
    assert "o" not in base.observation_keys
    with pytest.raises(RuntimeError):
        env.output_spec["full_observation_spec"]["x"] = Unbounded((*batch, 1))


def test_attribute_fallthrough_and_repr():
    env = TransformedEnv(StatelessCounter(batch_size=[2], max_count=7), StepCounter())
    assert env.max_count == 7
    with pytest.raises(AttributeError, match="no_such_attr"):
        env.no_such_attr
    r = repr(env)
    assert "StatelessCounter" in r and "StepCounter" in r


def test_auto_unwrap_flattens_and_shares_buffers():
    inner = TransformedEnv(StatelessCounter(batch_size=[2]), AddConst(1.0, in_keys=["observation"], out_keys=["a"]))
    outer = TransformedEnv(inner, StepCounter())
    assert outer.base_env is inner.base_env
    assert len(outer.transform) == 2 and outer.transform[0].calls is inner.transform.calls
    nested = TransformedEnv(inner, StepCounter(), auto_unwrap=False)
    assert nested.base_env is inner
    check_env_specs(nested)


def test_set_seed_returns_next_seed_and_seeds_transforms():
    class Seeded(Transform):
        def _set_seed(self, seed):
            self.seen = seed
            return seed + 1

    env = TransformedEnv(StatelessCounter(batch_size=[2]), Seeded())
    base_next = StatelessCounter(batch_size=[2]).set_seed(3)
    out = env.set_seed(3)
    assert env.transform.seen == base_next and out == base_next + 1
    with pytest.raises(TypeError):
        env.set_seed("3")


def test_transform_setter_and_kwargs_rejected():
    env = TransformedEnv(StatelessCounter(batch_size=[2]))
    env.transform = StepCounter()
    assert isinstance(env.transform, StepCounter) and "step_count" in env.observation_keys
    env.append_transform(lambda td: td)  # a callable becomes a transform; the chain a Compose
    assert isinstance(env.transform, Compose) and len(env.transform) == 2
    assert env.transform[0].container is env and not env.transform.training  # eval mode in an env
    with pytest.raises(TypeError, match="unexpected"):
        TransformedEnv(StatelessCounter(), bogus=1)
    with pytest.raises(TypeError):
        TransformedEnv("env")


def test_to_moves_buffers_and_state_dict_holds_transform_state():
    env = TransformedEnv(StatelessCounter(batch_size=[2]), AddConst(1.0, in_keys=["observation"]))
    assert "transform.calls" in env.state_dict()
    env.to("cpu")
    assert env.device == torch.device("cpu") and env.transform.calls.device.type == "cpu"


def test_transformed_native_env_keeps_the_seeded_reset_stream():
    """Eager CPU rollouts skip resets when nothing is done; the base env's reset noise (keyed by
    episode index) is the same with and without a TransformedEnv around it."""
    from gpusim.envs.native import CartPoleEnv

    base = CartPoleEnv(batch_size=[16], seed=3)
    env = TransformedEnv(CartPoleEnv(batch_size=[16], seed=3), StepCounter())
    torch.manual_seed(0)
    a = base.rollout(40, break_when_any_done=False)
    torch.manual_seed(0)
    b = env.rollout(40, break_when_any_done=False)
    assert a["next", "done"].any()
    assert torch.equal(a["observation"], b["observation"])


def test_base_inverse_reads_outer_keys_and_writes_inner_keys():
    """TorchRL's convention: ``out_keys_inv`` are the outer names (read from the input),
    ``in_keys_inv`` the inner names the base env receives."""
    t = AddConst(2.0, in_keys_inv=["action"], out_keys_inv=["action_outer"])
    td = TensorDict({"action_outer": torch.tensor([5.0, 7.0])}, [2])
    out = t.inv(td)
    assert torch.equal(out["action"], torch.tensor([3.0, 5.0]))
    assert "action" not in td.keys()  # the user's tensordict is not written
