"""The runner pod's metric families in prometheus_client's terms, and its server.

Imported only when /metrics is served (exporting.serving): the names, labels
and bounds live in exporting, which every runner imports.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterable
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from dbbench_runner.exporting import (
    ERRORS,
    LATENCY,
    LE_SECONDS,
    OPERATIONS,
    PHASE_ENDED,
    PHASE_LATENCY,
    QUANTILES,
    RECORDS,
    STEP_LABELS,
    Endpoint,
    StepLabels,
)
from dbbench_runner.histogram import highest_of
from dbbench_runner.live_metrics import LiveTotals, Snapshot, percentile_us
from dbbench_runner.measurement import SecondBucket

_LE_US = tuple(round(le * 1_000_000) for le in LE_SECONDS)


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


def start_server(
    endpoint: Endpoint, labels: StepLabels, totals: LiveTotals
) -> tuple[WSGIServer, threading.Thread]:
    """Serve the pod's families from `totals` (OSError: the port cannot be bound)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LiveCollector(totals, labels))
    return start_http_server(endpoint.port, addr=endpoint.address, registry=registry)
