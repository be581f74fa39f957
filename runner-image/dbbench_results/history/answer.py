"""The answer to ``GET /v1/series/<namespace>/<series>`` (the service) and
``GET /api/series/<namespace>/<series>`` (the browser, read-only): the series'
points, its change points, and the verdict on ``?run=<name>`` or its newest run."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sqlite3
from pathlib import Path

from dbbench_contract.history import SeriesHistory, SeriesPoint
from dbbench_results.history.changes import (
    DEFAULT_MIN_CHANGE,
    DEFAULT_MIN_RUNS,
    DEFAULT_SIGNIFICANCE,
    Judging,
    find_changes,
    run_order,
    verdict,
)
from dbbench_results.history.index import (
    INDEX_DIR,
    SQLITE_NAME,
    HistoryIndex,
    series_from_files,
)
from dbbench_results.paths import PathRefusedError

log = logging.getLogger(__name__)
# A series is named by a label value the conventions make a DNS-1123 label.
_SERIES = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_NAMESPACE = _SERIES
_RUN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def check_names(namespace: str, series: str, run: str | None = None) -> None:
    """PathRefusedError naming what is not a namespace, series or run name."""
    if not _NAMESPACE.match(namespace):
        raise PathRefusedError(f"namespace {namespace!r} is not a Kubernetes namespace name")
    if not _SERIES.match(series):
        raise PathRefusedError(f"series {series!r} is not a DNS-1123 label (dbbench.io/series)")
    if run is not None and not _RUN.match(run):
        raise PathRefusedError(f"run {run!r} is not a Kubernetes object name")


def history(
    points: list[SeriesPoint], namespace: str, series: str, judging: Judging,
    run: str | None = None,
) -> SeriesHistory:  # fmt: skip
    """The answer (pure): the points as given (run order), every change point."""
    return SeriesHistory(
        namespace=namespace, series=series, significance=judging.significance,
        min_change=judging.min_change,
        min_runs=judging.min_runs, runs=len(run_order(points)), points=tuple(points),
        change_points=tuple(find_changes(points, judging)),
        verdict=verdict(points, judging, run, series) if points or run else None,
    )  # fmt: skip


DSN_ENV = "DBBENCH_RESULTS_HISTORY_DSN"


def history_index(root: Path, *, read_only: bool = False) -> HistoryIndex | None:
    """The PostgreSQL index when DBBENCH_RESULTS_HISTORY_DSN names one; None: SQLite."""
    dsn = os.environ.get(DSN_ENV, "").strip()
    if not dsn:
        return None
    from dbbench_results.history.postgres_index import PostgresIndex  # noqa: PLC0415 - psycopg

    return PostgresIndex(dsn, root, read_only=read_only)


def read_only_series(root: Path, namespace: str, series: str) -> list[SeriesPoint]:
    """The series for the browser, whose claim is mounted read-only: the service's
    index (PostgreSQL when named; else its SQLite file opened read-only), or the
    files themselves when it cannot be read (missing, damaged, unreachable)."""
    index = history_index(root, read_only=True)
    if index is not None:
        try:
            return index.series(namespace, series)
        except Exception as exc:  # noqa: BLE001 - any failure: the files answer
            log.warning("history index not readable (%s): reading the files", exc)
            return series_from_files(root, namespace, series)
    path = root / INDEX_DIR / SQLITE_NAME
    if path.is_file():
        try:
            uri = f"{path.resolve().as_uri()}?mode=ro"
            with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
                rows = db.execute(
                    "SELECT point FROM points WHERE namespace = ? AND series = ? "
                    "ORDER BY ended_at, run, target, phase, repeat, operation_type",
                    (namespace, series),
                ).fetchall()
            return [SeriesPoint.model_validate_json(row[0]) for row in rows]
        except (sqlite3.Error, ValueError) as exc:
            log.warning("history index %s not readable (%s): reading the files", path, exc)
    return series_from_files(root, namespace, series)


def add_judging_flags(parser: argparse.ArgumentParser) -> None:
    """The change-point flags (the results browser takes them too, to answer alike)."""
    parser.add_argument(
        "--significance", type=float,
        default=float(os.environ.get("DBBENCH_RESULTS_SIGNIFICANCE", DEFAULT_SIGNIFICANCE)),
        help="a change point's p-value must be below this (results.history.significance)",
    )  # fmt: skip
    parser.add_argument(
        "--min-change", type=float,
        default=float(os.environ.get("DBBENCH_RESULTS_MIN_CHANGE", DEFAULT_MIN_CHANGE)),
        help="the smallest change reported, a fraction of the level before it "
        "(results.history.minChange)",
    )  # fmt: skip
    parser.add_argument(
        "--min-runs", type=int,
        default=int(os.environ.get("DBBENCH_RESULTS_MIN_RUNS", DEFAULT_MIN_RUNS)),
        help="runs a series needs before a run is judged (results.history.minRuns)",
    )  # fmt: skip


def judging_from(args: argparse.Namespace) -> Judging:
    if not 0 < args.significance < 1:
        raise SystemExit("--significance must be between 0 and 1 (e.g. 0.001)")
    if args.min_runs < 2:
        raise SystemExit("--min-runs must be at least 2 (a level before the judged run)")
    if not 0 <= args.min_change < 10:
        raise SystemExit("--min-change must be a fraction, 0 or more (e.g. 0.05 for 5%)")
    return Judging(significance=args.significance, min_runs=args.min_runs,
                   min_change=args.min_change)  # fmt: skip
