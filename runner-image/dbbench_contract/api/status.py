"""``BenchmarkRun.status``: written by the operator only. A summary, well under
100 KB; the full results are on the results claim at ``resultsPath``."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field
from pydantic.config import JsonDict

from .base import StatusModel
from .expectations import ExpectationOutcome

RunPhase = Literal["Pending", "Provisioning", "Running", "Collecting", "Succeeded", "Failed"]
_MAP_LIST_TYPE: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}
_NAMED_LIST_TYPE: JsonDict = {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
}


class Condition(StatusModel):
    """A Kubernetes-style condition (Ready, Progressing, Degraded, SpecValid...)."""

    type: str = Field(max_length=64, description="Condition type, e.g. Ready or Progressing.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str | None = Field(
        default=None, max_length=128, description="CamelCase reason, e.g. InvalidSpec."
    )
    message: str | None = Field(
        default=None, max_length=4096, description="Human-readable detail; names fields."
    )
    last_transition_time: datetime | None = Field(
        default=None, description="When the status last changed."
    )
    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation the condition was computed from."
    )


class Progress(StatusModel):
    """Where the run is now. Steps run strictly in order, so `stepsDone` is also
    the operator's record of what is finished (a restarted operator resumes there)."""

    target: str | None = Field(default=None, description="Target being benchmarked.")
    phase: str | None = Field(default=None, description="Phase being run.")
    repeat: int | None = Field(default=None, ge=1, description="Repeat of the phase, 1-based.")
    stage: str | None = Field(
        default=None,
        max_length=32,
        description=(
            "What the current step is doing: TearingDown, Provisioning, Cooling, Running, "
            "Collecting."
        ),
    )
    percent: int | None = Field(default=None, ge=0, le=100, description="Whole run done, 0-100.")
    eta: datetime | None = Field(
        default=None,
        description="Estimated completion, extrapolated from the time taken so far.",
    )
    ops_per_second: float | None = Field(
        default=None, ge=0, description="Current throughput of the running step, all pods."
    )
    records_per_second: float | None = Field(
        default=None,
        ge=0,
        description="Records written per second by the running step, all pods (when it writes).",
    )
    step: int | None = Field(default=None, ge=0, description="Current step (1-based).")
    steps: int | None = Field(
        default=None, ge=0, description="Total steps: targets x phases x repeats."
    )
    steps_done: int | None = Field(default=None, ge=0, description="Steps finished and collected.")
    cold_step: int | None = Field(
        default=None,
        ge=0,
        description=(
            "cache: cold or coldOnce: the step whose databases were restarted last (1-based)."
        ),
    )
    cold_pods: list[str] | None = Field(
        default=None,
        max_length=1024,
        description="cache: cold or coldOnce: uids of the database pods restarted for that step.",
    )


# Of a phase result here, and of a step and each of its operation types in the
# step's summary.json (`dbbench_contract.summary`), whose latencies are always
# known: hence 0, not unset, by default.
class Latency(StatusModel):
    """Latency percentiles in milliseconds (HDR histogram, warm-up excluded)."""

    p50: float = Field(default=0.0, ge=0, description="Median, ms.")
    p95: float = Field(default=0.0, ge=0, description="95th percentile, ms.")
    p99: float = Field(default=0.0, ge=0, description="99th percentile, ms.")
    p999: float = Field(default=0.0, ge=0, description="99.9th percentile, ms.")
    max: float = Field(default=0.0, ge=0, description="Maximum, ms.")


class StorageUsage(StatusModel):
    """Database storage after the phase: sizes as the engine reports them, records
    as the runner counted them (the engine's own count is an estimate)."""

    data_bytes: int | None = Field(default=None, ge=0, description="Logical data size, bytes.")
    index_bytes: int | None = Field(default=None, ge=0, description="Index size, bytes.")
    storage_bytes: int | None = Field(
        default=None, ge=0, description="Space used on disk (allocated), bytes."
    )
    records: int | None = Field(
        default=None,
        ge=0,
        description="Records in the table: those before the phase plus those it wrote, exact.",
    )
    bytes_per_record: float | None = Field(
        default=None, ge=0, description="storageBytes / records."
    )


# A query that may rightly come back empty counts in neither `found` nor
# `notFound` when it does.
class Lookups(StatusModel):
    """One operation type that looks rows up, all runner pods merged."""

    operations: int = Field(default=0, ge=0, description="Operations of this type (measured).")
    found: int = Field(
        default=0, ge=0, description="Operations that found a row or document (a query: any)."
    )
    not_found: int = Field(
        default=0,
        ge=0,
        description=(
            "Operations that found nothing where the plan says a row exists: errors, counted "
            "against maxErrorRate."
        ),
    )


# In the status (`targets[].phases[]`) and in the run's summary.json
# (`steps[].result`), built once from the merged step summary
# (`dbbench_contract.run_summary.step_result`). The class docstrings are the
# CRD's descriptions.
class PhaseResult(StatusModel):
    """One measured phase repeat of one target, all runner pods merged."""

    name: str = Field(description="Phase name.")
    repeat: int = Field(default=1, ge=1, description="Repeat number, 1-based.")
    status: Literal["succeeded", "stopped", "failed"] | None = Field(
        default=None,
        description=(
            "succeeded, stopped (interrupted) or failed (error rate, a runner pod's own "
            "verdict, or unapplied w:0 writes); a failed step fails the run."
        ),
    )
    operations: int = Field(default=0, ge=0, description="Operations completed (measured).")
    errors: int = Field(
        default=0, ge=0, description="Operations that failed or found nothing (notFound)."
    )
    not_found: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Of errors: reads, scans, updates and queries that found no row or document where "
            "the plan says one exists (unset for phases that look nothing up)."
        ),
    )
    lookups: dict[str, Lookups] | None = Field(
        default=None,
        max_length=16,
        description=(
            "Per operation type that looks rows up (read, scan, update, readModifyWrite, each "
            "query): operations, found and notFound."
        ),
    )
    records: int | None = Field(
        default=None, ge=0, description="Records written (a batch insert writes several)."
    )
    duration_seconds: float = Field(default=0, ge=0, description="Measured wall time, seconds.")
    throughput: float = Field(default=0, ge=0, description="Operations per second.")
    records_per_second: float | None = Field(
        default=None, ge=0, description="Records written per second (insert and mix phases)."
    )
    latency_ms: Latency | None = Field(default=None, description="Latency percentiles, ms.")
    storage: StorageUsage | None = Field(default=None, description="Storage after the phase.")
    disk_reads_per_operation: float | None = Field(
        default=None,
        ge=0,
        description=(
            "Pages the database read from storage per measured operation (InnoDB "
            "Innodb_buffer_pool_reads, WiredTiger pages read into cache, PostgreSQL blks_read): "
            "how much of the working set was not in the engine's cache."
        ),
    )
    client_bound: bool | None = Field(
        default=None,
        description=(
            "The runner pods used 80% or more of their CPU budget (CPU plus run-queue wait): "
            "the figures measure the runner too; add runner pods or threads."
        ),
    )
    client_utilization: float | None = Field(
        default=None, ge=0, description="Runner CPU seconds / (CPU budget x phase time)."
    )
    client_cpu_per_op_us: float | None = Field(
        default=None, ge=0, description="Runner CPU per operation, microseconds."
    )


class TargetResult(StatusModel):
    """Results of one target."""

    name: str = Field(description="Target name.")
    endpoint: str | None = Field(
        default=None, description="Host:port the runners connected to (no credentials)."
    )
    server_version: str | None = Field(default=None, description="Version the server reports.")
    ready: bool = Field(default=False, description="The database is deployed and reachable.")
    shard_key: str | None = Field(
        default=None,
        max_length=256,
        description=(
            "Sharded targets: the key every collection the run's phases use is sharded on "
            "(client-keyed `<table>`, server-keyed `<table>_serverkey`), as set through "
            "mongos before the first step, e.g. `_id: hashed`."
        ),
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=4,
        description="Ready (with a reason such as WaitingForMembers while not ready).",
        json_schema_extra=_MAP_LIST_TYPE,
    )
    phases: list[PhaseResult] = Field(
        default_factory=list, max_length=3200, description="Phase results, in run order."
    )


class LastResult(StatusModel):
    """The most recently finished phase repeat: what the printer columns show."""

    target: str = Field(description="Target name.")
    phase: str = Field(description="Phase name.")
    repeat: int = Field(default=1, ge=1, description="Repeat number, 1-based.")
    throughput: float = Field(ge=0, description="Operations per second.")
    p99_ms: float | None = Field(default=None, ge=0, description="99th percentile latency, ms.")


class BenchmarkRunStatus(StatusModel):
    """Observed state of a BenchmarkRun."""

    phase: RunPhase | None = Field(
        default=None,
        description="Pending, Provisioning, Running, Collecting, Succeeded or Failed.",
    )
    message: str | None = Field(
        default=None, max_length=4096, description="Short human-readable state, e.g. the failure."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=16,
        description="Conditions with reasons.",
        json_schema_extra=_MAP_LIST_TYPE,
    )
    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation the status reflects."
    )
    started_at: datetime | None = Field(default=None, description="When the run started.")
    completed_at: datetime | None = Field(default=None, description="When it ended.")
    progress: Progress | None = Field(default=None, description="Where the run is now.")
    last_result: LastResult | None = Field(
        default=None, description="Most recently finished phase (printer columns)."
    )
    targets: list[TargetResult] = Field(
        default_factory=list,
        max_length=8,
        description="Per-target summary results.",
        json_schema_extra=_NAMED_LIST_TYPE,
    )
    results_path: str | None = Field(
        default=None, description="Full results: <claim>/<namespace>/<name>/<uid>/."
    )
    runner_image: str | None = Field(
        default=None,
        max_length=512,
        description=(
            "Runner image of every step of this run, fixed when it left Pending (an operator "
            "upgraded mid-run keeps using it)."
        ),
    )
    results_omitted: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Per-repeat results left out of this status to keep it small (all of them are "
            "in the results files)."
        ),
    )
    failed_passes: int | None = Field(
        default=None,
        ge=0,
        description="Consecutive reconcile passes that failed (reset by a good pass).",
    )
    failing_since: datetime | None = Field(
        default=None, description="When the current series of failed passes began."
    )
    expectations: list[ExpectationOutcome] | None = Field(
        default=None,
        max_length=512,
        description=(
            "Each bound of each spec.expectations entry on each target, judged when the "
            "last step was collected: verdict, bound, the worst repeat's figure, by how much "
            "(the Expectations condition summarises them)."
        ),
    )
    cleaned_up: bool | None = Field(
        default=None,
        description="The run has ended and its runner Jobs and databases were removed "
        "(or scaled to zero with cleanup: Retain).",
    )
