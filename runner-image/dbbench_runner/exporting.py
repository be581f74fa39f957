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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dbbench_runner.config import StepConfig
from dbbench_runner.live_metrics import LiveTotals

log = logging.getLogger(__name__)

# Histogram bounds: 1-2-3-5-7 per decade from 100 µs to 70 s, fine enough for
# histogram_quantile to place p99 within a step of the exact value (which
# the summary below gives, over the phase so far).
LE_SECONDS = tuple(round(m * 10.0**e, 4) for e in range(-4, 2) for m in (1, 2, 3, 5, 7))
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
    # prometheus_client only where /metrics is served (~0.05 s of CPU at start):
    # a pod of a Job always; a `run` without --metrics-port (a local run, most of
    # the tests' runner processes) never.
    from dbbench_runner.metric_families import start_server  # noqa: PLC0415

    totals = LiveTotals()
    try:
        server, thread = start_server(endpoint, labels, totals)
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
