"""`make scale`'s placement check (dbbench_scale.placement) finds each kind of
misplaced pod, and the runs it applies are valid BenchmarkRuns in the pools
the simulated cluster has."""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_scale import fleet, pools
from dbbench_scale.placement import (
    PodPlacement,
    RunPlacement,
    check,
    pod_placement,
    run_placement,
)

NODES = {
    "sql-0": {"dbbench.io/pool": "sql", "kubernetes.io/hostname": "sql-0"},
    "sql-1": {"dbbench.io/pool": "sql", "kubernetes.io/hostname": "sql-1"},
    "sql-2": {"dbbench.io/pool": "sql", "kubernetes.io/hostname": "sql-2"},
    "run-0": {"dbbench.io/pool": "runners", "kubernetes.io/hostname": "run-0"},
}
SQL = {"dbbench.io/pool": "sql"}
RUNNERS = {"dbbench.io/pool": "runners"}


def run(name: str, *, exclusive: bool = False) -> RunPlacement:
    return RunPlacement(name, exclusive, RUNNERS, {"db": SQL})


def db(name: str, node: str | None, uid: str = "a", sts: str = "a-db") -> PodPlacement:
    return PodPlacement(name, "ns", node, uid, runner=False, target="db", replica_set=sts)


def runner(name: str, node: str, uid: str = "a") -> PodPlacement:
    return PodPlacement(name, "ns", node, uid, runner=True)


def test_pods_where_their_runs_say_are_not_misplaced() -> None:
    runs = {"a": run("ns/a"), "b": run("ns/b")}
    pods = [db("a-db-0", "sql-0"), db("a-db-1", "sql-1"), db("a-db-2", "sql-2"),
            db("b-db-0", "sql-0", "b", "b-db"), runner("a-step-1-0", "run-0"),
            db("a-db-3", None)]  # fmt: skip
    verdict = check(NODES, runs, pods)
    assert (verdict.checked, verdict.unscheduled, verdict.misplaced) == (6, 1, [])


def test_each_rule_names_the_pod_it_catches() -> None:
    runs = {"a": run("ns/a"), "x": run("ns/x", exclusive=True)}
    pods = [
        db("a-db-0", "run-0"),  # a database pod in the runners' pool
        runner("a-step-1-0", "sql-1"),  # a runner pod in the databases' pool
        db("a-rs-0", "sql-0", sts="a-rs"),
        db("a-rs-1", "sql-0", sts="a-rs"),  # two members of one replica set on one node
        db("x-db-0", "sql-2", "x", "x-db"),
        runner("a-step-1-1", "sql-2"),  # on the exclusive run's node (and off its pool)
        db("z-db-0", "sql-1", "z", "z-db"),  # a pod of a run that does not exist
    ]
    verdict = check(NODES, runs, pods)
    assert sorted((m.pod, m.rule) for m in verdict.misplaced) == [
        ("ns/a-db-0", "database-pool"),
        ("ns/a-rs-1", "replica-set-spread"),
        ("ns/a-step-1-0", "runner-pool"),
        ("ns/a-step-1-1", "exclusive"),
        ("ns/a-step-1-1", "runner-pool"),
        ("ns/z-db-0", "orphan"),
    ]
    assert verdict.by_rule()["runner-pool"] == 2


def test_members_may_share_when_the_pool_is_too_small() -> None:
    pods = [db(f"a-rs-{i}", f"sql-{i % 3}", sts="a-rs") for i in range(4)]
    assert check(NODES, {"a": run("ns/a")}, pods).misplaced == []


def test_objects_from_the_api_are_read_with_the_apis_defaults() -> None:
    manifest: dict[str, Any] = fleet.run_manifest(
        "r", "ns", {"name": "db", "engine": "mariadb"}, {"nodeSelector": SQL}
    )
    manifest["metadata"]["uid"] = "u1"
    placement = run_placement(manifest)
    assert placement.exclusive  # hardware.exclusive defaults to true
    assert placement.target_selectors == {"db": SQL}
    assert placement.runner_selector == RUNNERS
    pod = {"metadata": {"name": "r-step-1-0", "namespace": "ns",
                        "labels": {"dbbench.io/run-uid": "u1", "app.kubernetes.io/component":
                                   "runner"}, "ownerReferences": [{"kind": "Job", "name": "j"}]},
           "spec": {"nodeName": "run-0"}}  # fmt: skip
    assert pod_placement(pod) == PodPlacement("r-step-1-0", "ns", "run-0", "u1", runner=True)
    assert pod_placement({"metadata": {"name": "other", "labels": {}}}) is None


def test_the_fleet_is_valid_and_uses_only_existing_pools() -> None:
    runs = fleet.fleet(200, 50, pools.node_counts(100)["exclusive"])
    runs += [fleet.sharded_run("team-00"), fleet.wide_runner_run("team-00")]
    kinds = [r["metadata"]["name"].split("-", 1)[1] for r in runs[:100]]
    assert {k: kinds.count(k) for k in set(kinds)} == dict(fleet.MIX)
    for manifest in runs:
        spec = parse_spec(manifest["spec"])  # raises on an invalid run
        selectors = [spec.runner.node_selector or {}]
        selectors += [(t.hardware.node_selector if t.hardware else None)
                      or spec.hardware.node_selector or {}
                      for t in spec.targets if t.external is None]  # fmt: skip
        for selector in selectors:
            assert selector.get(pools.POOL_LABEL) in pools.POOL_BY_NAME
    assert len({r["metadata"]["namespace"] for r in runs}) == 50
