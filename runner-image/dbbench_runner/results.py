"""Result files: written atomically (temp file + rename), read back by merge.

summary.json             totals, per-type latency (ms), errors by type, status
environment.json         versions, settings in force, data-to-memory ratio, pod, node
histograms/<op>.hlog     HDR interval log (hdrh encoding, microseconds), one interval per
                         wall-clock second (dbbench_contract.latency_log)
checkpoints.csv          raw (epoch, operations, records, latency) marks: what merge re-windows
series-ops.csv           per reportEvery records (insert) or operations: rates and mean
                         latency over each window (stability; see dbbench_runner.series)
series-seconds.csv       per wall-clock second and operation type: count, errors, mean,
                         p50, p99 and max latency
storage.csv              storage samples with the exact record count (dbbench_runner.storage)
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from dbbench_contract.api.phases import ReportEvery
from dbbench_contract.environment import Environment, MergedEnvironment
from dbbench_contract.hdr_sparse import sparse_counts
from dbbench_contract.latency_log import (
    MAX_VALUE_UNIT_RATIO,
    SERIES_SECONDS_COLUMNS,
    parse_interval_log,
)
from dbbench_contract.layout import (
    CHECKPOINTS,
    ENVIRONMENT,
    HISTOGRAMS,
    PROGRESS,
    SERIES_OPS,
    SERIES_SECONDS,
    STORAGE,
    SUMMARY,
    histogram_file,
)
from dbbench_contract.summary import NOT_FOUND, OperationSummary, StepSummary
from dbbench_runner.client_usage import PodUsage, summary_fields
from dbbench_runner.histogram import LatencyHistogram, new_hdr, refill_hdr
from dbbench_runner.measurement import Checkpoints, Measurements, SecondBucket, latency_ms
from dbbench_runner.seconds_spool import merged_seconds, read_seconds
from dbbench_runner.series import Mark, SeriesUnit, Window, windows_of_ordered
from dbbench_runner.server_counters import CounterWindow, counters_block
from dbbench_runner.storage import StorageRow, csv_rows, parse_rows, summary_block
from dbbench_runner.storage import header as storage_header

__all__ = [
    "CHECKPOINTS",
    "ENVIRONMENT",
    "HISTOGRAMS",
    "PROGRESS",
    "SERIES_OPS",
    "SERIES_SECONDS",
    "STORAGE",
    "SUMMARY",
    "RunMeta",
    "atomic_write",
    "read_environment",
    "read_histograms",
    "read_interval_counts",
    "read_measurements",
    "read_storage",
    "read_summary",
    "summarize",
    "write_merged_environment",
    "write_results",
]  # fmt: skip


@dataclass(frozen=True)
class RunMeta:
    target: str
    engine: str
    phase: str
    type: str
    pods: tuple[int, ...]
    pod_count: int
    threads: int
    started: float  # epoch seconds: end of warm-up
    ended: float
    report_every: ReportEvery
    max_error_rate: float
    server_version: str
    series_unit: SeriesUnit
    stopped: bool = False
    # False only for a pod whose share of a counted phase is empty (more
    # connections than operations); otherwise measuring nothing is a failure.
    expects_operations: bool = True
    # Unacknowledged (w:0) writes: compare what the server holds with what was sent.
    verify_applied: bool = False
    # The phase inserts records (Phase.writes_records); None: not known (merges
    # of summaries from runners before the field).
    writes_records: bool | None = None
    # A merge: why pods whose own summary failed did (a pod failing fails the step
    # even when the merged error rate is under the limit).
    pod_failures: tuple[str, ...] = ()
    # Thread groups: connections per operation type over all pods (StepSummary).
    connection_groups: tuple[tuple[str, int], ...] = ()
    # Records in the table when the phase began (StepSummary.records_before).
    records_before: int | None = None


@contextmanager
def atomic_file(path: Path) -> Iterator[TextIO]:
    """A text file written in parts, in place at `path` once the block ends
    without an error (a merge writes its larger files row by row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_write(path: Path, text: str) -> None:
    with atomic_file(path) as handle:
        handle.write(text)


def _csv(header: list[str], rows: Iterable[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _count(value: float) -> str:
    """A cumulative count for the series file: whole when it is (a window boundary)."""
    return f"{value:.0f}" if abs(value - round(value)) < 1e-6 else f"{value:.3f}"


SERIES_OPS_HEADER = [
    "operations",
    "records",
    "epoch",
    "windowSeconds",
    "opsPerSecond",
    "recordsPerSecond",
    "meanLatencyMs",
]


def _series_row(w: Window) -> list[object]:
    return [
        _count(w.operations),
        _count(w.records),
        f"{w.epoch:.6f}",
        f"{w.seconds:.6f}",
        f"{w.ops_per_second:.3f}",
        f"{w.records_per_second:.3f}",
        f"{w.mean_latency_ms:.4f}",
    ]


# A merged step's reason names at most this many pods that failed on their own.
POD_FAILURES_SHOWN = 3


def _failure_reason(
    meta: RunMeta, empty: bool, error_rate: float, by_type: dict[str, OperationSummary],
    unapplied: int,
) -> str:  # fmt: skip
    """Why the step failed, in the words a database engineer checks first."""
    if empty:
        return (
            "no operation was measured: the workload ended during warm-up or no "
            "operation completed in the measured window; lengthen duration, shorten "
            "warmup or check the database"
        )
    parts = []
    if error_rate > meta.max_error_rate:
        parts.append(f"error rate {error_rate:.4f} exceeds maxErrorRate {meta.max_error_rate}")
    elif meta.pod_failures:  # the merged figures pass; a pod's own verdict does not
        more = len(meta.pod_failures) - POD_FAILURES_SHOWN
        parts.extend(meta.pod_failures[:POD_FAILURES_SHOWN])
        if more > 0:
            parts.append(f"{more} more runner pods failed on their own")
    missing = [f"{kind} {v.not_found:,} of {v.operations:,}" for kind, v in by_type.items()
               if v.not_found]  # fmt: skip
    if missing:
        parts.append(
            "found no row or document where the plan says one exists ("
            + ", ".join(missing)
            + "): the phase reads keys its table does not hold"
        )
    if unapplied:
        parts.append(f"{unapplied:,} unacknowledged (w:0) writes were not applied by the server")
    return "; ".join(parts)


def summarize(
    meta: RunMeta,
    m: Measurements,
    storage: list[StorageRow],
    client: list[PodUsage] | None = None,
    counters: list[CounterWindow | None] | None = None,
) -> StepSummary:
    duration = max(meta.ended - meta.started, 1e-9)
    operations = m.operations
    stored, unapplied = _applied(meta, storage)
    errors = m.error_count + unapplied
    error_rate = errors / operations if operations else 0.0
    # A phase that measured nothing has no figures to publish: it fails, saying
    # why, instead of reporting 0 ops/s as a result.
    empty = operations == 0 and meta.expects_operations and not meta.stopped
    failed = empty or error_rate > meta.max_error_rate or bool(meta.pod_failures)
    total = LatencyHistogram()
    by_type: dict[str, OperationSummary] = {}
    for kind, histogram in sorted(m.histograms.items()):
        total.add(histogram)
        count = histogram.get_total_count()
        by_type[kind] = OperationSummary(
            operations=count,
            errors=sum(n for k, n in m.errors.items() if k.split(":", 1)[0] == kind),
            rows=m.records[kind],
            throughput=count / duration,
            latency_ms=latency_ms(histogram),
            records_per_second=m.records[kind] / duration if kind == "insert" else None,
            found=m.found.get(kind),
            not_found=m.errors[f"{kind}:{NOT_FOUND}"],
        )
    errors_by_type = dict(sorted(m.errors.items()))
    if unapplied:
        errors_by_type[UNAPPLIED] = unapplied
    return StepSummary(
        target=meta.target,
        engine=meta.engine,
        server_version=meta.server_version,
        phase=meta.phase,
        type=meta.type,
        status="failed" if failed else ("stopped" if meta.stopped else "succeeded"),
        reason=_failure_reason(meta, empty, error_rate, by_type, unapplied) if failed else None,
        pods=meta.pods,
        pod_count=meta.pod_count,
        threads=meta.threads,
        started_at=meta.started,
        ended_at=meta.ended,
        duration_seconds=duration,
        operations=operations,
        errors=errors,
        not_found=sum(v.not_found for v in by_type.values()),
        error_rate=error_rate,
        max_error_rate=meta.max_error_rate,
        records=m.records["insert"],
        records_per_second=m.records["insert"] / duration,
        writes_records=meta.writes_records,
        records_before=meta.records_before,
        records_written=m.written_records,
        last_record_number=m.last_record,
        throughput=operations / duration,
        latency_ms=latency_ms(total),
        operations_by_type=by_type,
        connection_groups=dict(meta.connection_groups),
        errors_by_type=errors_by_type,
        stored_records=stored,
        unapplied_writes=None if stored is None else unapplied,
        warmup_operations=m.warmup_operations,
        warmup_records=m.warmup_records,
        report_every=meta.report_every,
        series_unit=meta.series_unit,
        storage=summary_block(storage[-1] if storage else None),
        # Disk reads per operation only when this summary covers every pod (the
        # counter is server-wide: server_counters.py).
        server_counters=counters_block(
            counters or [None], operations, len(meta.pods) == meta.pod_count
        ),
        **summary_fields(client or []),
    )


UNAPPLIED = "insert:NotApplied"


def _applied(meta: RunMeta, storage: list[StorageRow]) -> tuple[int | None, int]:
    """(records the server holds, writes sent but not there) for w:0 phases.

    The last sample follows the last drained write of every pod whose files are
    in `storage`; a pod's own sample also counts other pods' records, so only
    the merged step's figure is exact (a pod's can only be too low)."""
    if not meta.verify_applied or not storage:
        return None, 0
    last = storage[-1]
    return last.sample.engine_records, max(0, last.records - last.sample.engine_records)


def _second_row(second: int, kind: str, bucket: SecondBucket) -> list[object]:
    row: list[object] = [
        second,
        kind,
        bucket.operations,
        bucket.errors,
        f"{bucket.latency_sum_us / bucket.operations / 1000:.4f}",
        bucket.latency_sum_us,
    ]
    if sum(bucket.counts.values()) != bucket.operations:
        # A pod's files from a runner without per-second histograms were merged in.
        return [*row, "", "", ""]
    latency = latency_ms(bucket.histogram())
    return [*row, f"{latency.p50:.3f}", f"{latency.p99:.3f}", f"{latency.max:.3f}"]


def _interval_log(meta: RunMeta, kind: str, handle: TextIO) -> HistogramLogWriter:
    log = HistogramLogWriter(handle)
    log.output_comment(f"dbbench {meta.target}/{meta.phase} operation={kind} unit=us")
    log.output_legend()
    return log


def _write_seconds(out: Path, meta: RunMeta, m: Measurements) -> None:
    """series-seconds.csv and each operation type's .hlog (one interval per second)
    in one pass over the seconds in order: those in memory and those the
    connections spooled (seconds_spool), one second at a time. Where a type's
    seconds do not add up to its total (older pods' files in a merge), its .hlog
    is the whole measured part as one interval."""
    in_memory = [(s, k, b) for (s, k), b in sorted(m.seconds.items())]
    seconds = merged_seconds([in_memory, *(read_seconds(Path(p)) for p in m.spools)])
    counted = dict.fromkeys(m.histograms, 0)
    hdr = new_hdr()  # one for every second: refilled, not made anew
    with contextlib.ExitStack() as files:
        rows = csv.writer(
            files.enter_context(atomic_file(out / SERIES_SECONDS)), lineterminator="\n"
        )
        rows.writerow(SERIES_SECONDS_COLUMNS)
        logs = {
            kind: _interval_log(
                meta, kind, files.enter_context(atomic_file(out / histogram_file(kind)))
            )
            for kind in m.histograms
        }
        for second, kind, bucket in seconds:
            rows.writerow(_second_row(second, kind, bucket))
            if kind in logs:
                logs[kind].output_interval_histogram(
                    refill_hdr(hdr, bucket.counts), second, second + 1,
                    max_value_unit_ratio=MAX_VALUE_UNIT_RATIO,
                )  # fmt: skip
                counted[kind] += sum(bucket.counts.values())
    for kind, total in m.histograms.items():
        if counted[kind] != total.get_total_count():
            with atomic_file(out / histogram_file(kind)) as handle:
                _interval_log(meta, kind, handle).output_interval_histogram(
                    total.to_hdr(), meta.started, meta.ended,
                    max_value_unit_ratio=MAX_VALUE_UNIT_RATIO,
                )  # fmt: skip


def write_results(
    out: Path,
    meta: RunMeta,
    m: Measurements,
    storage: list[StorageRow],
    environment: Environment | MergedEnvironment | None,
    *,
    client: list[PodUsage] | None = None,
    counters: list[CounterWindow | None] | None = None,
    marks: Iterable[Mark] | None = None,
) -> StepSummary:
    """The step's files from what was measured; `marks` in time order, when given,
    instead of m's checkpoints (a merge streams its pods' marks from their files);
    environment None: the caller writes environment.json (a merge, pod by pod)."""
    summary = summarize(meta, m, storage, client, counters)
    _write_seconds(out, meta, m)
    _write_marks(out, meta, m.checkpoints.marks() if marks is None else marks)
    atomic_write(out / STORAGE, _csv(storage_header(storage), csv_rows(storage)))
    if environment is not None:
        atomic_write(out / ENVIRONMENT, json.dumps(environment.to_wire(), indent=2, sort_keys=True))
    atomic_write(out / SUMMARY, json.dumps(summary.to_wire(), indent=2))
    return summary


def write_merged_environment(out: Path, environments: Iterable[Environment]) -> None:
    """A merged step's environment.json, the pods' environments written one at a
    time: the same text as json.dumps(MergedEnvironment(pods=...).to_wire(),
    indent=2, sort_keys=True), without holding every pod's."""
    with atomic_file(out / ENVIRONMENT) as handle:
        handle.write('{\n  "pods": [')
        for index, environment in enumerate(environments):
            text = json.dumps(environment.to_wire(), indent=2, sort_keys=True)
            handle.write(("," if index else "") + "\n    " + text.replace("\n", "\n    "))
        handle.write("\n  ]\n}")


def _write_marks(out: Path, meta: RunMeta, marks: Iterable[Mark]) -> None:
    """checkpoints.csv and series-ops.csv in one pass over the ordered marks, each
    row written as made: a merged step has every pod's marks, too many to hold."""
    with atomic_file(out / CHECKPOINTS) as raw, atomic_file(out / SERIES_OPS) as series:
        raw_rows = csv.writer(raw, lineterminator="\n")
        raw_rows.writerow(["epoch", "operations", "records", "latencyUs"])
        series_rows = csv.writer(series, lineterminator="\n")
        series_rows.writerow(SERIES_OPS_HEADER)

        def written(marks: Iterable[Mark]) -> Iterator[Mark]:
            for mark in marks:
                # repr: the epoch reads back bit for bit, so merge re-windows exactly.
                raw_rows.writerow([repr(mark[0]), mark[1], mark[2], mark[3]])
                yield mark

        windows = windows_of_ordered(
            written(marks), meta.report_every, meta.started, meta.series_unit
        )
        for window in windows:
            series_rows.writerow(_series_row(window))


def read_histograms(directory: Path) -> dict[str, LatencyHistogram]:
    """Each .hlog's interval histograms, added together, by operation type."""
    # The sparse seconds, not read_interval_histograms: it would build a dense
    # histogram for every second only for them to be dropped here.
    return {kind: total for kind, (total, _) in read_interval_counts(directory).items()}


def read_interval_histograms(
    directory: Path,
) -> dict[str, tuple[LatencyHistogram, dict[int, LatencyHistogram]]]:
    """By operation type: the sum of its .hlog's intervals, and its 1-second
    intervals by epoch second (none in files of older runners)."""
    return {
        kind: (total, {s: LatencyHistogram.from_counts(c) for s, c in seconds.items()})
        for kind, (total, seconds) in read_interval_counts(directory).items()
    }


def read_interval_counts(
    directory: Path,
) -> dict[str, tuple[LatencyHistogram, dict[int, dict[int, int]]]]:
    """As read_interval_histograms, the seconds as sparse {bucket: count} (what a
    merge adds up): a dense histogram is 190 KB, a second's counts a few KB."""
    found: dict[str, tuple[LatencyHistogram, dict[int, dict[int, int]]]] = {}
    for path in sorted((directory / HISTOGRAMS).glob("*.hlog")):
        total = LatencyHistogram()
        seconds: dict[int, dict[int, int]] = {}
        for interval in parse_interval_log(path.read_text()):
            counts, max_value = _interval_counts(interval.encoded)
            total.add_counts(counts.items(), sum(counts.values()), max_value)
            if interval.is_second:
                into = seconds.setdefault(interval.second, {})
                for index, count in counts.items():
                    into[index] = into.get(index, 0) + count
        found[path.stem] = (total, seconds)
    return found


def _interval_counts(encoded: str) -> tuple[dict[int, int], int]:
    """An interval's non-empty buckets and max value: read directly from the
    encoding when it has our layout, else through hdrh."""
    sparse = sparse_counts(encoded.encode())
    if sparse is not None:
        return sparse
    histogram = LatencyHistogram.from_hdr(HdrHistogram.decode(encoded.encode()))
    return dict(histogram.buckets()), histogram.max_value


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def read_measurements(directory: Path) -> Measurements:
    """Rebuild what a pod measured from its files (for merge)."""
    summary = read_summary(directory)
    m = Measurements(series_unit=summary.series_unit)
    intervals = read_interval_counts(directory)
    m.histograms = {kind: total for kind, (total, _) in intervals.items()}
    # Unapplied w:0 writes are found from the storage samples, again at each merge.
    m.errors.update({k: n for k, n in summary.errors_by_type.items() if k != UNAPPLIED})
    for kind, values in summary.operations_by_type.items():
        m.records[kind] = values.rows
        if values.found is not None:
            m.found[kind] = values.found
    m.warmup_operations = summary.warmup_operations
    m.warmup_records = summary.warmup_records
    m.written_records = summary.records_written
    m.last_record = summary.last_record_number
    m.checkpoints = Checkpoints(
        [
            (float(r["epoch"]), int(r["operations"]), int(r["records"]), int(r["latencyUs"]))
            for r in _rows(directory / CHECKPOINTS)
        ]
    )
    for row in _rows(directory / SERIES_SECONDS):
        second, kind = int(row["epochSecond"]), row["operation"]
        counts = intervals.get(kind, (None, {}))[1].get(second, {})
        m.seconds[(second, kind)] = SecondBucket(
            int(row["operations"]), int(row["errors"]), int(row["latencySumUs"]), counts
        )
    return m


def read_summary(directory: Path) -> StepSummary:
    return StepSummary.from_wire(json.loads((directory / SUMMARY).read_text()))


def read_environment(directory: Path) -> Environment:
    return Environment.from_wire(json.loads((directory / ENVIRONMENT).read_text()))


def read_storage(directory: Path) -> list[StorageRow]:
    return parse_rows(_rows(directory / STORAGE))
