"""What was measured: latency histograms per operation type, errors, series.

Knows nothing of databases. One Measurements per connection (no locks on the
hot path); connections, processes and pods are combined with `add`, which is
exact: histogram counts are added bucket by bucket, never percentiles averaged.
Latencies are recorded in microseconds.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field

from dbbench_runner.histogram import HIGHEST_US, LOWEST_US, LatencyHistogram
from dbbench_runner.operations import Status

__all__ = ["HIGHEST_US", "LOWEST_US", "LatencyHistogram"]
PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


def new_histogram() -> LatencyHistogram:
    return LatencyHistogram()


def latency_ms(histogram: LatencyHistogram) -> dict[str, float]:
    """p50/p95/p99/p99.9/max of a microsecond histogram, in milliseconds."""
    if histogram.get_total_count() == 0:
        return {**dict.fromkeys(PERCENTILES, 0.0), "max": 0.0}
    values = {
        name: histogram.get_value_at_percentile(p) / 1000.0 for name, p in PERCENTILES.items()
    }
    values["max"] = histogram.get_max_value() / 1000.0
    return values


class Checkpoints:
    """(epoch, operations) marks in two flat arrays: 16 bytes a mark, not ~100 as tuples."""

    def __init__(self, pairs: list[tuple[float, int]] | None = None) -> None:
        self.times = array("d")
        self.counts = array("q")
        for epoch, count in pairs or ():
            self.append(epoch, count)

    def append(self, epoch: float, count: int) -> None:
        self.times.append(epoch)
        self.counts.append(count)

    def extend(self, other: Checkpoints) -> None:
        self.times.extend(other.times)
        self.counts.extend(other.counts)

    def pairs(self) -> list[tuple[float, int]]:
        """All marks ordered by time."""
        return sorted(zip(self.times, self.counts, strict=True))

    def __len__(self) -> int:
        return len(self.times)

    def total(self) -> int:
        return sum(self.counts)


@dataclass
class SecondBucket:
    """Per operation type, within one wall-clock second (epoch seconds)."""

    operations: int = 0
    errors: int = 0
    latency_sum_us: int = 0


@dataclass
class Measurements:
    # Checkpoint granularity: one (time, count) pair every this many operations.
    checkpoint_every: int = 1000
    histograms: dict[str, LatencyHistogram] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)  # "op:ErrorType(code)" -> count
    records: Counter[str] = field(default_factory=Counter)  # rows written/returned per op
    seconds: dict[tuple[int, str], SecondBucket] = field(default_factory=dict)
    checkpoints: Checkpoints = field(default_factory=Checkpoints)
    warmup_operations: int = 0
    warmup_records: int = 0
    _since_checkpoint: int = 0
    _second: int = -1
    _current: dict[str, SecondBucket] = field(default_factory=dict)

    def record(self, kind: str, latency_us: int, status: Status, epoch: float) -> None:
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
        if not status.ok:
            self.errors[f"{kind}:{status.error}"] += 1
            bucket.errors += 1
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.checkpoint_every:
            self.checkpoints.append(epoch, self._since_checkpoint)
            self._since_checkpoint = 0

    def record_warmup(self, rows: int) -> None:
        self.warmup_operations += 1
        self.warmup_records += rows

    def flush(self, epoch: float) -> None:
        """Close the last partial checkpoint (call once the loop ends)."""
        if self._since_checkpoint:
            self.checkpoints.append(epoch, self._since_checkpoint)
            self._since_checkpoint = 0

    @property
    def operations(self) -> int:
        return sum(h.get_total_count() for h in self.histograms.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def p99_ms(self) -> float:
        """The worst p99 over operation types (for progress lines)."""
        values = [latency_ms(h)["p99"] for h in self.histograms.values()]
        return max(values, default=0.0)

    def add(self, other: Measurements) -> None:
        for kind, histogram in other.histograms.items():
            mine = self.histograms.get(kind)
            if mine is None:
                mine = self.histograms[kind] = new_histogram()
            mine.add(histogram)
        self.errors.update(other.errors)
        self.records.update(other.records)
        for key, bucket in other.seconds.items():
            mine_bucket = self.seconds.setdefault(key, SecondBucket())
            mine_bucket.operations += bucket.operations
            mine_bucket.errors += bucket.errors
            mine_bucket.latency_sum_us += bucket.latency_sum_us
        self.checkpoints.extend(other.checkpoints)
        self.warmup_operations += other.warmup_operations
        self.warmup_records += other.warmup_records

    def to_wire(self) -> dict[str, object]:
        """A picklable, compact form for sending between processes."""
        return {
            "checkpoint_every": self.checkpoint_every,
            "histograms": {k: (h.to_pairs(), h.max_value) for k, h in self.histograms.items()},
            "errors": dict(self.errors),
            "records": dict(self.records),
            "seconds": [
                (s, k, b.operations, b.errors, b.latency_sum_us)
                for (s, k), b in self.seconds.items()
            ],
            "checkpoints": (self.checkpoints.times.tobytes(), self.checkpoints.counts.tobytes()),
            "warmup": (self.warmup_operations, self.warmup_records),
        }

    @classmethod
    def from_wire(cls, wire: dict[str, object]) -> Measurements:
        measurements = cls(checkpoint_every=int(wire["checkpoint_every"]))  # type: ignore[call-overload]
        histograms = wire["histograms"]
        assert isinstance(histograms, dict)
        for kind, (pairs, max_value) in histograms.items():
            measurements.histograms[kind] = LatencyHistogram.from_pairs(pairs, max_value)
        errors, records = wire["errors"], wire["records"]
        assert isinstance(errors, dict)
        assert isinstance(records, dict)
        measurements.errors = Counter({str(k): int(v) for k, v in errors.items()})
        measurements.records = Counter({str(k): int(v) for k, v in records.items()})
        seconds = wire["seconds"]
        assert isinstance(seconds, list)
        for second, kind, ops, errors, latency in seconds:
            measurements.seconds[(second, kind)] = SecondBucket(ops, errors, latency)
        packed = wire["checkpoints"]
        assert isinstance(packed, tuple)
        times, counts = packed
        assert isinstance(times, bytes)
        assert isinstance(counts, bytes)
        measurements.checkpoints.times.frombytes(times)
        measurements.checkpoints.counts.frombytes(counts)
        warmup = wire["warmup"]
        assert isinstance(warmup, tuple | list)
        measurements.warmup_operations, measurements.warmup_records = int(warmup[0]), int(warmup[1])
        return measurements


def stability_series(
    checkpoints: list[tuple[float, int]], every: int, start: float
) -> list[tuple[int, float, float, float]]:
    """Rows (operations so far, epoch at the window's end, window seconds, ops/s).

    Checkpoints from all connections are ordered by time and accumulated; a
    window ends where the running total crosses a multiple of `every`, the
    crossing time interpolated between the two marks around it. With one
    connection and `every` a multiple of the checkpoint size this is exact;
    with W connections the running total lags by about half a checkpoint per
    connection, a constant that cancels out of window lengths.
    """
    rows: list[tuple[int, float, float, float]] = []
    total = 0
    boundary = every
    window_start = start
    previous_epoch = start
    for epoch, count in sorted(checkpoints):
        before = total
        total += count
        while total >= boundary:
            crossed = previous_epoch + (epoch - previous_epoch) * (boundary - before) / count
            seconds = max(crossed - window_start, 1e-9)
            rows.append((boundary, crossed, seconds, every / seconds))
            window_start = crossed
            boundary += every
        previous_epoch = epoch
    return rows
