"""The step merge's output, file by file, against what the merge wrote before it
was made to stream (tests/data/merge, `python -m tests.unit.runner.merge_pods`):
pods' per-second histograms, totals, series, checkpoints and storage merged
exactly, whichever way they are added up. And its memory: a merge holds one pod
at a time and the merged result, and streams the pods' marks back from their
files, so its peak does not follow the number of pods.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_contract.summary import StepSummary
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.storage import StorageRow
from tests.unit.runner.merge_pods import PHASES, STARTED, write_alike_step, write_step

EXPECTED = Path(__file__).parents[2] / "data" / "merge"


def files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.relative_to(directory).as_posix().startswith("pod-")
    }


@pytest.mark.parametrize("phase", range(len(PHASES)), ids=[p[0] for p in PHASES])
def test_merged_files_are_those_of_the_exact_merge(tmp_path: Path, phase: int) -> None:
    step = tmp_path / "step"
    merge(step, write_step(step, phase))
    expected = files(EXPECTED / PHASES[phase][0])
    merged = files(step)
    assert "summary.json" in expected
    assert sorted(merged) == sorted(expected)
    for name, data in expected.items():
        assert merged[name] == data, name


def test_a_pod_whose_marks_are_out_of_order_merges_alike(tmp_path: Path) -> None:
    # Runners write their marks in order, and the merge streams them so; a file
    # that is not (hand-made, or from another writer) is sorted aside first.
    step = tmp_path / "step"
    inputs = write_step(step, 0)
    path = inputs[1] / "checkpoints.csv"
    header, *rows = path.read_text().splitlines(keepends=True)
    path.write_text(header + "".join(reversed(rows)))
    merge(step, inputs)
    assert files(step) == files(EXPECTED / PHASES[0][0])
    assert [p.name for p in step.iterdir() if p.name.startswith(".")] == []


def merge_peak(tmp_path: Path, phase: int, pods: int) -> int:
    """tracemalloc's peak over a merge of `pods` pods that measured the same load
    (a checkpoint every 5 operations: ~400 marks a pod), so that only what the
    merge keeps per pod can grow, not the merged histograms."""
    step = tmp_path / f"step{phase}-{pods}"
    inputs = write_alike_step(step, phase, pods, checkpoint_every=5)
    tracemalloc.start()
    try:
        merge(step, inputs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("phase", range(len(PHASES)), ids=[p[0] for p in PHASES])
def test_merge_memory_is_flat_in_the_number_of_pods(tmp_path: Path, phase: int) -> None:
    few, many = merge_peak(tmp_path, phase, 4), merge_peak(tmp_path, phase, 64)
    # Measured: 1.2-1.4 MiB for 4 pods, 2.1-2.3 MiB for 64 (a pod's summary fields,
    # storage samples and its block of marks being streamed: ~15 KiB a pod).
    # The merge that kept every pod's marks (sorted as tuples for checkpoints.csv,
    # and an insert phase's again for the storage counts), summaries and
    # environments: reads 3.8 -> 6.8 MiB, load 3.0 -> 37.9 MiB.
    assert many < few + 1.5 * 2**20, (few, many)
    assert many < 4 * 2**20, (few, many)


def _reads_pod(out: Path, pod: int, operations: int, failed: int) -> None:
    """A point-read pod's files as the runner writes them, `failed` of its reads
    failed calls."""
    m = Measurements(checkpoint_every=50)
    for n in range(operations):
        status = Status.failed("Timeout") if n < failed else Status(ok=True, rows=1)
        m.record("read", 200 + n, status, STARTED + n / operations)
    m.flush(STARTED + 1)
    meta = RunMeta("db", "mariadb", "reads", "pointReads", (pod,), 2, 2, STARTED, STARTED + 1,
                   100, 0.1, "11.8.2-MariaDB", "operations")  # fmt: skip
    sample = StorageRow(STARTED + 1, StorageSample(10**6, 10**5, 10**7, 500), 500, 0)
    env = Environment(target=TargetInfo(name="db", engine="mariadb"), pod=RunnerPod(index=pod))
    write_results(out, meta, m, [sample], env)


def test_a_pod_that_failed_on_its_own_fails_the_merged_step(tmp_path: Path) -> None:
    # Pod 0: 20 reads, 10 failed (50% > maxErrorRate 10%): it failed, and its Job
    # with it. Pod 1: 1000 reads, none failed. Over both, 10 of 1020 (1%) is under
    # the limit; the merged step still says failed, naming pod 0 and why.
    _reads_pod(tmp_path / "pod-0", 0, 20, 10)
    _reads_pod(tmp_path / "pod-1", 1, 1000, 0)
    pod0 = StepSummary.from_wire(json.loads((tmp_path / "pod-0" / "summary.json").read_text()))
    assert pod0.status == "failed"
    merged = merge(tmp_path / "step", [tmp_path / "pod-0", tmp_path / "pod-1"])
    assert (merged.operations, merged.errors) == (1020, 10)
    assert merged.error_rate < merged.max_error_rate
    assert merged.status == "failed"
    assert merged.reason == "runner pod 0 failed: error rate 0.5000 exceeds maxErrorRate 0.1"
