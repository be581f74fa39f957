"""The run's summary.json, at the root of its results directory.

The operator writes it when the run ends (after every step it could collect);
the results service renders the report when it arrives; the report, the
results browser and the CLI read it to find the steps. ``spec`` is the
BenchmarkRun's spec with every default made explicit (the operator's API
model owns its shape: the CRD).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from dbbench_contract.summary import LatencyMs, StepStatus, StepSummary
from dbbench_contract.wire import StoredModel

RUN_SUMMARY_KIND: Final = "BenchmarkRunSummary"


class RunMeta(StoredModel):
    namespace: str
    name: str
    uid: str
    started_at: str | None = None
    completed_at: str | None = None
    # How the run ended: Succeeded or Failed (with the Failed condition's reason
    # and message, e.g. Timeout), and the step (1-based) it was at then. A
    # failed run's summary lists every step; those without a result never ended.
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    current_step: int | None = None


class StorageResult(StoredModel):
    """Database storage after the step (the status's ``storage``)."""

    data_bytes: int | None = None
    index_bytes: int | None = None
    storage_bytes: int | None = None
    records: int | None = None
    bytes_per_record: float | None = None


class Lookups(StoredModel):
    """One operation type that looks rows up (``StepResult.lookups``): its
    operations, those that found a row or document, and those that found none
    where the plan says one exists (errors). A query that may rightly come back
    empty counts in neither of the last two when it does."""

    operations: int = 0
    found: int = 0
    not_found: int = 0


class StepResult(StoredModel):
    """One measured step as the run's status shows it (``status.targets[].phases[]``):
    the same fields, so the status and the file never disagree."""

    name: str
    repeat: int = 1
    status: StepStatus | None = None
    operations: int = 0
    errors: int = 0
    # Of `errors`: operations that found nothing where the plan says a row exists;
    # None when the phase looks nothing up (an insert phase).
    not_found: int | None = None
    lookups: dict[str, Lookups] | None = None
    records: int | None = None
    duration_seconds: float = 0.0
    throughput: float = 0.0
    records_per_second: float | None = None
    latency_ms: LatencyMs | None = None
    storage: StorageResult | None = None
    disk_reads_per_operation: float | None = None
    client_bound: bool | None = None
    client_utilization: float | None = None
    client_cpu_per_op_us: float | None = None


class StepEntry(StoredModel):
    step: int
    target: str
    phase: str
    repeat: int
    type: str
    path: str
    # None: the run ended before this step finished.
    result: StepResult | None = None


class TargetEntry(StoredModel):
    name: str
    endpoint: str | None = None
    server_version: str | None = None
    shard_key: str | None = None


class RunSummary(StoredModel):
    api_version: str
    kind: Literal["BenchmarkRunSummary"] = RUN_SUMMARY_KIND
    run: RunMeta
    spec: dict[str, Any] = Field(default_factory=dict)
    steps: tuple[StepEntry, ...] = ()
    targets: tuple[TargetEntry, ...] = ()


def _r(value: float | None, digits: int) -> float:
    return round(float(value or 0.0), digits)


# Phase types whose steps can write records, for summaries that do not say
# (`StepSummary.writes_records` None). A phase that writes records shows its
# count even when it is 0 (a mix whose few operations drew no insert), so that
# an absent count means "this phase writes nothing", never "nothing was written".
RECORD_WRITING_TYPES = frozenset({"insert", "mix"})


def not_found_cell(result: StepResult) -> str:
    """A table cell for the CLI's and the demo's tables: "-" for a phase that looks
    nothing up, "0", or the count per operation type ("read:12,update:3", one
    word, as the tables' other cells are)."""
    if result.not_found is None:
        return "-"
    missing = [f"{kind}:{v.not_found:,}" for kind, v in (result.lookups or {}).items()
               if v.not_found]  # fmt: skip
    return ",".join(missing) or str(result.not_found)


def step_result(name: str, repeat: int, merged: StepSummary) -> StepResult:
    """A merged step summary, compact and rounded, as the status and the run's
    summary.json show it (pure)."""
    latency = merged.latency_ms
    declared = merged.writes_records
    writes = merged.records > 0 or (
        declared if declared is not None else merged.type in RECORD_WRITING_TYPES
    )
    storage = merged.storage
    counters = merged.server_counters
    lookups = {
        kind: Lookups(operations=v.operations, found=v.found or 0, not_found=v.not_found)
        for kind, v in sorted(merged.operations_by_type.items())
        if v.found is not None or v.not_found
    }
    return StepResult(
        name=name,
        repeat=repeat,
        status=merged.status,
        operations=merged.operations,
        errors=merged.errors,
        not_found=merged.not_found if lookups else None,
        lookups=lookups or None,
        records=merged.records if writes else None,
        duration_seconds=_r(merged.duration_seconds, 3),
        throughput=_r(merged.throughput, 1),
        records_per_second=_r(merged.records_per_second, 1) if writes else None,
        latency_ms=LatencyMs(
            p50=_r(latency.p50, 3),
            p95=_r(latency.p95, 3),
            p99=_r(latency.p99, 3),
            p999=_r(latency.p999, 3),
            max=_r(latency.max, 3),
        ),
        storage=None
        if storage is None
        else StorageResult(
            data_bytes=storage.data_bytes,
            index_bytes=storage.index_bytes,
            storage_bytes=storage.storage_bytes,
            records=storage.records,
            bytes_per_record=None
            if storage.bytes_per_record is None
            else _r(storage.bytes_per_record, 1),
        ),
        disk_reads_per_operation=None
        if counters is None or counters.disk_reads_per_operation is None
        else round(counters.disk_reads_per_operation, 4),
        client_bound=merged.client_bound,
        client_utilization=None
        if merged.client_bound is None
        else _r(merged.client_utilization, 3),
        client_cpu_per_op_us=None
        if merged.client_cpu_per_op_us is None
        else _r(merged.client_cpu_per_op_us, 2),
    )
