"""The runner pod's /metrics: live totals in the Prometheus text format.

One endpoint per pod, served by the parent process from LiveTotals (the
workers' once-a-second reports); the load loop is never touched. Metric
names and labels are listed in docs/metrics.md; a dashboard and the tests
read them from RUNNER_METRICS.
"""

from __future__ import annotations

import logging
import os
import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from dbbench_runner.config import StepConfig
from dbbench_runner.histogram import highest_of
from dbbench_runner.live_metrics import LiveTotals, Snapshot, percentile_us
from dbbench_runner.measurement import SecondBucket

log = logging.getLogger(__name__)

# Histogram bounds: 1-2-3-5-7 per decade from 100 µs to 70 s, fine enough for
# histogram_quantile to place p99 within a step of the exact value (which
# the summary below gives, over the phase so far).
LE_SECONDS = tuple(round(m * 10.0**e, 4) for e in range(-4, 2) for m in (1, 2, 3, 5, 7))
_LE_US = tuple(round(le * 1_000_000) for le in LE_SECONDS)
QUANTILES = (0.5, 0.95, 0.99, 0.999)

OPERATIONS = "dbbench_runner_operations"
ERRORS = "dbbench_runner_errors"
RECORDS = "dbbench_runner_records"
LATENCY = "dbbench_runner_latency_seconds"
PHASE_LATENCY = "dbbench_runner_phase_latency_seconds"
PHASE_ENDED = "dbbench_runner_phase_ended"
# The names a scrape shows (counters get `_total`; histograms and summaries
# their `_bucket`/`_sum`/`_count` series).
RUNNER_METRICS = (
    f"{OPERATIONS}_total",
    f"{ERRORS}_total",
    f"{RECORDS}_total",
    LATENCY,
    PHASE_LATENCY,
    PHASE_ENDED,
)
STEP_LABELS = ("run", "target", "phase", "repeat")
# What the operator sets in a runner Job (the flags' defaults), as the chart sets
# them in the operator's own environment.
METRICS_PORT_ENV = "DBBENCH_RUNNER_METRICS_PORT"
METRICS_LINGER_ENV = "DBBENCH_RUNNER_METRICS_LINGER"
METRICS_ADDRESS_ENV = "DBBENCH_RUNNER_METRICS_ADDRESS"  # tests: loopback


@dataclass(frozen=True)
class StepLabels:
    run: str
    target: str
    phase: str
    repeat: int

    def values(self) -> list[str]:
        return [self.run, self.target, self.phase, str(self.repeat)]


@dataclass(frozen=True)
class Endpoint:
    port: int = 0  # 0: no endpoint
    linger: float = 0.0  # seconds served after the phase ended
    address: str = "0.0.0.0"  # noqa: S104 - the pod's own port; tests bind loopback


def run_name(run: str | None) -> str:
    """The run's name from DBBENCH_RUN (<namespace>/<run>/<uid>); '' outside a Job."""
    parts = (run or "").split("/")
    return parts[1] if len(parts) == 3 else ""


def step_labels(config: StepConfig, run: str | None = None) -> StepLabels:
    """The step's labels; the run's name comes from DBBENCH_RUN unless given."""
    name = run_name(os.environ.get("DBBENCH_RUN")) if run is None else run
    return StepLabels(name, config.target.name, config.phase.name, config.repeat)


def _buckets(bucket: SecondBucket) -> list[tuple[str, float]]:
    """Cumulative counts per bound: a histogram bucket counts where its highest
    equivalent value falls (a bound lands inside one at most 0.1% wide)."""
    per_bound = [0] * (len(_LE_US) + 1)
    for index, count in bucket.counts.items():
        per_bound[bisect_left(_LE_US, highest_of(index))] += count
    cumulative, rows = 0, []
    for le, count in zip((*(f"{le:g}" for le in LE_SECONDS), "+Inf"), per_bound, strict=True):
        cumulative += count
        rows.append((le, float(cumulative)))
    return rows


def families(snapshot: Snapshot, labels: StepLabels) -> list[Metric]:
    """The pod's metric families (pure: a snapshot in, families out)."""
    step = labels.values()
    names = [*STEP_LABELS, "operation"]
    operations = CounterMetricFamily(
        OPERATIONS, "Operations measured (warm-up excluded), by type", labels=names
    )
    errors = CounterMetricFamily(ERRORS, "Operations that failed, by type", labels=names)
    latency = HistogramMetricFamily(
        LATENCY, "Operation latency (from the intended start in open loop)", labels=names
    )
    phase_latency = SummaryMetricFamily(
        PHASE_LATENCY,
        "Exact latency percentiles over the measured phase so far (the summary's figures)",
        labels=names,
    )
    for kind, bucket in sorted(snapshot.operations.items()):
        values = [*step, kind]
        operations.add_metric(values, bucket.operations)
        errors.add_metric(values, bucket.errors)
        latency_sum = bucket.latency_sum_us / 1_000_000
        latency.add_metric(values, _buckets(bucket), latency_sum)
        phase_latency.add_metric(values, bucket.operations, latency_sum)
        for quantile in QUANTILES:
            value = percentile_us(bucket.counts, quantile * 100) / 1_000_000
            quantile_labels = dict(zip(names, values, strict=True))
            quantile_labels["quantile"] = repr(quantile)
            phase_latency.add_sample(PHASE_LATENCY, quantile_labels, value)
    records = CounterMetricFamily(
        RECORDS, "Records inserted by measured operations", labels=list(STEP_LABELS)
    )
    records.add_metric(step, snapshot.records)
    ended = GaugeMetricFamily(
        PHASE_ENDED, "1 once every worker is done: the figures are final", labels=list(STEP_LABELS)
    )
    ended.add_metric(step, 1.0 if snapshot.ended else 0.0)
    return [operations, errors, records, latency, phase_latency, ended]


class LiveCollector(Collector):
    def __init__(self, totals: LiveTotals, labels: StepLabels) -> None:
        self._totals = totals
        self._labels = labels

    def collect(self) -> Iterable[Metric]:
        return families(self._totals.snapshot(), self._labels)


@contextmanager
def serving(endpoint: Endpoint, labels: StepLabels) -> Iterator[LiveTotals | None]:
    """Serve /metrics on the endpoint's port (0: no endpoint, None is yielded) while
    the block runs, and `linger` seconds after the phase ended, so that a scraper
    sees the final figures before the pod goes (the upload's time counts).

    A port that cannot be bound is logged and the step runs without it: the
    metrics must never cost a measurement."""
    if endpoint.port == 0:
        yield None
        return
    totals = LiveTotals()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LiveCollector(totals, labels))
    try:
        server, thread = start_http_server(endpoint.port, addr=endpoint.address, registry=registry)
    except OSError as exc:
        log.error("/metrics not served on %s:%d: %s", endpoint.address, endpoint.port, exc)  # noqa: TRY400
        yield None
        return
    try:
        yield totals
        if totals.ended_at is not None:
            time.sleep(max(0.0, totals.ended_at + endpoint.linger - time.monotonic()))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
