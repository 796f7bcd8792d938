"""Property test: random nested ``"_reset"`` masks against a plain reference merge."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.envs.common import EnvBase
from gpusim.specs import Categorical, Composite, Unbounded


class GroupEnv(EnvBase):
    """Env with an optional root done level and groups ``g0, g1, ...`` of ``n`` agents each; the
    reset output is ``-1`` everywhere."""

    def __init__(self, batch_size, groups, root_done):
        super().__init__(batch_size=batch_size)
        B = self.batch_size
        self.groups = groups
        obs, done = {"x": Unbounded((*B, 3))}, {}
        if root_done:
            done["done"] = Categorical(2, shape=(*B, 1), dtype=torch.bool)
        for i, n in enumerate(groups):
            A = (*B, n)
            obs[f"g{i}"] = Composite(y=Unbounded((*A, 2), dtype=torch.int64), shape=A)
            done[f"g{i}"] = Composite(done=Categorical(2, shape=(*A, 1), dtype=torch.bool), shape=A)
        self.observation_spec = Composite(obs, shape=B)
        self.done_spec = Composite(done, shape=B)
        self.action_spec = Unbounded((*B, 1))

    def _reset(self, td):
        out = self.full_observation_spec.zero().apply(lambda t: t - 1)
        return out.update(self.full_done_spec.zero())

    def _step(self, td):
        raise NotImplementedError

    def _set_seed(self, seed):
        pass


@st.composite
def cases(draw):
    B = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    groups = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    root_done = draw(st.booleans()) or not groups
    seed = draw(st.integers(0, 2**16))
    root_mask = draw(st.booleans())
    group_masks = [draw(st.booleans()) for _ in groups]
    return B, groups, root_done, seed, root_mask, group_masks


@settings(max_examples=40, deadline=None)
@given(cases())
def test_random_nested_masks_match_reference(case):
    B, groups, root_done, seed, use_root, use_groups = case
    env = GroupEnv(B, groups, root_done)
    g = torch.Generator().manual_seed(seed)
    prev = env.fake_tensordict().exclude("next").apply(lambda t: torch.randint(1, 9, t.shape, generator=g).to(t.dtype))
    masks = {}
    if use_root:
        masks[()] = torch.rand((*B, 1), generator=g) < 0.5
        prev.set("_reset", masks[()])
    for i, (n, use) in enumerate(zip(groups, use_groups)):
        if use:
            masks[(f"g{i}",)] = torch.rand((*B, n, 1), generator=g) < 0.5
            prev.set((f"g{i}", "_reset"), masks[(f"g{i}",)])
    before = prev.clone()
    out = env.reset(prev)
    assert not any(k[-1] == "_reset" if isinstance(k, tuple) else k == "_reset" for k in out.keys(True, True))
    for key in env.observation_keys:
        tkey = key if isinstance(key, tuple) else (key,)
        old = before.get(key)
        new = torch.full_like(old, -1)
        if () in masks:
            m = masks[()].reshape(B)
        elif tkey[:1] in masks:
            m = masks[tkey[:1]].reshape(*B, groups[int(tkey[0][1:])])
        else:
            m = torch.ones(old.shape[: len(B)], dtype=torch.bool)
        m = m.reshape(*m.shape, *[1] * (old.ndim - m.ndim))
        expected = torch.where(m, new, old)
        assert torch.equal(out.get(key), expected), key
