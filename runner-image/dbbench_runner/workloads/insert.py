"""insert: load this worker's slice of the phase's record numbers in batches of batchSize.

The numbers are firstRecord..firstRecord + records - 1 (1..records by default),
so a second insert phase continues after the first instead of colliding with it.
A data set read from files (dataset.source) is loaded by the table's first insert:
this worker's rows of the files (dbbench_runner.sources), each batch knowing the
file and line of its records.
"""

from __future__ import annotations

from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.keyspace import split
from dbbench_runner.operations import Insert, Operation
from dbbench_runner.sources import SourceRow, source_rows


def insert_operations(
    config: StepConfig, dataset: DatasetGenerator, worker: int
) -> Iterator[Operation]:
    if config.loads_source:
        yield from _source_batches(config, dataset, worker)
        return
    offset = config.first_new_record - 1
    numbers = split(config.dataset.records, config.workers_total, worker)
    batch = config.phase.batch_size
    for start in range(numbers.start + offset, numbers.stop + offset, batch):
        end = min(start + batch, numbers.stop + offset)
        yield Insert(tuple(dataset.record(n) for n in range(start, end)), last_number=end - 1)


def _source_batches(
    config: StepConfig, dataset: DatasetGenerator, worker: int
) -> Iterator[Operation]:
    batch: list[SourceRow] = []
    for row in source_rows(config, dataset, worker):
        batch.append(row)
        if len(batch) == config.phase.batch_size:
            yield _insert(batch, dataset.key_column)
            batch = []
    if batch:
        yield _insert(batch, dataset.key_column)


def _insert(batch: list[SourceRow], key: str) -> Insert:
    numbers = [row.record[key] for row in batch]
    return Insert(
        tuple(row.record for row in batch),
        last_number=max(n for n in numbers if isinstance(n, int)),
        origins=tuple((row.file, row.line) for row in batch),
    )
