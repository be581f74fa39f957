"""A finished run's directory, read once into typed values (the report's only I/O in).

The layout is the results service's (docs/results.md): ``summary.json`` at the
run's root lists every step and its place ``<target>/<phase>/<repeat>/``, where
the merged ``summary.json``, ``environment.json``, ``series-ops.csv``,
``series-seconds.csv`` and ``storage.csv`` are. A missing or unreadable file is
a ResultsError naming it and what to do.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_SUMMARY_KIND = "BenchmarkRunSummary"
STEP_FILES = ("summary.json", "environment.json", "series-ops.csv", "series-seconds.csv")


class ResultsError(ValueError):
    """A result directory is missing, unfinished or unreadable; the message says which file."""


@dataclass(frozen=True)
class Window:
    """One stability window: work done at its end, and its rates.

    Runners that count records (insert phases) also write `records` and
    `recordsPerSecond`; older result files have operations only (None here).
    """

    operations: float
    seconds: float
    rate: float
    records: float | None = None
    records_rate: float | None = None


def _optional(row: dict[str, str], key: str) -> float | None:
    value = row.get(key)
    return None if value in (None, "") else float(value)


@dataclass(frozen=True)
class Second:
    epoch_second: int
    operation: str
    operations: int
    errors: int
    latency_sum_us: int


@dataclass(frozen=True)
class StorageSample:
    epoch: float
    data_bytes: int
    index_bytes: int
    storage_bytes: int
    records: int


@dataclass(frozen=True)
class Step:
    target: str
    phase: str
    repeat: int
    type: str
    path: str
    summary: Mapping[str, Any]
    environment: Mapping[str, Any]  # the first pod's (server, runner, settings)
    windows: tuple[Window, ...]
    seconds: tuple[Second, ...]
    storage: tuple[StorageSample, ...]


@dataclass(frozen=True)
class Run:
    path: Path
    summary: Mapping[str, Any]
    steps: tuple[Step, ...]
    missing: tuple[str, ...]  # planned steps without results (the run stopped before them)

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.summary.get("spec") or {}

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.summary.get("run") or {}

    @property
    def title(self) -> str:
        return f"{self.meta.get('namespace', '?')}/{self.meta.get('name', self.path.name)}"

    @property
    def targets(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("targets") or [])

    @property
    def phases(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("phases") or [])

    def target_names(self) -> list[str]:
        return [str(t["name"]) for t in self.targets]

    def phase_names(self) -> list[str]:
        return [str(p["name"]) for p in self.phases]

    def steps_of(self, target: str | None = None, phase: str | None = None) -> list[Step]:
        return [
            s
            for s in self.steps
            if (target is None or s.target == target) and (phase is None or s.phase == phase)
        ]


def _json(path: Path) -> Mapping[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ResultsError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable ({exc})") from exc
    if not isinstance(value, dict):
        raise ResultsError(f"{path}: expected a JSON object")
    return value


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except FileNotFoundError as exc:
        raise ResultsError(f"{path}: missing") from exc
    except (OSError, csv.Error) as exc:
        raise ResultsError(f"{path}: unreadable ({exc})") from exc


def _environment(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    pods = raw.get("pods")
    if isinstance(pods, list) and pods and isinstance(pods[0], dict):
        return pods[0]  # a merged step keeps every pod's environment; they share the server
    return raw


def read_step(run_dir: Path, entry: Mapping[str, Any]) -> Step:
    path = str(entry["path"])
    directory = run_dir / path
    for name in STEP_FILES:
        if not (directory / name).is_file():
            raise ResultsError(
                f"{directory / name}: missing (step {path} is listed in the run's summary.json; "
                "fetch the run again with `dbbench fetch`)"
            )
    storage_path = directory / "storage.csv"
    storage_rows = _rows(storage_path) if storage_path.is_file() else []
    try:
        return Step(
            target=str(entry["target"]),
            phase=str(entry["phase"]),
            repeat=int(entry["repeat"]),
            type=str(entry.get("type", "")),
            path=path,
            summary=_json(directory / "summary.json"),
            environment=_environment(_json(directory / "environment.json")),
            windows=tuple(
                Window(
                    float(r["operations"]),
                    float(r["windowSeconds"]),
                    float(r["opsPerSecond"]),
                    _optional(r, "records"),
                    _optional(r, "recordsPerSecond"),
                )
                for r in _rows(directory / "series-ops.csv")
            ),
            seconds=tuple(
                Second(
                    int(r["epochSecond"]),
                    r["operation"],
                    int(r["operations"]),
                    int(r["errors"]),
                    int(r["latencySumUs"]),
                )
                for r in _rows(directory / "series-seconds.csv")
            ),
            storage=tuple(
                StorageSample(
                    float(r["epoch"]),
                    int(r["dataBytes"]),
                    int(r["indexBytes"]),
                    int(r["storageBytes"]),
                    int(float(r["records"])),
                )
                for r in storage_rows
            ),
        )
    except (KeyError, ValueError) as exc:
        raise ResultsError(f"{directory}: a result file lacks an expected column ({exc})") from exc


def read_run(run_dir: Path) -> Run:
    """The run at `run_dir` (``<namespace>/<run>/<uid>/`` or a fetched copy of it)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ResultsError(f"{run_dir}: no such directory")
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise ResultsError(
            f"{summary_path}: missing. The run's summary.json is written when the run ends: "
            "the run is unfinished, or this is not a run's directory "
            "(it holds <target>/<phase>/<repeat>/ folders)"
        )
    summary = _json(summary_path)
    if summary.get("kind") != RUN_SUMMARY_KIND:
        raise ResultsError(
            f"{summary_path}: kind is {summary.get('kind')!r}, not {RUN_SUMMARY_KIND}: "
            "give the run's directory, not a step's"
        )
    steps: list[Step] = []
    missing: list[str] = []
    for entry in summary.get("steps") or []:
        if entry.get("result") is None:
            missing.append(str(entry.get("path")))
            continue
        steps.append(read_step(run_dir, entry))
    return Run(run_dir, summary, tuple(steps), tuple(missing))
