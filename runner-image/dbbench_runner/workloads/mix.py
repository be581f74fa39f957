"""mix: reads, inserts, updates and scans in the configured proportions.

Keys are drawn from the phase's distribution over the loaded records; for
`latest`, recency ranks go first to this worker's own inserts (newest first)
and then down from the end of the loaded set, so reads follow the inserts and
never target a record another worker may not have written yet. A read looks
up the record's `read_key` (vehicle: its VehicleID, whose latest test it
fetches); updates and read-modify-writes address the record by its key and
write values stamped with a number no other write of the run has
(keyspace.write_stamp), so every update changes the stored row, in every
repeat. hotspot's hot set is the lowest dataFraction of the key order
(distributions.py).

With `mix.by: connections` (thread groups) a connection runs only its group's
type (dbbench_contract.api.mix.seat_of): the weights chose its group, not its
operations. The insert group numbers its records among its own connections
(stride: the group's size), so they stay as dense as a weighted mix's.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator

from dbbench_contract.api.mix import MIX_OPERATIONS, seat_of
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.distributions import make_chooser, recency_ranks
from dbbench_runner.keyspace import new_record_number, step_position, write_stamp
from dbbench_runner.operations import Insert, Operation, Read, ReadModifyWrite, Scan, Update


def mix_operations(
    config: StepConfig, dataset: DatasetGenerator, worker: int, rng: random.Random
) -> Iterator[Operation]:
    phase = config.phase
    assert phase.mix is not None  # guaranteed by config validation
    loaded = config.dataset.records
    # New records are numbered after everything earlier phases wrote (firstRecord).
    base = config.first_new_record - 1
    kinds = MIX_OPERATIONS
    weights, inserters, slot = _share(config, worker)
    cumulative = list(itertools.accumulate(weights))
    total = cumulative[-1]
    secondary = phase.read_preference != "primary"
    inserted = 0
    workers = config.workers_total
    keys = config.key_choice
    if keys.type == "latest":
        rank = recency_ranks(keys, loaded, rng)

        def choose() -> int:
            r = rank()
            if r < inserted:
                return new_record_number(base, inserters, slot, inserted - 1 - r)
            return max(1, loaded - (r - inserted))
    else:
        choose = make_chooser(keys, loaded, rng, key_order=dataset.key_order)
    position = step_position(config.phase_index, config.repeat)
    for sequence in itertools.count():
        kind = kinds[bisect.bisect_right(cumulative, rng.random() * total)]
        if kind == "insert":
            number = new_record_number(base, inserters, slot, inserted)
            inserted += 1
            yield Insert((dataset.record(number),), last_number=number)
            continue
        number = choose()
        if kind == "read":
            yield Read(dataset.read_key(number), secondary_ok=secondary)
        elif kind == "update":
            stamp = write_stamp(position, workers, worker, sequence)
            yield Update(dataset.key(number), dataset.update(number, stamp))
        elif kind == "readModifyWrite":
            stamp = write_stamp(position, workers, worker, sequence)
            yield ReadModifyWrite(dataset.key(number), dataset.update(number, stamp))
        else:
            yield Scan(dataset.key(number), config.tuning.scan_length, secondary_ok=secondary)


def _share(config: StepConfig, worker: int) -> tuple[list[int], int, int]:
    """(this connection's weights in MIX_OPERATIONS order, the connections that
    insert beside it, its slot among them): new record numbers are
    base + 1 + slot + sequence x inserters."""
    mix = config.phase.mix
    assert mix is not None  # guaranteed by config validation
    if mix.by == "operations":
        return list(mix.weights), config.workers_total, worker
    pod, thread = divmod(worker, config.threads)
    seat = seat_of(mix, config.pod.count, config.threads, pod, thread)
    weights = [int(kind == seat.operation) for kind in MIX_OPERATIONS]
    return weights, seat.size, seat.rank
