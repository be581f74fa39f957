"""Seeded runner pods' result directories, written by the runner's own code, for
merge tests: different loads, start times, latencies and errors per pod, and a
few values in the clamped extremes.

    python -m tests.unit.runner.merge_pods DIR   # the expected merges: tests/data/merge
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.storage import StorageRow

STARTED = 1_750_000_000.0
PODS = 4
SECONDS = 8
# (phase, type, series unit, operation kinds)
PHASES = (
    ("reads", "pointReads", "operations", ("read", "update")),
    ("load", "insert", "records", ("insert",)),
)


def write_pod(
    out: Path, phase: int, pod: int, pods: int = PODS, checkpoint_every: int = 50
) -> None:
    """Pod `pod` of a step of `pods`: seeded by (phase, pod), so the same files each time."""
    name, kind, unit, kinds = PHASES[phase]
    rng = random.Random(phase * 1000 + pod)
    m = Measurements(checkpoint_every=checkpoint_every, series_unit=unit)  # type: ignore[arg-type]
    started = STARTED + (pod % 4) * 0.37  # pods' seconds overlap, not aligned
    operations = 1500 + 250 * (pod % 5)
    record = 0
    for n in range(operations):
        op = kinds[0] if rng.random() < 0.8 else kinds[-1]
        latency = int(rng.lognormvariate(6.0 + 0.2 * (pod % 3), 0.7)) + 10
        if n % 997 == 0:
            latency = rng.choice((0, 5_000_000_000))  # clamped to the range
        rows = 10 if op == "insert" else 1
        status = Status(ok=False, error="Timeout") if n % 211 == 5 else Status(ok=True, rows=rows)
        if op == "insert":
            record += rows
            m.inserted(record + pod * 10**6, status.rows)
        m.record(op, latency, status, started + n * SECONDS / operations)
    ended = started + SECONDS
    m.flush(ended)
    meta = RunMeta("db", "mariadb", name, kind, (pod,), pods, 4, started, ended, 100, 0.05,
                   "11.8.2-MariaDB", unit, verify_applied=kind == "insert",  # type: ignore[arg-type]
                   writes_records=kind == "insert")  # fmt: skip
    storage = [
        StorageRow(started + t, StorageSample(10**6 * t, 10**5, 10**7, 100 * t),
                   before=0, written=min(record, 150 * t * (pod + 1)))
        for t in range(0, SECONDS + 1, 2)
    ]  # fmt: skip
    env = Environment(target=TargetInfo(name="db", engine="mariadb"), pod=RunnerPod(index=pod))
    write_results(out, meta, m, storage, env)


def write_step(step: Path, phase: int, pods: int = PODS) -> list[Path]:
    """pod-0..pod-(pods-1) of one step; their directories."""
    dirs = [step / f"pod-{i}" for i in range(pods)]
    for pod, directory in enumerate(dirs):
        write_pod(directory, phase, pod, pods)
    return dirs


def write_alike_step(step: Path, phase: int, pods: int, checkpoint_every: int) -> list[Path]:
    """pod-0..pod-(pods-1) that all measured pod 0's load, each with its own index:
    a merge's memory without the merged histograms growing with the pods' variety."""
    dirs = [step / f"pod-{i}" for i in range(pods)]
    write_pod(dirs[0], phase, 0, pods, checkpoint_every)
    for pod, directory in enumerate(dirs[1:], start=1):
        shutil.copytree(dirs[0], directory)
        for name, key in (("summary.json", "pods"), ("environment.json", "pod")):
            document = json.loads((directory / name).read_text())
            if key == "pods":
                document["pods"] = [pod]
            else:
                document["pod"]["index"] = pod
            (directory / name).write_text(json.dumps(document))
    return dirs


def expected(out: Path) -> None:
    """Each phase's merged files, as the merge writes them, under out/<phase>/."""
    for phase, (name, *_) in enumerate(PHASES):
        work = out / f".{name}-pods"
        merge(out / name, write_step(work, phase))
        shutil.rmtree(work)


if __name__ == "__main__":
    expected(Path(sys.argv[1]))
