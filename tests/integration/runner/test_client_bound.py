"""A runner that cannot keep up is flagged client-bound; a light phase is not.

Real runner processes against the real MariaDB. The limit is real too: the
runner is pinned to one CPU with taskset (sched_setaffinity), which its CPU
budget reads, so it sizes itself to one worker process; eight connections of
unthrottled point reads then need more client CPU than that core has.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.support.runner_files import mariadb_target, step

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset (util-linux)"),
]
RECORDS = 2000


def run_pinned(config: dict[str, Any], out: Path, tmp_path: Path) -> dict[str, Any]:
    """`taskset -c 0 python -m dbbench_runner run`: the whole runner on one CPU."""
    path = tmp_path / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    argv = ["taskset", "-c", "0", sys.executable, "-m", "dbbench_runner", "run"]
    result = subprocess.run(
        [*argv, "--config", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


@pytest.fixture
def loaded(mariadb: MariaDBServer, tmp_path: Path) -> dict[str, Any]:
    target = mariadb_target(mariadb, f"cb_{uuid.uuid4().hex[:12]}")
    load = step(target, "ycsb", RECORDS, {"type": "insert", "batchSize": 100})
    assert run_step(load, tmp_path / "load") == 0
    return target


def phase_config(target: dict[str, Any], threads: int, phase: dict[str, Any]) -> dict[str, Any]:
    return {
        "target": target,
        "dataset": {"shape": "ycsb", "records": RECORDS, "seed": 7},
        "phase": {"name": "reads", "type": "mix", "mix": {"read": 1}, **phase},
        "threads": threads,
        "progressEvery": 1,
    }


def test_unthrottled_reads_on_one_core_are_client_bound(
    loaded: dict[str, Any], tmp_path: Path
) -> None:
    config = phase_config(loaded, 8, {"duration": "4s"})
    summary = run_pinned(config, tmp_path / "heavy", tmp_path)
    environment = json.loads((tmp_path / "heavy" / "environment.json").read_text())
    assert environment["pod"]["cpuBudget"] == 1.0
    assert environment["pod"]["processes"] == 1
    assert summary["clientCpus"] == 1.0
    assert summary["clientBound"] is True, summary
    assert summary["clientDemand"] >= summary["clientBoundThreshold"] == 0.8
    assert summary["clientCpuSeconds"] > 0
    assert summary["clientCpuPerOpUs"] > 0
    [pod] = summary["clientByPod"]
    assert pod["bound"] is True
    assert pod["pod"] == 0


def test_a_light_paced_phase_is_not_client_bound(loaded: dict[str, Any], tmp_path: Path) -> None:
    config = phase_config(loaded, 1, {"duration": "3s", "targetRate": 50})
    summary = run_pinned(config, tmp_path / "light", tmp_path)
    assert 120 <= summary["operations"] <= 160
    assert summary["clientBound"] is False, summary
    assert summary["clientUtilization"] < 0.3
    assert summary["clientByPod"][0]["bound"] is False
