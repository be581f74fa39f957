"""Storage samples as results: the engine's sizes next to the exact record count.

An engine's own row count is an estimate (InnoDB's TABLE_ROWS was 6% short
on a 200,000-row table), so a sample's `records` is what the runner knows:
the records in the table before the phase (`recordsBefore`, from the step
file) plus those this phase has written so far, over all pods. Bytes per
record are computed from that count; the engine's figure is kept as
`engineEstimatedRecords`. Pure: the caller takes the samples.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate

from dbbench_contract.shard_storage import decode_shards, encode_shards
from dbbench_contract.summary import StorageBlock
from dbbench_runner.drivers.base import StorageSample

HEADER = [
    "epoch",
    "dataBytes",
    "indexBytes",
    "storageBytes",
    "records",
    "recordsBefore",
    "recordsWritten",
    "bytesPerRecord",
    "engineEstimatedRecords",
]
# A sharded MongoDB target's files have one more column: the collection on each
# shard (a JSON list of dbbench_contract.shard_storage.ShardStorage).
SHARDS_COLUMN = "shards"


def header(rows: Sequence[StorageRow]) -> list[str]:
    """storage.csv's columns: `shards` only when a sample has shards (other
    targets' files stay as they were)."""
    return [*HEADER, SHARDS_COLUMN] if _sharded(rows) else list(HEADER)


def _sharded(rows: Sequence[StorageRow]) -> bool:
    return any(row.sample.shards for row in rows)


@dataclass(frozen=True)
class StorageRow:
    epoch: float
    sample: StorageSample
    before: int  # records in the table before the phase
    # Records this phase had written when the sample was taken: by this pod in a
    # pod's files, by all pods once merged. Mid-run it lags by up to about two
    # seconds of writes (connections publish, and workers report, once a
    # second); the last sample follows the last write.
    written: int

    @property
    def records(self) -> int:
        return self.before + self.written

    @property
    def bytes_per_record(self) -> float | None:
        """Space on disk per record (storageBytes / records)."""
        return self.sample.storage_bytes / self.records if self.records else None


def csv_rows(rows: Sequence[StorageRow]) -> list[list[object]]:
    """The rows under `header(rows)`."""
    sharded = _sharded(rows)
    out: list[list[object]] = []
    for row in rows:
        per_record = row.bytes_per_record
        s = row.sample
        out.append(
            [
                f"{row.epoch:.3f}",
                s.data_bytes,
                s.index_bytes,
                s.storage_bytes,
                row.records,
                row.before,
                row.written,
                "" if per_record is None else f"{per_record:.3f}",
                s.engine_records,
                *([encode_shards(s.shards)] if sharded else []),
            ]
        )
    return out


def parse_rows(rows: Sequence[dict[str, str]]) -> list[StorageRow]:
    return [
        StorageRow(
            epoch=float(r["epoch"]),
            sample=StorageSample(
                int(r["dataBytes"]),
                int(r["indexBytes"]),
                int(r["storageBytes"]),
                int(r["engineEstimatedRecords"]),
                decode_shards(r.get("shards")),
            ),
            before=int(r["recordsBefore"]),
            written=int(r["recordsWritten"]),
        )
        for r in rows
    ]


def summary_block(last: StorageRow | None) -> StorageBlock | None:
    """The summary's `storage`: the last sample (taken after the phase ended)."""
    if last is None:
        return None
    per_record = last.bytes_per_record
    return StorageBlock(
        data_bytes=last.sample.data_bytes,
        index_bytes=last.sample.index_bytes,
        storage_bytes=last.sample.storage_bytes,
        records=last.records,
        bytes_per_record=None if per_record is None else round(per_record, 3),
        engine_estimated_records=last.sample.engine_records,
        shards=last.sample.shards,
    )


class _WrittenBy:
    """What one pod is known to have written by a given time: the larger of its
    own storage samples' count and its checkpoints' records (both lower bounds)."""

    def __init__(self, rows: Sequence[StorageRow], writes: Iterable[tuple[float, int]]) -> None:
        ordered_rows = sorted(rows, key=lambda r: r.epoch)
        self._row_times = [r.epoch for r in ordered_rows]
        # The largest count sampled up to each sample: at() is then one lookup.
        self._row_most = list(accumulate((r.written for r in ordered_rows), max))
        # (time, records) of the marks; the order among equal times does not
        # change a total up to a time.
        ordered = sorted(writes, key=lambda w: w[0])
        self._mark_times = [w[0] for w in ordered]
        self._mark_totals = list(accumulate(w[1] for w in ordered))

    def at(self, epoch: float) -> int:
        by_rows = bisect.bisect_right(self._row_times, epoch)
        by_marks = bisect.bisect_right(self._mark_times, epoch)
        return max(
            self._row_most[by_rows - 1] if by_rows else 0,
            self._mark_totals[by_marks - 1] if by_marks else 0,
        )


class MergedStorage:
    """All pods' samples, each counting what every pod had written, with the pods'
    marks taken one pod at a time (a merge does not keep them all).

    A sample of pod i counts its own `written` plus every other pod's count at
    its time: its own plus (all pods' count at that time) minus pod i's. So each
    pod adds its count at every sample time once, and only these sums are kept.
    """

    def __init__(self, pods: Sequence[Sequence[StorageRow]]) -> None:
        self._pods = pods
        self._everyone = dict.fromkeys((row.epoch for rows in pods for row in rows), 0)
        self._own: list[list[int]] = []

    def add(self, writes: Iterable[tuple[float, int]]) -> None:
        """The next pod's (in the order given) marks, as (time, records written)."""
        rows = self._pods[len(self._own)]
        known = _WrittenBy(rows, (w for w in writes if w[1]))
        everyone = self._everyone
        for epoch in everyone:
            everyone[epoch] += known.at(epoch)
        self._own.append([known.at(row.epoch) for row in rows])

    def rows(self) -> list[StorageRow]:
        """The samples in time order (the pods' order among equal times)."""
        if len(self._own) != len(self._pods):
            raise ValueError(f"{len(self._own)} of {len(self._pods)} pods' marks added")
        merged = [
            replace(row, written=row.written + self._everyone[row.epoch] - own)
            for rows, owns in zip(self._pods, self._own, strict=True)
            for row, own in zip(rows, owns, strict=True)
        ]
        return sorted(merged, key=lambda r: r.epoch)
