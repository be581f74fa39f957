"""The Grafana dashboard: valid against Grafana's dashboard schema (the Grafana
Foundation SDK's strict decoder, hack/dashboard-check), well-formed, and every
metric its queries name is one that the real endpoints expose (a runner pod
against MariaDB, the results service, the operator's registry served over HTTP)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dbbench_local.ports import free_port
from dbbench_local.results_service import start_results_service
from dbbench_operator.controller import metrics
from dbbench_operator.controller.metrics import OperatorMetrics
from dbbench_results import metering
from dbbench_runner.exporting import RUNNER_METRICS
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.support.helm import CHART, TOOLS_BIN
from tests.support.runner_files import mariadb_target, step

DASHBOARD = json.loads((CHART / "dashboards" / "dbbench.json").read_text())
METRICS_DOC = (CHART / "docs" / "metrics.md").read_text()
# The names a scrape shows (counters get `_total`, histograms their series).
OPERATOR_METRICS = (
    metrics.RUNS,
    metrics.RECONCILE_DURATION,
    f"{metrics.FAILED_PASSES}_total",
)
RESULTS_METRICS = (
    f"{metering.UPLOADS}_total", f"{metering.UPLOAD_BYTES}_total", f"{metering.MERGES}_total",
    metering.MERGE_SECONDS, metering.CLAIM_CAPACITY, metering.CLAIM_FREE,
)  # fmt: skip
EVERY_METRIC = (*RUNNER_METRICS, *OPERATOR_METRICS, *RESULTS_METRICS)
# A name followed by a selector or a range: `metric{...}` / `metric[5m]`; and the
# metric of label_values(metric, label).
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]")
LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)")


def queries() -> list[str]:
    exprs = [t["expr"] for p in DASHBOARD["panels"] for t in p.get("targets", [])]
    variables = [v["query"]["query"] for v in DASHBOARD["templating"]["list"]
                 if v["type"] == "query"]  # fmt: skip
    return exprs + variables


def metric_names(query: str) -> set[str]:
    names = set(SELECTOR.findall(query)) | set(LABEL_VALUES.findall(query))
    return {n for n in names if not n.startswith("$")}


def dashboard_check(path: Path) -> subprocess.CompletedProcess[str]:
    """hack/dashboard-check on one file: exit 0 when valid, else one line per error."""
    search = os.pathsep.join([str(TOOLS_BIN), os.environ.get("PATH", "")])
    binary = shutil.which("dashboard-check", path=search)
    if binary is None:
        pytest.fail(
            f"dashboard-check not found in {TOOLS_BIN} or PATH: build it with `make tools`"
            " (hack/tools.sh dashboard-check)"
        )
    return subprocess.run(
        [binary, str(path)], check=False, capture_output=True, text=True, timeout=60
    )


def sample_names(url: str) -> set[str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def test_the_dashboard_validates_against_grafanas_dashboard_schema() -> None:
    result = dashboard_check(CHART / "dashboards" / "dbbench.json")
    assert result.returncode == 0, result.stdout + result.stderr


def _panel_type_a_number(board: dict[str, Any]) -> None:
    board["panels"][1]["type"] = 5


def _target_without_expr(board: dict[str, Any]) -> None:
    del board["panels"][1]["targets"][0]["expr"]


def _unknown_top_level_key(board: dict[str, Any]) -> None:
    board["colour"] = "blue"


def _unknown_query_key(board: dict[str, Any]) -> None:
    board["panels"][1]["targets"][0]["exp"] = board["panels"][1]["targets"][0].pop("expr")


@pytest.mark.parametrize(
    ("break_it", "error"),
    [
        (_panel_type_a_number, "panels[1].type: json: cannot unmarshal number"),
        (_target_without_expr, "panels[1].targets[0].expr: required field is missing"),
        (_unknown_top_level_key, "Dashboard: unexpected field 'colour'"),
        (_unknown_query_key, "panels[1].targets[0].Dataquery: unexpected field 'exp'"),
    ],
)
def test_the_schema_check_fails_on_a_broken_dashboard(
    break_it: Callable[[dict[str, Any]], None], error: str, tmp_path: Path
) -> None:
    """The check is not vacuous: each kind of mistake is refused, and named by its path."""
    board = copy.deepcopy(DASHBOARD)
    assert board["panels"][1]["type"] == "timeseries"
    break_it(board)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(board))
    result = dashboard_check(path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{path}: {error}" in result.stdout


def test_the_dashboard_is_well_formed() -> None:
    assert DASHBOARD["uid"]
    assert DASHBOARD["title"]
    assert DASHBOARD["schemaVersion"] >= 36
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"
            assert target["refId"]
            assert target["expr"].count("(") == target["expr"].count(")")
            # Each dbbench metric is written as a selector, so the check below sees it.
            assert set(re.findall(r"dbbench_\w+", target["expr"])) <= metric_names(target["expr"])
    titles = " ".join(p["title"] for p in DASHBOARD["panels"])
    assert "Throughput per target" in titles
    assert "p99 latency per target" in titles


def test_every_metric_is_documented() -> None:
    assert RUNNER_METRICS
    assert OPERATOR_METRICS
    assert RESULTS_METRICS
    for name in EVERY_METRIC:
        assert f"`{name}`" in METRICS_DOC, f"docs/metrics.md does not list {name}"


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
