"""The figures a stored run adds to its series' index, read from its files.

The run's summary.json names its series and steps; each measured step adds a
point for the step as a whole (operation type ``all``, the phase result the
status shows) and, when it ran several operation types, one per type from the
step's merged summary.json. Steps that did not succeed (stopped, failed, never
ended) add none: their figures do not measure what the series measures.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from dbbench_contract.api.status import Latency
from dbbench_contract.history import ALL_OPERATIONS, SeriesPoint
from dbbench_contract.layout import SUMMARY
from dbbench_contract.run_summary import RunSummary, StepEntry
from dbbench_contract.summary import StepSummary

log = logging.getLogger(__name__)


def read_run_summary(run_dir: Path) -> RunSummary | None:
    """The run's summary, or None when it has none or it does not parse (logged)."""
    path = run_dir / SUMMARY
    try:
        return RunSummary.from_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError, ValueError) as exc:
        log.warning("%s not indexed: %s", path, str(exc)[:300])
        return None


def _step_summary(run_dir: Path, entry: StepEntry) -> StepSummary | None:
    try:
        return StepSummary.from_json((run_dir / entry.path / SUMMARY).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None  # the step's own figures (`all`) still come from the run summary


def _point(summary: RunSummary, entry: StepEntry, kind: str, *, ops: float,
           records: float | None, latency: Latency | None, errors: int) -> SeriesPoint:  # fmt: skip
    latency = latency or Latency()
    assert summary.series is not None
    assert summary.run.completed_at is not None
    return SeriesPoint(
        namespace=summary.run.namespace, series=summary.series, run=summary.run.name,
        uid=summary.run.uid, ended_at=summary.run.completed_at, target=entry.target,
        phase=entry.phase, repeat=entry.repeat, operation_type=kind, ops_per_second=ops,
        records_per_second=records, p50_ms=latency.p50, p95_ms=latency.p95,
        p99_ms=latency.p99, p999_ms=latency.p999, errors=errors,
    )  # fmt: skip


def points_of(summary: RunSummary, run_dir: Path | None) -> Iterator[SeriesPoint]:
    """The run's points (none without a series or an end time); per-type points
    need the steps' files under `run_dir`."""
    if summary.series is None or summary.run.completed_at is None:
        return
    for entry in summary.steps:
        result = entry.result
        if result is None or result.status not in (None, "succeeded"):
            continue
        yield _point(summary, entry, ALL_OPERATIONS, ops=result.throughput,
                     records=result.records_per_second, latency=result.latency_ms,
                     errors=result.errors)  # fmt: skip
        step = None if run_dir is None else _step_summary(run_dir, entry)
        if step is None or len(step.operations_by_type) < 2:
            continue  # one type: the same figures as `all`
        for kind, op in sorted(step.operations_by_type.items()):
            yield _point(summary, entry, kind, ops=op.throughput,
                         records=op.records_per_second, latency=op.latency_ms,
                         errors=op.errors)  # fmt: skip


def run_points(run_dir: Path) -> list[SeriesPoint]:
    summary = read_run_summary(run_dir)
    return [] if summary is None else list(points_of(summary, run_dir))


def run_dirs(root: Path, namespace: str = "*") -> Iterator[Path]:
    """Every run directory holding a summary.json (hidden names, the service's own
    files such as its index, are skipped)."""
    for path in sorted(root.glob(f"{namespace}/*/*/{SUMMARY}")):
        run_dir = path.parent
        if not any(part.startswith(".") for part in run_dir.relative_to(root).parts):
            yield run_dir
