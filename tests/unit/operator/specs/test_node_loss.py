"""A step with a database or runner pod on a node that is not Ready fails, naming
the node, its Ready condition and the pods on it (pure)."""

from __future__ import annotations

from typing import Any

from dbbench_operator.specs.node_loss import (
    NODE_LOST,
    lost_nodes,
    node_lost_failure,
    suspect_nodes,
)


def pod(name: str, node: str | None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def node(status: str | None, **extra: str) -> dict[str, Any]:
    conditions = [] if status is None else [{"type": "Ready", "status": status, **extra}]
    return {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      *conditions]}}  # fmt: skip


UNKNOWN = node("Unknown", reason="NodeStatusUnknown",
               message="Kubelet stopped posting node status.",
               lastTransitionTime="2026-11-28T16:30:00Z")  # fmt: skip


def test_a_database_pod_on_a_node_gone_unknown_fails_the_step_naming_node_pods_condition() -> None:
    database = [pod("maria-0", "w2"), pod("maria-1", "w4")]
    runners = [pod("step-1-0", "w1")]
    lost = lost_nodes(database, runners, {"w1": node("True"), "w2": UNKNOWN, "w4": node("True")})
    reason, message = node_lost_failure(lost, "step 2/3 (maria/reads/1)") or ("", "")
    assert reason == NODE_LOST
    assert message == (
        "node w2 is not Ready (Ready=Unknown since 2026-11-28T16:30:00Z, NodeStatusUnknown: "
        "Kubelet stopped posting node status.) with database pod(s) maria-0, during step 2/3 "
        "(maria/reads/1): the step failed, what it measured while the node was away is not "
        "a result"
    )


def test_runner_pods_are_named_too_and_every_lost_node_is_listed() -> None:
    database = [pod("maria-0", "w2")]
    runners = [pod("step-1-0", "w1"), pod("step-1-1", "w1"), pod("step-1-2", None)]
    lost = lost_nodes(database, runners, {"w1": node("False"), "w2": UNKNOWN})
    assert [(n.name, n.database_pods, n.runner_pods) for n in lost] == [
        ("w1", (), ("step-1-0", "step-1-1")), ("w2", ("maria-0",), ())]  # fmt: skip
    _, message = node_lost_failure(lost, "step 1") or ("", "")
    assert message.startswith("node w1 is not Ready (Ready=False) with runner pod(s) step-1-0, "
                              "step-1-1; node w2 is not Ready")  # fmt: skip


def test_ready_nodes_unreported_nodes_and_unknown_nodes_fail_nothing() -> None:
    pods = [pod("a", "ready"), pod("b", "new"), pod("c", "absent"), pod("d", None)]
    assert lost_nodes(pods, [], {"ready": node("True"), "new": node(None)}) == []
    assert node_lost_failure([], "step 1") is None


def ready_pod(name: str, node: str, ready: str) -> dict[str, Any]:
    return {**pod(name, node), "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def test_only_the_nodes_of_pods_that_are_not_ready_are_read() -> None:
    """The node controller marks a lost node's pods not Ready: all Ready, no read."""
    database = [ready_pod("maria-0", "w2", "True"), ready_pod("maria-1", "w4", "False")]
    runners = [ready_pod("step-1-0", "w1", "True"), pod("step-1-1", "w3"), pod("step-1-2", None)]
    assert suspect_nodes(database, runners) == ["w3", "w4"]
    assert suspect_nodes(database[:1], runners[:1]) == []
    finished = {**pod("step-1-3", "w5"), "status": {"phase": "Succeeded", "conditions": [
        {"type": "Ready", "status": "False", "reason": "PodCompleted"}]}}  # fmt: skip
    assert suspect_nodes([], [finished]) == []
