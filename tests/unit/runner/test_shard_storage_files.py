"""Per-shard storage through the result files: a pod's storage.csv and summary,
the step's merge, and back (the runner's own writers and the merge, on disk).

A sharded target's samples carry each shard's documents, sizes and chunks in
storage.csv's `shards` column and the summary's `storage.shards`; every other
target's files keep the columns they had (tests/data/merge is unchanged).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_contract.shard_storage import ShardStorage, decode_shards
from dbbench_contract.summary import StepSummary
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.storage import HEADER, StorageRow

STARTED = 1_760_000_000.0


def shards_at(documents: int, chunks: int) -> tuple[ShardStorage, ...]:
    """Three shards, shard0 a little ahead (its share grows with the load)."""
    split = (documents // 2, documents // 4, documents - documents // 2 - documents // 4)
    return tuple(
        ShardStorage(shard=f"shard{i}", documents=n, data_bytes=n * 1100, index_bytes=n * 60,
                     storage_bytes=n * 700, chunks=chunks + (i == 0))
        for i, n in enumerate(split)
    )  # fmt: skip


def write_pod(out: Path, pod: int, samples: list[tuple[float, int]]) -> None:
    m = Measurements(checkpoint_every=10, series_unit="records")
    for n in range(100):
        m.inserted(n + 1 + pod * 10**6, 1)
        m.record("insert", 500 + n, Status(ok=True, rows=1), STARTED + n * 0.05)
    m.flush(STARTED + 5)
    meta = RunMeta("sharded", "mongodb", "load", "insert", (pod,), 2, 1, STARTED,
                   STARTED + 5, 50, 0.05, "8.0.4", "records", writes_records=True)  # fmt: skip
    storage = [
        StorageRow(STARTED + t, StorageSample(docs * 1100, docs * 60, docs * 760, docs,
                                              shards_at(docs, 2)), before=0, written=docs // 2)
        for t, docs in samples
    ]  # fmt: skip
    env = Environment(target=TargetInfo(name="sharded", engine="mongodb"), pod=RunnerPod(index=pod))
    write_results(out, meta, m, storage, env)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_pods_files_hold_each_shard_at_every_sample_and_at_the_end(tmp_path: Path) -> None:
    write_pod(tmp_path, 0, [(0.0, 0), (2.0, 120), (5.0, 200)])
    written = rows(tmp_path / "storage.csv")
    assert list(written[0]) == [*HEADER, "shards"]
    assert [decode_shards(r["shards"]) for r in written] == [
        shards_at(0, 2), shards_at(120, 2), shards_at(200, 2)
    ]  # fmt: skip
    summary = StepSummary.from_wire(json.loads((tmp_path / "summary.json").read_text()))
    assert summary.storage is not None
    assert summary.storage.shards == shards_at(200, 2)
    wire = json.loads((tmp_path / "summary.json").read_text())["storage"]["shards"][1]
    assert wire == {"shard": "shard1", "documents": 50, "dataBytes": 55_000,
                    "indexBytes": 3_000, "storageBytes": 35_000, "chunks": 2}  # fmt: skip


def test_the_merge_keeps_every_pods_per_shard_samples_and_the_last_as_the_end(
    tmp_path: Path,
) -> None:
    pods = [tmp_path / "pod-0", tmp_path / "pod-1"]
    write_pod(pods[0], 0, [(0.0, 0), (2.0, 120), (5.0, 200)])
    write_pod(pods[1], 1, [(1.0, 60), (5.5, 210)])
    step = tmp_path / "step"
    merge(step, pods)
    merged = rows(step / "storage.csv")
    assert [float(r["epoch"]) - STARTED for r in merged] == [0.0, 1.0, 2.0, 5.0, 5.5]
    assert [sum(s.documents for s in decode_shards(r["shards"])) for r in merged] == [
        0, 60, 120, 200, 210
    ]  # fmt: skip
    summary = StepSummary.from_wire(json.loads((step / "summary.json").read_text()))
    assert summary.storage is not None
    assert summary.storage.shards == shards_at(210, 2)


def test_other_targets_files_keep_their_columns(tmp_path: Path) -> None:
    meta = RunMeta("db", "mariadb", "load", "insert", (0,), 1, 1, STARTED, STARTED + 1, 50,
                   0.05, "11.8", "records")  # fmt: skip
    m = Measurements(checkpoint_every=10, series_unit="records")
    m.flush(STARTED + 1)
    sample = StorageRow(STARTED, StorageSample(10, 5, 20, 1), before=0, written=1)
    write_results(tmp_path, meta, m, [sample], None)
    assert list(rows(tmp_path / "storage.csv")[0]) == HEADER
    assert "shards" not in json.loads((tmp_path / "summary.json").read_text())["storage"]
