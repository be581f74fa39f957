"""The step merge's output, file by file, against what the merge wrote before it
was made to stream (tests/data/merge, `python -m tests.results.merge_pods`):
pods' per-second histograms, totals, series, checkpoints and storage merged
exactly, whichever way they are added up. And its memory: a merge holds one pod
at a time and the merged result, so its peak does not grow with the pods.
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


def test_merge_memory_does_not_grow_with_pods(tmp_path: Path) -> None:
    few, many = merge_peak(tmp_path, 4), merge_peak(tmp_path, 32)
    # Per pod, the result keeps its checkpoints (32 bytes a mark, ~40 marks) and
    # storage samples: well under 2 MiB at 32 pods. A pod's seconds decoded as
    # dense histograms (~190 KiB each) would be 10 MiB and more.
    assert many < few + 2 * 2**20, (few, many)
    assert many < 8 * 2**20, (few, many)
