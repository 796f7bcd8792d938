"""Shared machinery of the MinAtar parity tests against the real ``minatar`` package.

State injection: a batch of states (from our own rollouts under a random policy, plus states
drawn at random over the state space) is stepped once by our env with a fixed table of step
uniforms, and each row is stepped once by a ``minatar`` game object into which the same state
was written and whose ``random`` replays the same uniforms through the same mappings
(``rand() < p``, ``randint(lo, hi) = lo + floor(u * (hi - lo))``): next state, observation,
reward and terminal must match exactly.

Distributions: under a uniform random policy with the default sticky actions, the mean and the
spread of the episode return and length of our env (the second episode of each row of a batch)
and of the package (sequential episodes) agree within their standard errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from tensordict import TensorDict

from gpusim.envs.native.minatar._common import MinAtarEnv

Z = 4.0  # tolerance in combined standard errors (fixed seeds: the tests are deterministic)


class Replay:
    """Stands in for a game's ``numpy.random.RandomState``: hands out the given uniforms in
    order, through the mappings the batched games use."""

    def __init__(self, uniforms) -> None:
        self.u = list(uniforms)
        self.i = 0

    def _next(self) -> float:
        value = self.u[self.i]
        self.i += 1
        return value

    def rand(self, *size):
        if not size:
            return self._next()
        return np.array([self._next() for _ in range(int(np.prod(size)))]).reshape(size)

    def randint(self, low, high=None, size=None):
        if high is None:
            low, high = 0, low
        if size is None:
            return low + math.floor(self._next() * (high - low))
        return np.array([low + math.floor(self._next() * (high - low)) for _ in range(size)])


def rollout_states(env_cls: type[MinAtarEnv], rows: int, steps: int, seed: int) -> TensorDict:
    """Root states met by our env (sticky actions off) under a uniform random policy, flat
    ``[rows * steps]``."""
    env = env_cls(batch_size=[rows], seed=seed, sticky_action_prob=0.0)
    torch.manual_seed(seed)
    td = env.rollout(steps, break_when_any_done=False)
    keys = [*env.state_layout(), "last_action"]
    return td.select(*keys).reshape(-1)


def step_with(env_cls: type[MinAtarEnv], states: TensorDict, actions: torch.Tensor, u: torch.Tensor, **kw):
    """One raw step of a batch of ``states`` with the step uniforms ``u`` (``[N, draws + 1]``;
    column 0 is the sticky-action draw)."""
    env = env_cls(batch_size=[states.shape[0]], seed=0, sticky_action_prob=0.0, **kw)
    env.rng.uniform = lambda low, high, n: u  # the step stream, replaced by a known table
    td = states.clone().set("action", actions)
    return env._step(td)


def check_injection(
    env_cls: type[MinAtarEnv],
    states: TensorDict,
    inject: Callable,
    extract: Callable,
    seed: int,
    normalize: Callable = lambda state: state,
    uniforms: Callable = lambda state, u: u,
    **kw,
) -> tuple[int, int, list[str]]:
    """Steps every state of ``states`` with our env and with the package; returns ``(number of
    states, number matching, first mismatches)``. ``inject(game, state)`` writes one state (a
    dict of Python values) into the package's game object, ``extract(game)`` reads it back in
    our form, ``normalize(state)`` drops what the package does not hold (e.g. dead slots),
    ``uniforms(state, u)`` lists the uniforms in the order the package draws them."""
    from minatar import Environment

    n = states.shape[0]
    gen = torch.Generator().manual_seed(seed)
    env = env_cls(batch_size=[1], sticky_action_prob=0.0, **kw)
    actions = torch.randint(0, env.action_spec.n, (n,), generator=gen)
    u = torch.rand(n, 1 + env_cls.step_draws, generator=gen)
    out = step_with(env_cls, states, actions, u, **kw)
    names = list(env_cls.state_layout())
    before = {k: states[k].tolist() for k in names}
    after = {k: out[k].tolist() for k in names}
    obs = out["observation"].numpy()
    reward = out["reward"].squeeze(-1).tolist()
    terminal = out["terminated"].squeeze(-1).tolist()
    action_set = env.action_set
    ref = Environment(env_cls.game, sticky_action_prob=0.0, difficulty_ramping=kw.get("difficulty_ramping", True))
    matches, errors = 0, []
    for i in range(n):
        game = ref.env
        game.random = np.random.RandomState(i)
        game.reset()
        inject(game, {k: v[i] for k, v in before.items()})
        game.terminal = False
        game.random = Replay(uniforms({k: v[i] for k, v in before.items()}, u[i, 1:].tolist()))
        r, t = game.act(action_set[actions[i]])
        got = extract(game)
        want = normalize({k: v[i] for k, v in after.items()})
        problems = [f"{k}: {got[k]} vs ours {want[k]}" for k in got if got[k] != want[k]]
        if not np.array_equal(game.state(), obs[i]):
            problems.append("observation")
        if r != reward[i]:
            problems.append(f"reward {r} vs {reward[i]}")
        if bool(t) != terminal[i]:
            problems.append(f"terminal {t} vs {terminal[i]}")
        if problems:
            if len(errors) < 5:
                errors.append(f"state {i} action {action_set[actions[i]]}: {problems}")
        else:
            matches += 1
    return n, matches, errors


# ---------------------------------------------------------------------------- distributions
def moments(x: np.ndarray) -> tuple[float, float, float, float]:
    """``(mean, se of the mean, std, se of the std)``; the se of the std from the fourth moment
    (no normality assumed)."""
    n = len(x)
    mean = float(x.mean())
    std = float(x.std(ddof=1))
    m4 = float(((x - mean) ** 4).mean())
    var_s2 = max(m4 - std**4, 0.0) / n
    se_std = math.sqrt(var_s2) / (2 * std) if std > 0 else 0.0
    return mean, std / math.sqrt(n), std, se_std


def ours_episodes(env_cls: type[MinAtarEnv], rows: int, max_steps: int, seed: int, episode: int = 1, **kw):
    """Return and length of episode number ``episode`` (0: the first) of each of ``rows`` rows
    (uniform random policy, auto-reset). Episodes after the first, like the package's episodes
    after its first, start with the previous episode's last action as the one sticky actions
    repeat."""
    env = env_cls(batch_size=[rows], seed=seed, **kw)
    gen = torch.Generator().manual_seed(seed)
    td = env.reset()
    returns = torch.zeros(rows)
    lengths = torch.zeros(rows, dtype=torch.int64)
    finished = torch.zeros(rows, dtype=torch.int64)  # episodes each row has ended
    for _ in range(max_steps):
        td["action"] = torch.randint(0, env.action_spec.n, (rows,), generator=gen)
        data, td = env.step_and_maybe_reset(td)
        counted = finished == episode
        returns += data["next", "reward"].squeeze(-1) * counted
        lengths += counted
        finished += data["next", "done"].squeeze(-1)
        if bool((finished > episode).all()):
            break
    assert bool((finished > episode).all()), "some rows did not finish their episodes; raise max_steps"
    return returns.numpy().astype(np.float64), lengths.numpy().astype(np.float64)


def package_episodes(game: str, episodes: int, seed: int, actions: int = 6, skip_first: bool = True, **kw):
    """Return and length of ``episodes`` episodes of the package (uniform random policy), after
    a first one left out unless ``skip_first=False`` (it alone starts with no previous action)."""
    from minatar import Environment

    env = Environment(game, **kw)
    env.seed(seed)
    rng = np.random.default_rng(seed)
    action_set = env.minimal_action_set() if actions != 6 else list(range(6))
    returns, lengths = [], []
    for _ in range(episodes + skip_first):
        env.reset()
        total, length, terminal = 0.0, 0, False
        while not terminal:
            r, terminal = env.act(action_set[rng.integers(len(action_set))])
            total += r
            length += 1
        returns.append(total)
        lengths.append(length)
    first = int(skip_first)
    return np.array(returns[first:], dtype=np.float64), np.array(lengths[first:], dtype=np.float64)


def compare(name: str, ours: np.ndarray, theirs: np.ndarray) -> str:
    """Asserts that mean and std agree within ``Z`` combined standard errors; returns a row of
    the parity table."""
    a, b = moments(ours), moments(theirs)
    mean_tol = Z * math.hypot(a[1], b[1])
    std_tol = Z * math.hypot(a[3], b[3])
    assert abs(a[0] - b[0]) <= mean_tol, f"{name} mean {a[0]:.3f}±{a[1]:.3f} vs minatar {b[0]:.3f}±{b[1]:.3f}"
    assert abs(a[2] - b[2]) <= std_tol, f"{name} std {a[2]:.3f}±{a[3]:.3f} vs minatar {b[2]:.3f}±{b[3]:.3f}"
    return f"{name}: {a[0]:.3f}±{a[1]:.3f} (std {a[2]:.2f}) vs minatar {b[0]:.3f}±{b[1]:.3f} (std {b[2]:.2f})"
