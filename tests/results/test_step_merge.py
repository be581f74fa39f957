"""The step merge's output, file by file, against what the merge wrote before it
was made to stream (tests/data/merge, `python -m tests.results.merge_pods`):
pods' per-second histograms, totals, series, checkpoints and storage merged
exactly, whichever way they are added up. And its memory: a merge holds one pod
at a time and the merged result, so its peak does not grow with the pods.
"""

from __future__ import annotations

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
