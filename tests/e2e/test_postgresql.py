"""PostgreSQL on the local node, end to end, and field benchmark 4's small
variant with three engines, each on its own hardware and price.

- PostgreSQL standalone (no `image`/`version`: the chart's `engines` values,
  pointed by the local install at the node's localhost/dbbench/postgres:17):
  load, point reads, queries.
- PostgreSQL primary + streaming standby with `durability: strict`: reads
  with `readPreference: secondaryPreferred`, then a phase on the primary that
  holds the servers up while the test reads the standby's own
  `pg_stat_database`/`pg_stat_user_tables` and the primary's
  `pg_stat_replication` inside the pods.
- examples/field/4-oltp-replicas-cost-small.yaml: MySQL and PostgreSQL
  primary/replica and the MongoDB-protocol stand-in, each target with its own
  resources and price; the 85:15:5 mix as thread groups (16, 3 and 1 of 20
  connections), each group's in the summary and the report; the report
  compares the three and costs each at its own price and pod count.

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
import yaml

from dbbench_local.install import NAMESPACE, Kube
from tests.e2e.conftest import (
    FIELD,
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
    timed_at,
    wait_for_report,
)
from tests.e2e.expectations import check_results
from tests.support.pages import Page, parse

# The three runs share the node and run at once (field 4 alone takes minutes on
# 2 cores): the module fixture that waits for them counts against its first test.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(4200)]

FIELD4 = FIELD / "4-oltp-replicas-cost-small.yaml"
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


# Field 4's measured phases as the e2e suite runs them. The example's 30 s of
# 40 unpaced connections per phase and target (3 targets x 2 phases: three
# minutes of both cores) were the concurrent phase's largest CPU cost; what is
# checked here (thread groups, storage counts, the report's comparison and
# costs) holds at any length. `make reproduce` runs the example as written.
FIELD4_PHASE_S = "10s"


def _field4() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(FIELD4.read_text())["spec"]
    spec["phases"] = timed_at(spec["phases"], FIELD4_PHASE_S)
    return spec


RUNS = {
    session_name("pg-standalone"): STANDALONE,
    session_name("pg-replica"): REPLICA,
    session_name("field4-small"): _field4(),
}
STANDALONE_RUN, REPLICA_RUN, FIELD4_RUN = RUNS


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


def results_text(kube: Kube, status: dict[str, Any], relative: str) -> str:
    prefix = status["resultsPath"].split("/", 1)[1]  # <claim>/<ns>/<run>/<uid>/
    path = f"/results/{prefix}{relative}"
    return kube.kubectl("exec", "-n", NAMESPACE, "deploy/dbbench-results", "--", "python", "-c",
                        f"print(open({path!r}).read(), end='')").stdout  # fmt: skip


# -- the runs -------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(kube: Kube) -> Iterator[dict[str, Any]]:
    """Applies the three runs, reads the standby's and the primary's counters while
    the replica run's `hold` phase runs, waits (bounded) for all three to end,
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


# -- field benchmark 4, small ----------------------------------------------------

FIELD4_SPEC = RUNS[FIELD4_RUN]
PRICES = {t["name"]: t["hardware"]["pricePerHour"] for t in FIELD4_SPEC["targets"]}
MEMORY = {"mysql": 2**30, "postgres": 2**30, "mongo-standin": 512 * 2**20}
PODS = {"mysql": 2, "postgres": 2, "mongo-standin": 1}


@pytest.fixture(scope="module")
def field4_report(kube: Kube, finished: dict[str, Any]) -> Page:
    status = finished["statuses"][FIELD4_RUN]
    assert "report.html" in wait_for_report(kube, status)
    return parse(results_text(kube, status, "report.html"))


def test_field4_targets_ran_on_their_own_hardware(kube: Kube, finished: dict[str, Any]) -> None:
    assert set(PRICES) == set(MEMORY) == {t["name"] for t in FIELD4_SPEC["targets"]}
    # The example names the stand-in by the reference images.sh gives it.
    standin_spec = next(t for t in FIELD4_SPEC["targets"] if t.get("protocolStandIn"))
    assert standin_spec["image"] == node_image("ferretdb.tar")
    assert len(set(PRICES.values())) > 1  # not all the same price
    status = finished["statuses"][FIELD4_RUN]
    for target, memory in MEMORY.items():
        environment = results_json(kube, status, f"{target}/load/1/pod-0/environment.json")
        # The limits the database pods carried, read from the pods when the step began.
        assert environment["database"]["memoryLimitBytes"] == memory, (target, environment)
        assert len(environment["database"]["pods"]) == PODS[target], (target, environment)
    standin = results_json(kube, status, "mongo-standin/load/1/pod-0/environment.json")
    assert "(FerretDB v1.24.0)" in standin["server"]["version"]


def test_field4_storage_counts_every_record_the_mix_inserted(
    kube: Kube, finished: dict[str, Any]
) -> None:
    """After the 85:15:5 phase each target holds the load plus exactly the records
    the mix inserted (the status shows the count); the read-only phase adds none.
    The mix is thread groups: the insert group inserts on every target, also on
    the stand-in, whose reads are table scans of 20,000 documents (with weights
    per operation, its few operations could draw no insert at all)."""
    loaded = FIELD4_SPEC["dataset"]["records"]
    status = finished["statuses"][FIELD4_RUN]
    assert [t["name"] for t in status["targets"]] == list(PODS), status["targets"]
    for target in status["targets"]:
        name = target["name"]
        phases = {p["name"]: p for p in target["phases"]}
        oltp = phases["oltp-primary"]
        summary = results_json(kube, status, f"{name}/oltp-primary/1/summary.json")
        inserts = summary["operationsByType"].get("insert", {"rows": 0})
        assert "records" in oltp, (name, oltp)
        inserted = oltp["records"]
        assert inserted == inserts["rows"] == summary["records"], (name, oltp, summary)
        assert inserted > 0, (name, summary["operationsByType"])
        for phase in ("oltp-primary", "read-only-primary"):
            storage = phases[phase]["storage"]
            assert storage["records"] == loaded + inserted, (name, phase, storage)


def test_field4_thread_groups_each_ran_and_the_report_shows_them(
    kube: Kube, finished: dict[str, Any], field4_report: Page
) -> None:
    """mix.by: connections over the example's 20 connections: 16 read, 3 insert,
    1 update, on every target; each group ran its type (the per-connection proof
    is tests/integration/runner/test_thread_groups_at_the_server.py), and the
    report gives each group's connections beside its figures."""
    status = finished["statuses"][FIELD4_RUN]
    groups = {"read": 16, "insert": 3, "update": 1}
    for target in PODS:
        summary = results_json(kube, status, f"{target}/oltp-primary/1/summary.json")
        assert summary["connectionGroups"] == groups, (target, summary)
        by_type = summary["operationsByType"]
        assert set(by_type) == set(groups), (target, by_type)
        assert all(v["operations"] > 0 for v in by_type.values()), (target, by_type)
        for kind, size in groups.items():
            cell = field4_report.find("operations", "groupConnections", target=target,
                                      phase="oltp-primary", repeat=1, op=kind)  # fmt: skip
            assert cell.value == str(size), (target, kind, cell)
        read_only = results_json(kube, status, f"{target}/read-only-primary/1/summary.json")
        assert read_only["connectionGroups"] == {}


def test_field4_report_compares_the_three_and_costs_each_target(
    kube: Kube, finished: dict[str, Any], field4_report: Page
) -> None:
    status = finished["statuses"][FIELD4_RUN]
    page = field4_report
    assert list(PRICES) == list(PODS)  # every target of the run is costed below
    for phase in ("oltp-primary", "read-only-primary"):
        for target, price in PRICES.items():
            summary = results_json(kube, status, f"{target}/{phase}/1/summary.json")
            mean = summary["throughput"]  # one repeat: the mean is this step's
            side = page.find("side-by-side", f"throughput.mean.{target}", phase=phase)
            assert side.value is not None
            assert float(side.value) == pytest.approx(mean, rel=1e-9)
            where = {"target": target, "phase": phase}
            cell = page.find("cost", "pricePerHour", **where)
            assert cell.value is not None
            assert float(cell.value) == price
            pods = page.find("cost", "pods", **where)
            assert pods.value == repr(PODS[target])
            expected = price * PODS[target] * 1_000_000 / (mean * 3600)
            cost = page.find("cost", "costPerMillion", **where)
            assert cost.value is not None
            assert float(cost.value) == pytest.approx(expected, rel=1e-9), (target, phase)
