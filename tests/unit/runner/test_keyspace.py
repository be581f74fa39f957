from __future__ import annotations

import itertools

import pytest

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.keyspace import (
    Permutation,
    new_record_number,
    split,
    step_position,
    worker_index,
    write_stamp,
)
from dbbench_runner.operations import Insert, Read
from dbbench_runner.workloads import operations_for


@pytest.mark.parametrize(("total", "parts"), [(10, 3), (1000, 7), (5, 8), (1, 1), (100_003, 64)])
def test_split_has_no_overlap_and_no_gap(total: int, parts: int) -> None:
    slices = [split(total, parts, i) for i in range(parts)]
    numbers = list(itertools.chain.from_iterable(slices))
    assert numbers == list(range(1, total + 1))
    sizes = [len(s) for s in slices]
    assert max(sizes) - min(sizes) <= 1


def test_split_rejects_bad_index() -> None:
    with pytest.raises(ValueError, match="index"):
        split(10, 2, 2)


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 4097])
def test_permutation_is_a_bijection(n: int) -> None:
    permutation = Permutation(n, seed=42)
    assert sorted(permutation(i) for i in range(n)) == list(range(n))


def test_permutation_depends_on_the_seed() -> None:
    a = [Permutation(1000, 1)(i) for i in range(20)]
    b = [Permutation(1000, 2)(i) for i in range(20)]
    assert a != b
    assert a != list(range(20))


def test_new_records_of_concurrent_workers_never_collide() -> None:
    workers = 6
    numbers = [new_record_number(100, workers, w, s) for w in range(workers) for s in range(50)]
    assert len(set(numbers)) == len(numbers)
    assert min(numbers) == 101
    # in lock step, they fill the range without gaps
    assert sorted(numbers) == list(range(101, 101 + workers * 50))


def config(phase: dict[str, object], pods: int, pod: int, threads: int) -> StepConfig:
    return parse_config(
        {
            "target": {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
            "dataset": {"shape": "flat45", "records": 997},
            "phase": {"name": "p", **phase},
            "pod": {"index": pod, "count": pods},
            "threads": threads,
        }
    )


def test_insert_workloads_of_all_pods_write_every_record_once() -> None:
    pods, threads = 3, 4
    generator = generator_for(config({"type": "insert"}, 1, 0, 1).dataset)
    written: list[str] = []
    for pod in range(pods):
        step = config({"type": "insert", "batchSize": 10}, pods, pod, threads)
        for thread in range(threads):
            worker = worker_index(pod, threads, thread)
            for operation in operations_for(step, generator, worker):
                assert isinstance(operation, Insert)
                assert 1 <= len(operation.records) <= 10
                written.extend(str(r["md5"]) for r in operation.records)
    assert sorted(written) == sorted(str(generator.key(n)) for n in range(1, 998))


def test_point_reads_of_all_pods_are_distinct_keys() -> None:
    pods, threads = 2, 3
    generator = generator_for(config({"type": "insert"}, 1, 0, 1).dataset)
    keys: list[object] = []
    for pod in range(pods):
        step = config({"type": "pointReads", "keys": 500, "operations": 500}, pods, pod, threads)
        for thread in range(threads):
            for operation in operations_for(step, generator, worker_index(pod, threads, thread)):
                assert isinstance(operation, Read)
                keys.append(operation.key)
    assert len(keys) == 500
    assert len(set(keys)) == 500
    assert set(keys) <= {generator.key(n) for n in range(1, 998)}


def test_write_stamps_are_unique_over_steps_workers_and_sequences() -> None:
    for workers in (1, 3):
        stamps = [write_stamp(step_position(p, r), workers, w, s)
                  for p in (0, 1, 31) for r in (1, 2, 100)
                  for w in range(workers) for s in range(200)]  # fmt: skip
        assert len(set(stamps)) == len(stamps)
        assert all(0 <= s < 2**62 for s in stamps)
    with pytest.raises(ValueError, match="2\\*\\*62"):
        write_stamp(0, 1, 0, 2**42)
    with pytest.raises(ValueError, match="repeat"):
        step_position(0, 0)


def repeat_config(repeat: int, phase_index: int = 0) -> StepConfig:
    return parse_config(
        {
            "target": {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
            "dataset": {"shape": "news", "records": 997},
            "phase": {"name": "p", "type": "mix", "mix": {"read": 1, "update": 1},
                      "operations": 100},
            "threads": 2,
            "repeat": repeat,
            "phaseIndex": phase_index,
        }
    )  # fmt: skip


def test_every_repeat_and_phase_draws_a_fresh_stream() -> None:
    generator = generator_for(repeat_config(1).dataset)

    def stream(step: StepConfig, worker: int) -> list[object]:
        operations = itertools.islice(operations_for(step, generator, worker), 300)
        return [(op.kind, getattr(op, "key", None), getattr(op, "fields", None))
                for op in operations]  # fmt: skip

    first = stream(repeat_config(1), 0)
    assert first == stream(repeat_config(1), 0)  # reproducible
    for other in (repeat_config(2), repeat_config(1, phase_index=1)):
        again = stream(other, 0)
        keys = [k for _, k, _ in first]
        assert sum(a == b for a, b in zip(keys, [k for _, k, _ in again], strict=True)) < 10
        written = {str(f) for _, _, f in first if f is not None}
        assert not written & {str(f) for _, _, f in again if f is not None}
    assert stream(repeat_config(1), 1) != first  # workers differ too


def test_point_reads_of_a_repeat_read_other_keys() -> None:
    step = config({"type": "pointReads", "keys": 50, "operations": 50}, 1, 0, 1)
    generator = generator_for(step.dataset)
    first = [op.key for op in operations_for(step, generator, 0) if isinstance(op, Read)]
    again = step.model_copy(update={"repeat": 2})
    second = [op.key for op in operations_for(again, generator, 0) if isinstance(op, Read)]
    assert len(set(first)) == len(set(second)) == 50
    assert len(set(first) & set(second)) < 10
