"""PostgreSQL on the local node, end to end (field benchmark 4's small variant,
PostgreSQL among its three engines, is tests/e2e/test_field4.py: its own
worker, so the two modules' runs go on at once).

- PostgreSQL standalone (no `image`/`version`: the chart's `engines` values,
  pointed by the local install at the node's localhost/dbbench/postgres:17):
  load, point reads, queries.
- PostgreSQL primary + streaming standby with `durability: strict`: reads
  with `readPreference: secondaryPreferred`, then a phase on the primary that
  holds the servers up while the test reads the standby's own
  `pg_stat_database`/`pg_stat_user_tables` and the primary's
  `pg_stat_replication` inside the pods.

The runs get this session's token in their names and are found through what
the run with their uid owns; they are deleted at the end and the test waits,
bounded, until nothing of them is left.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_local.install import Kube
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    database_pods,
    delete_run,
    results_json,
    run_status,
    run_uid,
    session_name,
    small_spec,
    wait_for_report,
)
from tests.e2e.expectations import check_results

# The two runs share the node and run at once: the module fixture that waits for
# them counts against its first test.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(4200)]

REPLICA_READS = 3000

STANDALONE = small_spec(
    targets=[{"name": "pg", "engine": "postgresql"}],
    dataset={"shape": "indexed4", "records": 5000, "recordSize": 256},
    phases=[
        {"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000},
        {"name": "reads", "type": "pointReads", "operations": 3000, "reportEvery": 500},
        {"name": "queries", "type": "query", "operations": 400, "reportEvery": 100},
    ],
)  # fmt: skip
REPLICA = small_spec(
    targets=[{"name": "pg", "engine": "postgresql", "topology": "primaryReplica", "members": 2,
              "durability": "strict"}],
    dataset={"shape": "flat45", "records": 3000, "recordSize": 256},
    phases=[
        {"name": "load", "type": "insert", "batchSize": 50},
        {"name": "replica-reads", "type": "pointReads", "operations": REPLICA_READS,
         "readPreference": "secondaryPreferred"},
        # Updates only, on the primary: the standby gets no reads from it; it
        # keeps the pods up while the test reads the counters.
        {"name": "hold", "type": "mix", "mix": {"update": 100}, "duration": "40s",
         "targetRate": 50},
    ],
)  # fmt: skip


RUNS = {
    session_name("pg-standalone"): STANDALONE,
    session_name("pg-replica"): REPLICA,
}
STANDALONE_RUN, REPLICA_RUN = RUNS


# -- reading the servers and the results --------------------------------------


def psql(kube: Kube, pod: str, sql: str) -> list[list[str]]:
    """Rows of `sql` in the benchmark database, run inside the pod over its socket
    (the chart's pg_hba.conf trusts the socket) as the image's superuser."""
    out = kube.kubectl(
        "exec", "-n", RUNS_NS, pod, "-c", "postgresql", "--", "bash", "-c",
        'psql -X -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d dbbench -At -F "|" -c "$0"', sql,
    ).stdout  # fmt: skip
    return [line.split("|") for line in out.splitlines() if line]


def replica_counters(kube: Kube, run: str, uid: str) -> dict[str, Any]:
    primary, standby = database_pods(kube, run, uid, "postgresql")
    database = "SELECT xact_commit, tup_fetched FROM pg_stat_database WHERE datname = 'dbbench'"
    scans = "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_tables WHERE relname = 'flat45'"
    found: dict[str, Any] = {"pods": (primary, standby)}
    for role, pod in (("primary", primary), ("standby", standby)):
        ((commits, fetched),) = psql(kube, pod, database)
        ((index_scans,),) = psql(kube, pod, scans)
        ((recovery,),) = psql(kube, pod, "SELECT pg_is_in_recovery()")
        found[role] = {"xact_commit": int(commits), "tup_fetched": int(fetched),
                       "idx_scan": int(index_scans), "in_recovery": recovery == "t"}  # fmt: skip
    found["replication"] = psql(
        kube, primary, "SELECT application_name, state, sync_state FROM pg_stat_replication"
    )
    ((found["standby_names"],),) = psql(kube, primary, "SHOW synchronous_standby_names")
    return found


# -- the runs -------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(kube: Kube) -> Iterator[dict[str, Any]]:
    """Applies the two runs, reads the standby's and the primary's counters while
    the replica run's `hold` phase runs, waits (bounded) for both to end,
    and deletes them at the end of the module, leaving nothing behind."""
    found: dict[str, Any] = {"counters": None, "statuses": {}}
    try:
        for name, spec in RUNS.items():
            apply_run(kube, name, spec)
        found["uids"] = {name: run_uid(kube, name) for name in RUNS}
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            statuses = {name: run_status(kube, name) for name in RUNS}
            progress = statuses[REPLICA_RUN].get("progress") or {}
            if (found["counters"] is None and progress.get("phase") == "hold"
                    and progress.get("stage") == "Running"):  # fmt: skip
                found["counters"] = replica_counters(kube, REPLICA_RUN,
                                                     found["uids"][REPLICA_RUN])  # fmt: skip
            if all(s.get("phase") in ("Succeeded", "Failed") for s in statuses.values()):
                found["statuses"] = statuses
                # The same runs as applied (a re-created run would have another uid).
                assert {n: run_uid(kube, n) for n in RUNS} == found["uids"]
                break
            time.sleep(3)
        else:
            pytest.fail(f"the runs did not end within an hour: {statuses}")
        yield found
    finally:
        for name in RUNS:
            with contextlib.suppress(RuntimeError, TimeoutError):
                delete_run(kube, name)


@pytest.mark.parametrize("name", list(RUNS), ids=lambda name: name.rsplit("-", 1)[0])
def test_run_succeeds_as_configured_with_a_report(
    kube: Kube, finished: dict[str, Any], name: str
) -> None:
    status = finished["statuses"][name]
    check_results(name, RUNS[name], status)
    files = wait_for_report(kube, status)
    assert "report.html" in files
    assert "summary.json" in files


def test_postgresql_ran_the_nodes_image_from_the_chart_values(
    kube: Kube, finished: dict[str, Any]
) -> None:
    status = finished["statuses"][STANDALONE_RUN]
    environment = results_json(kube, status, "pg/load/1/pod-0/environment.json")
    # The manifest names no image: the chart's engines.postgresql values point at
    # the node's trixie PostgreSQL 17 (no registry could give another).
    assert environment["server"]["version"].startswith("17."), environment["server"]
    assert environment["target"]["engine"] == "postgresql"
    # shared_buffers from the memory limit (25% of 512Mi), in force on the server.
    assert environment["server"]["cacheBytes"] == 128 * 2**20, environment["server"]
    assert environment["database"]["memoryLimitBytes"] == 512 * 2**20


def test_replica_reads_are_served_by_the_standby(kube: Kube, finished: dict[str, Any]) -> None:
    counters = finished["counters"]
    assert counters is not None, "the replica run's hold phase was never seen running"
    primary, standby = counters["primary"], counters["standby"]
    assert (primary["in_recovery"], standby["in_recovery"]) == (False, True), counters
    # The standby's own statistics: each point read is a transaction there and an
    # index scan of the flat45 table; only the runner's reads reach the standby.
    assert standby["xact_commit"] >= REPLICA_READS, counters
    assert standby["idx_scan"] >= REPLICA_READS, counters
    assert standby["tup_fetched"] >= REPLICA_READS, counters
    status = finished["statuses"][REPLICA_RUN]
    environment = results_json(kube, status, "pg/replica-reads/1/pod-0/environment.json")
    (read_replica,) = environment["target"]["readReplicas"]
    assert read_replica.split(".")[0] == counters["pods"][1], (read_replica, counters["pods"])


def test_strict_has_a_synchronous_standby(finished: dict[str, Any]) -> None:
    counters = finished["counters"]
    assert counters is not None, "the replica run's hold phase was never seen running"
    standby_pod = counters["pods"][1]
    assert counters["standby_names"] == f'ANY 1 ("{standby_pod}")', counters
    (row,) = counters["replication"]
    application, state, sync_state = row
    assert application == standby_pod, counters
    assert state == "streaming", counters
    assert sync_state in ("sync", "quorum"), counters
