"""A finished run's directory, read once into typed values (the report's only I/O in).

The layout is the results service's (docs/results.md): ``summary.json`` at the
run's root lists every step and its place ``<target>/<phase>/<repeat>/``, where
the merged ``summary.json``, ``environment.json``, ``series-ops.csv``,
``series-seconds.csv`` and ``storage.csv`` are, and the operator's ``nodes.json``
(optional: results from before it existed have none). A missing or unreadable
file is a ResultsError naming it and what to do.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from dbbench_contract.api import BenchmarkRunSpec, Phase, Target
from dbbench_contract.environment import Environment, MergedEnvironment
from dbbench_contract.layout import (
    ENVIRONMENT,
    NODES,
    SERIES_OPS,
    SERIES_SECONDS,
    STEP_FILES,
    STORAGE,
    SUMMARY,
)
from dbbench_contract.run_summary import RUN_SUMMARY_KIND, RunMeta, RunSummary, StepEntry
from dbbench_contract.shard_storage import ShardStorage, decode_shards
from dbbench_contract.step_nodes import StepNodes
from dbbench_contract.summary import StepSummary
from dbbench_contract.wire import StoredModel

M = TypeVar("M", bound=StoredModel)


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
    # A sharded MongoDB target: the collection on each shard at this sample.
    shards: tuple[ShardStorage, ...] = ()


@dataclass(frozen=True)
class Step:
    target: str
    phase: str
    repeat: int
    type: str
    path: str
    summary: StepSummary
    environment: Environment  # the first pod's (server, runner, settings)
    windows: tuple[Window, ...]
    seconds: tuple[Second, ...]
    storage: tuple[StorageSample, ...]
    # The nodes its pods ran on (nodes.json, the operator's); None: not recorded
    # (results from before it was, or the operator could not write it).
    nodes: StepNodes | None = None


@dataclass(frozen=True)
class Run:
    path: Path
    summary: RunSummary
    steps: tuple[Step, ...]
    missing: tuple[str, ...]  # planned steps without results (the run stopped before them)

    @property
    def spec(self) -> BenchmarkRunSpec:
        """The run's spec, as the operator ran it."""
        return self.summary.spec

    @property
    def meta(self) -> RunMeta:
        return self.summary.run

    @property
    def title(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"

    @property
    def targets(self) -> list[Target]:
        return list(self.spec.targets)

    @property
    def phases(self) -> list[Phase]:
        return list(self.spec.phases)

    def target_names(self) -> list[str]:
        return [t.name for t in self.targets]

    def phase_names(self) -> list[str]:
        return [p.name for p in self.phases]

    def steps_of(self, target: str | None = None, phase: str | None = None) -> list[Step]:
        return [
            s
            for s in self.steps
            if (target is None or s.target == target) and (phase is None or s.phase == phase)
        ]


def _model(path: Path, model: type[M]) -> M:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ResultsError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable ({exc})") from exc
    if not isinstance(value, dict):
        raise ResultsError(f"{path}: expected a JSON object")
    try:
        return model.from_wire(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ResultsError(f"{path}: not a {model.__name__} ({where}: {first['msg']})") from exc


def _is_step_summary(path: Path) -> bool:
    try:
        _model(path, StepSummary)
    except ResultsError:
        return False
    return True


def _environment(path: Path) -> Environment:
    """The step's environment: a merged step keeps every pod's; they share the server."""
    try:
        merged = _model(path, MergedEnvironment)
    except ResultsError:
        return _model(path, Environment)
    if not merged.pods:
        raise ResultsError(f"{path}: lists no pod's environment")
    return merged.first


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except FileNotFoundError as exc:
        raise ResultsError(f"{path}: missing") from exc
    except (OSError, csv.Error) as exc:
        raise ResultsError(f"{path}: unreadable ({exc})") from exc


def read_step(run_dir: Path, entry: StepEntry) -> Step:
    path = entry.path
    directory = run_dir / path
    for name in STEP_FILES:
        if not (directory / name).is_file():
            raise ResultsError(
                f"{directory / name}: missing (step {path} is listed in the run's summary.json; "
                "fetch the run again with `dbbench fetch`)"
            )
    storage_path = directory / STORAGE
    storage_rows = _rows(storage_path) if storage_path.is_file() else []
    try:
        return Step(
            target=entry.target,
            phase=entry.phase,
            repeat=entry.repeat,
            type=entry.type,
            path=path,
            summary=_model(directory / SUMMARY, StepSummary),
            environment=_environment(directory / ENVIRONMENT),
            windows=tuple(
                Window(
                    float(r["operations"]),
                    float(r["windowSeconds"]),
                    float(r["opsPerSecond"]),
                    _optional(r, "records"),
                    _optional(r, "recordsPerSecond"),
                )
                for r in _rows(directory / SERIES_OPS)
            ),
            seconds=tuple(
                Second(
                    int(r["epochSecond"]),
                    r["operation"],
                    int(r["operations"]),
                    int(r["errors"]),
                    int(r["latencySumUs"]),
                )
                for r in _rows(directory / SERIES_SECONDS)
            ),
            storage=tuple(
                StorageSample(
                    float(r["epoch"]),
                    int(r["dataBytes"]),
                    int(r["indexBytes"]),
                    int(r["storageBytes"]),
                    int(float(r["records"])),
                    decode_shards(r.get("shards")),
                )
                for r in storage_rows
            ),
            nodes=_model(directory / NODES, StepNodes) if (directory / NODES).is_file() else None,
        )
    except (KeyError, ValueError) as exc:
        raise ResultsError(f"{directory}: a result file lacks an expected column ({exc})") from exc


def read_run(run_dir: Path) -> Run:
    """The run at `run_dir` (``<namespace>/<run>/<uid>/`` or a fetched copy of it)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ResultsError(f"{run_dir}: no such directory")
    summary_path = run_dir / SUMMARY
    if not summary_path.is_file():
        raise ResultsError(
            f"{summary_path}: missing. The run's summary.json is written when the run ends: "
            "the run is unfinished, or this is not a run's directory "
            "(it holds <target>/<phase>/<repeat>/ folders)"
        )
    try:
        summary = _model(summary_path, RunSummary)
    except ResultsError as exc:
        if not _is_step_summary(summary_path):
            raise
        raise ResultsError(
            f"{summary_path}: a step's summary, not {RUN_SUMMARY_KIND}: "
            "give the run's directory, not a step's"
        ) from exc
    steps: list[Step] = []
    missing: list[str] = []
    for entry in summary.steps:
        if entry.result is None:
            missing.append(entry.path)
            continue
        steps.append(read_step(run_dir, entry))
    return Run(run_dir, summary, tuple(steps), tuple(missing))
