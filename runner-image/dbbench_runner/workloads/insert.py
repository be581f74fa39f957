"""insert: load this worker's slice of the phase's record numbers in batches of batchSize.

The numbers are firstRecord..firstRecord + records - 1 (1..records by default),
so a second insert phase continues after the first instead of colliding with it.
"""

from __future__ import annotations

from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.keyspace import split
from dbbench_runner.operations import Insert, Operation


def insert_operations(
    config: StepConfig, dataset: DatasetGenerator, worker: int
) -> Iterator[Operation]:
    offset = config.first_new_record - 1
    numbers = split(config.dataset.records, config.workers_total, worker)
    batch = config.phase.batch_size
    for start in range(numbers.start + offset, numbers.stop + offset, batch):
        end = min(start + batch, numbers.stop + offset)
        yield Insert(tuple(dataset.record(n) for n in range(start, end)), last_number=end - 1)
