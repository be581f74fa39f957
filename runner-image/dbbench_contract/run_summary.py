"""The run's summary.json, at the root of its results directory.

The operator writes it when the run ends (after every step it could collect);
the results service renders the report when it arrives; the report, the
results browser and the CLI read it to find the steps. ``spec`` is the
BenchmarkRun's spec with every default made explicit, and each step's
``result`` is the status's phase result: both are the API's own models
(``dbbench_contract.api``), so the file, the status and the CRD never disagree.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, field_serializer

from dbbench_contract.api.expectations import ExpectationOutcome
from dbbench_contract.api.spec import BenchmarkRunSpec
from dbbench_contract.api.status import Latency, Lookups, PhaseResult, StorageUsage
from dbbench_contract.summary import StepSummary
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


class StepEntry(StoredModel):
    step: int
    target: str
    phase: str
    repeat: int
    type: str
    path: str
    # None: the run ended before this step finished.
    result: PhaseResult | None = None


class TargetEntry(StoredModel):
    name: str
    endpoint: str | None = None
    server_version: str | None = None
    shard_key: str | None = None


class RunSummary(StoredModel):
    """Read with ``from_wire``/``from_json``: keys no model knows are ignored,
    in the spec too (whose model refuses them at admission)."""

    api_version: str
    kind: Literal["BenchmarkRunSummary"] = RUN_SUMMARY_KIND
    # The run's series (its dbbench.io/series label when it ended): the results
    # service indexes its figures under it (dbbench_contract.history). None: the
    # run belongs to no series (and summaries written before the field); not
    # written then, so a run without a series writes the file as before.
    series: str | None = Field(default=None, exclude_if=lambda series: series is None)
    run: RunMeta
    spec: BenchmarkRunSpec
    steps: tuple[StepEntry, ...] = ()
    targets: tuple[TargetEntry, ...] = ()
    # spec.expectations judged when the last step was collected (status.expectations:
    # each bound's verdict, limit, measured value); none, and not written, for a run
    # that states none or ended before its last step.
    expectations: tuple[ExpectationOutcome, ...] = Field(
        default=(), exclude_if=lambda outcomes: not outcomes
    )

    @field_serializer("spec")
    def _spec_as_applied(self, spec: BenchmarkRunSpec) -> dict[str, Any]:
        # As the API server stores it: unset optional fields absent, not null.
        return spec.model_dump(by_alias=True, exclude_none=True, mode="json")


def _r(value: float | None, digits: int) -> float:
    return round(float(value or 0.0), digits)


# Phase types whose steps can write records, for summaries that do not say
# (`StepSummary.writes_records` None). A phase that writes records shows its
# count even when it is 0 (a mix whose few operations drew no insert), so that
# an absent count means "this phase writes nothing", never "nothing was written".
RECORD_WRITING_TYPES = frozenset({"insert", "mix"})


def not_found_cell(result: PhaseResult) -> str:
    """A table cell for the CLI's and the demo's tables: "-" for a phase that looks
    nothing up, "0", or the count per operation type ("read:12,update:3", one
    word, as the tables' other cells are)."""
    if result.not_found is None:
        return "-"
    missing = [f"{kind}:{v.not_found:,}" for kind, v in (result.lookups or {}).items()
               if v.not_found]  # fmt: skip
    return ",".join(missing) or str(result.not_found)


def step_result(name: str, repeat: int, merged: StepSummary) -> PhaseResult:
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
    return PhaseResult(
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
        latency_ms=Latency(
            p50=_r(latency.p50, 3),
            p95=_r(latency.p95, 3),
            p99=_r(latency.p99, 3),
            p999=_r(latency.p999, 3),
            max=_r(latency.max, 3),
        ),
        storage=None
        if storage is None
        else StorageUsage(
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
