"""``check_env_specs``: a short rollout compared against the structure the specs promise.

Examples:
    >>> from gpusim.envs.checks import check_env_specs
    >>> from gpusim.envs.native import AcrobotEnv
    >>> check_env_specs(AcrobotEnv(batch_size=[4]), seed=0, break_when_any_done="both")  # passes silently
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase, is_non_tensor

from gpusim.envs._action_guard import describe_range
from gpusim.envs._keys import as_tuple
from gpusim.envs.batched._shared import heterogeneous_stack
from gpusim.specs import Composite

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["check_env_specs"]


def _tensor_leaves(td: TensorDictBase, prefix: tuple = ()) -> dict:
    """The tensor leaves of ``td`` by key; a lazy stack whose members differ (heterogeneous
    agents) is read member by member, its leaves keyed ``(..., "[i]", ...)``."""
    out = {}
    for key, value in td.items():
        path = (*prefix, key)
        if isinstance(value, torch.Tensor):
            out[path[0] if len(path) == 1 else path] = value
        elif isinstance(value, LazyStackedTensorDict) and heterogeneous_stack(value):
            for i, member in enumerate(value.tensordicts):
                out.update(_tensor_leaves(member, (*path, f"[{i}]")))
        elif isinstance(value, TensorDictBase) and not is_non_tensor(value):
            out.update(_tensor_leaves(value, path))
    return out


def _fmt(key) -> str:
    return repr(key if isinstance(key, str) else tuple(key))


def check_env_specs(
    env: EnvBase,
    return_contiguous: bool | None = None,
    check_dtype: bool = True,
    seed: int | None = None,
    tensordict: TensorDictBase | None = None,
    break_when_any_done: bool | str = False,
    steps: int = 3,
) -> None:
    """Checks that a short rollout of ``env`` matches its specs.

    Compares the rollout with ``env.fake_tensordict()``: same keys, shapes, dtypes and devices,
    and every observation, reward, done, state and action value inside its spec and finite.
    State entries under ``"next"`` are optional (a step may or may not return them).

    Args:
        env: the env to check.
        return_contiguous: passed to ``rollout`` (default ``None``: contiguous unless the specs
            have a dynamic ``-1`` dim). A dynamic dim of a spec matches any extent of the data.
        check_dtype: compare dtypes too.
        seed: seed the env first.
        tensordict: initial data for the rollout's reset.
        break_when_any_done: passed to ``rollout``; ``"both"`` runs both modes.
        steps: rollout length.

    Raises:
        AssertionError: naming the first key whose presence, shape, dtype, device or value
            differs from the specs.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> check_env_specs(CartPoleEnv(batch_size=[2]), seed=0)  # passes silently
        >>> from gpusim.transforms import Transform, TransformedEnv
        >>> class Leaky(Transform):  # writes an entry that its specs do not declare
        ...     def _call(self, td):
        ...         return td.set("extra", torch.zeros(td.batch_size))
        >>> check_env_specs(TransformedEnv(CartPoleEnv(batch_size=[2]), Leaky()))
        Traceback (most recent call last):
        ...
        AssertionError: The keys of step 0 and the spec keys differ: keys in the specs but not in the data: []; keys in the data but not in the specs: ["'extra'", "('next', 'extra')"]
    """
    if break_when_any_done == "both":
        check_env_specs(env, return_contiguous, check_dtype, seed, tensordict, True, steps)
        break_when_any_done = False
    if seed is not None:
        env.set_seed(seed)
    fake = env.fake_tensordict()
    # step by step first, so that a structural mismatch is reported by key, not by a stack error
    td = env.reset(None if tensordict is None else tensordict.clone())
    optional = {("next", *as_tuple(k)) for k in env.state_keys}
    dynamic = _dynamic_shapes(env) if env._has_dynamic_specs else {}
    count = iter(range(steps))

    def compare(env: EnvBase, stepped: TensorDictBase) -> None:  # right after each step
        _compare(stepped, fake, check_dtype, f"step {next(count)}", optional, dynamic)

    env.step_pipeline.run(td, env.rand_action, steps, reset=False, callback=compare)
    real = env.rollout(
        steps,
        tensordict=None if tensordict is None else tensordict.clone(),
        return_contiguous=return_contiguous,
        break_when_any_done=bool(break_when_any_done),
    )
    T = real.shape[-1]
    if dynamic:  # steps may differ in shape: one comparison per step
        for t in range(T):
            _compare(real[..., t], fake, check_dtype, f"step {t} of the rollout", optional, dynamic)
    else:
        _compare(real, fake.unsqueeze(-1).expand(*fake.batch_size, T), check_dtype, "the rollout", optional)
    _check_values(env, real)


def _dynamic_shapes(env: EnvBase) -> dict:
    """``{key: spec shape}`` of the leaves with a dynamic (``-1``) dim, as they appear in a step."""
    out = {}
    for where, spec in (
        ("root", env.full_action_spec),
        ("root", env.full_state_spec),
        ("both", env.full_observation_spec),
        ("next", env.full_reward_spec),
        ("both", env.full_done_spec),
    ):
        for key, leaf in spec.items(True, True):
            if -1 not in tuple(leaf.shape):
                continue
            if where in ("root", "both"):
                out[as_tuple(key)] = tuple(leaf.shape)
            if where in ("next", "both"):
                out[("next", *as_tuple(key))] = tuple(leaf.shape)
    return out


def _shape_matches(data: torch.Size, expected: torch.Size, spec_shape: tuple | None) -> bool:
    if spec_shape is None:
        return data == expected
    # the expected shape is the fake's (batch dims of the data, then the spec's): -1 dims of the
    # spec (its trailing dims) match any extent
    if len(data) != len(expected):
        return False
    lead = len(expected) - len(spec_shape)
    return all(d == e or (i >= lead and spec_shape[i - lead] == -1) for i, (d, e) in enumerate(zip(data, expected)))


def _compare(
    real: TensorDictBase,
    fake: TensorDictBase,
    check_dtype: bool,
    where: str,
    optional: set,
    dynamic: dict | None = None,
) -> None:
    real_leaves = {k: v for k, v in _tensor_leaves(real).items() if as_tuple(k) not in optional}
    fake_leaves = {k: v for k, v in _tensor_leaves(fake).items() if as_tuple(k) not in optional}
    missing = sorted(map(_fmt, set(fake_leaves) - set(real_leaves)))
    extra = sorted(map(_fmt, set(real_leaves) - set(fake_leaves)))
    if missing or extra:
        raise AssertionError(
            f"The keys of {where} and the spec keys differ: keys in the specs but not in the data: "
            f"{missing}; keys in the data but not in the specs: {extra}"
        )
    for key, f in fake_leaves.items():
        r = real_leaves[key]
        if not _shape_matches(r.shape, f.shape, (dynamic or {}).get(as_tuple(key))):
            raise AssertionError(
                f"Shape mismatch for key {_fmt(key)} at {where}: the data has {list(r.shape)}, the "
                f"specs give {list(f.shape)}"
            )
        if check_dtype and r.dtype != f.dtype:
            raise AssertionError(f"Dtype mismatch for key {_fmt(key)} at {where}: data {r.dtype}, specs {f.dtype}")
        if r.device != f.device:
            raise AssertionError(f"Device mismatch for key {_fmt(key)} at {where}: data {r.device}, specs {f.device}")


def _check_values(env: EnvBase, real: TensorDictBase) -> None:
    groups = [
        ("next", env.full_observation_spec),
        ("next", env.full_reward_spec),
        ("next", env.full_done_spec),
        ("root", env.full_action_spec),
        ("root", env.full_state_spec),
    ]
    T = real.shape[-1]
    for t in range(T):
        step = real[..., t]
        for where, spec in groups:
            data = step.get("next") if where == "next" else step
            for key, leaf, value in _spec_values(spec, data):
                if not isinstance(value, torch.Tensor):
                    continue
                if getattr(leaf, "mask", None) is not None:
                    # a mask that follows the env (an action mask) is the latest step's: check the
                    # recorded values against the unmasked spec
                    leaf = leaf.clone()
                    leaf.update_mask(None)
                name = ("next", *as_tuple(key)) if where == "next" else key
                if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                    raise AssertionError(
                        f"The value of key {_fmt(name)} at step {t} holds non-finite values (NaN or inf): "
                        f"{value.flatten()[:8].tolist()}..."
                    )
                if not leaf.is_in(value):
                    raise AssertionError(
                        f"The value of key {_fmt(name)} at step {t} is outside its spec "
                        f"{type(leaf).__name__}: expected {describe_range(leaf)}, received "
                        f"{value.flatten()[:8].tolist()}..."
                    )


def _spec_values(spec, data: TensorDictBase, prefix: tuple = ()):
    """``(key, leaf spec, value)`` for every leaf of ``spec``; a lazy stack of heterogeneous
    members (data and spec) is walked member by member (keys ``(..., "[i]", ...)``)."""
    for key in spec.keys():
        sub = spec[key]
        path = (*prefix, key)
        value = data.get(key, None) if isinstance(data, TensorDictBase) else None
        if isinstance(value, LazyStackedTensorDict) and heterogeneous_stack(value) and hasattr(sub, "stack_dim"):
            for i, (s_i, d_i) in enumerate(zip(sub.unbind(sub.stack_dim), value.tensordicts)):
                yield from _spec_values(s_i, d_i, (*path, f"[{i}]"))
        elif isinstance(sub, Composite):
            yield from _spec_values(sub, value, path)
        else:
            yield (path[0] if len(path) == 1 else path), sub, value
