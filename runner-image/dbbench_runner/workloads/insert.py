"""insert: load this worker's slice of 1..records in batches of batchSize."""

from __future__ import annotations

from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.keyspace import split
from dbbench_runner.operations import Insert, Operation


def insert_operations(
    config: StepConfig, dataset: DatasetGenerator, worker: int
) -> Iterator[Operation]:
    numbers = split(config.dataset.records, config.workers_total, worker)
    batch = config.phase.batch_size
    for start in range(numbers.start, numbers.stop, batch):
        end = min(start + batch, numbers.stop)
        yield Insert(tuple(dataset.record(n) for n in range(start, end)))
