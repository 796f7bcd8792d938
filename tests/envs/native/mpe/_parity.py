"""State-injection parity against VMAS: shared by the per-scenario tests.

``step_parity`` resets the native env, then for ``steps`` steps writes the native state into a
VMAS env of the same scenario (agents' and landmarks' ``pos``/``vel``, communication, and the
scenario's extras through ``inject``), steps both with the same random actions and compares the
next positions, velocities, observations and rewards. The native state is re-injected every
step, so every step compares one transition from a fresh state (errors do not compound).

``reward_stats`` runs both envs from their own resets under uniformly random actions and returns
each one's mean per-step reward per agent with its standard error (over envs).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import vmas

from gpusim.envs.native.mpe import SCENARIOS


def _agent_order(env) -> list[tuple[str, int]]:
    """(group, index in group) of each agent, in agent order."""
    where = {name: (group, j) for group, names in env.group_map.items() for j, name in enumerate(names)}
    return [where[name] for name in env.agent_names]


def _per_agent(td, env, key: str) -> list[torch.Tensor]:
    return [td[group, key][:, j] for group, j in _agent_order(env)]


def _random_actions(env, generator: torch.Generator) -> dict[str, torch.Tensor]:
    out = {}
    for group in env.group_map:
        spec = env.full_action_spec[group, "action"]
        if env.continuous_actions:
            u = torch.rand(spec.shape, generator=generator)
            out[group] = spec.space.low + (spec.space.high - spec.space.low) * u
        else:
            out[group] = torch.randint(0, spec.space.n, spec.shape, generator=generator)
    return out


def make_pair(scenario: str, num_envs: int, continuous: bool, seed: int = 0, **kwargs):
    ours = SCENARIOS[scenario](batch_size=[num_envs], seed=seed, continuous_actions=continuous, **kwargs)
    theirs = vmas.make_env(
        scenario, num_envs=num_envs, device="cpu", continuous_actions=continuous, seed=seed, **kwargs
    )
    return ours, theirs


def inject(ours, theirs, state, extra: Callable | None = None) -> None:
    if extra is not None:  # first: it may edit the native state (goals, positions)
        extra(ours, theirs, state)
    world = theirs.world
    n_agents = len(world.agents)
    for i, agent in enumerate(world.agents):
        agent.state.pos = state["pos"][:, i].clone()
        agent.state.vel = state["vel"][:, i].clone()
        if "c" in state.keys() and agent.state.c is not None:
            agent.state.c = state["c"][:, i].clone()
    for j, landmark in enumerate(world.landmarks):
        landmark.state.pos = state["pos"][:, n_agents + j].clone()
        landmark.state.vel = state["vel"][:, n_agents + j].clone()


def step_parity(
    scenario: str,
    *,
    num_envs: int = 64,
    steps: int = 50,
    continuous: bool = True,
    extra: Callable | None = None,
    seed: int = 0,
    **kwargs,
) -> dict[str, float]:
    """Max abs errors ``{"pos", "vel", "obs", "reward"}`` over ``num_envs x steps`` injected steps,
    and ``"contacts"``: how many of those rows had bodies in contact."""
    ours, theirs = make_pair(scenario, num_envs, continuous, seed, **kwargs)
    gen = torch.Generator().manual_seed(seed + 1)
    td = ours.reset()
    n_agents = len(theirs.world.agents)
    err = {"pos": 0.0, "vel": 0.0, "obs": 0.0, "reward": 0.0, "contacts": 0, "may_contact": ours.world.has_contacts}
    for _ in range(steps):
        inject(ours, theirs, td["state"], extra)
        if ours.world.has_contacts:  # rows whose bodies touch before this step
            touching = ours.world.contact_forces(td["state", "pos"]).abs().sum((-1, -2)) > 0
            err["contacts"] += int(touching.sum())
        actions = _random_actions(ours, gen)
        for group, action in actions.items():
            td[group, "action"] = action
        nxt = ours.step(td)["next"]
        per_agent = []
        for group, j in _agent_order(ours):
            a = actions[group][:, j]
            per_agent.append(a if continuous else a.clone())
        obs, rews, _, _ = theirs.step(per_agent)
        entities = [*theirs.world.agents, *theirs.world.landmarks]
        pos = torch.stack([e.state.pos for e in entities], 1)
        vel = torch.stack([e.state.vel for e in entities], 1)
        state = nxt["state"]
        err["pos"] = max(err["pos"], (pos - state["pos"]).abs().max().item())
        err["vel"] = max(err["vel"], (vel - state["vel"]).abs().max().item())
        for mine, ref in zip(_per_agent(nxt, ours, "observation"), obs):
            assert mine.shape == ref.shape, (mine.shape, ref.shape)
            err["obs"] = max(err["obs"], (mine - ref).abs().max().item())
        for mine, ref in zip(_per_agent(nxt, ours, "reward"), rews):
            err["reward"] = max(err["reward"], (mine.squeeze(-1) - ref).abs().max().item())
        assert pos.shape[1] == ours.world.n_entities and n_agents == ours.n_agents
        td = nxt
    return err


def reward_stats(
    scenario: str, *, num_envs: int = 512, steps: int = 25, continuous: bool = True, seed: int = 0, **kwargs
):
    """``(ours_mean, ours_se, vmas_mean, vmas_se)``, each a ``[n_agents]`` tensor of the mean
    per-step reward under random actions (standard errors over envs)."""
    ours, theirs = make_pair(scenario, num_envs, continuous, seed, **kwargs)
    gen = torch.Generator().manual_seed(seed + 7)
    td = ours.reset()
    theirs.reset()
    mine = torch.zeros(num_envs, ours.n_agents)
    ref = torch.zeros(num_envs, ours.n_agents)
    for _ in range(steps):
        actions = _random_actions(ours, gen)
        for group, action in actions.items():
            td[group, "action"] = action
        nxt = ours.step(td)["next"]
        mine += torch.stack([r.squeeze(-1) for r in _per_agent(nxt, ours, "reward")], -1)
        # an independent draw for VMAS: the two runs are independent samples of the same law
        actions = _random_actions(ours, gen)
        _, rews, _, _ = theirs.step([actions[g][:, j] for g, j in _agent_order(ours)])
        ref += torch.stack(rews, -1)
        td = nxt
    mine, ref = mine / steps, ref / steps
    se = lambda x: x.std(0) / num_envs**0.5
    return mine.mean(0), se(mine), ref.mean(0), se(ref)


def assert_stats_match(stats, z: float = 4.0) -> None:
    m1, s1, m2, s2 = stats
    bound = z * (s1.square() + s2.square()).sqrt() + 1e-6
    assert ((m1 - m2).abs() <= bound).all(), (
        f"native {m1.tolist()} ± {s1.tolist()} vs VMAS {m2.tolist()} ± {s2.tolist()}"
    )


# ---------------------------------------------------------------- scenario extras
# VMAS draws goals once for all its envs: each step, every row of the native state gets the same
# goal (cycling through the landmarks with the step count) and VMAS's world is set to it.
def _step_index(state) -> int:
    return int(state["steps"][0, 0])


def goal_adversary(ours, theirs, state) -> None:
    k = _step_index(state) % ours.num_landmarks
    state["goal"].fill_(k)
    for agent in theirs.world.agents:
        agent.goal = theirs.world.landmarks[k]


def goal_push(ours, theirs, state) -> None:
    s = _step_index(state)
    k = s % 2
    state["goal"].fill_(k)
    if s % 2 == 0:  # every other step the two agents start (nearly) touching: contacts exercised
        offset = torch.rand(state["pos"].shape[0], 2, generator=torch.Generator().manual_seed(s)) * 0.16 - 0.08
        state["pos"][:, 1] = state["pos"][:, 0] + offset
    for agent in theirs.world.agents:
        agent.goal = theirs.world.landmarks[k]
        if not agent.adversary:
            color = torch.full((3,), 0.25)
            color[k + 1] += 0.5
            agent.color = color


def goal_reference(ours, theirs, state) -> None:
    s = _step_index(state)
    k0, k1 = s % 3, (s // 3) % 3
    state["goal"][:, 0] = k0
    state["goal"][:, 1] = k1
    agents, landmarks = theirs.world.agents, theirs.world.landmarks
    agents[0].goal_b, agents[1].goal_b = landmarks[k0], landmarks[k1]


def goal_speaker_listener(ours, theirs, state) -> None:
    k = _step_index(state) % 3
    state["goal"].fill_(k)
    theirs.world.agents[0].goal_b = theirs.world.landmarks[k]


def key_crypto(ours, theirs, state) -> None:
    for agent in theirs.world.agents:
        agent.secret = state["secret"].clone()
        if agent.speaker:
            agent.key = state["key"].clone()
