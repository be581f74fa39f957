"""Members of a replicated target on one node are reported, never silent (pure)."""

from __future__ import annotations

from typing import Any

from dbbench_operator.specs.member_spread import MEMBERS_SHARE_A_NODE, shared_node


def pod(name: str, node: str | None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def test_two_members_on_one_node_name_the_target_node_and_members() -> None:
    pods = [pod("pg-1", "w2"), pod("pg-0", "w2"), pod("mysql-0", "w3")]
    reason, message = shared_node("postgres", "primaryReplica", pods) or ("", "")
    assert reason == MEMBERS_SHARE_A_NODE
    assert message.startswith(
        "target postgres: members pg-0, pg-1 share node w2 (its pool has fewer nodes than "
        "the primaryReplica's members"
    ), message


def test_members_on_distinct_nodes_unscheduled_ones_and_other_topologies_pass() -> None:
    assert shared_node("rs", "replicaSet", [pod("a", "w2"), pod("b", "w4"), pod("c", None)]) is None
    one_node = [pod("a", "w2"), pod("b", "w2")]
    assert shared_node("rs", "replicaSet", one_node) is not None
    assert shared_node("s", "sharded", one_node) is None  # placement: colocated asks for it
    assert shared_node("m", "standalone", one_node) is None
