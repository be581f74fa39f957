"""The stability series and storage counts (pure): windows in records for inserts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.series import Mark, series_unit, stability_series
from dbbench_runner.storage import MergedStorage, StorageRow
from tests.support.runner_files import csv_rows


def merged_rows(pods: Sequence[tuple[Sequence[StorageRow], Sequence[Mark]]]) -> list[StorageRow]:
    """All pods' samples in time order, each counting what every pod had written.

    The last sample is taken after its pod's last write, and every other pod's
    last sample (after its own last write) is earlier: so it counts exactly.
    """
    merged = MergedStorage([rows for rows, _ in pods])
    for _, marks in pods:
        merged.add((m[0], m[2]) for m in marks)
    return merged.rows()


def env(pod: int = 0) -> Environment:
    return Environment(target=TargetInfo(name="t", engine="mariadb"), pod=RunnerPod(index=pod))


def test_insert_phases_count_records_and_others_operations() -> None:
    assert series_unit("insert") == "records"
    for phase_type in ("mix", "query", "pointReads"):
        assert series_unit(phase_type) == "operations"


def test_operation_windows_from_four_connections() -> None:
    # 4 connections, each checkpointing every 25 ops at 1 op/ms per connection
    marks = [(100.0 + k * 0.025, 25, 0, 25 * 900) for _ in range(4) for k in range(1, 21)]
    rows = stability_series(marks, 500, 100.0, "operations")
    assert [r.operations for r in rows] == [500, 1000, 1500, 2000]
    for row in rows:
        assert abs(row.ops_per_second - 4000) / 4000 < 0.2
        assert row.records_per_second == 0
        assert row.mean_latency_ms == pytest.approx(0.9)


def test_operation_windows_are_exact_for_one_connection() -> None:
    # one connection, a checkpoint every 250 ops; 1000-op windows take 1 s then 2 s
    times = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0]
    rows = stability_series([(100 + t, 250, 0, 0) for t in times], 1000, 100.0, "operations")
    assert [(r.operations, round(r.epoch, 6), round(r.seconds, 6)) for r in rows] == [
        (1000, 101.0, 1.0),
        (2000, 103.0, 2.0),
    ]
    assert [round(r.ops_per_second, 6) for r in rows] == [1000.0, 500.0]


def batches(count: int, size: int, seconds: float, start: float = 0.0) -> list[Mark]:
    """One connection inserting `count` batches of `size`, each taking `seconds`."""
    return [(start + (i + 1) * seconds, 1, size, 2000) for i in range(count)]


def test_the_issue_scenario_gives_ten_points_of_twenty_thousand_records() -> None:
    # 200,000 records in batches of 100 (2,000 calls): in operations no 20,000 window closes
    marks = batches(2000, 100, 0.01)
    assert stability_series(marks, 20_000, 0.0, "operations") == []
    rows = stability_series(marks, 20_000, 0.0, "records")
    assert [r.records for r in rows] == [20_000 * k for k in range(1, 11)]
    for row in rows:
        assert row.window_records == pytest.approx(20_000)
        assert row.window_operations == pytest.approx(200)
        assert row.seconds == pytest.approx(2.0)
        assert row.records_per_second == pytest.approx(10_000)
        assert row.ops_per_second == pytest.approx(100)
        assert row.mean_latency_ms == pytest.approx(2.0)


def test_a_batch_across_a_boundary_is_split_proportionally() -> None:
    # batches of 300 records, one a second; the 1,000th record falls a third into batch 4
    rows = stability_series(batches(7, 300, 1.0, start=10.0), 1000, 10.0, "records")
    assert [r.records for r in rows] == [1000, 2000]
    first, second = rows
    assert first.epoch == pytest.approx(13.0 + 1 / 3)
    assert first.window_operations == pytest.approx(3 + 1 / 3)
    assert first.window_records == pytest.approx(1000)
    assert first.records_per_second == pytest.approx(300)
    # window 2: the rest of batch 4, batches 5 and 6, two thirds of batch 7
    assert second.epoch == pytest.approx(16.0 + 2 / 3)
    assert second.window_operations == pytest.approx(2 / 3 + 2 + 2 / 3)
    assert second.window_latency_us == pytest.approx(second.window_operations * 2000)


def test_a_batch_larger_than_a_window_closes_several() -> None:
    rows = stability_series([(1.0, 1, 50, 0), (3.0, 1, 250, 0)], 100, 0.0, "records")
    assert [r.records for r in rows] == [100, 200, 300]
    assert [round(r.epoch, 6) for r in rows] == [1.4, 2.2, 3.0]


def test_failed_batches_write_no_records_but_their_time_counts() -> None:
    marks = [(1.0, 1, 100, 0), (2.0, 1, 0, 0), (3.0, 1, 100, 0)]
    (row,) = stability_series(marks, 200, 0.0, "records")
    assert row.epoch == pytest.approx(3.0)
    assert row.window_operations == pytest.approx(3)


def meta(pods: tuple[int, ...], started: float, ended: float) -> RunMeta:
    return RunMeta(
        target="t",
        engine="mariadb",
        phase="load",
        type="insert",
        pods=pods,
        pod_count=2,
        threads=2,
        started=started,
        ended=ended,
        report_every=20_000,
        max_error_rate=0.01,
        server_version="10.11",
        series_unit="records",
    )


def connection(worker: int, rng: random.Random) -> Measurements:
    """One connection inserting 50,000 records in batches of 100 at an uneven pace."""
    m = Measurements(checkpoint_every=1250, series_unit="records")
    epoch = 1000.0 + worker * 0.003
    for _ in range(500):
        latency = rng.randint(500, 4000)
        epoch += latency / 1e6
        m.record("insert", latency, Status(ok=True, rows=100), epoch)
    m.flush(epoch)
    return m


def test_two_pods_merge_into_the_single_pod_series(tmp_path: Path) -> None:
    rng = random.Random(5)
    connections = [connection(w, rng) for w in range(4)]
    single = Measurements(checkpoint_every=1250, series_unit="records")
    for m in connections:
        single.add(m)
    ended = max(max(m.checkpoints.times) for m in connections)
    storage = [StorageRow(999.0, StorageSample(0, 0, 0, 0), before=0, written=0)]
    write_results(tmp_path / "single", meta((0,), 1000.0, ended), single, storage, env())
    for pod in range(2):
        mine = Measurements(checkpoint_every=1250, series_unit="records")
        for m in connections[pod * 2 : pod * 2 + 2]:
            mine.add(m)
        write_results(tmp_path / f"pod{pod}", meta((pod,), 1000.0, ended), mine, storage, env(pod))
    summary = merge(tmp_path / "merged", [tmp_path / "pod0", tmp_path / "pod1"])
    merged_series = csv_rows(tmp_path / "merged" / "series-ops.csv")
    assert len(merged_series) == 10
    assert [int(r["records"]) for r in merged_series] == [20_000 * k for k in range(1, 11)]
    assert merged_series == csv_rows(tmp_path / "single" / "series-ops.csv")
    assert summary.series_unit == "records"
    assert summary.records == 200_000
    assert summary.records_per_second == pytest.approx(200_000 / (ended - 1000.0))


def test_merged_storage_samples_count_every_pods_records() -> None:
    sample = StorageSample(1000, 100, 4096, engine_records=1)

    def row(epoch: float, written: int) -> StorageRow:
        return StorageRow(epoch, sample, before=500, written=written)

    pod0 = [row(0.0, 0), row(10.0, 400), row(20.0, 1000)]  # done at 20 s
    pod1 = [row(0.5, 0), row(10.5, 300), row(25.0, 900)]  # done at 25 s
    marks1: list[Mark] = [(5.0, 10, 200, 0), (9.0, 10, 100, 0)]
    rows = merged_rows([(pod0, []), (pod1, marks1)])
    assert [r.epoch for r in rows] == [0.0, 0.5, 10.0, 10.5, 20.0, 25.0]
    # at 10 s pod 1 had written 300 by its checkpoints (its own sample came later)
    assert [r.written for r in rows] == [0, 0, 700, 700, 1300, 1900]
    assert rows[-1].records == 500 + 1000 + 900
    assert rows[-1].bytes_per_record == pytest.approx(4096 / 2400)
