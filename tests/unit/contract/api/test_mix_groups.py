"""Thread groups (`spec.phases[].mix.by: connections`): how a run's connections
form the groups, over several runner pods, and what admission refuses.

What the servers saw of the groups: tests/integration/runner/test_thread_groups_at_the_server.py.
"""

from __future__ import annotations

import collections
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.api.admission import check_manifest
from dbbench_contract.api.mix import Mix, group_sizes, groups_problem, seat_of
from dbbench_contract.api.semantics import check
from dbbench_contract.step import StepConfig

OLTP = Mix(read=85, insert=15, update=5, by="connections")


@pytest.mark.parametrize(
    ("connections", "sizes"),
    [
        # The original's threads: exactly its ratio.
        (105, {"read": 85, "insert": 15, "update": 5}),
        # 80.95 / 14.29 / 4.76: the two largest remainders get the two left over.
        (100, {"read": 81, "insert": 14, "update": 5}),
        (14, {"read": 11, "insert": 2, "update": 1}),
        # update's 0.38 rounds to nothing: it takes one of read's (a run without
        # updaters would be another workload).
        (8, {"read": 6, "insert": 1, "update": 1}),
        (3, {"read": 1, "insert": 1, "update": 1}),
    ],
)
def test_groups_are_the_weights_share_of_the_connections(
    connections: int, sizes: dict[str, int]
) -> None:
    assert group_sizes(OLTP, connections) == sizes
    assert sum(sizes.values()) == connections


def test_zero_weights_have_no_group_and_ties_go_to_the_earlier_type() -> None:
    mix = Mix(read=1, scan=1, read_modify_write=1, by="connections")
    assert group_sizes(mix, 4) == {"read": 2, "scan": 1, "readModifyWrite": 1}
    assert mix.groups == ("read", "scan", "readModifyWrite")


@pytest.mark.parametrize(("pods", "threads"), [(1, 105), (4, 25), (3, 7), (5, 2)])
def test_every_pod_holds_its_share_of_every_group_and_the_run_holds_the_groups(
    pods: int, threads: int
) -> None:
    seats = {(p, t): seat_of(OLTP, pods, threads, p, t) for p in range(pods)
             for t in range(threads)}  # fmt: skip
    run = collections.Counter(s.operation for s in seats.values())
    assert dict(run) == group_sizes(OLTP, pods * threads)
    for kind, size in run.items():
        # Ranks within a group: 0..size-1, each once (the insert group numbers its
        # records by them).
        assert sorted(s.rank for s in seats.values() if s.operation == kind) == list(range(size))
        assert {s.size for s in seats.values() if s.operation == kind} == {size}
        per_pod = [sum(1 for (p, _), s in seats.items() if p == pod and s.operation == kind)
                   for pod in range(pods)]  # fmt: skip
        assert max(per_pod) - min(per_pod) <= 1, (kind, per_pod)


def test_a_seat_outside_the_pods_or_threads_is_refused() -> None:
    with pytest.raises(ValueError, match="not in 2 pods x 3 threads"):
        seat_of(OLTP, 2, 3, 2, 0)


def spec(runner: dict[str, Any], mix: dict[str, Any], threads: int | None = None) -> dict[str, Any]:
    phase: dict[str, Any] = {"name": "oltp", "type": "mix", "mix": mix, "duration": "1m"}
    if threads is not None:
        phase["threads"] = threads
    return {
        "targets": [{"name": "db", "engine": "mariadb"}],
        "runner": runner,
        "phases": [{"name": "load", "type": "insert"}, phase],
    }


def test_admission_refuses_fewer_connections_than_groups_naming_the_field_and_the_fix() -> None:
    body = spec({"pods": 1, "threads": 2}, {"read": 8, "insert": 1, "update": 1,
                                            "by": "connections"})  # fmt: skip
    problems = check(parse_spec(body))
    assert [p.field for p in problems] == ["spec.phases[1].mix.by"]
    message = problems[0].message
    assert "3 non-zero weights (read, insert, update)" in message
    assert "the phase has 2 (runner.pods x threads)" in message
    assert "raise threads or runner.pods to at least 3" in message
    # What `dbbench check` says of the manifest: the same problem.
    manifest = {"apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun",
                "metadata": {"name": "groups"}, "spec": body}  # fmt: skip
    assert [str(p) for p in check_manifest(manifest)] == [str(problems[0])]


def test_admission_counts_every_pod_and_the_phases_own_threads() -> None:
    groups = {"read": 8, "insert": 1, "update": 1, "by": "connections"}
    assert check(parse_spec(spec({"pods": 3, "threads": 1}, groups))) == []
    assert check(parse_spec(spec({"pods": 1, "threads": 1}, groups, threads=3))) == []
    refused = check(parse_spec(spec({"pods": 1, "threads": 8}, groups, threads=2)))
    assert [p.field for p in refused] == ["spec.phases[1].mix.by"]
    # Weights per operation need no connection of their own.
    weights = {"read": 8, "insert": 1, "update": 1}
    assert check(parse_spec(spec({"pods": 1, "threads": 1}, weights))) == []
    assert groups_problem(Mix(read=1, update=1), 1) is None


def test_a_step_file_with_too_few_connections_is_refused_naming_the_field() -> None:
    raw = {
        "target": {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
        "dataset": {"shape": "flat45", "records": 100},
        "phase": {"name": "p", "type": "mix", "operations": 10,
                  "mix": {"read": 1, "update": 1, "by": "connections"}},
        "threads": 1,
    }  # fmt: skip
    with pytest.raises(ValueError, match=r"phase\.mix\.by: by: connections gives each"):
        StepConfig.model_validate(raw)
    two_pods = StepConfig.model_validate({**raw, "pod": {"index": 1, "count": 2}})
    assert two_pods.connection_groups == {"read": 1, "update": 1}
    weights = {**raw["phase"], "mix": {"read": 1, "update": 1}}
    assert StepConfig.model_validate({**raw, "phase": weights}).connection_groups == {}
