"""The latency sections' reading of interval logs, on 15 minutes of synthetic
seconds: exact per-second percentiles across operation types, and memory that
does not grow with a histogram per second (the browser's container has 512Mi)."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

from hdrh.histogram import HdrHistogram

from dbbench_contract.latency_log import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS
from dbbench_report.latencies import read_interval_logs

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
