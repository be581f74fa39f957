"""The operator's /metrics: runs by phase, reconcile pass durations, failed passes,
and the change points found at runs (their series' verdicts).

Its own registry (with the process collector: the operator's CPU and memory),
served by prometheus_client's HTTP server on a thread beside kopf. Runs by
phase come from the watch (every run the operator sees, ended ones too), not
from the passes: a pass runs only while a run needs one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client import start_http_server as _start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dbbench_operator.controller.reconciling import current_phase
from dbbench_operator.status.lifecycle import RunPhase

log = logging.getLogger(__name__)

RUNS = "dbbench_operator_runs"
RECONCILE_DURATION = "dbbench_operator_reconcile_duration_seconds"
FAILED_PASSES = "dbbench_operator_reconcile_errors"
CHANGE_POINTS = "dbbench_operator_change_points"
EXPECTATIONS_MISSED = "dbbench_operator_expectations_missed"
# The series' namespace is not `namespace`: Prometheus puts the scraped pod's own
# namespace there and would rename ours to `exported_namespace` (docs/metrics.md).
SERIES_LABELS = ["series_namespace", "series"]
# A pass is a few API calls, or a database's setup (seconds), bounded by
# passDeadline (minutes).
PASS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# reconciling.describe_error's reasons and the busy API server's: shown at 0
# from the start, so that a rate() sees the first failure.
PASS_FAILURE_REASONS = (
    "KubernetesApiError", "ResultsServiceError", "PassTimedOut", "SetupError",
    "DatabaseError", "InternalError", "ApiServerUnavailable",
)  # fmt: skip


class RunPhases(Collector):
    """The phase of every run the watch has shown, by uid."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._phases: dict[str, RunPhase] = {}

    def seen(self, uid: str, status: Mapping[str, Any] | None, *, deleted: bool = False) -> None:
        with self._lock:
            if deleted:
                self._phases.pop(uid, None)
                return
            self._phases[uid] = current_phase(status or {})

    def clear(self) -> None:
        """Forget every run: the watch lists them all again when it (re)starts."""
        with self._lock:
            self._phases.clear()

    def counts(self) -> dict[RunPhase, int]:
        with self._lock:
            phases = list(self._phases.values())
        return {phase: phases.count(phase) for phase in RunPhase}

    def collect(self) -> Iterable[Metric]:
        gauge = GaugeMetricFamily(RUNS, "BenchmarkRuns by phase", labels=["phase"])
        for phase, count in self.counts().items():
            gauge.add_metric([phase.value], count)
        return [gauge]


class OperatorMetrics:
    """One registry: what /metrics serves (tests make their own instance)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.runs = RunPhases()
        self.registry.register(self.runs)
        ProcessCollector(registry=self.registry)
        self.pass_seconds = Histogram(
            RECONCILE_DURATION,
            "Duration of reconcile passes (one pass advances one run)",
            buckets=PASS_BUCKETS,
            registry=self.registry,
        )
        self.failed_passes = Counter(
            FAILED_PASSES,
            "Reconcile passes that failed (retried; the reason is the condition's)",
            ["reason"],
            registry=self.registry,
        )
        for reason in PASS_FAILURE_REASONS:
            self.failed_passes.labels(reason)
        self.change_points = Counter(
            CHANGE_POINTS,
            "Runs whose verdict against their series found a change point at them "
            "(the ChangePoint condition): direction Regression or Improvement",
            [*SERIES_LABELS, "direction"],
            registry=self.registry,
        )
        self.expectations_missed = Counter(
            EXPECTATIONS_MISSED,
            "Runs that ended with an expectation missed (the Expectations condition "
            "False, reason Missed), whatever their onMiss policy",
            SERIES_LABELS,
            registry=self.registry,
        )
        self._serving: int | None = None

    def passed(self, seconds: float, failed_reason: str | None) -> None:
        self.pass_seconds.observe(seconds)
        if failed_reason is not None:
            self.failed_passes.labels(failed_reason).inc()

    def change_point(self, namespace: str, series: str, direction: str) -> None:
        self.change_points.labels(namespace, series, direction).inc()

    def expectation_missed(self, namespace: str, series: str) -> None:
        self.expectations_missed.labels(namespace, series).inc()

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:  # noqa: S104 - a pod's port
        """Serve /metrics on a daemon thread for the life of the process (once: kopf
        calls startup handlers again when an operator is restarted in-process).

        A port that cannot be bound is logged, not raised: kopf would retry its
        startup forever, and no run would be served for want of metrics."""
        if self._serving == port:
            return
        try:
            _start_http_server(port, addr=addr, registry=self.registry)
        except OSError as exc:
            log.error("/metrics not served on %s:%d: %s", addr, port, exc)  # noqa: TRY400
            return
        self._serving = port


METRICS = OperatorMetrics()
