"""Every engine the local node can run, end to end: Oracle MySQL standalone,
MySQL primary/replica (GTID, durability strict = semi-synchronous) with reads
on the replica, and the MongoDB-protocol stand-in (FerretDB) standalone with
every write concern, point reads and queries.

The MySQL targets set no `image` or `version`: the chart's `engines` values,
pointed at the node's images by the local install, choose
localhost/dbbench/mysql. The stand-in is named explicitly (`image` +
`protocolStandIn`). The replica run ends with a phase on the primary that
holds the servers up while the test reads the replica's own counters.
Each run's name carries this session's token and its database pods are found
through what the run's uid owns, so runs of other sessions are neither read
nor touched; every check is bounded in time and the runs, their pods, claims
and volumes are gone when the module ends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_contract.durations import parse_duration
from dbbench_local.install import Kube
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    database_pods,
    delete_run,
    node_image,
    results_json,
    run_status,
    run_uid,
    session_name,
    small_spec,
    wait_for_report,
)
from tests.e2e.expectations import check_results

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
        {"name": "hold", "type": "mix", "mix": {"update": 100}, "duration": "40s",
         "targetRate": 50},
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


RUN_NAMES = ("mysql-standalone", "mysql-replica", "mongodb-stand-in")
COUNTERS = ("Com_select", "Com_stmt_execute", "Innodb_rows_read",
            "Rpl_semi_sync_source_yes_tx", "Rpl_semi_sync_source_no_tx")  # fmt: skip


def _replica_counters(kube: Kube, run: str, uid: str) -> dict[str, Any]:
    primary, replica = database_pods(kube, run, uid, "mysql")
    return {"primary": mysql_status(kube, primary, COUNTERS),
            "replica": mysql_status(kube, replica, COUNTERS),
            "pods": (primary, replica)}  # fmt: skip


@pytest.fixture(scope="module")
def finished(kube: Kube) -> Iterator[dict[str, Any]]:
    """Applies the three runs (names of this session only), reads the replica
    run's counters while its `hold` phase runs, and yields every final status
    and those counters; afterwards deletes the runs and checks nothing of
    theirs is left."""
    specs = dict(zip(RUN_NAMES, (MYSQL_STANDALONE, MYSQL_REPLICA, stand_in_spec()), strict=True))
    names = {short: session_name(short) for short in RUN_NAMES}
    for short, spec in specs.items():
        apply_run(kube, names[short], spec)
    uids = {short: run_uid(kube, names[short]) for short in RUN_NAMES}
    found: dict[str, Any] = {"specs": specs, "names": names, "counters": None}
    # The runs share the node and run at once; each is bounded by its own
    # spec.timeout, the three together (should one wait for room) by their sum.
    deadline = time.monotonic() + sum(parse_duration(s["timeout"]) for s in specs.values()) + 120
    try:
        while "statuses" not in found:
            statuses = {short: run_status(kube, names[short]) for short in RUN_NAMES}
            progress = statuses["mysql-replica"].get("progress") or {}
            if (found["counters"] is None and progress.get("phase") == "hold"
                    and progress.get("stage") == "Running"):  # fmt: skip
                found["counters"] = _replica_counters(kube, names["mysql-replica"],
                                                      uids["mysql-replica"])  # fmt: skip
            if all(s.get("phase") in ("Succeeded", "Failed") for s in statuses.values()):
                found["statuses"] = statuses
            elif time.monotonic() > deadline:
                pytest.fail(f"the runs did not end in time: {statuses}")
            else:
                time.sleep(3)
        # Still the runs this session made (a uid changes if a run is re-created).
        assert {s: run_uid(kube, names[s]) for s in RUN_NAMES} == uids
        yield found
    finally:
        for name in names.values():
            delete_run(kube, name)


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


def test_the_unacknowledged_load_was_applied_in_full(kube: Kube, finished: dict[str, Any]) -> None:
    """w:0 sends without waiting: the runner drains each pod's connection and
    counts what the server holds afterwards (storedRecords), so writes the
    server dropped would show as unappliedWrites (and errors), not vanish."""
    status = finished["statuses"]["mongodb-stand-in"]
    summary = results_json(kube, status, "ferret/load-w0/1/summary.json")
    assert summary["records"] == STAND_IN_RECORDS, summary
    assert summary["storedRecords"] == STAND_IN_RECORDS, summary
    assert summary["unappliedWrites"] == 0, summary
    assert summary["errors"] == 0, summary
    # An acknowledged phase has nothing to verify after the fact.
    journaled = results_json(kube, status, "ferret/insert-journaled/1/summary.json")
    assert journaled["storedRecords"] is None, journaled
