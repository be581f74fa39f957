"""Client usage: the CPU budget read from cgroup files, per-pod figures, exact merge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_contract.summary import ClientPod, StepSummary
from dbbench_runner.client_usage import (
    CLIENT_BOUND_THRESHOLD,
    PodUsage,
    ProcessUsage,
    pod_usage,
    pods_from_summary,
    summary_fields,
    thread_wait_seconds,
)
from dbbench_runner.config import parse_config
from dbbench_runner.cpu_budget import cgroup_quota, cpu_budget, usable_cores
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.storage import StorageRow


def env(pod: int = 0) -> Environment:
    return Environment(target=TargetInfo(name="t", engine="mariadb"), pod=RunnerPod(index=pod))


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_v2_quota_is_the_smallest_on_the_way_to_the_root(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    write(root / "cgroup.controllers", "cpu memory")
    write(root / "cpu.max", "max 100000")
    write(root / "kubepods" / "cpu.max", "400000 100000")  # the node's pods: 4 CPUs
    write(root / "kubepods" / "pod1" / "cpu.max", "150000 100000")  # this pod: 1.5 CPUs
    write(root / "kubepods" / "pod1" / "c1" / "cpu.max", "max 100000")
    proc = tmp_path / "proc-cgroup"
    write(proc, "0::/kubepods/pod1/c1")
    assert cgroup_quota(root, proc) == 1.5
    write(proc, "0::/kubepods")
    assert cgroup_quota(root, proc) == 4.0
    write(proc, "0::/")  # a container's own namespace: its cgroup is the root
    assert cgroup_quota(root, proc) is None
    assert cpu_budget(root, proc) == usable_cores()


def test_v1_quota_and_unlimited(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    mount = root / "cpu,cpuacct"
    write(mount / "cpu.cfs_quota_us", "-1")
    write(mount / "cpu.cfs_period_us", "100000")
    write(mount / "kubepods" / "p" / "cpu.cfs_quota_us", "50000")
    write(mount / "kubepods" / "p" / "cpu.cfs_period_us", "100000")
    proc = tmp_path / "proc-cgroup"
    write(proc, "4:memory:/kubepods/p\n3:cpu,cpuacct:/kubepods/p\n0::/")
    assert cgroup_quota(root, proc) == 0.5
    assert cpu_budget(root, proc) == 0.5
    write(proc, "3:cpu,cpuacct:/")
    assert cgroup_quota(root, proc) is None
    assert cgroup_quota(tmp_path / "missing", proc) is None


def test_this_machine_and_a_pinned_child() -> None:
    budget = cpu_budget()
    assert 0 < budget <= (os.cpu_count() or 1)
    # sched_setaffinity is a real limit the budget honours.
    code = "from dbbench_runner.cpu_budget import cpu_budget; print(cpu_budget())"
    pinned = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(pinned.stdout) == 1.0


@pytest.mark.parametrize(
    ("budget", "threads", "processes", "expected"),
    [(1.0, 8, None, 1), (1.5, 8, None, 2), (4.0, 2, None, 2), (0.5, 8, None, 1), (4.0, 8, 3, 3)],
)
def test_processes_follow_the_budget(
    budget: float, threads: int, processes: int | None, expected: int
) -> None:
    raw: dict[str, object] = {
        "target": {"name": "x", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
        "dataset": {"shape": "flat45", "records": 10},
        "phase": {"name": "p", "type": "insert"},
        "threads": threads,
    }
    if processes is not None:
        raw["processes"] = processes
    assert parse_config(raw).worker_processes(budget) == expected


def test_thread_wait_is_read_from_the_kernel() -> None:
    waits: list[float] = []

    def spin() -> None:
        before = thread_wait_seconds()
        sum(range(200_000))
        waits.append(thread_wait_seconds() - before)

    thread = threading.Thread(target=spin)
    thread.start()
    thread.join()
    assert Path("/proc/thread-self/schedstat").is_file()
    assert waits[0] >= 0.0
    assert thread_wait_seconds(Path("/nonexistent")) == 0.0


def test_pod_figures() -> None:
    processes = [ProcessUsage(1.8, 0.1, 2.0), ProcessUsage(1.6, 0.3, 2.1)]
    pod = pod_usage(0, 2.0, processes, parent_cpu=0.2, operations=100_000)
    assert pod.cpu_seconds == pytest.approx(3.6)
    assert pod.wall_seconds == 2.1
    assert pod.utilization == pytest.approx(3.6 / 4.2)
    assert pod.demand == pytest.approx(4.0 / 4.2)
    assert pod.bound
    light = pod_usage(1, 2.0, [ProcessUsage(0.1, 0.0, 2.0)], parent_cpu=0.0, operations=100)
    assert not light.bound
    assert light.recorded().cpu_per_op_us == pytest.approx(1000.0)
    assert PodUsage.from_recorded(ClientPod.from_wire(json.loads(
        json.dumps(pod.recorded().to_wire())))) == pod  # fmt: skip
    fields = summary_fields([light, pod])
    assert fields["client_bound"] is True  # one saturated pod is enough
    assert fields["client_bound_threshold"] == CLIENT_BOUND_THRESHOLD
    assert fields["client_cpus"] == 4.0
    assert fields["client_cpu_seconds"] == pytest.approx(3.7)
    assert fields["client_utilization"] == pytest.approx(3.7 / (4.0 + 4.2))
    assert fields["client_cpu_per_op_us"] == pytest.approx(3.7 / 100_100 * 1e6)
    assert [p.pod for p in fields["client_by_pod"]] == [0, 1]
    assert summary_fields([])["client_bound"] is False
    older = StepSummary(target="t", engine="mariadb", phase="p", type="mix", operations=3)
    assert pods_from_summary(older) == []


def test_merge_keeps_every_pods_usage(tmp_path: Path) -> None:
    usages = [
        pod_usage(0, 1.0, [ProcessUsage(0.95, 0.2, 1.0)], 0.01, 1000),
        pod_usage(1, 1.0, [ProcessUsage(0.20, 0.0, 1.0)], 0.01, 1000),
    ]
    outs = []
    for index, usage in enumerate(usages):
        m = Measurements(checkpoint_every=10)
        for n in range(1000):
            m.record("read", 100 + n, Status(ok=True, rows=1), 1000.0 + n / 1000)
        m.flush(1001.0)
        meta = RunMeta(
            "t", "mariadb", "p", "mix", (index,), 2, 1, 1000.0, 1001.0, 100, 0.01, "v", "operations"
        )
        storage = [StorageRow(1000.0, StorageSample(1, 1, 1, 1), before=1, written=0)]
        write_results(tmp_path / f"pod{index}", meta, m, storage, env(index), client=[usage])
        outs.append(tmp_path / f"pod{index}")
    pod0 = json.loads((outs[0] / "summary.json").read_text())
    assert pod0["clientBound"] is True
    assert json.loads((outs[1] / "summary.json").read_text())["clientBound"] is False
    merged = merge(tmp_path / "merged", outs)
    assert merged.client_bound is True
    assert merged.client_cpus == 2.0
    assert merged.client_cpu_seconds == pytest.approx(0.96 + 0.21)
    assert [p.bound for p in merged.client_by_pod] == [True, False]
