"""The Grafana dashboard's metrics against real endpoints: every metric its queries
name, and every metric docs/metrics.md lists, is one that a scrape shows (a runner
pod against MariaDB, the results service, the operator's registry served over
HTTP). The dashboard itself: tests/unit/chart/test_dashboard.py."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dbbench_local.ports import free_port
from dbbench_local.results_service import start_results_service
from dbbench_operator.controller.metrics import OperatorMetrics
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.support.runner_files import mariadb_target, step
from tests.unit.chart.test_dashboard import EVERY_METRIC, metric_names, queries


def sample_names(url: str) -> set[str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


@pytest.mark.integration
def test_every_metric_in_the_dashboard_is_exposed_by_a_real_endpoint(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    exposed: set[str] = set()
    # A runner pod: a short phase with a lingering endpoint, scraped after it.
    target = mariadb_target(mariadb, f"d_{uuid.uuid4().hex[:12]}")
    assert run_step(step(target, "ycsb", 200, {"type": "insert"}), tmp_path / "load") == 0
    config: dict[str, Any] = {
        "target": target, "dataset": {"shape": "ycsb", "records": 200},
        "phase": {"name": "reads", "type": "mix", "mix": {"read": 1}, "operations": 300},
    }  # fmt: skip
    (tmp_path / "step.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    command = [sys.executable, "-m", "dbbench_runner", "run", "--config",
               str(tmp_path / "step.yaml"), "--out", str(tmp_path / "out"),
               "--metrics-port", str(port), "--metrics-linger", "30",
               "--metrics-address", "127.0.0.1"]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as runner:
        try:
            deadline = time.monotonic() + 60
            while not (tmp_path / "out" / "summary.json").exists():
                assert runner.poll() is None, runner.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.2)
            exposed |= sample_names(f"http://127.0.0.1:{port}/metrics")
        finally:
            runner.kill()
    # The results service, as the chart runs it.
    port = free_port()
    service = start_results_service(tmp_path / "results", extra_args=("--metrics-port", str(port)))
    try:
        exposed |= sample_names(f"http://127.0.0.1:{port}/metrics")
    finally:
        service.stop()
    # The operator's registry over HTTP (kopf's startup serves it; the lifecycle
    # tests scrape it there).
    operator = OperatorMetrics()
    operator.passed(0.2, None)
    port = free_port()
    operator.serve(port, addr="127.0.0.1")
    exposed |= sample_names(f"http://127.0.0.1:{port}/metrics")

    for name in EVERY_METRIC:  # what docs/metrics.md lists is what a scrape shows
        assert any(n == name or n.startswith(f"{name}_") for n in exposed), name
    used = set().union(*(metric_names(q) for q in queries()))
    assert used, "no metric found in the dashboard's queries"
    assert used <= exposed, f"not exposed: {sorted(used - exposed)}"
