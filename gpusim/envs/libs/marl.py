"""Multi-agent grouping: which agents share a group (a nested tensordict entry whose batch dims
are ``(*B, n_agents_in_group)``).

A group map is a dict ``{group_name: [agent_name, ...]}``. Every agent belongs to exactly one
group; agents of a group must have the same specs so that their data can be stacked.

Examples:
    >>> MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(["alice", "bob"])
    {'alice': ['alice'], 'bob': ['bob']}
    >>> check_marl_grouping({"agents": ["alice", "bob"]}, ["alice", "bob"])
    >>> check_marl_grouping({"agents": ["alice"]}, ["alice", "bob"])
    Traceback (most recent call last):
    ...
    ValueError: check_marl_grouping: the agents ['bob'] are in no group of the group map {'agents': ['alice']}
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

__all__ = ["MarlGroupMapType", "check_marl_grouping"]


class MarlGroupMapType(enum.Enum):
    """Standard group maps.

    * ``ALL_IN_ONE_GROUP``: one group named ``"agents"`` holding every agent.
    * ``ONE_GROUP_PER_AGENT``: one group per agent, named after the agent.

    Examples:
        >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["a_0", "a_1"])
        {'agents': ['a_0', 'a_1']}
        >>> MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(["a_0", "a_1"])
        {'a_0': ['a_0'], 'a_1': ['a_1']}
    """

    ALL_IN_ONE_GROUP = 1
    ONE_GROUP_PER_AGENT = 2

    def get_group_map(self, agent_names: Sequence[str]) -> dict[str, list[str]]:
        """The group map of this type for ``agent_names``.

        Args:
            agent_names: the env's agents.

        Returns:
            ``{group_name: [agent_name, ...]}``.

        Raises:
            ValueError: if ``agent_names`` is empty or has duplicates.

        Examples:
            >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["adversary_0", "agent_0"])
            {'agents': ['adversary_0', 'agent_0']}
            >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["a", "a"])
            Traceback (most recent call last):
            ...
            ValueError: check_marl_grouping: agent_names lists the agents ['a'] more than once
        """
        names = list(agent_names)
        if not names:
            raise ValueError(f"{self.name}.get_group_map needs at least one agent name")
        _check_unique(names, "agent_names")
        if self is MarlGroupMapType.ALL_IN_ONE_GROUP:
            return {"agents": names}
        return {name: [name] for name in names}


def _check_unique(names: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    dup = sorted({n for n in names if n in seen or seen.add(n)})
    if dup:
        raise ValueError(f"check_marl_grouping: {what} lists the agents {dup} more than once")


def check_marl_grouping(group_map: Mapping[str, Sequence[str]], agent_names: Sequence[str]) -> None:
    """Checks that ``group_map`` puts every agent of ``agent_names`` in exactly one group.

    Args:
        group_map: ``{group_name: [agent_name, ...]}``.
        agent_names: the env's agents.

    Raises:
        TypeError: if the group map is not a mapping of string group names to lists of names.
        ValueError: naming the agents that are missing, unknown or present more than once, or
            an empty group.

    Examples:
        >>> check_marl_grouping({"red": ["r0", "r1"], "blue": ["b0"]}, ["r0", "r1", "b0"])  # fine
        >>> check_marl_grouping({"red": ["r0", "r1"], "blue": ["r1"]}, ["r0", "r1"])
        Traceback (most recent call last):
        ...
        ValueError: check_marl_grouping: the group map {'red': ['r0', 'r1'], 'blue': ['r1']} lists the agents ['r1'] more than once
    """
    if not isinstance(group_map, Mapping):
        raise TypeError(f"check_marl_grouping: group_map must be a dict, got {type(group_map).__name__}")
    agent_names = list(agent_names)
    _check_unique(agent_names, "agent_names")
    grouped: list[str] = []
    for group, members in group_map.items():
        if not isinstance(group, str) or not group:
            raise TypeError(f"check_marl_grouping: group names must be non-empty strings, got {group!r}")
        if isinstance(members, str) or not isinstance(members, Sequence):
            raise TypeError(f"check_marl_grouping: group {group!r} must map to a list of agent names, got {members!r}")
        if len(members) == 0:
            raise ValueError(f"check_marl_grouping: group {group!r} is empty")
        grouped.extend(members)
    _check_unique(grouped, f"the group map {dict(group_map)}")
    unknown = [n for n in grouped if n not in set(agent_names)]
    if unknown:
        raise ValueError(
            f"check_marl_grouping: the group map {dict(group_map)} names agents {unknown} that the env does not "
            f"have (agents: {agent_names})"
        )
    missing = [n for n in agent_names if n not in set(grouped)]
    if missing:
        raise ValueError(
            f"check_marl_grouping: the agents {missing} are in no group of the group map {dict(group_map)}"
        )
