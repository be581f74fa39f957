"""Progress while a step runs: each pod's ``progress.json`` and the step's sum.

A runner pod rewrites its progress every few seconds and forwards it to the
results service; the service adds the step's pods up for the operator, which
shows it in ``status.progress``.
"""

from __future__ import annotations

from dbbench_contract.wire import StoredModel


class PodProgress(StoredModel):
    phase: str
    operations: int = 0
    errors: int = 0
    rate: float = 0.0
    # Records written and measured (insert and mix phases).
    records: int = 0
    records_per_second: float = 0.0
    p99_ms: float = 0.0
    percent: float | None = None
    eta_seconds: float | None = None
    elapsed_seconds: float = 0.0


class StepProgress(StoredModel):
    """The pods' latest progress added up; the step's ETA is the slowest pod's."""

    pods: int
    reporting: int = 0
    finished: int = 0
    operations: int = 0
    errors: int = 0
    rate: float = 0.0
    records: int = 0
    records_per_second: float = 0.0
    percent: float | None = None
    eta_seconds: float | None = None


def add_up(pods: int, reports: list[PodProgress], finished: int) -> StepProgress:
    """A step's progress from its pods' reports (pure). Pods share the work
    evenly, so the step's percent is their mean, pods not yet reporting at 0."""
    known = [r.percent for r in reports if r.percent is not None]
    etas = [r.eta_seconds for r in reports if r.eta_seconds is not None]
    return StepProgress(
        pods=pods,
        reporting=len(reports),
        finished=finished,
        operations=sum(r.operations for r in reports),
        errors=sum(r.errors for r in reports),
        rate=sum(r.rate for r in reports),
        records=sum(r.records for r in reports),
        records_per_second=sum(r.records_per_second for r in reports),
        percent=(sum(known) / pods) if known else None,
        eta_seconds=max(etas) if etas else None,
    )
