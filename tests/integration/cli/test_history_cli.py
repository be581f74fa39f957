"""`dbbench history SERIES`: a real results service indexing real run summaries
as they are uploaded, the real results browser on its claim, and the CLI as a
process; every number it prints is checked against the run summaries' figures
read by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dbbench_local.results_service import running_results_service
from tests.support.browser_server import browser_server
from tests.support.series_runs import VIEW_REPORTS, upload

pytestmark = pytest.mark.integration
NS = "bench"


def dbbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbbench_cli", *args],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def _by_hand(root: Path) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(run, phase, operation type) -> (ops/s, p99 ms), from the run summaries (the
    step as a whole) and the steps' summaries (each type); one repeat a step."""
    figures = {}
    for path in sorted(root.glob(f"{NS}/*/*/summary.json")):
        run = json.loads(path.read_text())
        if run.get("series") != "nightly":
            continue
        for step in run["steps"]:
            result = step["result"]
            key = (run["run"]["name"], step["phase"])
            figures[(*key, "all")] = (result["throughput"], result["latencyMs"]["p99"])
            summary = json.loads((path.parent / step["path"] / "summary.json").read_text())
            if len(summary["operationsByType"]) > 1:
                for kind, op in summary["operationsByType"].items():
                    figures[(*key, kind)] = (op["throughput"], op["latencyMs"]["p99"])
    return figures


def test_history_prints_the_series_with_its_change_points(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    speeds = [1 + 0.02 * float(rng.standard_normal()) for _ in range(8)] + [0.5]
    with running_results_service(tmp_path / "service", extra_args=VIEW_REPORTS) as service:
        for i, speed in enumerate(speeds):
            upload(service, tmp_path / "source", NS, i, speed)
        upload(service, tmp_path / "source", NS, 30, 1.0, series="other")
        with browser_server(service.root, tmp_path / "browser.log") as url:
            shown = dbbench("history", "nightly", "-n", NS, "--url", url)
            assert shown.returncode == 0, shown.stderr
            # The index damaged: the browser reads the files, and shows the same.
            index = service.root / ".index" / "history.sqlite3"
            index.write_bytes(b"not a database" * 100)
            again = dbbench("history", "nightly", "-n", NS, "--url", url)
            absent = dbbench("history", "weekly", "-n", NS, "--url", url)
            refused = dbbench("history", "Not_A_Label", "-n", NS, "--url", url)
    assert again.stdout == shown.stdout
    lines = shown.stdout.splitlines()
    assert lines[0] == ("series bench/nightly: 9 runs, 21 change points "
                        "(significance 0.001, judged from 4 runs)")  # fmt: skip
    assert lines[1].split() == ["RUN", "ENDED", "TARGET", "PHASE", "OP", "TYPE", "REPEATS",
                                "OPS/S", "P99", "MS", "CHANGE"]  # fmt: skip
    rows = [line.split(maxsplit=8) for line in lines[2:-1]]
    expected = _by_hand(service.root)
    assert len(rows) == len(expected) == 9 * 4  # load (all); reads (all, read, update)
    assert [r[0] for r in rows[::4]] == [f"nightly-{i}" for i in range(9)]  # run order
    for run, ended, target, phase, kind, repeats, ops, p99, *change in rows:
        assert (target, repeats) == ("db", "1")
        assert ended.startswith("2026-11-01T")
        ops_by_hand, p99_by_hand = expected[(run, phase, kind)]
        assert ops == f"{ops_by_hand:,.1f}"
        assert p99 == f"{p99_by_hand:.3f}"
        # The halved speed of the last run is marked there, and only there.
        assert bool(change) == (run == "nightly-8"), (run, change)
    last = next(r for r in rows if r[0] == "nightly-8" and r[3] == "reads" and r[4] == "read")
    assert last[8].startswith("Regression opsPerSecond ")
    assert "Regression p99Ms " in last[8]
    assert lines[-1].startswith("newest run nightly-8: Regression: opsPerSecond of db/")
    assert absent.returncode == 0
    assert "no runs of this series are indexed" in absent.stdout
    assert refused.returncode == 1
    assert "is not a DNS-1123 label" in refused.stderr
