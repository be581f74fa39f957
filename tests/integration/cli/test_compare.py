"""`dbbench compare` on two real result sets, against figures computed by hand
from the step summaries; `dbbench report` and the CLI's errors for missing files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.result_sets import ResultSets

pytestmark = pytest.mark.integration


def dbbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbbench_cli", *args],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def _by_hand(run_dir: Path, target: str, phase: str) -> tuple[list[float], list[float]]:
    """Throughput and p99 of each repeat, read straight from the merged step summaries."""
    run = json.loads((run_dir / "summary.json").read_text())
    rates, p99s = [], []
    for step in run["steps"]:
        if (step["target"], step["phase"]) == (target, phase):
            summary = json.loads((run_dir / step["path"] / "summary.json").read_text())
            rates.append(summary["throughput"])
            p99s.append(summary["latencyMs"]["p99"])
    return rates, p99s


def test_compare_prints_the_hand_computed_table(result_sets: ResultSets) -> None:
    a, b = result_sets.baseline.path, result_sets.candidate.path
    result = dbbench("compare", str(a), str(b))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "TARGET", "PHASE", "bench/baseline", "ops/s", "bench/baseline", "p99", "ms",
        "bench/candidate", "ops/s", "Δ", "ops/s", "bench/candidate", "p99", "ms", "Δ", "p99",
        "repeats", "say",
    ]  # fmt: skip
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in lines[1:]}
    assert set(rows) == {(t, p) for t in ("safe", "fast") for p in ("load", "oltp", "queries")}
    for (target, phase), cells in rows.items():
        rates_a, p99_a = _by_hand(a, target, phase)
        rates_b, p99_b = _by_hand(b, target, phase)
        mean_a, mean_b = sum(rates_a) / len(rates_a), sum(rates_b) / len(rates_b)
        p_a, p_b = sum(p99_a) / len(p99_a), sum(p99_b) / len(p99_b)
        assert cells[0] == f"{mean_a:,.1f}"
        assert cells[1] == f"{p_a:,.3f}"
        assert cells[2] == f"{mean_b:,.1f}"
        assert cells[3] == f"{(mean_b - mean_a) / mean_a * 100:+.1f}%"
        assert cells[4] == f"{p_b:,.3f}"
        assert cells[5] == f"{(p_b - p_a) / p_a * 100:+.1f}%"
        if phase == "load":  # insert phases run once: the repeats cannot judge
            assert cells[6:] == ["1", "repeat"]
        else:
            overlap = min(rates_a) <= max(rates_b) and min(rates_b) <= max(rates_a)
            assert cells[6:] == ["noise" if overlap else "significant"]


def test_report_command_writes_the_page(result_sets: ResultSets, tmp_path: Path) -> None:
    result = dbbench("report", str(result_sets.candidate.path))
    assert result.returncode == 0, result.stderr
    assert (result_sets.candidate.path / "report.html").is_file()
    assert "bench/candidate" in (result_sets.candidate.path / "report.html").read_text()


def test_missing_files_and_directories_are_clear_errors(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    missing = dbbench("report", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert "nowhere: no such directory" in missing.stderr
    step = result_sets.baseline.path / "safe" / "load" / "1"
    unfinished = dbbench("report", str(step))
    assert unfinished.returncode == 1
    assert "not BenchmarkRunSummary" in unfinished.stderr
    alone = dbbench("compare", str(result_sets.baseline.path))
    assert alone.returncode == 1
    assert "at least two" in alone.stderr
