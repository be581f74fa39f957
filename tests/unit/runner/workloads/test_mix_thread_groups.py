"""The mix workload with thread groups (mix.by: connections): each connection's
stream is its group's type only, and the insert group numbers its records
densely among its own connections, across pods."""

from __future__ import annotations

import collections
import itertools

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.keyspace import worker_index
from dbbench_runner.operations import Insert
from dbbench_runner.workloads import operations_for

TARGET = {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1}
MIX = {"read": 85, "insert": 15, "update": 5}


def config(mix: dict[str, object], threads: int, pod: int = 0, pods: int = 1) -> StepConfig:
    return parse_config({
        "target": TARGET,
        "dataset": {"shape": "ycsb", "records": 1000},
        "phase": {"name": "p", "type": "mix", "mix": mix, "operations": 1},
        "threads": threads,
        "pod": {"index": pod, "count": pods},
    })  # fmt: skip


def kinds_by_worker(mix: dict[str, object], threads: int, pods: int) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for pod in range(pods):
        step = config(mix, threads, pod, pods)
        generator = generator_for(step.dataset)
        for thread in range(threads):
            worker = worker_index(pod, threads, thread)
            ops = itertools.islice(operations_for(step, generator, worker), 400)
            found[worker] = {op.kind for op in ops}
    return found


def test_each_connection_runs_only_its_groups_type_over_all_pods() -> None:
    # 2 pods x 7 threads = 14 connections: 11 read, 2 insert, 1 update.
    seen = kinds_by_worker({**MIX, "by": "connections"}, threads=7, pods=2)
    assert all(len(kinds) == 1 for kinds in seen.values()), seen
    groups = collections.Counter(next(iter(kinds)) for kinds in seen.values())
    assert groups == {"read": 11, "insert": 2, "update": 1}
    # Each pod holds its share: pod 0 and pod 1 each have an inserter.
    inserters = [w for w, kinds in seen.items() if kinds == {"insert"}]
    assert sorted(w // 7 for w in inserters) == [0, 1]


def test_weights_per_operation_put_every_type_on_every_connection() -> None:
    seen = kinds_by_worker(MIX, threads=7, pods=2)
    assert all(kinds == {"read", "insert", "update"} for kinds in seen.values()), seen


def test_the_insert_group_numbers_its_records_densely() -> None:
    # 3 inserters of 10 connections (ratio 7:3): records 1001.. in stride 3, not 10.
    numbers: list[int] = []
    for worker in range(10):
        step = config({"read": 7, "insert": 3, "by": "connections"}, threads=10)
        ops = operations_for(step, generator_for(step.dataset), worker)
        numbers += [op.last_number for op in itertools.islice(ops, 5) if isinstance(op, Insert)]
    assert sorted(numbers) == list(range(1001, 1016))
