"""Workloads decide the next operation; they never touch a database."""

from __future__ import annotations

import random
from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.keyspace import split, step_position, stream_seed
from dbbench_runner.operations import Operation
from dbbench_runner.workloads.insert import insert_operations
from dbbench_runner.workloads.mix import mix_operations
from dbbench_runner.workloads.point_reads import point_read_operations
from dbbench_runner.workloads.query import query_operations

__all__ = ["operation_budget", "operations_for"]


def operation_budget(config: StepConfig, worker: int) -> int | None:
    """Measured operations this worker must perform (None: bounded by time only)."""
    if config.operations is None:
        return None
    return len(split(config.operations, config.workers_total, worker))


def operations_for(
    config: StepConfig, dataset: DatasetGenerator, worker: int
) -> Iterator[Operation]:
    """The (possibly endless) stream of operations of one worker connection."""
    phase = config.phase
    # Each worker has its own seeded stream: reproducible, uncorrelated across
    # workers, and new in every phase and repeat (a repeat replays nothing).
    position = step_position(config.phase_index, config.repeat)
    rng = random.Random(stream_seed(config.dataset.seed, position, worker))  # noqa: S311
    if phase.type == "insert":
        return insert_operations(config, dataset, worker)
    if phase.type == "mix":
        return mix_operations(config, dataset, worker, rng)
    if phase.type == "query":
        return query_operations(config, rng)
    return point_read_operations(config, dataset, worker, rng)
