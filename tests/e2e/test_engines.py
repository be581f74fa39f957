"""Every engine the local node can run, end to end: Oracle MySQL standalone,
MySQL primary/replica (GTID, durability strict = semi-synchronous) with reads
on the replica, and the MongoDB-protocol stand-in (FerretDB) standalone with
every write concern, point reads and queries.

The MySQL targets set no `image` or `version`: the chart's `engines` values,
pointed at the node's images by the local install, choose
localhost/dbbench/mysql. The stand-in is named explicitly (`image` +
`protocolStandIn`). The replica run ends with a phase on the primary that
holds the servers up while the test reads the replica's own counters.
Runs are found by their own names and labels only; other runs on the node
only make these wait.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from dbbench_local.install import Kube
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    database_pods,
    node_image,
    results_json,
    run_status,
    small_spec,
    wait_for_report,
)

pytestmark = pytest.mark.e2e


# MySQL 9.7 with performance_schema needs more than MariaDB's 512Mi to be safe.
MYSQL_HARDWARE = {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                                "limits": {"cpu": "1", "memory": "1Gi"}},
                  "storage": {"size": "1Gi"}}  # fmt: skip
MYSQL_STANDALONE = small_spec(
    targets=[{"name": "mysql", "engine": "mysql",
              "settings": {"innodb_buffer_pool_size": "128M"}}],
    hardware=MYSQL_HARDWARE,
    dataset={"shape": "indexed4", "records": 5000, "recordSize": 256},
    phases=[
        {"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000},
        {"name": "reads", "type": "pointReads", "operations": 3000, "reportEvery": 500},
        {"name": "queries", "type": "query", "operations": 400, "reportEvery": 100},
    ],
)  # fmt: skip
REPLICA_READS = 3000
MYSQL_REPLICA = small_spec(
    targets=[{"name": "mysql", "engine": "mysql", "topology": "primaryReplica", "members": 2,
              "durability": "strict", "settings": {"innodb_buffer_pool_size": "128M"}}],
    hardware=MYSQL_HARDWARE,
    dataset={"shape": "flat45", "records": 3000, "recordSize": 256},
    phases=[
        {"name": "load", "type": "insert", "batchSize": 50},
        {"name": "replica-reads", "type": "pointReads", "operations": REPLICA_READS,
         "readPreference": "secondaryPreferred"},
        # Updates only, on the primary: no SELECT, so the primary's Com_select
        # stays what it was; it keeps the pods up while the test reads counters.
        {"name": "hold", "type": "mix", "mix": {"update": 100}, "duration": "75s"},
    ],
)  # fmt: skip
STAND_IN_RECORDS = 3000
EXTRA_INSERTS = 300
STAND_IN_LOADS = ("load-w0", "insert-acknowledged", "insert-journaled", "insert-majority")


def stand_in_spec() -> dict[str, Any]:
    return small_spec(
        targets=[{"name": "ferret", "engine": "mongodb", "image": node_image("ferretdb.tar"),
                  "protocolStandIn": True}],
        dataset={"shape": "indexed4", "records": STAND_IN_RECORDS, "recordSize": 256},
        phases=[
            {"name": "load-w0", "type": "insert", "batchSize": 50,
             "writeConcern": "unacknowledged", "reportEvery": 500},
            {"name": "insert-acknowledged", "type": "insert", "operations": EXTRA_INSERTS,
             "writeConcern": "acknowledged"},
            {"name": "insert-journaled", "type": "insert", "operations": EXTRA_INSERTS,
             "writeConcern": "journaled"},
            {"name": "insert-majority", "type": "insert", "operations": EXTRA_INSERTS,
             "writeConcern": "majority"},
            {"name": "reads", "type": "pointReads", "operations": 500},
            {"name": "queries", "type": "query", "operations": 120},
        ],
    )  # fmt: skip


def expected(spec: dict[str, Any], phase: dict[str, Any]) -> tuple[int, int | None]:
    """(operations, records after the phase; None for phases that write none)."""
    workers = spec["runner"].get("pods", 1) * spec["runner"]["threads"]
    batch = phase.get("batchSize", 1)
    inserts = [p for p in spec["phases"] if p["type"] == "insert"]
    if phase["type"] != "insert":
        return int(phase.get("operations", 0)), None  # 0: a timed phase (checked > 0)
    before = inserts[: inserts.index(phase)]
    records_before = sum(p.get("operations", spec["dataset"]["records"]) for p in before)
    records = phase.get("operations", spec["dataset"]["records"])
    operations = workers * math.ceil(records / workers / batch)  # records split evenly here
    return operations, records_before + records


def check_results(name: str, spec: dict[str, Any], status: dict[str, Any]) -> None:
    assert status["phase"] == "Succeeded", (name, status.get("message"), status.get("conditions"))
    (target,) = status["targets"]
    results = {p["name"]: p for p in target["phases"]}
    assert list(results) == [p["name"] for p in spec["phases"]], name
    for phase in spec["phases"]:
        result = results[phase["name"]]
        operations, records = expected(spec, phase)
        if "duration" not in phase:
            assert result["operations"] == operations, (name, phase["name"], result)
        assert result["operations"] > 0
        assert result["errors"] == 0, (name, phase["name"], result)
        latency = result["latencyMs"]
        ordered = [latency[k] for k in ("p50", "p95", "p99", "p999", "max")]
        assert ordered == sorted(ordered), (name, phase["name"], latency)
        assert ordered[0] > 0, (name, phase["name"], latency)
        if records is not None:
            written = phase.get("operations", spec["dataset"]["records"])
            assert result["records"] == written, (name, phase["name"], result)
            # Exact: what the target holds after the phase, earlier phases included.
            assert result["storage"]["records"] == records, (name, phase["name"], result)


def mysql_status(kube: Kube, pod: str, names: tuple[str, ...]) -> dict[str, int]:
    """SHOW GLOBAL STATUS values, read inside the pod over its socket as root."""
    where = ", ".join(f"'{n}'" for n in names)
    sql = f"SHOW GLOBAL STATUS WHERE Variable_name IN ({where})"
    out = kube.kubectl(
        "exec", "-n", RUNS_NS, pod, "-c", "mysql", "--", "bash", "-c",
        f'mysql -uroot -p"$MYSQL_ROOT_PASSWORD" -N -B -e "{sql}" 2>/dev/null',
    ).stdout  # fmt: skip
    # Counters only: a status such as Rpl_semi_sync_replica_status (ON/OFF) would not parse.
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if line)}


@pytest.fixture(scope="module")
def finished(kube: Kube) -> dict[str, Any]:
    """Applies the three runs, reads the replica run's counters while its `hold`
    phase runs, and returns every final status and those counters."""
    runs = {"mysql-standalone": MYSQL_STANDALONE, "mysql-replica": MYSQL_REPLICA,
            "mongodb-stand-in": stand_in_spec()}  # fmt: skip
    # apply_run deletes a namesake left by an earlier session first.
    uids = {name: apply_run(kube, name, spec) for name, spec in runs.items()}
    found: dict[str, Any] = {"specs": runs, "counters": None}
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        statuses = {name: run_status(kube, name) for name in runs}
        replica = statuses["mysql-replica"]
        progress = replica.get("progress") or {}
        if (found["counters"] is None and progress.get("phase") == "hold"
                and progress.get("stage") == "Running"):  # fmt: skip
            primary, replica_pod = database_pods(kube, "mysql-replica", uids["mysql-replica"])
            names = (
                "Com_select",
                "Com_stmt_execute",
                "Innodb_rows_read",
                "Rpl_semi_sync_source_yes_tx",
                "Rpl_semi_sync_source_no_tx",
            )
            found["counters"] = {
                "primary": mysql_status(kube, primary, names),
                "replica": mysql_status(kube, replica_pod, names),
                "pods": (primary, replica_pod),
            }  # fmt: skip
        if all(s.get("phase") in ("Succeeded", "Failed") for s in statuses.values()):
            found["statuses"] = statuses
            return found
        time.sleep(3)
    pytest.fail(f"the runs did not end within an hour: {[run_status(kube, n) for n in runs]}")


@pytest.mark.parametrize("name", ["mysql-standalone", "mysql-replica", "mongodb-stand-in"])
def test_run_succeeds_with_configured_counts_and_a_report(
    kube: Kube, finished: dict[str, Any], name: str
) -> None:
    status = finished["statuses"][name]
    check_results(name, finished["specs"][name], status)
    files = wait_for_report(kube, status)
    assert "report.html" in files
    assert "summary.json" in files


def test_mysql_targets_ran_the_nodes_mysql_from_the_chart_values(
    kube: Kube, finished: dict[str, Any]
) -> None:
    for name in ("mysql-standalone", "mysql-replica"):
        status = finished["statuses"][name]
        environment = results_json(kube, status, "mysql/load/1/pod-0/environment.json")
        # The manifest names no image: 9.7 is the node's image, chosen by the
        # chart's engines.mysql values (the built-in default would be 8.4).
        assert environment["server"]["version"].startswith("9.7."), environment["server"]
        assert environment["target"]["engine"] == "mysql"


def test_replica_reads_are_served_by_the_replica(kube: Kube, finished: dict[str, Any]) -> None:
    counters = finished["counters"]
    assert counters is not None, "the replica run's hold phase was never seen running"
    primary, replica = counters["primary"], counters["replica"]
    # Every point read is one SELECT on the replica; the primary saw the load,
    # the operator's checks and the hold phase's updates, not the reads.
    assert replica["Com_select"] >= REPLICA_READS, counters
    assert primary["Com_select"] < REPLICA_READS, counters
    assert replica["Innodb_rows_read"] >= REPLICA_READS, counters
    status = finished["statuses"]["mysql-replica"]
    environment = results_json(kube, status, "mysql/replica-reads/1/pod-0/environment.json")
    (read_replica,) = environment["target"]["readReplicas"]
    assert read_replica.split(".")[0] == counters["pods"][1], (read_replica, counters["pods"])


def test_strict_commits_were_acknowledged_by_the_replica(finished: dict[str, Any]) -> None:
    counters = finished["counters"]
    assert counters is not None, "the replica run's hold phase was never seen running"
    primary = counters["primary"]
    load = next(p for p in finished["statuses"]["mysql-replica"]["targets"][0]["phases"]
                if p["name"] == "load")  # fmt: skip
    # Each load batch is one commit the replica acknowledged before it returned.
    assert primary["Rpl_semi_sync_source_yes_tx"] >= load["operations"], counters
    assert primary["Rpl_semi_sync_source_no_tx"] == 0, counters


def test_the_stand_in_says_what_it_is_and_stored_every_write(
    kube: Kube, finished: dict[str, Any]
) -> None:
    status = finished["statuses"]["mongodb-stand-in"]
    environment = results_json(kube, status, "ferret/load-w0/1/pod-0/environment.json")
    assert "(FerretDB v1.24.0)" in environment["server"]["version"], environment["server"]
    assert environment["phase"]["writeConcern"] == "unacknowledged"
    phases = {p["name"]: p for p in status["targets"][0]["phases"]}
    total = STAND_IN_RECORDS + EXTRA_INSERTS * 3
    summary = results_json(kube, status, "ferret/insert-majority/1/summary.json")
    # The server's own count (collStats) after the last write: nothing was lost,
    # the w:0 load included.
    assert summary["storage"]["engineEstimatedRecords"] == total, summary["storage"]
    assert phases["insert-majority"]["storage"]["records"] == total
    for name in STAND_IN_LOADS:
        written = results_json(kube, status, f"ferret/{name}/1/pod-0/environment.json")
        concern = name.removeprefix("insert-") if name != "load-w0" else "unacknowledged"
        assert written["phase"]["writeConcern"] == concern
