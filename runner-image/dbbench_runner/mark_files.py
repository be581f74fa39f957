"""Pods' checkpoints.csv files read back as one stream of marks in time order.

A merged step's checkpoints.csv and series-ops.csv take every pod's marks in
order (see dbbench_runner.series): 64 pods of a minute's load are ~77,000 marks,
~14 MB as a sorted list of tuples. Each pod's file is already in order (the
runner writes its marks sorted), so a heap merge over the files yields the same
sequence as sorting them all, holding one mark and a few KB of file per pod.

A file is read a block at a time, reopened at its offset for the next block:
no file stays open, so a step of the service's 1,024 pods needs no more file
descriptors than one.
"""

from __future__ import annotations

import csv
import heapq
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from dbbench_runner.series import Mark

HEADER = ("epoch", "operations", "records", "latencyUs")
# Bytes read per reopening: ~45 marks, what a pod's stream holds at once.
BLOCK = 2048


def write_marks(path: Path, marks: Iterable[Mark]) -> None:
    """A checkpoints.csv of `marks` as given (repr: epochs read back bit for bit)."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        rows = csv.writer(handle, lineterminator="\n")
        rows.writerow(HEADER)
        rows.writerows([repr(t), n, r, u] for t, n, r, u in marks)


def read_lines(path: Path, block: int = BLOCK) -> Iterator[str]:
    """The file's lines (their ends dropped), read `block` bytes at a time and
    cut one at a time (a block's list of lines would double what a pod holds)."""
    offset = 0
    while True:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(block)
            if not data:
                return
            end = data.rfind(b"\n") + 1
            if end == 0:  # a line longer than the block, or the last one without its end
                data += handle.readline()
                end = len(data)
        offset += end
        start = 0
        while start < end:
            stop = data.find(b"\n", start, end)
            stop = end if stop < 0 else stop
            yield data[start:stop].decode("utf-8").rstrip("\r")
            start = stop + 1


def read_marks(path: Path, block: int = BLOCK) -> Iterator[Mark]:
    """A checkpoints.csv's marks in file order, read a block at a time."""
    rows = csv.reader(read_lines(path, block))
    header = next(rows, None)
    if header is None:
        return
    at = [header.index(name) for name in HEADER]
    for row in rows:
        if row:
            yield float(row[at[0]]), int(row[at[1]]), int(row[at[2]]), int(row[at[3]])


def in_order(
    times: Sequence[float], counts: Sequence[int], records: Sequence[int], latency: Sequence[int]
) -> bool:
    """Whether marks (as Checkpoints' columns) are sorted as `sorted` sorts them."""
    previous: Mark | None = None
    for mark in zip(times, counts, records, latency, strict=True):
        if previous is not None and mark < previous:
            return False
        previous = mark
    return True


def merged_marks(paths: Sequence[Path]) -> Iterator[Mark]:
    """Every file's marks in order, each file's being in order: what sorting them
    all would give (marks are compared whole, so ties come out alike)."""
    return heapq.merge(*(read_marks(path) for path in paths))
