from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import replace
from pathlib import Path

from hdrh.log import HistogramLogWriter

from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_contract.latency_log import parse_interval_log
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements, latency_ms, new_histogram
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import (
    RunMeta,
    read_histograms,
    read_interval_histograms,
    read_measurements,
    write_results,
)
from dbbench_runner.storage import StorageRow
from tests.support.runner_files import check_results

OK = Status(ok=True, rows=1)


def env(pod: int = 0) -> Environment:
    return Environment(target=TargetInfo(name="t", engine="mariadb"), pod=RunnerPod(index=pod))


def latencies(count: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    # long-tailed, like real latencies: mostly ~200us, some up to seconds
    return [int(rng.lognormvariate(5.3, 1.2)) + 1 for _ in range(count)]


def test_merged_split_runs_equal_the_single_run_histogram() -> None:
    values = latencies(30_000)
    single = Measurements()
    parts = [Measurements() for _ in range(3)]
    for index, value in enumerate(values):
        single.record("read", value, OK, 1000.0 + index / 1000)
        parts[index % 3].record("read", value, OK, 1000.0 + index / 1000)
    merged = Measurements()
    for part in parts:
        # through the wire format, as between processes
        merged.add(Measurements.from_wire(part.to_wire()))
    assert merged.histograms["read"].equals(single.histograms["read"])
    assert latency_ms(merged.histograms["read"]) == latency_ms(single.histograms["read"])
    assert merged.seconds == single.seconds
    assert merged.operations == single.operations == 30_000


def test_averaging_percentiles_would_be_wrong_so_we_add() -> None:
    # Two pods with very different latencies: the merged p99 is not the mean of p99s.
    fast, slow = Measurements(), Measurements()
    for i in range(990):
        fast.record("read", 100, OK, float(i))
    for i in range(10):
        slow.record("read", 50_000, OK, float(i))
    total = Measurements()
    total.add(fast)
    total.add(slow)
    p99 = latency_ms(total.histograms["read"]).p99
    assert p99 < 0.2  # 99% of all operations took 100us
    assert latency_ms(total.histograms["read"]).max > 49


def test_errors_counted_by_type() -> None:
    m = Measurements()
    m.record("insert", 10, Status.failed("IntegrityError(1062)"), 1.0)
    m.record("insert", 10, Status.failed("IntegrityError(1062)"), 1.0)
    m.record("read", 10, Status.failed("OperationalError(2013)"), 1.0)
    m.record("read", 10, OK, 1.0)
    assert m.errors == {"insert:IntegrityError(1062)": 2, "read:OperationalError(2013)": 1}
    assert m.operations == 4
    assert m.error_count == 3


def meta(pods: tuple[int, ...], started: float, ended: float) -> RunMeta:
    return RunMeta(
        target="t",
        engine="mariadb",
        phase="p",
        type="mix",
        pods=pods,
        pod_count=2,
        threads=1,
        started=started,
        ended=ended,
        report_every=1000,
        max_error_rate=0.01,
        server_version="10.11",
        series_unit="operations",
    )


def fill(m: Measurements, values: list[int], start: float) -> None:
    for index, value in enumerate(values):
        kind = "read" if index % 3 else "update"
        m.record(kind, value, OK, start + index / 2000)
    m.flush(start + len(values) / 2000)


def test_results_round_trip_and_merge_exactly(tmp_path: Path) -> None:
    values = latencies(6000, seed=3)
    single = Measurements(checkpoint_every=100)
    fill(single, values, 1000.0)
    pods = [Measurements(checkpoint_every=100), Measurements(checkpoint_every=100)]
    fill(pods[0], values[:3000], 1000.0)
    fill(pods[1], values[3000:], 1001.5)
    storage = [
        StorageRow(1000.0, StorageSample(10, 5, 20, 100), before=0, written=0),
        StorageRow(1003.0, StorageSample(20, 6, 30, 200), before=0, written=0),
    ]
    for index, m in enumerate(pods):
        write_results(
            tmp_path / f"pod{index}", meta((index,), 1000.0, 1003.0), m, storage, env(index)
        )
        back = read_measurements(tmp_path / f"pod{index}")
        for kind, histogram in m.histograms.items():
            assert back.histograms[kind].equals(histogram)
    summary = merge(tmp_path / "merged", [tmp_path / "pod0", tmp_path / "pod1"])
    check_results(tmp_path / "merged", operations=6000)
    merged = read_histograms(tmp_path / "merged")
    for kind, histogram in single.histograms.items():
        assert merged[kind].equals(histogram)
        assert summary.operations_by_type[kind].latency_ms == latency_ms(histogram)
    assert summary.pods == (0, 1)
    environment = json.loads((tmp_path / "merged" / "environment.json").read_text())
    assert [e["pod"]["index"] for e in environment["pods"]] == [0, 1]


def test_histogram_range_clamps_extremes() -> None:
    m = Measurements()
    m.record("read", 0, OK, 1.0)
    m.record("read", 10**13, OK, 1.0)
    assert m.histograms["read"].get_total_count() == 2
    assert new_histogram().get_total_count() == 0


def test_a_phase_that_measured_nothing_fails_saying_why(tmp_path: Path) -> None:
    storage = [StorageRow(1000.0, StorageSample(10, 5, 20, 100), before=0, written=0)]
    summary = write_results(
        tmp_path / "a", meta((0,), 1000.0, 1010.0), Measurements(), storage, env()
    )
    assert summary.status == "failed"
    assert "no operation was measured" in str(summary.reason)
    stopped = replace(meta((0,), 1000.0, 1010.0), stopped=True)
    assert write_results(tmp_path / "b", stopped, Measurements(), storage, env()).status == (
        "stopped"
    )
    # A pod whose share of a counted phase is empty is not a failure.
    idle = replace(meta((1,), 1000.0, 1010.0), expects_operations=False)
    assert write_results(tmp_path / "c", idle, Measurements(), storage, env()).status == (
        "succeeded"
    )


def _seconds_csv(path: Path) -> dict[tuple[int, str], dict[str, str]]:
    with path.open(newline="") as handle:
        return {(int(r["epochSecond"]), r["operation"]): r for r in csv.DictReader(handle)}


def test_per_second_percentiles_merge_exactly_across_pods(tmp_path: Path) -> None:
    """Two pods share the same seconds (every other operation each): the merged
    per-second p50/p99 are those of one runner that did everything, from interval
    histograms added bucket by bucket, never averaged."""
    values = latencies(9000, seed=5)
    single = Measurements()
    pods = [Measurements(), Measurements()]
    for index, value in enumerate(values):
        kind = "read" if index % 4 else "update"
        epoch = 2000.0 + index / 3000  # three seconds
        single.record(kind, value, OK, epoch)
        pods[index % 2].record(kind, value, OK, epoch)
    for index, m in enumerate(pods):
        write_results(tmp_path / f"pod{index}", meta((index,), 2000.0, 2003.0), m, [], env(index))
    merge(tmp_path / "merged", [tmp_path / "pod0", tmp_path / "pod1"])
    rows = _seconds_csv(tmp_path / "merged" / "series-seconds.csv")
    assert set(rows) == set(single.seconds)
    for key, bucket in single.seconds.items():
        expected = latency_ms(bucket.histogram())
        assert float(rows[key]["p50LatencyMs"]) == round(expected.p50, 3), key
        assert float(rows[key]["p99LatencyMs"]) == round(expected.p99, 3), key
        assert float(rows[key]["maxLatencyMs"]) == round(expected.max, 3), key
    # What one pod saw differs from the whole in some second (else the test proves nothing).
    pod_rows = _seconds_csv(tmp_path / "pod0" / "series-seconds.csv")
    assert any(pod_rows[k]["p99LatencyMs"] != rows[k]["p99LatencyMs"] for k in rows)
    # The merged .hlog: one 1-second interval per second, adding up to the total.
    text = (tmp_path / "merged" / "histograms" / "read.hlog").read_text()
    intervals = parse_interval_log(text)
    assert [i.second for i in intervals] == [2000, 2001, 2002]
    assert all(i.is_second for i in intervals)
    total, seconds = read_interval_histograms(tmp_path / "merged")["read"]
    assert total.equals(single.histograms["read"])
    for second, histogram in seconds.items():
        assert histogram.counts == single.seconds[(second, "read")].histogram().counts


def test_files_without_per_second_histograms_still_merge_their_totals(tmp_path: Path) -> None:
    """A pod written by an older runner (one interval for the whole phase, no
    percentile columns) merged with a new one: totals stay exact, the merged log
    falls back to one interval, and the percentile columns of its seconds are empty."""
    old, new = Measurements(), Measurements()
    fill(old, latencies(2000, seed=7), 3000.0)
    fill(new, latencies(2000, seed=8), 3000.0)
    for index, m in enumerate((old, new)):
        write_results(tmp_path / f"pod{index}", meta((index,), 3000.0, 3001.0), m, [], env(index))
    # Rewrite pod0 as the old runner wrote it.
    pod0 = tmp_path / "pod0"
    logs = sorted((pod0 / "histograms").glob("*.hlog"))
    assert logs
    for path in logs:
        kind = path.stem
        buffer = io.StringIO()
        HistogramLogWriter(buffer).output_interval_histogram(
            old.histograms[kind].to_hdr(), 3000.0, 3002.5, max_value_unit_ratio=1000.0
        )
        path.write_text(buffer.getvalue())
    seconds_csv = pod0 / "series-seconds.csv"
    with seconds_csv.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = ["epochSecond", "operation", "operations", "errors", "meanLatencyMs", "latencySumUs"]
    with seconds_csv.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    merge(tmp_path / "merged", [pod0, tmp_path / "pod1"])
    both = Measurements()
    both.add(old)
    both.add(new)
    merged = read_histograms(tmp_path / "merged")
    for kind, histogram in both.histograms.items():
        assert merged[kind].equals(histogram)
        intervals = parse_interval_log(
            (tmp_path / "merged" / "histograms" / f"{kind}.hlog").read_text()
        )
        assert len(intervals) == 1
    assert all(
        r["p99LatencyMs"] == ""
        for r in _seconds_csv(tmp_path / "merged" / "series-seconds.csv").values()
    )
