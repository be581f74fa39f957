"""The results service's /metrics: uploads, merges and the claim's usage.

Served on its own port (`--metrics-port`), apart from the token-guarded API,
so that a NetworkPolicy can let a scraper in without letting it upload. The
claim's figures are read (statvfs) when scraped, never kept.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

UPLOADS = "dbbench_results_uploads"
UPLOAD_BYTES = "dbbench_results_upload_bytes"
MERGES = "dbbench_results_merges"
MERGE_SECONDS = "dbbench_results_merge_duration_seconds"
CLAIM_CAPACITY = "dbbench_results_claim_capacity_bytes"
CLAIM_FREE = "dbbench_results_claim_free_bytes"
# stored; refused (a limit: size, quota, free space); failed (cut short, I/O error)
UPLOAD_OUTCOMES = ("stored", "refused", "failed")
# merged; incomplete (a pod's files missing: retried by the operator); failed
MERGE_OUTCOMES = ("merged", "incomplete", "failed")
MERGE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class ClaimUsage(Collector):
    """The claim's size and what is left of it (for writers: f_bavail), when scraped."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def collect(self) -> Iterable[Metric]:
        try:
            stat = os.statvfs(self._root)
        except OSError:
            return []
        capacity = GaugeMetricFamily(CLAIM_CAPACITY, "Size of the results claim's filesystem")
        capacity.add_metric([], stat.f_blocks * stat.f_frsize)
        free = GaugeMetricFamily(CLAIM_FREE, "Bytes the results service can still write")
        free.add_metric([], stat.f_bavail * stat.f_frsize)
        return [capacity, free]


class ResultsMetrics:
    """One registry per service (tests start several services in one process)."""

    def __init__(self, root: Path) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.uploads = Counter(
            UPLOADS, "File uploads by outcome", ["outcome"], registry=self.registry
        )
        self.upload_bytes = Counter(UPLOAD_BYTES, "Bytes stored by uploads", registry=self.registry)
        self.merges = Counter(
            MERGES, "Step merges (pods' files into the step's) by outcome", ["outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.merge_seconds = Histogram(
            MERGE_SECONDS, "Duration of step merges", buckets=MERGE_BUCKETS,
            registry=self.registry,
        )  # fmt: skip
        for outcome in UPLOAD_OUTCOMES:
            self.uploads.labels(outcome)
        for outcome in MERGE_OUTCOMES:
            self.merges.labels(outcome)
        self.registry.register(ClaimUsage(root))

    def uploaded(self, outcome: str, stored: int = 0) -> None:
        self.uploads.labels(outcome).inc()
        self.upload_bytes.inc(stored)

    def merged(self, outcome: str, seconds: float) -> None:
        self.merges.labels(outcome).inc()
        self.merge_seconds.observe(seconds)

    def serve(self, host: str, port: int) -> None:
        """Serve /metrics on a daemon thread for the life of the process; a port that
        cannot be bound is logged, and the service goes on taking uploads."""
        try:
            start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            log.error("/metrics not served on %s:%d: %s", host, port, exc)  # noqa: TRY400
