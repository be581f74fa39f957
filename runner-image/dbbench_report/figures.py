"""The numbers the report shows, derived from a Run (pure).

Every figure comes from the merged step summaries and series files as the
runner wrote them; nothing is re-measured here. Repeats are combined with
mean, sample standard deviation and range; cost uses each target's
hardware.pricePerHour (its own, else the run's).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from dbbench_contract.api import Hardware, Phase, Target
from dbbench_contract.api.sharding import colocated
from dbbench_contract.summary import StepSummary, StorageBlock
from dbbench_report.reading import Run, Step, Window

LATENCY_KEYS = ("p50", "p95", "p99", "p999", "max")
LATENCY_LABELS = {"p50": "p50", "p95": "p95", "p99": "p99", "p999": "p99.9", "max": "max"}


@dataclass(frozen=True)
class Spread:
    """Mean and spread of one figure over a phase's repeats."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) if self.values else 0.0

    @property
    def low(self) -> float:
        return min(self.values) if self.values else 0.0

    @property
    def high(self) -> float:
        return max(self.values) if self.values else 0.0

    @property
    def stdev(self) -> float | None:
        return statistics.stdev(self.values) if self.n >= 2 else None

    @property
    def spread_percent(self) -> float | None:
        """(max - min) / mean, in percent: how far apart the repeats landed."""
        if self.n < 2 or self.mean == 0:
            return None
        return (self.high - self.low) / self.mean * 100.0


def phase_spec(run: Run, phase: str) -> Phase | None:
    return next((p for p in run.phases if p.name == phase), None)


def target_spec(run: Run, target: str) -> Target | None:
    return next((t for t in run.targets if t.name == target), None)


def inserts(run: Run, phase: str) -> bool:
    """Whether the phase is an insert phase (its series count records)."""
    spec = phase_spec(run, phase)
    return spec is not None and spec.type == "insert"


def records_per_operation(run: Run, phase: str) -> int:
    """Records one operation writes in an insert phase (its batch size)."""
    spec = phase_spec(run, phase)
    return spec.batch_size if spec is not None and spec.type == "insert" else 1


def throughput(run: Run, target: str, phase: str) -> Spread:
    return Spread(tuple(s.summary.throughput for s in _steps(run, target, phase)))


def latency(run: Run, target: str, phase: str, key: str) -> Spread:
    return Spread(
        tuple(float(getattr(s.summary.latency_ms, key)) for s in _steps(run, target, phase))
    )


def _steps(run: Run, target: str, phase: str) -> list[Step]:
    return sorted(run.steps_of(target, phase), key=lambda s: s.repeat)


@dataclass(frozen=True)
class Line:
    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


def _label(step: Step, repeats: int) -> str:
    return f"{step.target} (repeat {step.repeat})" if repeats > 1 else step.target


def _window_point(window: Window, insert: bool, per: int) -> tuple[float, float]:
    if not insert:
        return window.operations, window.rate
    if window.records is not None and window.records_rate is not None:
        return window.records, window.records_rate  # counted by the runner
    return window.operations * per, window.rate * per  # older files: operations x batch


def stability_lines(run: Run, phase: str) -> list[Line]:
    """Rate per reportEvery window against work done: records for inserts, else operations."""
    per = records_per_operation(run, phase)
    insert = inserts(run, phase)
    steps = [s for t in run.target_names() for s in _steps(run, t, phase)]
    repeats = max((s.repeat for s in steps), default=1)
    lines = []
    for step in steps:
        points = [_window_point(w, insert, per) for w in step.windows]
        if points:
            lines.append(Line(_label(step, repeats), tuple(x for x, _ in points),
                              tuple(y for _, y in points)))  # fmt: skip
    return lines


def latency_lines(run: Run, phase: str) -> list[Line]:
    """Mean latency (ms) per wall-clock second over all operation types, from the step's start."""
    steps = [s for t in run.target_names() for s in _steps(run, t, phase)]
    repeats = max((s.repeat for s in steps), default=1)
    lines: list[Line] = []
    for step in steps:
        totals: dict[int, tuple[int, int]] = {}
        for second in step.seconds:
            ops, micros = totals.get(second.epoch_second, (0, 0))
            totals[second.epoch_second] = (ops + second.operations, micros + second.latency_sum_us)
        if not totals:
            continue
        first = min(totals)
        xs = sorted(totals)
        lines.append(
            Line(
                _label(step, repeats),
                tuple(float(t - first) for t in xs),
                tuple(totals[t][1] / totals[t][0] / 1000.0 if totals[t][0] else 0.0 for t in xs),
            )
        )
    return lines


STORAGE_KINDS = (("data", "data_bytes"), ("index", "index_bytes"), ("on disk", "storage_bytes"))


def storage_lines(run: Run, target: str) -> list[Line]:
    """Data, index and on-disk bytes (MiB) against records, over all of a target's steps."""
    samples = sorted(
        (sample for s in run.steps_of(target) for sample in s.storage), key=lambda x: x.epoch
    )
    if not samples:
        return []
    xs = tuple(float(s.records) for s in samples)
    return [
        Line(f"{target} {label}", xs, tuple(getattr(s, attr) / 2**20 for s in samples))
        for label, attr in STORAGE_KINDS
    ]


def last_storage(run: Run, target: str) -> StorageBlock | None:
    """The target's storage at the end of its last step (the summary's last sample)."""
    steps = run.steps_of(target)
    for step in reversed(steps):
        if step.summary.storage is not None:
            return step.summary.storage
    return None


def database_pods(target: Target | None) -> int:
    """Database pods a target's price applies to (config servers and routers not counted;
    co-located shards share one node, priced once)."""
    if target is None or target.external is not None or colocated(target):
        return 1
    shards = (target.shards or 1) if target.topology == "sharded" else 1
    return target.effective_members * shards


def cost_per_million(price_per_hour: float, pods: int, ops_per_second: float) -> float | None:
    """Price of the hardware for the time one million operations take."""
    if ops_per_second <= 0:
        return None
    return price_per_hour * pods * 1_000_000 / (ops_per_second * 3600.0)


def hardware(run: Run, target: str) -> Hardware:
    """The hardware a target ran on: the run's, with the target's own fields."""
    spec = target_spec(run, target)
    return run.spec.hardware if spec is None else run.spec.hardware_of(spec)


def price_per_hour(run: Run, target: str) -> float | None:
    """Price of one of the target's database pods per hour (its own, else the run's)."""
    return hardware(run, target).price_per_hour


def client_cpu(summary: StepSummary) -> tuple[float | None, bool | None]:
    """(client CPU µs per operation, client-bound flag); None where the runner did not say."""
    return summary.client_cpu_per_op_us, summary.client_bound


@dataclass(frozen=True)
class DiskReads:
    """A step's disk reads over its measured part, from the engine's own counter."""

    counter: str
    reads: int
    per_operation: float | None


def disk_reads(summary: StepSummary) -> DiskReads | None:
    """None where the runner recorded none (older runner, or an engine without the counter)."""
    block = summary.server_counters
    if block is None:
        return None
    return DiskReads(block.disk_reads_counter, block.disk_reads, block.disk_reads_per_operation)


def restarted(run: Run) -> dict[int, bool | None]:
    """Per step (its index in run.steps): whether its server had restarted since the
    target's step before it ended, by the start the runner recorded from the
    server's own uptime (environment.json server.startedAt); None for a target's
    first step (its server was deployed for it) or where either start is unknown."""
    seen: dict[int, bool | None] = {}
    last: dict[str, Step] = {}
    for index, step in enumerate(run.steps):
        before = last.get(step.target)
        started = step.environment.server.started_at
        if before is None or started is None or before.environment.server.started_at is None:
            seen[index] = None
        else:
            seen[index] = started > before.summary.ended_at
        last[step.target] = step
    return seen


def disk_reads_per_operation(run: Run, target: str, phase: str) -> Spread:
    """Disk reads per operation over a phase's repeats (those that recorded it)."""
    values = []
    for step in _steps(run, target, phase):
        reads = disk_reads(step.summary)
        if reads is not None and reads.per_operation is not None:
            values.append(reads.per_operation)
    return Spread(tuple(values))
