from __future__ import annotations

import itertools

import pytest

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.keyspace import Permutation, new_record_number, split, worker_index
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
        step = config({"type": "pointReads", "keys": 500}, pods, pod, threads)
        for thread in range(threads):
            for operation in operations_for(step, generator, worker_index(pod, threads, thread)):
                assert isinstance(operation, Read)
                keys.append(operation.key)
    assert len(keys) == 500
    assert len(set(keys)) == 500
    assert set(keys) <= {generator.key(n) for n in range(1, 998)}
