"""Partial steps: a ``"_step"`` entry (bool, one flag per row of the env's batch) selects the rows
that take a step; the others are skipped.

A skipped row's ``"next"`` data is its current data: the observations, done flags and state
entries of the input, with a zero reward (TorchRL's partial steps). How the selected rows are
stepped is the env's :meth:`~gpusim.envs.common.EnvBase._step_rows` hook: an env whose ``_step``
is a pure function of its input (``functional_step``) steps every row and keeps the selected
ones (no host read of the mask, so this compiles and stays on the device); a batch-unlocked env
without batch dims steps the selected rows only; batched envs step the selected workers only.
Other envs cannot step a subset of their rows (their state would move for every row) and raise.

Examples:
    >>> import torch
    >>> from gpusim import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[3], seed=0)
    >>> td = env.rand_action(env.reset())
    >>> td["_step"] = torch.tensor([True, False, True])
    >>> out = env.step(td)
    >>> (out["next", "observation"][1] == td["observation"][1]).all().item(), out["next", "reward"][1].item()
    (True, 0.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from gpusim.envs.episode import merge_rows

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["step_mask", "step_partial", "skip_next", "step_selected_rows"]


def step_mask(env: EnvBase, value, batch_size: torch.Size) -> torch.Tensor:
    """The ``"_step"`` entry as a bool mask of shape ``batch_size`` (a trailing singleton dim is
    accepted); raises naming the expected and received dtype/shape."""
    if not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
        got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"{type(env).__name__}.step: the '_step' entry must be a bool tensor, got {got}")
    if value.shape != batch_size:
        if value.numel() != batch_size.numel() or value.shape[: len(batch_size)] != batch_size:
            raise ValueError(
                f"{type(env).__name__}.step: the '_step' entry has shape {list(value.shape)}, expected "
                f"{list(batch_size)} (one flag per row of the batch)"
            )
        value = value.reshape(batch_size)
    return value


def step_partial(
    env: EnvBase,
    value: torch.Tensor,
    batch_size: torch.Size,
    *,
    every: Callable[[], TensorDictBase],
    some: Callable[[torch.Tensor], TensorDictBase],
    none: Callable[[], TensorDictBase],
) -> TensorDictBase:
    """The ``"next"`` data of a step with a ``"_step"`` entry ``value``: ``some(mask)`` steps the
    selected rows; where the env's pipeline may read the mask on the host (sparse, not
    compiling), ``none()`` when no row is selected and ``every()`` when all are.

    Examples:
        >>> import torch
        >>> from gpusim import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2])
        >>> pick = lambda value: step_partial(env, value, env.batch_size, every=lambda: "every",
        ...                                   some=lambda mask: "some", none=lambda: "none")
        >>> pick(torch.tensor([True, False])), pick(torch.tensor([True, True])), pick(torch.tensor([False, False]))
        ('some', 'every', 'none')
    """
    mask = step_mask(env, value, batch_size)
    if env.step_pipeline.sparse_now():
        if not bool(mask.any()):
            return none()
        if bool(mask.all()):
            return every()
    return some(mask)


def skip_next(env: EnvBase, tensordict: TensorDictBase, clone: bool) -> TensorDictBase:
    """The ``"next"`` data of skipped rows: the spec's zeros (observations, rewards, done flags)
    overwritten by the input's observations, done flags and state entries (cloned with
    ``clone``)."""
    lead = tensordict.batch_size[: len(tensordict.batch_size) - len(env.batch_size)]
    out = env.full_done_spec.zero(lead)
    out.update(env.full_observation_spec.zero(lead))
    out.update(env.full_reward_spec.zero(lead))
    for key in (*env.observation_keys, *env.done_keys, *env._echo_state_keys):
        value = tensordict.get(key, None)
        if value is None:
            continue
        if not isinstance(value, torch.Tensor):  # non-tensor data: carried whole (see below)
            _carry_structured(out, tensordict, key)
            continue
        current = out.get(key, None)
        if current is not None and current.shape != value.shape:
            continue
        out.set(key, value.clone() if clone else value)
    return out


def _carry_structured(out: TensorDictBase, tensordict: TensorDictBase, key) -> None:
    """Copies the entry holding the non-tensor leaf ``key`` from ``tensordict`` into ``out``: the
    leaf itself, or its first enclosing entry that is no plain tensordict (a tensorclass such as
    a chat history, whose size may differ from the spec's zeros)."""
    parts = key if isinstance(key, tuple) else (key,)
    for i in range(1, len(parts) + 1):
        value = tensordict.get(parts[:i], None)
        if value is None:
            return
        if i == len(parts) or not isinstance(value, TensorDictBase):
            out.set(parts[:i], value)
            return


def step_selected_rows(env: EnvBase, tensordict: TensorDictBase, mask: torch.Tensor) -> TensorDictBase:
    """The ``"next"`` data when ``mask`` selects some rows (the default ``_step_rows``)."""
    if env.functional_step:
        return merge_rows(env._step_output(tensordict), skip_next(env, tensordict, clone=False), mask)
    if not env.batch_locked and not env.batch_size:
        out = skip_next(env, tensordict, clone=True)
        stepped = env._step_output(tensordict[mask])
        for key, value in stepped.items(True, True):
            if not isinstance(value, torch.Tensor):
                continue
            full = out.get(key, None)
            if full is None or full.shape[1:] != value.shape[1:]:
                full = torch.zeros((*mask.shape, *value.shape[1:]), dtype=value.dtype, device=value.device)
                out.set(key, full)
            full[mask] = value.to(full.dtype)
        return out
    name = type(env).__name__
    raise ValueError(
        f"{name}.step: the '_step' entry selects some rows only, but {name} cannot step a subset of its "
        "rows: its _step is not a pure function of its input (functional_step is False), so stepping "
        "every row would move the state of the skipped ones. Step all rows, or select whole workers of "
        "a batched env."
    )
