"""Issue 11 against a real MariaDB: insert results in records.

The scenario of the issue (200,000 flat45 records of 1 KB, batches of 100,
reportEvery 20,000), at a fifth of its size (40,000 records, reportEvery 4,000:
the same ten points, batches and record size; the larger table only cost
`make test` two minutes of CPU) through the CLI as a user runs it, a two-pod run merged,
storage counts against SELECT COUNT(*), and phases that insert after earlier
phases (repeated mixes, a second load) without colliding with their keys.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mysql.connector
import pytest
import yaml

from dbbench_runner.config import Dataset, Shape
from dbbench_runner.datasets import generator_for
from dbbench_runner.running import EXIT_ERROR_RATE, run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.support.runner_files import check_results, cli, csv_rows, mariadb_target, step

pytestmark = pytest.mark.integration

SCENARIO_RECORDS = 40_000
EVERY = 4_000
# What the connector logs at INFO on connecting; shown only with --debug.
CONNECTOR_LINE = re.compile(r"INFO mysql\.connector|plugin_name:|package: mysql\.connector")


def count(server: MariaDBServer, database: str, shape: Shape) -> int:
    """SELECT COUNT(*) of the shape's table: what the table really holds."""
    table = generator_for(Dataset(shape=shape, records=1)).table
    conn = mysql.connector.connect(**{**server.connect_args(), "database": database})
    try:
        cursor = conn.cursor()
        cursor.execute(f"SELECT COUNT(*) FROM `{table}`")
        row: Any = cursor.fetchone()
        return int(row[0])
    finally:
        conn.close()


@pytest.fixture
def database(mariadb: MariaDBServer) -> Iterator[str]:
    name = f"r_{uuid.uuid4().hex[:12]}"
    yield name
    conn = mysql.connector.connect(**mariadb.connect_args())
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def scenario(server: MariaDBServer, database: str, **extra: Any) -> dict[str, Any]:
    """The issue's step file: what a new user wrote."""
    return {
        "target": mariadb_target(server, database),
        "dataset": {"shape": "flat45", "records": SCENARIO_RECORDS, "recordSize": 1024},
        "phase": {"name": "load", "type": "insert", "batchSize": 100, "reportEvery": EVERY},
        "threads": 4,
        "progressEvery": 2,
        "storageEvery": 2,
        **extra,
    }


def check_ten_points(out: Path) -> None:
    series = csv_rows(out / "series-ops.csv")
    assert [int(r["records"]) for r in series] == [EVERY * k for k in range(1, 11)]
    for row in series:
        rate = float(row["recordsPerSecond"])
        assert rate * float(row["windowSeconds"]) == pytest.approx(EVERY, rel=1e-3)
        assert float(row["opsPerSecond"]) == pytest.approx(rate / 100, rel=1e-3)
        assert float(row["meanLatencyMs"]) > 0


def check_storage(out: Path, summary: dict[str, Any], stored: int) -> None:
    storage = summary["storage"]
    assert storage["records"] == stored
    assert storage["bytesPerRecord"] == pytest.approx(storage["storageBytes"] / stored, abs=1e-3)
    assert "engineEstimatedRecords" in storage
    last = csv_rows(out / "storage.csv")[-1]
    assert int(last["records"]) == stored


def test_the_issue_scenario_through_the_cli(
    mariadb: MariaDBServer, database: str, tmp_path: Path
) -> None:
    config = tmp_path / "step.yaml"
    config.write_text(yaml.safe_dump(scenario(mariadb, database)))
    done = cli("run", "--config", str(config), "--out", str(tmp_path / "out"), timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    out = tmp_path / "out"
    summary = check_results(out, operations=SCENARIO_RECORDS // 100, records=SCENARIO_RECORDS)
    check_ten_points(out)
    assert summary["seriesUnit"] == "records"
    rate = SCENARIO_RECORDS / summary["durationSeconds"]
    assert summary["recordsPerSecond"] == pytest.approx(rate, rel=1e-9)
    assert summary["operationsByType"]["insert"]["recordsPerSecond"] == pytest.approx(rate)
    assert summary["throughput"] == pytest.approx(rate / 100)
    stored = count(mariadb, database, "flat45")
    assert stored == SCENARIO_RECORDS
    check_storage(out, summary, stored)
    assert not CONNECTOR_LINE.search(output), output
    assert re.search(r"\[load\] \d+ ops .* \d+ records .* records/s", output), output
    progress = json.loads((out / "progress.json").read_text())
    assert progress["records"] == SCENARIO_RECORDS
    assert progress["recordsPerSecond"] > 0


@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "debug"])
def test_connector_info_lines_only_with_debug(
    mariadb: MariaDBServer, database: str, tmp_path: Path, debug: bool
) -> None:
    # mysql-connector-python is the library that logs at INFO on connecting
    # (mysqlclient, the default driver, logs nothing), so both checks use it:
    # quiet, no lines; with --debug they are there (the quiet check can fail).
    raw = scenario(mariadb, database, mysqlDriver="mysql-connector-python")
    raw["dataset"]["records"] = 100
    config = tmp_path / "step.yaml"
    config.write_text(yaml.safe_dump(raw))
    flags = ["--debug"] if debug else []
    done = cli("run", *flags, "--config", str(config), "--out", str(tmp_path / "out"))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert bool(CONNECTOR_LINE.search(output)) is debug, output


def test_two_pods_merge_into_the_same_ten_points(
    mariadb: MariaDBServer, database: str, tmp_path: Path
) -> None:
    # Both pods at once, as a Job's pods run; 256-byte records keep it quick.
    pods = []
    for index in range(2):
        raw = scenario(mariadb, database, threads=2, pod={"index": index, "count": 2})
        raw["dataset"]["recordSize"] = 256
        config = tmp_path / f"pod{index}.yaml"
        config.write_text(yaml.safe_dump(raw))
        pods.append(
            subprocess.Popen(
                [sys.executable, "-m", "dbbench_runner", "run", "--config", str(config),
                 "--out", str(tmp_path / f"pod{index}")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
        )  # fmt: skip
    try:
        outputs = [pod.communicate(timeout=600)[0] for pod in pods]
    finally:
        for pod in pods:  # a failed or timed-out pod must not outlive the test
            if pod.poll() is None:
                pod.kill()
                pod.wait()
    for pod, output in zip(pods, outputs, strict=True):
        assert pod.returncode == 0, output
    merged = cli(
        "merge", "--out", str(tmp_path / "merged"), *(str(tmp_path / f"pod{i}") for i in range(2))
    )
    assert merged.returncode == 0, merged.stderr
    out = tmp_path / "merged"
    summary = check_results(out, operations=SCENARIO_RECORDS // 100, records=SCENARIO_RECORDS)
    check_ten_points(out)
    for index in range(2):  # each pod alone drew its own 5 points
        assert len(csv_rows(tmp_path / f"pod{index}" / "series-ops.csv")) == 5
    assert summary["recordsPerSecond"] == pytest.approx(
        SCENARIO_RECORDS / summary["durationSeconds"], rel=1e-9
    )
    stored = count(mariadb, database, "flat45")
    assert stored == SCENARIO_RECORDS
    check_storage(out, summary, stored)
    # a pod's own files count what it wrote; the merge adds the other pod's records
    pod_last = [int(csv_rows(tmp_path / f"pod{i}" / "storage.csv")[-1]["records"]) for i in (0, 1)]
    assert pod_last == [SCENARIO_RECORDS // 2] * 2


MIX = {"read": 40, "insert": 40, "update": 20}


def mix_phase(**extra: Any) -> dict[str, Any]:
    return {
        "name": "mix",
        "type": "mix",
        "mix": MIX,
        "operations": 600,
        "reportEvery": 100,
        **extra,
    }


def test_repeated_mix_phases_continue_numbering_and_count_exactly(
    mariadb: MariaDBServer, database: str, tmp_path: Path
) -> None:
    target = mariadb_target(mariadb, database)
    loaded = 2000
    config = step(target, "ycsb", loaded, {"type": "insert", "batchSize": 50})
    assert run_step(config, tmp_path / "load") == 0
    # repeat 1: warm-up inserts count too (they are in the table)
    # (a warm-up goes with a duration-bound phase: the API's rule)
    timed = {k: v for k, v in mix_phase(warmup="1s", duration="2s").items() if k != "operations"}
    first = step(target, "ycsb", loaded, timed)
    assert run_step(first, tmp_path / "mix1") == 0
    summary = json.loads((tmp_path / "mix1" / "summary.json").read_text())
    assert summary["errors"] == 0
    stored = count(mariadb, database, "ycsb")
    assert stored == loaded + summary["recordsWritten"]
    assert summary["recordsWritten"] >= summary["records"] > 0
    check_storage(tmp_path / "mix1", summary, stored)
    # repeat 2 continues after the highest number repeat 1 wrote, as the operator passes it
    table = {"recordsBefore": stored, "firstRecord": summary["lastRecordNumber"] + 1}
    second = step(target, "ycsb", loaded, mix_phase(), table=table)
    assert run_step(second, tmp_path / "mix2") == 0
    again = json.loads((tmp_path / "mix2" / "summary.json").read_text())
    assert again["errors"] == 0
    stored_after = count(mariadb, database, "ycsb")
    assert stored_after == stored + again["records"]
    check_storage(tmp_path / "mix2", again, stored_after)
    # without firstRecord a repeat rewrites repeat 1's numbers: the keys collide
    colliding = step(target, "ycsb", loaded, mix_phase(maxErrorRate=0))
    assert run_step(colliding, tmp_path / "mix3") == EXIT_ERROR_RATE
    errors = json.loads((tmp_path / "mix3" / "summary.json").read_text())["errorsByType"]
    assert any(kind.startswith("insert:") and "1062" in kind for kind in errors), errors


def test_a_second_client_numbered_load_continues_after_the_first(
    mariadb: MariaDBServer, database: str, tmp_path: Path
) -> None:
    target = mariadb_target(mariadb, database)
    phase = {"type": "insert", "batchSize": 40, "reportEvery": 500}
    assert run_step(step(target, "flat45", 1000, phase), tmp_path / "first") == 0
    first = json.loads((tmp_path / "first" / "summary.json").read_text())
    assert first["lastRecordNumber"] == 1000
    more = step(target, "flat45", 1000, phase, table={"recordsBefore": 1000, "firstRecord": 1001})
    assert run_step(more, tmp_path / "second") == 0
    summary = check_results(tmp_path / "second", operations=2 * 13, records=1000)
    assert summary["errors"] == 0
    assert summary["lastRecordNumber"] == 2000
    assert count(mariadb, database, "flat45") == 2000
    check_storage(tmp_path / "second", summary, 2000)
    generator = generator_for(more.dataset)
    conn = mysql.connector.connect(**{**mariadb.connect_args(), "database": database})
    try:
        cursor: Any = conn.cursor()
        cursor.execute(f"SELECT `{generator.key_column}` FROM `{generator.table}`")
        keys = {row[0] for row in cursor.fetchall()}
    finally:
        conn.close()
    assert keys == {generator.key(n) for n in range(1, 2001)}
