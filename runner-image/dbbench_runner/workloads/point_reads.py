"""pointReads: reads by key from the loaded records, keys chosen by `distribution`.

- uniform (the default): K = `keys` distinct random keys, each read once.
  Positions 0..K-1 of a seeded permutation of the records are split among the
  workers, so the K keys are distinct across all pods without storing them. A
  phase given a `duration` (and maybe a `warmup`) reads its keys again, in the
  same order, until the time is up: warm-up would otherwise use up the keys
  and leave the measured part nothing to read. The permutation is new in every
  phase and repeat.
- zipfian, latest, hotspot: every read draws its key from the distribution
  over all loaded records (with replacement, as a mix's reads do); the phase is
  bounded by `duration` or `operations`. hotspot's hot set is the lowest
  dataFraction of the key order (distributions.py), so it is contiguous in the
  table's clustered order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.distributions import make_chooser
from dbbench_runner.keyspace import Permutation, split, step_position, stream_seed
from dbbench_runner.operations import Operation, Read


def point_read_operations(
    config: StepConfig, dataset: DatasetGenerator, worker: int, rng: random.Random
) -> Iterator[Operation]:
    phase = config.phase
    secondary = phase.read_preference != "primary"
    records = config.dataset.records
    keys = config.keys
    if keys is None:  # a distribution other than uniform: a key drawn for every read
        choose = make_chooser(config.key_choice, records, rng, key_order=dataset.key_order)
        read_key = dataset.read_key
        while True:
            yield Read(read_key(choose()), secondary_ok=secondary)
    # One permutation for all workers and pods of the step (their keys stay distinct).
    position = step_position(config.phase_index, config.repeat)
    permutation = Permutation(records, stream_seed(config.dataset.seed, position))
    positions = split(keys, config.workers_total, worker)
    while positions:
        for index in positions:
            yield Read(dataset.read_key(permutation(index - 1) + 1), secondary_ok=secondary)
        if config.duration is None:
            return
