"""The series index: every stored run's points, by (namespace, series).

A cache of the claim's files, never the only copy of a result: the run
summaries and step summaries are. `SqliteIndex` (the default) keeps it in
``<root>/.index/history.sqlite3``; when the file is missing it is built from
the files, and when it is damaged (not a database, a failed check, an error on
use) it is moved aside as ``history.sqlite3.damaged-<time>`` and built again.
The index never stops a run: adding a run that fails is logged, and the run's
files (and report) are stored regardless.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from dbbench_contract.history import SeriesPoint
from dbbench_results.history.points import points_of, read_run_summary, run_dirs, run_points

log = logging.getLogger(__name__)
INDEX_DIR = ".index"
SQLITE_NAME = "history.sqlite3"
# Bumped when the table changes: an index of another version is built again.
SCHEMA_VERSION = 1
T = TypeVar("T")

_SCHEMA = f"""
CREATE TABLE points (
    namespace TEXT NOT NULL, series TEXT NOT NULL, run TEXT NOT NULL, uid TEXT NOT NULL,
    ended_at TEXT NOT NULL, target TEXT NOT NULL, phase TEXT NOT NULL,
    repeat INTEGER NOT NULL, operation_type TEXT NOT NULL, point TEXT NOT NULL,
    PRIMARY KEY (namespace, uid, target, phase, repeat, operation_type)
);
CREATE INDEX points_by_series ON points (namespace, series, ended_at, run);
PRAGMA user_version = {SCHEMA_VERSION};
"""
_ORDER = "ORDER BY ended_at, run, target, phase, repeat, operation_type"


class HistoryIndex(Protocol):
    """What the results service needs of an index (SQLite here; PostgreSQL when named)."""

    def add_run(self, run_dir: Path) -> int:
        """Index (again) the run stored in `run_dir`: its points replace any it had.
        Returns how many points it added."""
        ...

    def series(self, namespace: str, series: str) -> list[SeriesPoint]:
        """The series' points in run order (by end time)."""
        ...


def _rows(points: Sequence[SeriesPoint]) -> Iterator[tuple[object, ...]]:
    for p in points:
        yield (p.namespace, p.series, p.run, p.uid, p.ended_at, p.target, p.phase, p.repeat,
               p.operation_type, p.model_dump_json(by_alias=True))  # fmt: skip


_INSERT = "INSERT OR REPLACE INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class SqliteIndex:
    """The index in a SQLite file on the results claim (the service alone writes it)."""

    def __init__(self, root: Path, path: Path | None = None) -> None:
        self.root = root
        self.path = path or root / INDEX_DIR / SQLITE_NAME
        self._lock = threading.Lock()
        self._checked = False

    # -- the interface -------------------------------------------------------------

    def add_run(self, run_dir: Path) -> int:
        summary = read_run_summary(run_dir)
        if summary is None:
            return 0
        points = list(points_of(summary, run_dir))
        ns, uid = summary.run.namespace, summary.run.uid

        def write(db: sqlite3.Connection) -> int:
            with db:
                db.execute("DELETE FROM points WHERE namespace = ? AND uid = ?", (ns, uid))
                db.executemany(_INSERT, _rows(points))
            return len(points)

        return self._use(write)

    def series(self, namespace: str, series: str) -> list[SeriesPoint]:
        def read(db: sqlite3.Connection) -> list[SeriesPoint]:
            rows = db.execute(
                f"SELECT point FROM points WHERE namespace = ? AND series = ? {_ORDER}",
                (namespace, series),
            ).fetchall()
            return [SeriesPoint.model_validate_json(row[0]) for row in rows]

        return self._use(read)

    # -- keeping it usable -------------------------------------------------------------

    def _use(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on the index, built first when missing; a damaged index is moved
        aside, built again from the files and `work` done once more."""
        with self._lock:
            try:
                return self._on_index(work)
            except sqlite3.DatabaseError as exc:
                log.warning("history index %s damaged (%s): moved aside, rebuilt", self.path, exc)
                self._move_aside()
                return self._on_index(work)

    def _on_index(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if not self.path.is_file():
            self.rebuild()
        with contextlib.closing(sqlite3.connect(self.path, timeout=30)) as db:
            if not self._checked:
                # Read fully once per process: a file damaged while the service
                # was down is found here, not by a half-answered query later.
                if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
                    raise sqlite3.DatabaseError("quick_check failed")
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version != SCHEMA_VERSION:
                    raise sqlite3.DatabaseError(f"schema version {version}, not {SCHEMA_VERSION}")
                self._checked = True
            return work(db)

    def _move_aside(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        with contextlib.suppress(FileNotFoundError):
            self.path.replace(aside)
        for suffix in ("-journal", "-wal", "-shm"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        self._checked = False

    def rebuild(self) -> int:
        """Build the index from the claim's run summaries into a new file, then
        put it in place (readers see the old index or the whole new one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{self.path.name}.building")
        temp.unlink(missing_ok=True)
        count = runs = 0
        try:
            with contextlib.closing(sqlite3.connect(temp)) as db:
                db.executescript(_SCHEMA)
                with db:
                    for run_dir in run_dirs(self.root):
                        summary = read_run_summary(run_dir)
                        if summary is None:
                            continue
                        points = list(points_of(summary, run_dir))
                        db.executemany(_INSERT, _rows(points))
                        count, runs = count + len(points), runs + 1
            temp.replace(self.path)
        finally:
            temp.unlink(missing_ok=True)
        self._checked = False
        log.info("history index %s built from %d run summaries (%d points)", self.path, runs, count)
        return count


def series_from_files(root: Path, namespace: str, series: str) -> list[SeriesPoint]:
    """The series read from the files alone (no index): the results browser's
    answer when it cannot open the index (its claim is mounted read-only)."""
    points = [p for d in run_dirs(root, namespace) for p in run_points(d) if p.series == series]
    return sorted(points, key=lambda p: (p.ended_at, p.run, p.target, p.phase, p.repeat,
                                         p.operation_type))  # fmt: skip
