"""``EnvBase.auto_specs_``: an env's specs inferred from two steps of its raw hooks.

The env's ``_reset``/``_step`` run directly (the step boundary would check the actions against
the specs being inferred). Every leaf gets an ``Unbounded`` spec of its shape and dtype (a dim
that differs between the two steps becomes dynamic, ``-1``); a non-tensor leaf gets a
``NonTensor`` spec. The named keys are split into the action, done, reward and observation
specs; root inputs that are no action and no output become the state spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase, is_non_tensor

from gpusim.envs import _keys
from gpusim.envs._keys import DONE_NAMES, NestedKey
from gpusim.specs import Composite, NonTensor, Unbounded

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase


def _is_leaf(cls: type) -> bool:
    return not issubclass(cls, TensorDictBase) or is_non_tensor(cls)


def _leaf_specs(first: TensorDictBase, second: TensorDictBase) -> dict:
    """``{key: spec}`` of the leaves of ``first`` (dims that differ in ``second`` are ``-1``)."""
    out = {}
    for key, value in first.items(True, True, is_leaf=_is_leaf):
        key = _keys.unravel(key)
        if not isinstance(value, torch.Tensor):
            out[key] = NonTensor(shape=value.batch_size if is_non_tensor(value) else (), device=first.device)
            continue
        other = second.get(key, None)
        shape = list(value.shape)
        if isinstance(other, torch.Tensor) and other.ndim == value.ndim:
            shape = [d if d == o else -1 for d, o in zip(value.shape, other.shape)]
        out[key] = Unbounded(shape=shape, dtype=value.dtype, device=value.device)
    return out


def _as_list(keys: NestedKey | Sequence[NestedKey] | None) -> list:
    if keys is None:
        return []
    if isinstance(keys, (str, tuple)):
        keys = [keys]
    return [_keys.unravel(k) for k in keys]


def _take(specs: dict, keys: list, batch_size: torch.Size, device) -> Composite | None:
    found = {k: specs.pop(k) for k in keys if k in specs}
    if not found:
        return None
    out = Composite(shape=batch_size, device=device)
    for key, spec in found.items():
        out[key] = spec
    return out


def auto_specs(
    env: EnvBase,
    policy: Callable[[TensorDictBase], TensorDictBase],
    tensordict: TensorDictBase | None,
    action_key: NestedKey | Sequence[NestedKey],
    done_key: NestedKey | Sequence[NestedKey] | None,
    observation_key: NestedKey | Sequence[NestedKey],
    reward_key: NestedKey | Sequence[NestedKey],
) -> EnvBase:
    """See :meth:`gpusim.envs.common.EnvBase.auto_specs_`."""
    batch_size, device = env.batch_size, env.device
    if tensordict is None:  # the env's raw start data (no spec is needed to produce it)
        from gpusim.envs.native import NativeEnv, ResetRows

        rows = {"rows": ResetRows.start(env.rng)} if isinstance(env, NativeEnv) else {}
        root = env._reset(None, **rows)
    else:
        root = tensordict
    root.update(policy(root))
    next_0 = env._step(root.copy())
    root_1 = next_0.copy()
    root_1.update(policy(root_1))
    next_1 = env._step(root_1.copy())

    inputs = _leaf_specs(root, root_1)
    outputs = _leaf_specs(next_0, next_1)
    done_keys = _as_list(done_key) if done_key is not None else [k for k in DONE_NAMES if k in outputs]
    action = _take(inputs, _as_list(action_key), batch_size, device)
    done = _take(outputs, done_keys, batch_size, device)
    reward = _take(outputs, _as_list(reward_key), batch_size, device)
    observation = _take(outputs, _as_list(observation_key), batch_size, device)
    if outputs:
        raise RuntimeError(
            f"auto_specs_: the step output keys [{', '.join(sorted(map(_keys.fmt, outputs)))}] are in none of "
            "action_key, done_key, observation_key, reward_key: name every output entry"
        )
    output_keys = set(done_keys) | set(_as_list(reward_key)) | set(_as_list(observation_key))
    state = Composite(shape=batch_size, device=device)
    for key, spec in inputs.items():
        if key not in output_keys:
            state[key] = spec
    if action is not None:
        env.full_action_spec = action
    if done is not None:
        env.full_done_spec = done
    if observation is not None:
        env.full_observation_spec = observation
    if reward is not None:
        env.full_reward_spec = reward
    env.full_state_spec = state
    return env
