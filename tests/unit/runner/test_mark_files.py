"""Pods' checkpoints.csv read back in blocks and merged in order (dbbench_runner.mark_files)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dbbench_runner.mark_files import in_order, merged_marks, read_marks, write_marks
from dbbench_runner.measurement import Checkpoints
from dbbench_runner.series import Mark


def marks_of(seed: int, n: int) -> list[Mark]:
    rng = random.Random(seed)
    # Coarse epochs: equal times across files, ordered by the mark's other fields.
    return sorted(
        (
            1_750_000_000 + rng.randrange(50) / 8,
            rng.randrange(1, 60),
            rng.randrange(3),
            rng.randrange(10**6),
        )
        for _ in range(n)
    )


@pytest.mark.parametrize("block", [1, 7, 64, 2048])
def test_a_file_reads_back_whole_whatever_the_block(tmp_path: Path, block: int) -> None:
    marks = marks_of(1, 300)
    write_marks(tmp_path / "c.csv", marks)
    assert list(read_marks(tmp_path / "c.csv", block)) == marks


def test_a_last_line_without_its_end_and_blank_lines_read(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("epoch,operations,records,latencyUs\n1.5,2,0,30\n\n2.25,3,1,40")
    assert list(read_marks(path, 5)) == [(1.5, 2, 0, 30), (2.25, 3, 1, 40)]


def test_files_merge_as_all_their_marks_sorted(tmp_path: Path) -> None:
    files, everything = [], []
    for seed in range(6):
        marks = marks_of(seed, 100 + 37 * seed)
        files.append(tmp_path / f"{seed}.csv")
        write_marks(files[-1], marks)
        everything.extend(marks)
    assert list(merged_marks(files)) == sorted(everything)


def test_order_is_that_of_sorted() -> None:
    assert in_order([1.0, 1.0, 2.0], [1, 2, 1], [0, 0, 0], [5, 5, 5])
    assert not in_order([1.0, 1.0], [2, 1], [0, 0], [5, 5])
    assert not in_order([2.0, 1.0], [1, 1], [0, 0], [5, 5])


def test_checkpoints_give_their_marks_in_order_without_a_sorted_copy() -> None:
    """Checkpoints.marks(): connections' runs one after the other (as a worker and
    the parent add them), merged in the order `sorted` gives."""
    runs = [marks_of(seed, n) for seed, n in ((4, 50), (5, 1), (6, 0), (7, 80))]
    checkpoints = Checkpoints()
    for run in runs:
        part = Checkpoints(run)
        checkpoints.extend(part)
    marks = checkpoints.marks()
    assert not isinstance(marks, list), "an iterator, not a list of every mark"
    assert list(marks) == sorted(mark for run in runs for mark in run)
    assert list(Checkpoints().marks()) == []


def test_checkpoints_out_of_order_still_give_their_marks_in_order() -> None:
    shuffled = marks_of(8, 3000)
    random.Random(9).shuffle(shuffled)
    assert list(Checkpoints(shuffled).marks()) == sorted(shuffled)
