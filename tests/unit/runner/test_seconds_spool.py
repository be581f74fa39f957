"""Ended seconds spooled to files: the same results as kept in memory, without
the memory (dbbench_runner.seconds_spool)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.live_metrics import by_operation
from dbbench_runner.measurement import Measurements, SecondBucket
from dbbench_runner.results import write_results
from dbbench_runner.seconds_spool import (
    merged_seconds,
    read_seconds,
    remove_spools,
    spool_path,
    write_seconds,
)
from dbbench_runner.storage import StorageRow
from tests.unit.runner.test_measurement import OK, env, latencies, meta
from tests.unit.runner.test_measurement import fill as fill_kept

# Even, and half of its operations a multiple of 3 (fill_kept's type rule by index).
SECONDS = 42


def spooled(directory: Path, worker: int) -> Measurements:
    m = Measurements(checkpoint_every=100)
    path = spool_path(directory, worker)
    m.spool_to(str(path), partial(write_seconds, path))
    return m


def fill(m: Measurements, values: list[int], start: float) -> list[tuple[str, SecondBucket]]:
    """As a connection records: 2,000 operations a second, the ended seconds
    sealed once a second (loop._publish) and all of them at the end."""
    forwarded = []
    for index, value in enumerate(values):
        epoch = start + index / 2000
        m.record("read" if index % 3 else "update", value, OK, epoch)
        if index % 2000 == 1999:
            forwarded += m.seal(int(epoch))
    m.flush(start + len(values) / 2000)
    forwarded += m.seal(None)
    return forwarded


def test_a_spooling_connection_holds_only_its_open_second(tmp_path: Path) -> None:
    m = spooled(tmp_path, 3)
    values = latencies(2000 * SECONDS, seed=5)
    for index, value in enumerate(values[:-1000]):
        epoch = 1000.0 + index / 2000
        m.record("read", value, OK, epoch)
        if index % 2000 == 1999:
            m.seal(int(epoch))
            assert {second for second, _ in m.seconds} <= {int(epoch)}, sorted(m.seconds)
    assert m.seconds, "the open second stays in memory"
    assert len(list(read_seconds(Path(m.spools[0])))) == SECONDS - 2


def test_spooled_seconds_give_the_same_files_as_seconds_kept(tmp_path: Path) -> None:
    values = latencies(2000 * SECONDS, seed=4)
    kept = Measurements(checkpoint_every=100)
    fill_kept(kept, values, 1000.0)
    # Two connections, as a worker process adds them, through the wire to the parent.
    spools = tmp_path / "spools"
    spools.mkdir()
    parts = [spooled(spools, worker) for worker in (0, 1)]
    half = len(values) // 2
    forwarded = fill(parts[0], values[:half], 1000.0)
    forwarded += fill(parts[1], values[half:], 1000.0 + half / 2000)
    total = Measurements(checkpoint_every=100)
    for part in parts:
        assert not part.seconds, "every second spooled"
        total.add(Measurements.from_wire(part.to_wire()))
    assert len(total.spools) == 2
    # Each ended second was forwarded (live metrics) once.
    assert sum(b.operations for _, b in forwarded) == len(values)
    assert by_operation(total) == by_operation(kept)
    storage = [StorageRow(1000.0, StorageSample(1, 1, 1, 1), before=0, written=0)]
    ended = 1000.0 + SECONDS
    write_results(tmp_path / "kept", meta((0,), 1000.0, ended), kept, storage, env())
    write_results(tmp_path / "spooled", meta((0,), 1000.0, ended), total, storage, env())
    names = ["series-seconds.csv", "histograms/read.hlog", "histograms/update.hlog"]
    for name in names:
        assert (tmp_path / "spooled" / name).read_text() == (tmp_path / "kept" / name).read_text()
    assert len((tmp_path / "kept" / names[0]).read_text().splitlines()) == 2 * SECONDS + 1
    remove_spools(spools)
    assert not list(spools.iterdir())


def test_merged_seconds_add_a_second_found_in_several_spools(tmp_path: Path) -> None:
    a, b = spool_path(tmp_path, 0), spool_path(tmp_path, 1)
    write_seconds(a, [(5, "read", SecondBucket(2, 1, 30, {7: 2}))])
    write_seconds(a, [(6, "read", SecondBucket(1, 0, 10, {9: 1}))])
    write_seconds(b, [(5, "insert", SecondBucket(1, 0, 5, {3: 1}))])
    write_seconds(b, [(5, "read", SecondBucket(3, 0, 40, {7: 1, 8: 2}))])
    merged = list(merged_seconds([read_seconds(a), read_seconds(b)]))
    assert merged == [
        (5, "insert", SecondBucket(1, 0, 5, {3: 1})),
        (5, "read", SecondBucket(5, 1, 70, {7: 3, 8: 2})),
        (6, "read", SecondBucket(1, 0, 10, {9: 1})),
    ]
