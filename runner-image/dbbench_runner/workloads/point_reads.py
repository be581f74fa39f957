"""pointReads: K distinct random keys out of the loaded records, each read once.

Positions 0..K-1 of a seeded permutation of the records are split among the
workers, so the K keys are distinct across all pods without storing them.
A phase given a `duration` (and maybe a `warmup`) reads its keys again, in the
same order, until the time is up: warm-up would otherwise use up the keys and
leave the measured part nothing to read.
"""

from __future__ import annotations

from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.keyspace import Permutation, split
from dbbench_runner.operations import Operation, Read


def point_read_operations(
    config: StepConfig, dataset: DatasetGenerator, worker: int
) -> Iterator[Operation]:
    phase = config.phase
    assert phase.keys is not None  # guaranteed by config validation
    records = config.dataset.records
    keys = min(phase.keys, records)
    permutation = Permutation(records, config.dataset.seed)
    secondary = phase.read_preference != "primary"
    positions = split(keys, config.workers_total, worker)
    while positions:
        for position in positions:
            yield Read(dataset.read_key(permutation(position - 1) + 1), secondary_ok=secondary)
        if phase.duration is None:
            return
