"""The series index in a PostgreSQL database the user names (chart values
``results.history.postgres.*``: the DSN from a Secret), instead of SQLite on
the claim: for a claim on slow or network storage, or to query series with SQL.

The same cache as the SQLite index (`index.HistoryIndex`): rows are added as run
summaries are stored, and the table is filled from the claim's files when it
is missing or of another schema version (a PostgreSQL advisory lock keeps two
services from filling it at once). A database that cannot be reached is logged
and the service answers from the files (`server`): nothing in it is the only
copy of a result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import psycopg.errors

from dbbench_contract.history import SeriesPoint
from dbbench_results.history.index import SCHEMA_VERSION, rows_of
from dbbench_results.history.points import points_of, read_run_summary, run_dirs

log = logging.getLogger(__name__)
T = TypeVar("T")
POINTS = "dbbench_history_points"
META = "dbbench_history_meta"
_LOCK = 0x6462626E  # pg_advisory_xact_lock key: "dbbn"
CONNECT_TIMEOUT_S = 10
_CREATE = (
    f"CREATE TABLE {POINTS} (namespace text NOT NULL, series text NOT NULL, run text NOT NULL,"
    " uid text NOT NULL, ended_at text NOT NULL, target text NOT NULL, phase text NOT NULL,"
    " repeat integer NOT NULL, operation_type text NOT NULL, point text NOT NULL,"
    " PRIMARY KEY (namespace, uid, target, phase, repeat, operation_type))",
    f"CREATE INDEX {POINTS}_by_series ON {POINTS} (namespace, series, ended_at, run)",
    f"CREATE TABLE {META} (version integer NOT NULL)",
)
_INSERT = (
    f"INSERT INTO {POINTS} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (namespace, uid, target, phase, repeat, operation_type) "
    "DO UPDATE SET point = EXCLUDED.point, series = EXCLUDED.series"
)


class PostgresIndex:
    def __init__(self, dsn: str, root: Path, *, read_only: bool = False) -> None:
        self._dsn = dsn
        self.root = root
        self.read_only = read_only  # the browser: reads, never fills
        self._ready = False
        self._lock = threading.Lock()

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self._dsn, connect_timeout=CONNECT_TIMEOUT_S)

    def _ensure(self, db: psycopg.Connection[Any]) -> None:
        """The table in place and of this version, filled from the files if not."""
        if self._ready or self.read_only:
            return
        with self._lock, db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            exists = db.execute(
                "SELECT to_regclass(%s), to_regclass(%s)", (POINTS, META)
            ).fetchone()
            version = None
            if exists is not None and exists[1] is not None:
                row = db.execute(f"SELECT max(version) FROM {META}").fetchone()
                version = None if row is None else row[0]
            if exists is None or exists[0] is None or version != SCHEMA_VERSION:
                self._fill(db)
        self._ready = True

    def _fill(self, db: psycopg.Connection[Any]) -> None:
        db.execute(f"DROP TABLE IF EXISTS {POINTS}, {META}")
        for statement in _CREATE:
            db.execute(statement)
        db.execute(f"INSERT INTO {META} VALUES (%s)", (SCHEMA_VERSION,))
        runs = count = 0
        with db.cursor() as cursor:
            for run_dir in run_dirs(self.root):
                summary = read_run_summary(run_dir)
                if summary is None:
                    continue
                rows = list(rows_of(list(points_of(summary, run_dir))))
                cursor.executemany(_INSERT, rows)
                runs, count = runs + 1, count + len(rows)
        log.info("history index %s built from %d run summaries (%d points)", POINTS, runs, count)

    def _use(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` on the table, filled first when missing; a table dropped or changed
        under a running service is found on use: filled again, `work` done once more."""
        for attempt in (1, 2):
            with self._connect() as db:
                self._ensure(db)
                try:
                    with db.transaction():
                        return work(db)
                except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
                    if attempt == 2 or self.read_only:
                        raise
                    log.warning("history index %s missing or changed: filled again", POINTS)
                    self._ready = False
        raise AssertionError("unreachable")

    def add_run(self, run_dir: Path) -> int:
        summary = read_run_summary(run_dir)
        if summary is None:
            return 0
        points = list(points_of(summary, run_dir))

        def write(db: psycopg.Connection[Any]) -> int:
            db.execute(f"DELETE FROM {POINTS} WHERE namespace = %s AND uid = %s",
                       (summary.run.namespace, summary.run.uid))  # fmt: skip
            with db.cursor() as cursor:
                cursor.executemany(_INSERT, list(rows_of(points)))
            return len(points)

        return self._use(write)

    def series(self, namespace: str, series: str) -> list[SeriesPoint]:
        def read(db: psycopg.Connection[Any]) -> list[SeriesPoint]:
            rows = db.execute(
                f"SELECT point FROM {POINTS} WHERE namespace = %s AND series = %s "
                "ORDER BY ended_at, run, target, phase, repeat, operation_type",
                (namespace, series),
            ).fetchall()
            return [SeriesPoint.model_validate_json(row[0]) for row in rows]

        return self._use(read)
