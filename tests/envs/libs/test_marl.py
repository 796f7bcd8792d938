"""MarlGroupMapType and check_marl_grouping."""

from __future__ import annotations

import pytest

from gpusim.envs.libs import MarlGroupMapType, check_marl_grouping

AGENTS = ["agent_0", "agent_1", "adversary_0"]


def test_group_map_types():
    assert MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(AGENTS) == {"agents": AGENTS}
    assert MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(AGENTS) == {a: [a] for a in AGENTS}
    with pytest.raises(ValueError, match="at least one"):
        MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map([])
    with pytest.raises(ValueError, match="agent_0"):
        MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(["agent_0", "agent_0"])


def test_check_marl_grouping_accepts_partitions():
    check_marl_grouping({"agents": ["agent_0", "agent_1"], "adversary": ["adversary_0"]}, AGENTS)
    for kind in MarlGroupMapType:
        check_marl_grouping(kind.get_group_map(AGENTS), AGENTS)


@pytest.mark.parametrize(
    "group_map, error, match",
    [
        ({"agents": ["agent_0", "agent_1"]}, ValueError, r"\['adversary_0'\] are in no group"),
        ({"a": ["agent_0", "agent_1"], "b": ["agent_1", "adversary_0"]}, ValueError, "agent_1.*more than once"),
        ({"a": AGENTS + ["ghost"]}, ValueError, "ghost"),
        ({"a": AGENTS, "b": []}, ValueError, "'b' is empty"),
        ({"a": "agent_0"}, TypeError, "list of agent names"),
        ({"": AGENTS}, TypeError, "non-empty strings"),
        (["agent_0"], TypeError, "dict"),
    ],
)
def test_check_marl_grouping_errors(group_map, error, match):
    with pytest.raises(error, match=match):
        check_marl_grouping(group_map, AGENTS)
