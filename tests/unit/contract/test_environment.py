"""environment.json: camelCase on the wire, read back by newer programs alike, the
merged step's file listing every pod's, and the data-to-memory ratio."""

from __future__ import annotations

import pytest

from dbbench_contract.environment import (
    Environment,
    MergedEnvironment,
    RunnerPod,
    ServerInfo,
    TargetInfo,
    data_to_memory,
)


def test_the_ratio_is_data_over_memory_and_unknown_without_either() -> None:
    assert data_to_memory(3 * 2**30, 2 * 2**30) == pytest.approx(1.5)  # no longer fits
    assert data_to_memory(None, 2**30) is None
    assert data_to_memory(2**30, None) is None
    assert data_to_memory(2**30, 0) is None  # an external target: no limit known


def test_an_environment_round_trips_through_its_file_and_ignores_newer_keys() -> None:
    written = Environment(
        target=TargetInfo(name="db", engine="mysql", read_replicas=("db-1",)),
        server=ServerInfo(version="9.7.0", settings={"max_connections": "213"}),
        data_to_memory_ratio=0.25,
        pod=RunnerPod(index=1, count=2, threads=8),
    )
    raw = written.to_wire()
    assert raw["target"]["readReplicas"] == ["db-1"]
    assert raw["dataToMemoryRatio"] == 0.25
    assert Environment.from_wire(raw) == written
    newer = {**raw, "writtenByANewerRunner": 1, "server": {**raw["server"], "extra": "x"}}
    assert Environment.from_wire(newer) == written


def test_a_merged_steps_environment_lists_every_pods_and_leads_with_the_first() -> None:
    pods = tuple(Environment(target=TargetInfo(name="db", engine="mariadb"),
                             pod=RunnerPod(index=i, count=3)) for i in range(3))  # fmt: skip
    merged = MergedEnvironment.from_wire({"pods": [p.to_wire() for p in pods]})
    assert merged.pods == pods
    assert merged.first.pod.index == 0
