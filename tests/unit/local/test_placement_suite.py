"""The placement suite's reading of a cluster (tests/e2e/placement.py): which
clusters it runs on, and which pods it calls misplaced. Pure: node and pod
objects as kubectl returns them, no cluster."""

from __future__ import annotations

from typing import Any

from dbbench_local.kind_pools import POOL_LABEL, node_plan
from tests.e2e.placement import Seen, misplaced, missing_pools, node_pools, seen_pod


def nodes(count: int) -> dict[str, Any]:
    """`kubectl get nodes -o json` of the kind cluster `DBBENCH_NODES=count` makes."""
    return {"items": [
        {"metadata": {"name": plan.name,
                      "labels": {} if plan.pool is None else {POOL_LABEL: plan.pool}}}
        for plan in node_plan(count)
    ]}  # fmt: skip


def test_four_nodes_have_the_pools_and_one_node_is_skipped_saying_why() -> None:
    assert missing_pools(node_pools(nodes(4))) is None
    reason = missing_pools(node_pools(nodes(1)))
    assert reason is not None
    assert reason.startswith("the cluster has 1 node(s) and the pools none; the placement suite")
    assert "DBBENCH_NODES=4" in reason
    # Three nodes lack db-large.
    assert "pools ['db-small', 'runners']" in (missing_pools(node_pools(nodes(3))) or "")


def test_a_pod_off_its_pool_is_named_with_its_node_and_that_nodes_pool() -> None:
    pools = node_pools(nodes(4))
    database = seen_pod({"metadata": {"name": "m-0", "labels": {"dbbench.io/target": "mysql"}},
                         "spec": {"nodeName": "dbbench-worker2"}})  # fmt: skip
    runner = seen_pod({"metadata": {"name": "s-1", "labels": {"dbbench.io/step": "1",
                                                                "dbbench.io/target": "mysql"}},
                       "spec": {"nodeName": "dbbench-worker2"}})  # fmt: skip
    assert database is not None
    assert runner is not None
    assert runner.runner
    assert seen_pod({"metadata": {"name": "p", "labels": {}}, "spec": {}}) is None  # unscheduled
    assert misplaced({"m-0": database}, pools, {"mysql": "db-small"}) == []
    assert misplaced({"m-0": database, "s-1": runner}, pools, {"mysql": "db-large"}) == [
        "database (mysql) pod m-0 on dbbench-worker2 (pool db-small), wanted db-large",
        "runner pod s-1 on dbbench-worker2 (pool db-small), wanted runners",
    ]
    stray = Seen("x", "dbbench-control-plane", runner=False, target="other", component="")
    assert misplaced({"x": stray}, pools, {"mysql": "db-small"}) == [
        "database (other) pod x on dbbench-control-plane (pool None), wanted None"]  # fmt: skip
