"""The series index on the claim (dbbench_results.history.index): built from the
run summaries when missing, kept as runs are added, and rebuilt with the same
series when damaged; the files alone give the same answer."""

from __future__ import annotations

from pathlib import Path

from dbbench_results.history.index import SqliteIndex, series_from_files
from tests.support.series_runs import write_run


def _claim(root: Path, runs: int) -> None:
    for i in range(runs):
        write_run(root, "bench", "nightly", i, 1.0 + i / 100)
    write_run(root, "bench", "other", 50, 1.0)
    write_run(root, "bench", None, 51, 1.0)
    write_run(root, "team-b", "nightly", 52, 1.0)  # same name, another namespace


def test_a_missing_index_is_built_from_the_files_in_run_order(tmp_path: Path) -> None:
    _claim(tmp_path, 3)
    index = SqliteIndex(tmp_path)
    points = index.series("bench", "nightly")
    assert index.path == tmp_path / ".index" / "history.sqlite3"
    assert index.path.is_file()
    assert [p.run for p in points if (p.phase, p.operation_type) == ("reads", "all")] == [
        "nightly-0", "nightly-1", "nightly-2",
    ]  # fmt: skip
    # Per run: the load step (one operation type: `all` only) and the reads step
    # (`all`, read and update).
    kinds = [(p.phase, p.operation_type) for p in points if p.run == "nightly-1"]
    assert kinds == [("load", "all"), ("reads", "all"), ("reads", "read"), ("reads", "update")]
    reads = next(p for p in points if p.run == "nightly-1" and p.operation_type == "read")
    assert round(reads.ops_per_second, 3) == round(654.8847495828918 * 1.01, 3)
    assert round(reads.p99_ms, 6) == round(2.491 / 1.01, 6)
    assert points == series_from_files(tmp_path, "bench", "nightly")
    assert index.series("bench", "absent") == []
    assert {p.namespace for p in index.series("team-b", "nightly")} == {"team-b"}


def test_added_runs_replace_their_own_points(tmp_path: Path) -> None:
    _claim(tmp_path, 2)
    index = SqliteIndex(tmp_path)
    before = index.series("bench", "nightly")
    write_run(tmp_path, "bench", "nightly", 2, 2.0)
    run_dir = tmp_path / "bench" / "nightly-2" / "00000000-0000-4000-8000-000000000002"
    assert index.add_run(run_dir) == 4
    assert index.add_run(run_dir) == 4  # uploaded twice: still one run's points
    after = index.series("bench", "nightly")
    assert after[: len(before)] == before
    assert len(after) == len(before) + 4
    assert after == series_from_files(tmp_path, "bench", "nightly")


def test_a_damaged_index_is_moved_aside_and_rebuilt_with_the_same_series(tmp_path: Path) -> None:
    _claim(tmp_path, 4)
    index = SqliteIndex(tmp_path)
    expected = index.series("bench", "nightly")
    index.path.write_bytes(b"this is not a SQLite database" * 100)
    again = SqliteIndex(tmp_path)  # a restarted service
    assert again.series("bench", "nightly") == expected
    assert [p.name.split("-")[0] for p in index.path.parent.glob("*.damaged-*")] == [
        "history.sqlite3.damaged"
    ]
    # Damaged under a running service (its check already done): found on use.
    index.path.write_bytes(b"\0" * 4096)
    assert again.series("bench", "nightly") == expected


def test_a_deleted_index_comes_back_from_the_files(tmp_path: Path) -> None:
    _claim(tmp_path, 2)
    index = SqliteIndex(tmp_path)
    expected = index.series("bench", "nightly")
    index.path.unlink()
    assert index.series("bench", "nightly") == expected
