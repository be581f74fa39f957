"""A connection's ended seconds on disk, not in memory: the runner's memory stays
flat however long a phase runs (and so whatever the data set's size).

Each second of each operation type is a sparse latency histogram (a few
hundred buckets), needed only when the step's files are written
(series-seconds.csv, the .hlog intervals). Kept in memory they grew with the
phase: `make bench`'s generate + measure path went from 36 to 81 MiB between
100,000 and 2,000,000 records. Instead a connection appends every ended second
to its own spool file (one line each, in time order, once a second: no lock,
no file kept open), and the step's files are written from a heap merge over
the spools, holding one second per spool.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from dbbench_runner.mark_files import read_lines
from dbbench_runner.measurement import SecondBucket

# (epoch second, operation type, the second's bucket)
Second = tuple[int, str, SecondBucket]
SUFFIX = ".spool"


def spool_path(directory: Path, worker: int) -> Path:
    """Worker (connection) `worker`'s spool: a dot-file, never uploaded as a result."""
    return directory / f".seconds-{worker}{SUFFIX}"


def remove_spools(directory: Path) -> None:
    """Delete the spools in `directory` (once the step's files are written)."""
    for path in directory.glob(f".seconds-*{SUFFIX}"):
        path.unlink(missing_ok=True)


def _line(second: int, kind: str, bucket: SecondBucket) -> str:
    counts = " ".join(f"{index}:{count}" for index, count in bucket.counts.items())
    return f"{second},{kind},{bucket.operations},{bucket.errors},{bucket.latency_sum_us},{counts}\n"


def write_seconds(path: Path, seconds: Iterable[Second]) -> None:
    """Append ended seconds (in time order, after those already there)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(_line(*second) for second in seconds)


def read_seconds(path: Path) -> Iterator[Second]:
    """A spool's seconds in file order, read a block at a time."""
    for line in read_lines(path):
        if not line:
            continue
        second, kind, operations, errors, latency, counts = line.split(",", 5)
        buckets = (pair.split(":") for pair in counts.split())
        yield (
            int(second),
            kind,
            SecondBucket(
                int(operations), int(errors), int(latency), {int(i): int(n) for i, n in buckets}
            ),
        )


def _key(second: Second) -> tuple[int, str]:
    return second[0], second[1]


def merged_seconds(sources: Sequence[Iterable[Second]]) -> Iterator[Second]:
    """The seconds of sources each in (second, type) order, in that order, those of
    one second and type from several sources (connections) added into a new bucket."""
    key: tuple[int, str] | None = None
    total = SecondBucket()
    for second, kind, bucket in heapq.merge(*sources, key=_key):
        if key is not None and key != (second, kind):
            yield *key, total
            total = SecondBucket()
        key = second, kind
        total.add(bucket)
    if key is not None:
        yield *key, total
