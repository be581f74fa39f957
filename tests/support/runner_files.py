"""Builders and checks shared by the runner's tests."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.results import read_histograms
from tests.fixtures.mariadb import MariaDBServer

RESULT_FILES = (
    "summary.json",
    "environment.json",
    "checkpoints.csv",
    "series-ops.csv",
    "series-seconds.csv",
    "storage.csv",
)


def mariadb_target(server: MariaDBServer, database: str, **extra: Any) -> dict[str, Any]:
    """The step-file `target` for a fixture MariaDB server."""
    return {
        "name": "mariadb",
        "engine": "mariadb",
        "host": "127.0.0.1",
        "port": server.port,
        "user": "root",
        "password": server.root_password,
        "database": database,
        **extra,
    }


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m dbbench_runner ARGS` as a user runs it, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "dbbench_runner", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def step(
    target: dict[str, Any],
    shape: str,
    records: int,
    phase: dict[str, Any],
    *,
    table: dict[str, Any] | None = None,
    **extra: Any,
) -> StepConfig:
    """A step file; `table` adds dataset fields (recordsBefore, firstRecord)."""
    raw: dict[str, Any] = {
        "target": target,
        "dataset": {"shape": shape, "records": records, "seed": 7, **(table or {})},
        "phase": {"name": phase.get("type", "p").lower(), **phase},
        "threads": 2,
        "processes": 1,
        "progressEvery": 1,
        "storageEvery": 1,
    }
    raw.update(extra)
    return parse_config(raw)


def is_write_stamp_of(delta: int, operations: int, position: int = 0) -> bool:
    """Whether a vehicle's Mileage moved by `delta` = 1 + a write stamp of the step at
    `position` (keyspace.write_stamp: (sequence x workers + worker) << 20 | position)
    among its first `operations` operations (+ slack for the per-worker split)."""
    stamp = delta - 1
    return stamp >= 0 and stamp & 0xFFFFF == position and stamp >> 20 < operations + 64


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def check_results(out: Path, *, operations: int, records: int | None = None) -> dict[str, Any]:
    """Files complete and consistent: summary = histograms = series = checkpoints."""
    for name in RESULT_FILES:
        assert (out / name).is_file(), f"{name} missing"
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    histograms = read_histograms(out)
    assert histograms, "no histogram logs"
    assert summary["operations"] == operations
    assert sum(h.get_total_count() for h in histograms.values()) == operations
    for kind, histogram in histograms.items():
        assert summary["operationsByType"][kind]["operations"] == histogram.get_total_count()
    assert sum(int(r["operations"]) for r in csv_rows(out / "series-seconds.csv")) == operations
    marks = csv_rows(out / "checkpoints.csv")
    assert sum(int(r["operations"]) for r in marks) == operations
    assert sum(int(r["records"]) for r in marks) == summary["records"]
    every = summary["reportEvery"]
    # insert phases count their windows in records, other phases in operations
    counted = summary["records"] if summary["seriesUnit"] == "records" else operations
    assert len(csv_rows(out / "series-ops.csv")) == counted // every
    assert csv_rows(out / "storage.csv"), "no storage samples"
    environment = json.loads((out / "environment.json").read_text())
    versions = [environment.get("server", {}).get("version")] + [
        pod["server"]["version"] for pod in environment.get("pods", []) if "server" in pod
    ]
    assert any(versions) or "pods" in environment
    if records is not None:
        assert summary["records"] == records
    return summary
