"""The Grafana dashboard: valid against Grafana's dashboard schema (the Grafana
Foundation SDK's strict decoder, hack/dashboard-check), well-formed, and every
metric documented. That every metric its queries name is one that the real
endpoints expose: tests/integration/chart/test_dashboard_endpoints.py."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dbbench_operator.controller import metrics
from dbbench_results import metering
from dbbench_runner.exporting import RUNNER_METRICS
from tests.support.helm import CHART, TOOLS_BIN

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
