"""The runner's live metrics, pure parts: what the parent adds up and how it is shown."""

from __future__ import annotations

import logging
import random
import socket
from collections import deque

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from dbbench_runner import cli
from dbbench_runner.exporting import (
    LE_SECONDS,
    Endpoint,
    StepLabels,
    run_name,
    serving,
)
from dbbench_runner.histogram import LatencyHistogram, bucket_of
from dbbench_runner.live_metrics import LiveTotals, drain_seconds, percentile_us
from dbbench_runner.measurement import Measurements, SecondBucket
from dbbench_runner.metric_families import LiveCollector
from dbbench_runner.operations import Status

LABELS = StepLabels("r1", "mariadb", "reads", 2)


def _measured(latencies: list[tuple[str, int, bool]], start: float = 1000.0) -> Measurements:
    m = Measurements(checkpoint_every=10)
    for i, (kind, us, ok) in enumerate(latencies):
        m.record(kind, us, Status(ok=ok, error=None if ok else "E(1)"), start + i * 0.01)
    return m


def _scrape(totals: LiveTotals) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LiveCollector(totals, LABELS))
    text = generate_latest(registry).decode()
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return samples


def test_percentiles_of_sparse_counts_match_the_histogram() -> None:
    rng = random.Random(3)
    values = [int(rng.lognormvariate(6, 1.2)) + 1 for _ in range(5000)]
    histogram = LatencyHistogram()
    counts: dict[int, int] = {}
    for v in values:
        histogram.record_value(v)
        counts[bucket_of(v)] = counts.get(bucket_of(v), 0) + 1
    for p in (50.0, 95.0, 99.0, 99.9, 100.0):
        assert percentile_us(counts, p) == histogram.get_value_at_percentile(p)
    assert percentile_us({}, 99.0) == 0


def test_finished_seconds_are_drained_once_summed_by_type() -> None:
    first: deque[tuple[str, SecondBucket]] = deque(
        [("read", SecondBucket(3, 1, 300, {100: 3})), ("update", SecondBucket(1, 0, 50, {50: 1}))]
    )
    second: deque[tuple[str, SecondBucket]] = deque([("read", SecondBucket(2, 0, 200, {100: 2}))])
    wire = drain_seconds([first, second])
    assert wire["read"][:3] == (5, 1, 500)
    assert dict(wire["read"][3]) == {100: 5}
    assert wire["update"][:3] == (1, 0, 50)
    assert not first
    assert not second
    assert drain_seconds([first, second]) == {}


def test_a_done_process_replaces_its_live_sums_and_counters_never_drop() -> None:
    m = _measured([("read", 100 + i, i % 10 != 0) for i in range(200)])
    totals = LiveTotals()
    # What arrived live: a subset of the seconds (the last ones not yet reported).
    partial = drain_seconds([deque(("read", b) for (s, _), b in list(m.seconds.items())[:1])])
    totals.add(0, partial, records=0)
    live = totals.snapshot().operations["read"].operations
    assert 0 < live < 200
    totals.finish(0, m)
    totals.add(0, partial, records=0)  # a late progress message changes nothing
    final = totals.snapshot()
    assert final.operations["read"].operations == 200
    assert final.operations["read"].errors == 20
    assert not final.ended
    totals.end()
    assert totals.snapshot().ended


def test_the_exposition_shows_counts_histogram_and_exact_percentiles() -> None:
    fast, slow, failed = (
        [("read", 150, True)] * 90,
        [("read", 4000, True)] * 9,
        ("read", 90_000, False),
    )
    m = _measured([*fast, *slow, failed])
    totals = LiveTotals()
    totals.finish(0, m)
    totals.finish(1, _measured([("insert", 700, True)] * 10))
    samples = _scrape(totals)
    read = (("operation", "read"), ("phase", "reads"), ("repeat", "2"), ("run", "r1"),
            ("target", "mariadb"))  # fmt: skip
    assert samples["dbbench_runner_operations_total"][read] == 100
    assert samples["dbbench_runner_errors_total"][read] == 1
    buckets = samples["dbbench_runner_latency_seconds_bucket"]
    assert buckets[(("le", "0.0002"), *read)] == 90
    assert buckets[(("le", "0.005"), *read)] == 99
    assert buckets[(("le", "+Inf"), *read)] == 100
    assert len([k for k in buckets if dict(k)["operation"] == "read"]) == len(LE_SECONDS) + 1
    assert samples["dbbench_runner_latency_seconds_count"][read] == 100
    assert abs(samples["dbbench_runner_latency_seconds_sum"][read] - 0.1395) < 1e-9
    quantiles = samples["dbbench_runner_phase_latency_seconds"]
    histogram = m.histograms["read"]
    for q in ("0.5", "0.95", "0.99"):
        key = tuple(sorted((*read, ("quantile", q))))
        assert quantiles[key] == histogram.get_value_at_percentile(float(q) * 100) / 1e6
    step = (("phase", "reads"), ("repeat", "2"), ("run", "r1"), ("target", "mariadb"))
    assert samples["dbbench_runner_phase_ended"][step] == 0


def test_the_run_label_is_the_run_name() -> None:
    assert run_name("team-a/nightly/0b6c") == "nightly"
    assert run_name(None) == ""
    assert run_name("odd") == ""


def test_a_job_pod_takes_its_metrics_port_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The operator sets the port in a runner Job's environment, not its arguments
    (a run keeps its runner image; an older runner would refuse an unknown flag)."""
    monkeypatch.setenv("DBBENCH_RUNNER_METRICS_PORT", "9100")
    monkeypatch.setenv("DBBENCH_RUNNER_METRICS_LINGER", "15")
    args = cli._parser().parse_args(["job", "--config", "step.yaml", "--out", "out"])
    assert (args.metrics_port, args.metrics_linger) == (9100, 15.0)
    args = cli._parser().parse_args(["run", "--config", "s", "--out", "o", "--metrics-port", "0"])
    assert args.metrics_port == 0


def test_a_taken_port_costs_the_endpoint_not_the_step(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        endpoint = Endpoint(port=port, address="127.0.0.1")
        with caplog.at_level(logging.ERROR), serving(endpoint, LABELS) as live:
            assert live is None  # the step runs on, unmeasured by /metrics
    assert f"/metrics not served on 127.0.0.1:{port}" in caplog.text
