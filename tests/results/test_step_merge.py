"""The step merge's output, file by file, against what the merge wrote before it
was made to stream (tests/data/merge, `python -m tests.results.merge_pods`):
pods' per-second histograms, totals, series, checkpoints and storage merged
exactly, whichever way they are added up. And its memory: a merge holds one pod
at a time and the merged result, so its peak grows only by what each pod leaves
in the result (its checkpoint marks), not by its histograms.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from dbbench_runner.merge import merge
from tests.results.merge_pods import PHASES, write_step

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
    assert sorted(merged) == sorted(expected)
    for name, data in expected.items():
        assert merged[name] == data, name


def merge_peak(tmp_path: Path, pods: int) -> int:
    """tracemalloc's peak over a merge of `pods` pods (each pod's files alike in size)."""
    step = tmp_path / f"step{pods}"
    inputs = write_step(step, 0, pods)
    tracemalloc.start()
    try:
        merge(step, inputs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_merge_memory_grows_by_each_pods_marks_not_its_histograms(tmp_path: Path) -> None:
    few, many = merge_peak(tmp_path, 4), merge_peak(tmp_path, 32)
    # What a pod still leaves behind (its checkpoint marks for checkpoints.csv, its
    # summary and environment: ~60 KiB a pod here) makes 32 pods 1.8-2.6 MiB more
    # than 4, as measured (4.0-4.6 MiB -> 6.4-6.7 MiB): not flat yet, but bounded.
    # The merge that decoded every pod's seconds as dense histograms (~190 KiB
    # each) peaked at 17.5 MiB for 4 pods and 24.9 MiB for 32.
    assert many < few + 4 * 2**20, (few, many)
    assert many < 10 * 2**20, (few, many)
