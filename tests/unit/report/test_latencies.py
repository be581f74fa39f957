"""The latency sections' reading of interval logs, on 15 minutes of synthetic
seconds: exact per-second percentiles across operation types, and memory that
does not grow with a histogram per second (the browser's container has 512Mi)."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

from hdrh.histogram import HdrHistogram

from dbbench_contract.hdr_sparse import sparse_counts
from dbbench_contract.latency_log import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS
from dbbench_report.latencies import SparseHistogram, read_interval_logs

SECONDS = 900  # 15 minutes: a histogram kept per second would be ~165 MiB
START = 1_800_000_000


def histogram(values: list[int]) -> HdrHistogram:
    h = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
    for value in values:
        h.record_value(value)
    return h


def write_log(path: Path, per_second: dict[int, list[int]]) -> None:
    legend = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
    lines = ["#[StartTime: 1800000000.000 (seconds since epoch)]", legend]
    for second, values in sorted(per_second.items()):
        h = histogram(values)
        lines.append(f"{second:.3f},1.000,{h.get_max_value() / 1000:.3f},{h.encode().decode()}")
    path.write_text("\n".join(lines) + "\n")


def test_fifteen_minutes_of_seconds_over_two_operation_types(tmp_path: Path) -> None:
    rng = random.Random(7)
    reads = {START + s: [rng.randint(100, 900) for _ in range(20)] for s in range(SECONDS)}
    writes = {START + s: [rng.randint(1000, 50_000) for _ in range(5)] for s in range(SECONDS)}
    write_log(tmp_path / "read.hlog", reads)
    write_log(tmp_path / "update.hlog", writes)
    files = tuple((str(tmp_path / n), 0, 0) for n in ("read.hlog", "update.hlog"))
    tracemalloc.start()
    latency = read_interval_logs(files)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB for {SECONDS} seconds"
    assert latency.total.get_total_count() == 25 * SECONDS
    seconds, p99 = latency.per_second(99.0)
    assert len(seconds) == SECONDS
    for second in (START, START + 456, START + SECONDS - 1):
        both = histogram(reads[second] + writes[second])  # the second, both types
        index = seconds.index(second)
        assert p99[index] == both.get_value_at_percentile(99.0) / 1000.0
        assert latency.per_second(50.0)[1][index] == both.get_value_at_percentile(50.0) / 1000.0
    everything = histogram([v for d in (reads, writes) for vs in d.values() for v in vs])
    assert latency.ms_at(99.9) == everything.get_value_at_percentile(99.9) / 1000.0
    assert latency.ms_at(100.0) == everything.get_max_value() / 1000.0


def test_a_report_of_many_steps_holds_no_dense_histogram_per_step(tmp_path: Path) -> None:
    # A 100-step report read every step's logs in turn: each kept a dense hdrh
    # histogram (two 190 KB arrays in a reference cycle), left to the collector
    # once out of the cache: the service's peak rose by ~70 MB for it.
    rng = random.Random(3)
    steps = []
    for step in range(40):
        directory = tmp_path / f"step{step}"
        directory.mkdir()
        for kind, (low, high) in {"read": (100, 900), "update": (1000, 50_000)}.items():
            seconds = {START + s: [rng.randint(low, high) for _ in range(5)] for s in range(60)}
            write_log(directory / f"{kind}.hlog", seconds)
        steps.append(tuple((str(directory / f"{k}.hlog"), 0, 0) for k in ("read", "update")))
    read_interval_logs.cache_clear()
    tracemalloc.start()
    for files in steps:
        latency = read_interval_logs(files)
        assert latency.total.get_total_count() == 60 * 10
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    read_interval_logs.cache_clear()
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MiB for {len(steps)} steps"


def test_sparse_reading_is_hdrhs_at_every_percentile() -> None:
    rng = random.Random(5)
    values = [rng.choice((1, 2047, 2048, 5_000_000_000)) for _ in range(5)]
    values += [int(rng.lognormvariate(7, 1.5)) + 1 for _ in range(3000)]
    dense = histogram([min(v, HIGHEST_US) for v in values])
    counts = sparse_counts(dense.encode())
    assert counts is not None
    sparse = SparseHistogram.of(counts[0])
    assert sparse.get_total_count() == dense.get_total_count()
    assert sparse.get_max_value() == dense.get_max_value()
    for percentile in (0.0, 0.1, 25.0, 50.0, 99.0, 99.9, 99.99, 100.0, 120.0):
        assert sparse.get_value_at_percentile(percentile) == dense.get_value_at_percentile(
            percentile
        ), percentile
    empty = SparseHistogram.of({})
    assert (empty.get_total_count(), empty.get_max_value()) == (0, 0)
    assert empty.get_value_at_percentile(50.0) == histogram([]).get_value_at_percentile(50.0)
