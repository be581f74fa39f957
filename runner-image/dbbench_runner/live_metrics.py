"""The parent's live totals, what /metrics shows while a phase runs (exporting.py).

Fed by what the workers already report once a second: each "progress"
message carries the whole seconds that ended since the last one, summed by
operation type (the per-second buckets Measurements keeps anyway, so nothing
is added per operation). When a worker process is done its exact totals
replace its live sums: the last figures equal the phase's summary, whatever a
lost or late progress message missed. A live sum is a subset of the exact
totals, so the counters never go down.

Pure but for one lock: the HTTP server's thread reads while the parent's main
thread writes.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from dbbench_runner.histogram import highest_of
from dbbench_runner.measurement import Measurements, SecondBucket

# operation type -> (operations, errors, latency sum us, [(histogram bucket, count)])
SecondsWire = dict[str, tuple[int, int, int, list[tuple[int, int]]]]


def drain_seconds(queues: Iterable[deque[tuple[str, SecondBucket]]]) -> SecondsWire:
    """Empty the connections' queues of ended seconds into one sum per operation type."""
    total: dict[str, SecondBucket] = {}
    for queue in queues:
        while True:
            try:
                kind, bucket = queue.popleft()  # atomic: the connection appends meanwhile
            except IndexError:
                break
            total.setdefault(kind, SecondBucket()).add(bucket)
    return {
        kind: (b.operations, b.errors, b.latency_sum_us, list(b.counts.items()))
        for kind, b in total.items()
    }


def _from_wire(wire: SecondsWire) -> dict[str, SecondBucket]:
    return {
        kind: SecondBucket(ops, errors, latency, dict(counts))
        for kind, (ops, errors, latency, counts) in wire.items()
    }


def by_operation(measurements: Measurements) -> dict[str, SecondBucket]:
    """A process's exact totals per operation type: its seconds summed (those
    spooled to files and those in memory), with the type's latency histogram
    (the same operations; spooled seconds keep no bucket counts in memory)."""
    total: dict[str, SecondBucket] = {}
    for kind, bucket in measurements.spooled.items():
        total.setdefault(kind, SecondBucket()).add(bucket)
    for (_, kind), bucket in measurements.seconds.items():
        total.setdefault(kind, SecondBucket()).add(bucket)
    for kind, bucket in total.items():
        if kind in measurements.histograms:
            bucket.counts = dict(measurements.histograms[kind].buckets())
    return total


@dataclass(frozen=True)
class Snapshot:
    """The pod's totals so far: per operation type, and records inserted (measured)."""

    operations: dict[str, SecondBucket]
    records: int
    ended: bool


@dataclass
class LiveTotals:
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _operations: dict[int, dict[str, SecondBucket]] = field(default_factory=dict)
    _records: dict[int, int] = field(default_factory=dict)
    _final: set[int] = field(default_factory=set)
    ended_at: float | None = None  # time.monotonic() when the last worker was done

    def add(self, process: int, seconds: SecondsWire, records: int) -> None:
        """A progress message: the seconds that ended since the last one."""
        with self._lock:
            if process in self._final:
                return  # a late message: the exact totals are in
            mine = self._operations.setdefault(process, {})
            for kind, bucket in _from_wire(seconds).items():
                mine.setdefault(kind, SecondBucket()).add(bucket)
            self._records[process] = max(records, self._records.get(process, 0))

    def finish(self, process: int, measurements: Measurements) -> None:
        """A worker is done: its exact totals replace the live sums."""
        with self._lock:
            self._operations[process] = by_operation(measurements)
            self._records[process] = measurements.records["insert"]
            self._final.add(process)

    def end(self) -> None:
        self.ended_at = time.monotonic()

    def snapshot(self) -> Snapshot:
        with self._lock:
            total: dict[str, SecondBucket] = {}
            for kinds in self._operations.values():
                for kind, bucket in kinds.items():
                    total.setdefault(kind, SecondBucket()).add(bucket)
            return Snapshot(total, sum(self._records.values()), self.ended_at is not None)


def percentile_us(counts: dict[int, int], percentile: float) -> int:
    """HdrHistogram's percentile (LatencyHistogram.get_value_at_percentile) of sparse
    bucket counts: the highest equivalent value of the bucket holding the rank."""
    total = sum(counts.values())
    if total == 0:
        return 0
    wanted = max(1, int(min(percentile, 100.0) / 100.0 * total + 0.5))
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen >= wanted:
            return highest_of(index)
    return highest_of(max(counts))
