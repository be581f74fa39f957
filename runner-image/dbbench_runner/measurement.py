"""What was measured: latency histograms per operation type, errors, series.

Knows nothing of databases. One Measurements per connection (no locks on the
hot path); connections, processes and pods are combined with `add`, which is
exact: histogram counts are added bucket by bucket, never percentiles averaged.
Latencies are recorded in microseconds.
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from dbbench_contract.api.status import Latency
from dbbench_contract.summary import NOT_FOUND
from dbbench_runner.histogram import HIGHEST_US, LOWEST_US, LatencyHistogram, bucket_of
from dbbench_runner.operations import Status
from dbbench_runner.series import Mark, SeriesUnit

__all__ = ["HIGHEST_US", "LOWEST_US", "LatencyHistogram"]
# Where ended seconds go when spooled: (epoch second, operation type, bucket), in order.
SecondsSink = Callable[[list[tuple[int, str, "SecondBucket"]]], None]
PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


def new_histogram() -> LatencyHistogram:
    return LatencyHistogram()


def latency_ms(histogram: LatencyHistogram) -> Latency:
    """p50/p95/p99/p99.9/max of a microsecond histogram, in milliseconds."""
    if histogram.get_total_count() == 0:
        return Latency()
    values = {
        name: histogram.get_value_at_percentile(p) / 1000.0 for name, p in PERCENTILES.items()
    }
    return Latency(**values, max=histogram.get_max_value() / 1000.0)


# Checkpoints.marks() merges up to this many runs in order (a pod's connections).
MERGED_RUNS = 1024


class Checkpoints:
    """Marks (epoch, operations, records, latency sum us) in flat arrays: 32 bytes a
    mark, not ~150 as tuples. See dbbench_runner.series for what they become."""

    def __init__(self, marks: list[Mark] | None = None) -> None:
        self.times = array("d")
        self.counts = array("q")
        self.records = array("q")
        self.latency_us = array("q")
        for mark in marks or ():
            self.append(*mark)

    def append(self, epoch: float, count: int, records: int, latency_us: int) -> None:
        self.times.append(epoch)
        self.counts.append(count)
        self.records.append(records)
        self.latency_us.append(latency_us)

    def extend(self, other: Checkpoints) -> None:
        self.times.extend(other.times)
        self.counts.extend(other.counts)
        self.records.extend(other.records)
        self.latency_us.extend(other.latency_us)

    def marks(self) -> Iterator[Mark]:
        """All marks ordered by time (as `sorted` orders them): a heap merge of the
        runs in order that `extend` put one after the other (a connection's marks
        are in order), not a sorted list of every mark's tuple (~150 bytes each)."""
        starts = [0]
        previous: Mark | None = None
        for index, mark in enumerate(self._range(0, len(self))):
            if previous is not None and mark < previous:
                starts.append(index)
            previous = mark
        if len(starts) > MERGED_RUNS:  # not as connections add them: a generator a run costs more
            return iter(sorted(self._range(0, len(self))))
        ends = [*starts[1:], len(self)]
        return heapq.merge(*(self._range(a, b) for a, b in zip(starts, ends, strict=True)))

    def _range(self, start: int, stop: int) -> Iterator[Mark]:
        times, counts, records, latency = self.times, self.counts, self.records, self.latency_us
        for index in range(start, stop):
            yield times[index], counts[index], records[index], latency[index]

    def to_bytes(self) -> tuple[bytes, bytes, bytes, bytes]:
        return (
            self.times.tobytes(),
            self.counts.tobytes(),
            self.records.tobytes(),
            self.latency_us.tobytes(),
        )

    def from_bytes(self, packed: tuple[bytes, ...]) -> None:
        times, counts, records, latency_us = packed
        self.times.frombytes(times)
        self.counts.frombytes(counts)
        self.records.frombytes(records)
        self.latency_us.frombytes(latency_us)

    def __len__(self) -> int:
        return len(self.times)

    def total(self) -> int:
        return sum(self.counts)


@dataclass(slots=True)
class SecondBucket:
    """Per operation type, within one wall-clock second (epoch seconds).

    `counts` is the second's latency histogram, sparse ({bucket index: count},
    the buckets of dbbench_runner.histogram): it gives p50/p99 per second, and
    pods' seconds add exactly, bucket by bucket. A connection touches a few
    hundred buckets a second at most (3 significant digits over its spread).
    """

    operations: int = 0
    errors: int = 0
    latency_sum_us: int = 0
    counts: dict[int, int] = field(default_factory=dict)

    def add(self, other: SecondBucket) -> None:
        self.operations += other.operations
        self.errors += other.errors
        self.latency_sum_us += other.latency_sum_us
        counts = self.counts
        for index, count in other.counts.items():
            counts[index] = counts.get(index, 0) + count

    def histogram(self) -> LatencyHistogram:
        return LatencyHistogram.from_counts(self.counts)


@dataclass
class Measurements:
    # Checkpoint granularity: a mark every this many units of the series (records
    # for insert phases, operations otherwise; see dbbench_runner.series).
    checkpoint_every: int = 1000
    series_unit: SeriesUnit = "operations"
    histograms: dict[str, LatencyHistogram] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)  # "op:ErrorType(code)" -> count
    records: Counter[str] = field(default_factory=Counter)  # rows written/returned per op
    # Per operation type that looks something up: the operations that found a row
    # or document (a query: returned one). Types absent look nothing up (inserts)
    # or were never told (MongoDB w:0 updates).
    found: dict[str, int] = field(default_factory=dict)
    seconds: dict[tuple[int, str], SecondBucket] = field(default_factory=dict)
    # Files holding ended seconds taken out of `seconds` (dbbench_runner.seconds_spool),
    # each in time order, and their operations, errors and latency sums by type
    # (no bucket counts: those of the same operations are in `histograms`; a sum of
    # sparse counts would grow toward the histogram's 23,552 buckets in a dict).
    spools: list[str] = field(default_factory=list)
    spooled: dict[str, SecondBucket] = field(default_factory=dict)
    checkpoints: Checkpoints = field(default_factory=Checkpoints)
    warmup_operations: int = 0
    warmup_records: int = 0
    # The highest record number inserted (warm-up included): the next phase's
    # inserts must start after it (client-numbered keys would collide).
    last_record: int = 0
    # Records inserted, warm-up included: what the table gained (storage samples).
    written_records: int = 0
    # Epoch seconds where the measured window ends (loop._window_end): the
    # deadline, or the last measured operation's completion; the latest of the
    # connections added. None: nothing measured and no deadline.
    ended: float | None = None
    _since_checkpoint: int = 0
    _since_records: int = 0
    _since_latency_us: int = 0
    _sink: SecondsSink | None = None
    _sealed: int = 0  # without a sink: entries of `seconds` already sealed
    _second: int = -1
    _current: dict[str, SecondBucket] = field(default_factory=dict)

    def record(
        self, kind: str, latency_us: int, status: Status, epoch: float,
        must_find: bool | None = None,
    ) -> None:  # fmt: skip
        """One measured operation; `must_find` is the workload's word on whether
        it must find a row (None: it looks nothing up). One that must and found
        nothing is an error ("<kind>:NotFound"), like a failed call."""
        histogram = self.histograms.get(kind)
        if histogram is None:
            histogram = self.histograms[kind] = new_histogram()
        histogram.record_value(latency_us)
        if status.rows:
            self.records[kind] += status.rows
        # The buckets of the current second, by type: no (second, kind) tuple per operation.
        second = int(epoch)
        if second != self._second:
            self._second = second
            self._current = {}
        bucket = self._current.get(kind)
        if bucket is None:
            bucket = self._current[kind] = self.seconds.setdefault((second, kind), SecondBucket())
        bucket.operations += 1
        bucket.latency_sum_us += latency_us
        counts = bucket.counts
        index = bucket_of(latency_us)
        counts[index] = counts.get(index, 0) + 1
        if not status.ok:
            self.errors[f"{kind}:{status.error}"] += 1
            bucket.errors += 1
        elif must_find is not None and status.counted:
            found = self.found
            if status.rows:
                found[kind] = found.get(kind, 0) + 1
            else:
                found.setdefault(kind, 0)
                if must_find:
                    self.errors[f"{kind}:{NOT_FOUND}"] += 1
                    bucket.errors += 1
        self._since_checkpoint += 1
        self._since_latency_us += latency_us
        if kind == "insert":
            self._since_records += status.rows
        due = self._since_records if self.series_unit == "records" else self._since_checkpoint
        if due >= self.checkpoint_every:
            self._mark(epoch)

    def _mark(self, epoch: float) -> None:
        self.checkpoints.append(
            epoch, self._since_checkpoint, self._since_records, self._since_latency_us
        )
        self._since_checkpoint = self._since_records = self._since_latency_us = 0

    def record_warmup(self, rows: int) -> None:
        self.warmup_operations += 1
        self.warmup_records += rows

    def flush(self, epoch: float) -> None:
        """Close the last partial checkpoint (call once the loop ends)."""
        if self._since_checkpoint:
            self._mark(epoch)

    def spool_to(self, path: str, sink: SecondsSink) -> None:
        """Sealed seconds go to `sink` (which writes them to `path`), out of memory."""
        self.spools.append(path)
        self._sink = sink

    def seal(self, before: int | None) -> list[tuple[str, SecondBucket]]:
        """The seconds before `before` (every one: None) are final, none being
        recorded into again: returned in time order (for live metrics) and, when
        spooled, written out and dropped, so that memory stays flat however long
        the phase runs. Each second is returned once."""
        ended = []
        for (second, kind), bucket in itertools.islice(self.seconds.items(), self._sealed, None):
            if before is not None and second >= before:
                break
            ended.append((second, kind, bucket))
        if self._sink is None:
            self._sealed += len(ended)
        elif ended:
            # A spool is read back merged by (second, type): types in a second
            # come in the order first recorded.
            ended.sort(key=lambda entry: (entry[0], entry[1]))
            self._sink(ended)
            for second, kind, bucket in ended:
                del self.seconds[(second, kind)]
                sums = self.spooled.setdefault(kind, SecondBucket())
                sums.operations += bucket.operations
                sums.errors += bucket.errors
                sums.latency_sum_us += bucket.latency_sum_us
        return [(kind, bucket) for _, kind, bucket in ended]

    def inserted(self, last_number: int, rows: int) -> None:
        """An insert was attempted up to record `last_number`; `rows` were written."""
        self.last_record = max(self.last_record, last_number)
        self.written_records += rows

    @property
    def operations(self) -> int:
        return sum(h.get_total_count() for h in self.histograms.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def p99_ms(self) -> float:
        """The worst p99 over operation types (for progress lines)."""
        values = [latency_ms(h).p99 for h in self.histograms.values()]
        return max(values, default=0.0)

    def add(self, other: Measurements) -> None:
        for kind, histogram in other.histograms.items():
            mine = self.histograms.get(kind)
            if mine is None:
                mine = self.histograms[kind] = new_histogram()
            mine.add(histogram)
        self.errors.update(other.errors)
        self.records.update(other.records)
        for kind, count in other.found.items():
            self.found[kind] = self.found.get(kind, 0) + count
        for key, bucket in other.seconds.items():
            self.seconds.setdefault(key, SecondBucket()).add(bucket)
        self.spools.extend(other.spools)
        for kind, bucket in other.spooled.items():
            self.spooled.setdefault(kind, SecondBucket()).add(bucket)
        self.checkpoints.extend(other.checkpoints)
        self.warmup_operations += other.warmup_operations
        self.warmup_records += other.warmup_records
        self.last_record = max(self.last_record, other.last_record)
        self.written_records += other.written_records
        if other.ended is not None:
            self.ended = other.ended if self.ended is None else max(self.ended, other.ended)

    def to_wire(self) -> dict[str, object]:
        """A picklable, compact form for sending between processes."""
        return {
            "checkpoint_every": self.checkpoint_every,
            "series_unit": self.series_unit,
            "histograms": {k: (h.packed(), h.max_value) for k, h in self.histograms.items()},
            "errors": dict(self.errors),
            "records": dict(self.records),
            "found": dict(self.found),
            "seconds": [
                (s, k, b.operations, b.errors, b.latency_sum_us, list(b.counts.items()))
                for (s, k), b in self.seconds.items()
            ],
            "checkpoints": self.checkpoints.to_bytes(),
            "warmup": (self.warmup_operations, self.warmup_records),
            "spools": list(self.spools),
            "spooled": {k: _bucket_wire(b) for k, b in self.spooled.items()},
            "last_record": self.last_record,
            "written_records": self.written_records,
            "ended": self.ended,
        }

    @classmethod
    def from_wire(cls, wire: dict[str, object]) -> Measurements:
        measurements = cls(checkpoint_every=int(wire["checkpoint_every"]))  # type: ignore[call-overload]
        measurements.series_unit = "records" if wire["series_unit"] == "records" else "operations"
        measurements.last_record = int(wire["last_record"])  # type: ignore[call-overload]
        measurements.written_records = int(wire["written_records"])  # type: ignore[call-overload]
        ended = wire["ended"]
        measurements.ended = None if ended is None else float(ended)  # type: ignore[arg-type]
        histograms = wire["histograms"]
        assert isinstance(histograms, dict)
        for kind, (packed, max_value) in histograms.items():
            measurements.histograms[kind] = LatencyHistogram.unpacked(packed, max_value)
        errors, records = wire["errors"], wire["records"]
        assert isinstance(errors, dict)
        assert isinstance(records, dict)
        measurements.errors = Counter({str(k): int(v) for k, v in errors.items()})
        measurements.records = Counter({str(k): int(v) for k, v in records.items()})
        found = wire["found"]
        assert isinstance(found, dict)
        measurements.found = {str(k): int(v) for k, v in found.items()}
        seconds = wire["seconds"]
        assert isinstance(seconds, list)
        for second, kind, ops, errors, latency, counts in seconds:
            measurements.seconds[(second, kind)] = SecondBucket(ops, errors, latency, dict(counts))
        spools, spooled = wire["spools"], wire["spooled"]
        assert isinstance(spools, list)
        assert isinstance(spooled, dict)
        measurements.spools = [str(path) for path in spools]
        measurements.spooled = {
            str(kind): SecondBucket(ops, errors, latency, dict(counts))
            for kind, (ops, errors, latency, counts) in spooled.items()
        }
        packed = wire["checkpoints"]
        assert isinstance(packed, tuple)
        measurements.checkpoints.from_bytes(packed)
        warmup = wire["warmup"]
        assert isinstance(warmup, tuple | list)
        measurements.warmup_operations, measurements.warmup_records = int(warmup[0]), int(warmup[1])
        return measurements


def _bucket_wire(bucket: SecondBucket) -> tuple[int, int, int, list[tuple[int, int]]]:
    return bucket.operations, bucket.errors, bucket.latency_sum_us, list(bucket.counts.items())
