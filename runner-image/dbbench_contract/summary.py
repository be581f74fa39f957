"""A step's summary.json: one pod's (``pod-<i>/summary.json``) or the merged one.

Runner pods write it last (its presence marks a pod's upload complete); the
results service's merge writes the step's from all pods; the operator reads
the merged one into the status and the run's summary; the report and the CLI
read it from the files. Times are epoch seconds; latencies milliseconds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dbbench_contract import defaults
from dbbench_contract.api.phases import ReportEvery
from dbbench_contract.api.status import Latency
from dbbench_contract.shard_storage import ShardStorage
from dbbench_contract.wire import StoredModel

StepStatus = Literal["succeeded", "stopped", "failed"]
SeriesUnit = Literal["records", "operations"]
# The error type of an operation that found no row or document where the plan
# says one exists ("read:NotFound" in errorsByType).
NOT_FOUND = "NotFound"


class StorageBlock(StoredModel):
    """The last storage sample of the phase (taken after it ended)."""

    data_bytes: int = 0
    index_bytes: int = 0
    storage_bytes: int = 0
    # Records in the table: those before the phase plus what it wrote, exact.
    records: int = 0
    bytes_per_record: float | None = None
    # The engine's own (estimated) count, for comparison.
    engine_estimated_records: int | None = None
    # A sharded MongoDB target: the collection on each shard (documents, sizes,
    # chunks) at the end of the phase; elsewhere none, and not written.
    shards: tuple[ShardStorage, ...] = Field(default=(), exclude_if=lambda shards: not shards)


class OperationSummary(StoredModel):
    """One operation type of the phase (read, insert, update, scan, query:<name>...)."""

    operations: int = 0
    errors: int = 0
    rows: int = 0
    throughput: float = 0.0
    latency_ms: Latency = Latency()
    records_per_second: float | None = None
    # Operations that found a row or document (a query: returned one). None for
    # types that look nothing up (inserts) or are not told (MongoDB w:0 updates).
    found: int | None = None
    # Operations that found nothing where the plan says a row exists (reads,
    # scans, updates, read-modify-writes of loaded records; queries that cannot
    # come back empty on the loaded table): errors, also in `errors`.
    not_found: int = 0


class ClientPod(StoredModel):
    """One runner pod's CPU use over the phase (is the runner what was measured?)."""

    pod: int
    cpus: float
    cpu_seconds: float
    wait_seconds: float
    wall_seconds: float
    operations: int
    utilization: float = 0.0
    demand: float = 0.0
    cpu_per_op_us: float | None = None
    bound: bool = False


class ServerCounters(StoredModel):
    """The database's own disk-read counter around the measured part of the phase.

    Pages the engine read from storage (`diskReadsCounter` names the counter:
    InnoDB Innodb_buffer_pool_reads, WiredTiger "pages read into cache",
    PostgreSQL blks_read). The counter is server-wide: pods of one step share
    the server, so a summary covers the union of its pods' windows (the
    earliest first sample to the latest last one), never a sum; the figure per
    operation is given only when the summary covers every pod of the step.
    """

    disk_reads_counter: str
    disk_reads_before: int
    disk_reads_after: int
    disk_reads: int
    disk_reads_per_operation: float | None = None


class StepSummary(StoredModel):
    target: str
    engine: str
    server_version: str = ""
    phase: str
    type: str
    status: StepStatus = "succeeded"
    reason: str | None = None
    pods: tuple[int, ...] = ()
    pod_count: int = 1
    threads: int = 1
    started_at: float = 0.0
    ended_at: float = 0.0
    duration_seconds: float = 0.0
    operations: int = 0
    errors: int = 0
    # Of `errors`: operations that found nothing where the plan says a row exists
    # (per type in operations_by_type[].not_found).
    not_found: int = 0
    error_rate: float = 0.0
    max_error_rate: float = defaults.MAX_ERROR_RATE
    # Records the measured part inserted (insert and mix phases), and their rate.
    records: int = 0
    records_per_second: float = 0.0
    # The phase inserts records (Phase.writes_records); None in summaries of
    # runners before the field, whose phase type decides (run_summary.step_result).
    writes_records: bool | None = None
    # Records the phase's table held when it began (the step file's recordsBefore):
    # the records stored a reading phase was measured at, the x of the report's
    # data-growth figures. None in summaries of runners before the field.
    records_before: int | None = None
    # Records written including warm-up, and the highest record number written.
    records_written: int = 0
    last_record_number: int = 0
    throughput: float = 0.0
    latency_ms: Latency = Latency()
    operations_by_type: dict[str, OperationSummary] = Field(default_factory=dict)
    # Thread groups (mix.by connections): the connections of each operation
    # type's group over all pods of the step, in every pod's summary alike;
    # empty when every connection drew every type.
    connection_groups: dict[str, int] = Field(default_factory=dict)
    errors_by_type: dict[str, int] = Field(default_factory=dict)
    warmup_operations: int = 0
    warmup_records: int = 0
    report_every: ReportEvery = defaults.REPORT_EVERY
    series_unit: SeriesUnit = "operations"
    storage: StorageBlock | None = None
    # w:0 phases only: the records the server held after every write was drained,
    # and the writes sent that it did not apply (also counted in `errors`).
    stored_records: int | None = None
    unapplied_writes: int | None = None
    server_counters: ServerCounters | None = None
    # Runner CPU accounting (absent in summaries of runners before it existed).
    client_cpu_seconds: float | None = None
    client_wait_seconds: float | None = None
    client_cpus: float | None = None
    client_utilization: float | None = None
    client_demand: float | None = None
    client_cpu_per_op_us: float | None = None
    client_bound: bool | None = None
    client_bound_threshold: float = defaults.CLIENT_BOUND_THRESHOLD
    client_by_pod: tuple[ClientPod, ...] = ()
