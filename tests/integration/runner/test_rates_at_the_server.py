"""Rates are the work done over the time it took, counted by the database itself.

Issue 29, item 7: a point-read phase paced at 300 ops/s for 10 s on the node
reported 277.3 ops/s: its measured window ran on past the deadline into the
workers' shutdown. Here real servers count the statements: MariaDB logs every
one of them with its time (the general log in a table), PostgreSQL counts the
table's scans (pg_stat_user_tables). Paced phases run through the runner as a
pod runs them (worker processes, connections); what the server did is
compared with what the summary says: the operations (warm-up apart), the
window (its deadline, not the shutdown) and the rate (the paced rate within
0.5%). Two pods are merged into one window holding every operation counted.

Warm-up (issue 29, item 9): the server reads more than the results count, the
reads before the measured window are the summary's `warmupOperations`, and
the interval log and per-second series start after the warm-up.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from dbbench_contract.latency_log import parse_interval_log
from dbbench_runner.config import Dataset
from dbbench_runner.datasets import generator_for
from dbbench_runner.merge import merge
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer, start_mariadb
from tests.fixtures.postgres import PostgresServer
from tests.integration.runner.sql_contract import fetch_all
from tests.support.runner_files import mariadb_target, step

pytestmark = pytest.mark.integration

RECORDS = 1000
RATE = 300  # ops/s over all connections: the issue's; the servers sustain it with room
THREADS = 2
# Paced: RATE x DURATION operations, whatever the machine; long enough that one
# operation per connection at either edge is well under 0.5% of the count.
DURATION = 4
TOLERANCE = 0.005  # the issue's: the paced rate within 0.5%
# How late a paced read may reach the server when make test's workers load the
# machine (the schedule is exact; the server's log sees when it was sent).
LATE_S = 0.05


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """Its own server: the general log is server-wide, and goes to a table here."""
    started = start_mariadb(tmp_path_factory.mktemp("mariadb-rates"),
                            extra_args=["--log-output=TABLE"])  # fmt: skip
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def loaded(server: MariaDBServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A database of RECORDS flat45 records; the target the phases read."""
    target = mariadb_target(server, "rates")
    load = {"type": "insert", "batchSize": 100, "reportEvery": RECORDS}
    assert run_step(step(target, "flat45", RECORDS, load), tmp_path_factory.mktemp("load")) == 0
    return target


def reads_logged(server: MariaDBServer) -> list[float]:
    """Epoch times (as the server logged them) of every point read of the table."""
    table = generator_for(Dataset(shape="flat45", records=RECORDS)).table
    rows = fetch_all(
        server,
        "SELECT UNIX_TIMESTAMP(event_time) FROM mysql.general_log "
        f"WHERE argument LIKE 'SELECT * FROM `{table}` WHERE %'",
    )
    return sorted(float(Decimal(str(t))) for (t,) in rows)


def logged_during(server: MariaDBServer, action: Any) -> list[float]:
    fetch_all(server, "TRUNCATE TABLE mysql.general_log")
    fetch_all(server, "SET GLOBAL general_log = ON")
    try:
        action()
    finally:
        fetch_all(server, "SET GLOBAL general_log = OFF")
    return reads_logged(server)


def paced(warmup_ms: int = 0) -> dict[str, Any]:
    phase: dict[str, Any] = {"name": "reads", "type": "pointReads",
                             "distribution": {"type": "zipfian"}, "duration": f"{DURATION}s",
                             "targetRate": RATE, "reportEvery": RATE}  # fmt: skip
    return {**phase, "warmup": f"{warmup_ms}ms"} if warmup_ms else phase


def summary_of(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "summary.json").read_text()))


def assert_paced_rate(summary: dict[str, Any], rate: float) -> None:
    """The window is the duration (its deadline, not the shutdown), the work the
    rate times it: the reported rate is the paced one within the tolerance.

    Unless the machine stalled the runner: a connection behind its schedule at
    the deadline leaves the rest of it unissued (dbbench_runner/loop.py), and it
    was behind by at most the slowest operation's latency, which runs from the
    intended start. A CI run saw 1,168 of 1,200 reads, a p99 of 110 ms, with
    make test's four workers on two cores. So fewer operations are accepted
    only as many fewer as that lateness explains, never more than scheduled."""
    assert summary["durationSeconds"] == pytest.approx(DURATION, rel=TOLERANCE)
    scheduled = rate * DURATION
    late_s = summary["latencyMs"]["max"] / 1000
    short = max(scheduled * TOLERANCE, rate * late_s)
    assert scheduled - short <= summary["operations"] <= scheduled * (1 + TOLERANCE), summary
    assert summary["throughput"] == summary["operations"] / summary["durationSeconds"]


def test_a_paced_phase_reports_its_rate_and_the_server_ran_exactly_its_operations(
    server: MariaDBServer, loaded: dict[str, Any], tmp_path: Path
) -> None:
    config = step(loaded, "flat45", RECORDS, paced(), threads=THREADS)
    reads = logged_during(server, lambda: run_step(config, tmp_path / "r"))
    summary = summary_of(tmp_path / "r")
    assert summary["status"] == "succeeded", summary
    assert summary["warmupOperations"] == 0
    # Every read the server ran is one the summary counts, and none was due after
    # the window's end: the last one reached the server within its own latency
    # (measured from when it was due) of the deadline.
    assert len(reads) == summary["operations"]
    assert reads[0] >= summary["startedAt"]
    assert reads[-1] <= summary["endedAt"] + summary["latencyMs"]["max"] / 1000
    assert summary["endedAt"] - summary["startedAt"] == summary["durationSeconds"]
    assert_paced_rate(summary, RATE)
    # The server's own count over the window the summary reports: the same rate.
    assert len(reads) / summary["durationSeconds"] == summary["throughput"]


def test_warmup_reads_reach_the_server_but_not_the_results(
    server: MariaDBServer, loaded: dict[str, Any], tmp_path: Path
) -> None:
    warmup = 1.0
    config = step(loaded, "flat45", RECORDS, paced(1000), threads=THREADS)
    reads = logged_during(server, lambda: run_step(config, tmp_path / "w"))
    summary = summary_of(tmp_path / "w")
    assert summary["status"] == "succeeded", summary
    started = summary["startedAt"]
    # The server read more than the results count: the warm-up's reads.
    assert len(reads) == summary["operations"] + summary["warmupOperations"]
    assert summary["warmupOperations"] == pytest.approx(RATE * warmup, abs=THREADS)
    before = [t for t in reads if t < started]
    # The reads before the measured window are the warm-up's (a warm-up read sent
    # late may land just after its start: on a loaded machine up to LATE_S late).
    late = math.ceil(RATE * LATE_S)
    assert summary["warmupOperations"] - late <= len(before) <= summary["warmupOperations"]
    # The warm-up began `warmup` before the measured window, at the paced rate.
    assert started - reads[0] == pytest.approx(warmup, abs=LATE_S)
    assert_paced_rate(summary, RATE)
    # Latencies and series start after the warm-up: no interval or second before it.
    intervals = parse_interval_log((tmp_path / "w" / "histograms" / "read.hlog").read_text())
    assert intervals
    assert min(i.second for i in intervals) >= int(started)
    seconds = (tmp_path / "w" / "series-seconds.csv").read_text().splitlines()[1:]
    assert seconds
    assert min(int(line.split(",")[0]) for line in seconds) >= int(started)


def test_two_pods_merge_into_one_window_holding_every_operation(
    server: MariaDBServer, loaded: dict[str, Any], tmp_path: Path
) -> None:
    """Each pod paces its share of the rate over its own window; the merge's window
    runs from the first pod's start to the last pod's end and holds every read."""
    paths = []
    for pod in range(2):
        config = step(loaded, "flat45", RECORDS, paced(), threads=THREADS,
                      pod={"index": pod, "count": 2})  # fmt: skip
        path = tmp_path / f"pod-{pod}.yaml"
        path.write_text(yaml.safe_dump(config.to_wire()))
        paths.append(path)

    def both() -> None:
        runner = [sys.executable, "-m", "dbbench_runner", "run"]
        pods = [subprocess.Popen([*runner, "--config", str(p), "--out", str(tmp_path / p.stem)])
                for p in paths]  # fmt: skip
        for pod in pods:
            assert pod.wait(timeout=120) == 0

    reads = logged_during(server, both)
    pods = [summary_of(tmp_path / p.stem) for p in paths]
    for summary in pods:  # each pod: half the rate, over the duration
        assert_paced_rate(summary, RATE / 2)
    merged = merge(tmp_path / "merged", [tmp_path / p.stem for p in paths]).to_wire()
    assert merged["operations"] == sum(p["operations"] for p in pods) == len(reads)
    assert merged["startedAt"] == min(p["startedAt"] for p in pods) <= reads[0]
    assert merged["endedAt"] == max(p["endedAt"] for p in pods)
    assert reads[-1] <= merged["endedAt"] + merged["latencyMs"]["max"] / 1000
    assert merged["durationSeconds"] == merged["endedAt"] - merged["startedAt"]
    assert merged["throughput"] == merged["operations"] / merged["durationSeconds"]


@pytest.fixture
def pg_database(postgres_server: PostgresServer) -> Iterator[str]:
    name = f"rates_{uuid.uuid4().hex[:10]}"
    with postgres_server.connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    with postgres_server.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def table_scans(server: PostgresServer, database: str, table: str) -> int:
    """The table's scans (index and sequential) as PostgreSQL counts them."""
    with psycopg.connect(**server.connect_args(database)) as conn:  # type: ignore[arg-type]
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT COALESCE(idx_scan, 0) + seq_scan FROM pg_stat_user_tables WHERE relname = %s",
            (table,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_postgresql_counts_the_reads_the_paced_phase_reports(
    postgres_server: PostgresServer, pg_database: str, tmp_path: Path
) -> None:
    target = {"name": "postgresql", "engine": "postgresql", "host": "127.0.0.1",
              "port": postgres_server.port, "user": postgres_server.user,
              "password": postgres_server.password, "database": pg_database}  # fmt: skip
    load = {"type": "insert", "batchSize": 100, "reportEvery": RECORDS}
    assert run_step(step(target, "flat45", RECORDS, load), tmp_path / "load") == 0
    table = generator_for(Dataset(shape="flat45", records=RECORDS)).table
    before = table_scans(postgres_server, pg_database, table)
    config = step(target, "flat45", RECORDS, paced(500), threads=THREADS)
    assert run_step(config, tmp_path / "r") == 0
    summary = summary_of(tmp_path / "r")
    expected = summary["operations"] + summary["warmupOperations"]
    # Backends send their counts to the statistics as they exit: wait for them.
    deadline = time.monotonic() + 10
    while (scans := table_scans(postgres_server, pg_database, table) - before) < expected:
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert scans == expected
    assert summary["warmupOperations"] > 0
    assert_paced_rate(summary, RATE)
