"""A real Prometheus (Debian's, from `make tools`) scrapes a real runner pod's
/metrics during a phase against MariaDB, and the results service's and the
operator's: its totals match the phase's summary, and every dashboard query is
valid PromQL that Prometheus evaluates, the runner panels to data per target."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_local.ports import free_port
from dbbench_local.results_service import start_results_service
from dbbench_operator.controller.metrics import OperatorMetrics
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.prometheus import prometheus, query
from tests.support.helm import CHART
from tests.support.runner_files import mariadb_target, step

pytestmark = pytest.mark.integration

DASHBOARD = json.loads((CHART / "dashboards" / "dbbench.json").read_text())
SCRAPE_S = 1


def static_config(targets: dict[str, int]) -> dict[str, Any]:
    """Scrape 127.0.0.1:<port> per job every second."""
    return {
        "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
            for job, port in targets.items()
        ],
    }


def wait(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, expr) with Grafana's variables as Prometheus sees them."""
    found = []
    for panel in DASHBOARD["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", f"{5 * SCRAPE_S}s")
            found.append((panel["title"], expr.replace("$run", ".*").replace("$target", ".*")))
    return found


def test_a_real_prometheus_scrapes_the_endpoints_and_evaluates_the_dashboard(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    target = mariadb_target(mariadb, f"p_{uuid.uuid4().hex[:12]}")
    assert run_step(step(target, "ycsb", 2000, {"type": "insert"}), tmp_path / "load") == 0
    # 16 s: the runner serves a second about 2 s after it ends, so at the middle of
    # an 8 s phase the dashboard's 5 s rate sometimes had one sample (no data, 1 run in 4).
    config = {
        "target": target, "dataset": {"shape": "ycsb", "records": 2000, "seed": 7},
        "phase": {"name": "mixed", "type": "mix", "mix": {"read": 8, "update": 2},
                  "duration": "16s", "warmup": "1s", "targetRate": 800},
        "threads": 2, "processes": 2,
    }  # fmt: skip
    (tmp_path / "step.yaml").write_text(yaml.safe_dump(config))
    runner_port, results_port, operator_port = free_port(), free_port(), free_port()
    operator = OperatorMetrics()
    operator.passed(0.05, None)
    operator.passed(0.3, "KubernetesApiError")
    operator.serve(operator_port, addr="127.0.0.1")
    service = start_results_service(
        tmp_path / "results", extra_args=("--metrics-port", str(results_port))
    )
    jobs = {"runner": runner_port, "results": results_port, "operator": operator_port}
    out = tmp_path / "out"
    command = [sys.executable, "-m", "dbbench_runner", "run", "--config",
               str(tmp_path / "step.yaml"), "--out", str(out),
               "--metrics-port", str(runner_port), "--metrics-linger", "60",
               "--metrics-address", "127.0.0.1"]  # fmt: skip
    try:
        with (
            prometheus(static_config(jobs), tmp_path / "prometheus", timeout=30) as url,
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as runner,
        ):
            try:
                wait(lambda: (out / "summary.json").exists() or runner.poll() is not None, 90,
                     "the phase to end")  # fmt: skip
                assert runner.poll() is None, runner.communicate()
                # A scrape after the phase: Prometheus holds the final figures.
                wait(lambda: query(url, "dbbench_runner_phase_ended == 1"), 30, "a last scrape")
                ended = time.time()
                summary = json.loads((out / "summary.json").read_text())
                by_type = summary["operationsByType"]
                scraped = query(url, "sum by (operation) (dbbench_runner_operations_total)")
                assert {r["metric"]["operation"]: int(float(r["value"][1])) for r in scraped} == {
                    kind: v["operations"] for kind, v in by_type.items()
                }
                # The dashboard: every query valid; the runner panels have data for the
                # target in the middle of the measured phase.
                middle = (summary["startedAt"] + summary["endedAt"]) / 2
                for title, expr in dashboard_queries():
                    result = query(url, expr, at=middle if "runner" in expr else ended)
                    if "dbbench_runner" in expr:
                        assert result, f"{title}: no data for {expr}"
                        assert all(r["metric"].get("target", "mariadb") == "mariadb"
                                   for r in result)  # fmt: skip
                # The live p99 the dashboard draws, over the whole phase and every
                # operation, lands near the exact one (histogram buckets are 1-2-3-5-7
                # per decade). The summary has each operation's p99; the p99 of their
                # mixture lies between the least and the greatest of them (it was
                # compared with the greatest alone: a rare slow type failed it once).
                whole = "sum by (le) (increase(dbbench_runner_latency_seconds_bucket[1m]))"
                (p99,) = query(url, f"histogram_quantile(0.99, {whole})", at=ended)
                exact = [v["latencyMs"]["p99"] / 1000 for v in by_type.values()]
                assert min(exact) / 2.5 <= float(p99["value"][1]) <= max(exact) * 2.5, exact
            finally:
                runner.kill()
    finally:
        service.stop()
