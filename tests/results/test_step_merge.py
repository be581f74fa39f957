"""The step merge's output, file by file, against what the merge wrote before it
was made to stream (tests/data/merge, `python -m tests.results.merge_pods`):
pods' per-second histograms, totals, series, checkpoints and storage merged
exactly, whichever way they are added up. And its memory: a merge holds one pod
at a time and the merged result, and streams the pods' marks back from their
files, so its peak does not follow the number of pods.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from dbbench_runner.merge import merge
from tests.results.merge_pods import PHASES, write_alike_step, write_step

EXPECTED = Path(__file__).parent.parent / "data" / "merge"


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
