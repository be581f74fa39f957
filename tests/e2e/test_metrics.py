"""Issue 20's acceptance on the node: during an e2e run, a real Prometheus scrapes
the runner pods' and the operator's /metrics, and the scraped totals match the
run's summary within one reporting interval.

A private Prometheus on the host (Debian's, tests/e2e/prometheus_server.py)
scrapes the operator's pod and the run's runner pods every second over the
node's bridge, found with kubectl as docs/metrics.md's pod discovery finds
them, while a small MariaDB run (2 runner pods: a load, then a 20 s open-loop
mix) goes. The chart's `metrics.runnerLingerSeconds` is raised for the module
(helm upgrade, restored afterwards): with the default 0 a runner pod stops
serving as soon as its phase's upload is done, and the last seconds of a step
may never be scraped (docs/metrics.md, "After the phase").

Disruptive: the helm upgrades restart the operator under every other test's
runs, and the operator's runs-by-phase gauge is compared with every run of the
cluster; `make e2e` runs it alone (docs/testing.md).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.durations import parse_duration
from dbbench_local.cluster import flavour
from dbbench_local.controlplane import REPO
from dbbench_local.install import NAMESPACE, RELEASE, Kube
from dbbench_local.kind import pod_route
from tests.e2e.conftest import (
    RUNNER_RESOURCES,
    RUNS_NS,
    apply_run,
    delete_run,
    results_json,
    session_name,
    small_spec,
    wait_phase,
)
from tests.e2e.expectations import check_results
from tests.e2e.prometheus_server import (
    by_labels,
    discovering,
    prometheus,
    query,
    scrape_config,
    targets,
)

pytestmark = [pytest.mark.e2e, pytest.mark.disruptive]

SCRAPE_S = 1
# The runner adds up and serves its workers' figures once a second: the
# acceptance's tolerance is one such interval's operations.
REPORT_S = 1.0
# Prometheus hands discovered targets to its scrapers at most every 5 s, and a
# load step's pod can be done within seconds of getting its IP: a pod serves
# this long after its phase so that it is scraped at least once with its
# final figures (phase_ended 1), on a loaded 2-core node too.
LINGER_S = 10
PODS = 2
NAME = session_name("metrics")
SPEC = small_spec(
    runner={"pods": PODS, "threads": 2, "resources": RUNNER_RESOURCES},
    phases=[
        {"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000},
        {"name": "mixed", "type": "mix", "mix": {"read": 80, "update": 20},
         "warmup": "5s", "duration": "20s", "targetRate": 400},
    ],
)  # fmt: skip


@dataclass(frozen=True)
class Observed:
    url: str  # the Prometheus, still scraping
    status: dict[str, Any]  # the run's final status
    started: float  # when Prometheus started (epoch seconds)

    def window(self) -> str:
        """A range covering everything Prometheus scraped."""
        return f"{math.ceil(time.time() - self.started) + 60}s"


def _upgrade(kube: Kube, linger: float) -> None:
    kube.helm(
        "upgrade", RELEASE, str(REPO), "--namespace", NAMESPACE, "--reuse-values",
        f"--set=metrics.runnerLingerSeconds={linger:g}", "--wait", "--timeout", "5m",
    )  # fmt: skip


@contextmanager
def runner_linger(kube: Kube, seconds: float) -> Iterator[None]:
    """The release with metrics.runnerLingerSeconds set (the operator is restarted
    with it: it passes it to each runner Job), then as it was."""
    values = kube.helm("get", "values", RELEASE, "--namespace", NAMESPACE, "--all",
                       "--output", "json").stdout  # fmt: skip
    before = float(json.loads(values)["metrics"]["runnerLingerSeconds"])
    _upgrade(kube, seconds)
    try:
        yield
    finally:
        _upgrade(kube, before)


@pytest.fixture(scope="module")
def observed(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    workdir: Path = tmp_path_factory.mktemp("prometheus")
    targets_file = workdir / "targets.json"
    selectors = {NAMESPACE: "app.kubernetes.io/name=dbbench",
                 RUNS_NS: f"app.kubernetes.io/name=dbbench,dbbench.io/run={NAME}"}  # fmt: skip
    # kind: the pods are reachable from the host through the node container.
    reach_pods = pod_route(kube.kubeconfig) if flavour() == "kind" else nullcontext()
    with (
        reach_pods,
        runner_linger(kube, LINGER_S),
        discovering(kube, targets_file, selectors),
        prometheus(scrape_config(targets_file, SCRAPE_S), workdir) as url,
    ):
        started = time.time()
        # The operator is discovered and scraped before the run exists.
        deadline = time.monotonic() + 60
        while not query(url, "dbbench_operator_runs") and time.monotonic() < deadline:
            time.sleep(1)
        assert query(url, "dbbench_operator_runs"), f"the operator not scraped: {targets(url)}"
        try:
            apply_run(kube, NAME, SPEC)
            timeout = parse_duration(SPEC["timeout"]) + 120
            status = wait_phase(kube, NAME, ("Succeeded", "Failed"), timeout)
            yield Observed(url, status, started)
        finally:
            delete_run(kube, NAME)


def runner_series(metric: str) -> str:
    return f'{metric}{{namespace="{RUNS_NS}",run="{NAME}"}}'


def test_scraped_runner_totals_match_the_runs_summary(kube: Kube, observed: Observed) -> None:
    status = observed.status
    check_results(NAME, SPEC, status)
    window = observed.window()
    # Counters only grow: a pod's last scraped value is its largest; the pods
    # are gone now, so their series are read over the range, then summed.
    last = f"max_over_time({runner_series('dbbench_runner_operations_total')}[{window}])"
    per_phase = by_labels(query(observed.url, f"sum by (phase) ({last})"), "phase")
    per_type = by_labels(query(observed.url, f"sum by (phase, operation) ({last})"),
                         "phase", "operation")  # fmt: skip
    ended = by_labels(query(observed.url, f"max_over_time("
                            f"{runner_series('dbbench_runner_phase_ended')}[{window}])"),
                      "phase", "pod")  # fmt: skip
    errors = query(observed.url, f"sum(max_over_time("
                   f"{runner_series('dbbench_runner_errors_total')}[{window}]))")  # fmt: skip
    (target,) = status["targets"]
    for result in target["phases"]:
        phase = result["name"]
        tolerance = math.ceil(result["throughput"] * REPORT_S)
        scraped = per_phase.get((phase,))
        print(f"{phase}: scraped {scraped} operations, summary {result['operations']} (tolerance "
              f"{tolerance}: {result['throughput']} ops/s x {REPORT_S:g} s)")  # fmt: skip
        assert scraped is not None, (phase, per_phase, targets(observed.url))
        assert abs(scraped - result["operations"]) <= tolerance, (phase, scraped, result)
        # Every pod of the step was scraped, the last time with its final figures.
        pods = {pod: value for (p, pod), value in ended.items() if p == phase}
        assert len(pods) == PODS, (phase, ended)
        assert all(v == 1 for v in pods.values()), (phase, ended)
        merged = results_json(kube, status, f"{target['name']}/{phase}/1/summary.json")
        assert merged["operationsByType"], merged
        for kind, figures in merged["operationsByType"].items():
            per_second = math.ceil(figures["operations"] / result["durationSeconds"] * REPORT_S)
            found = per_type.get((phase, kind))
            print(f"  {kind}: scraped {found}, summary {figures['operations']}")
            assert found is not None, (phase, kind, per_type)
            assert abs(found - figures["operations"]) <= per_second, (phase, kind, figures)
    assert [float(e["value"][1]) for e in errors] == [0.0], errors


def test_the_operators_runs_by_phase_saw_the_run(kube: Kube, observed: Observed) -> None:
    assert observed.status["phase"] == "Succeeded", observed.status.get("message")
    # The run was Running for over 20 s with the operator scraped every second.
    running = query(observed.url, "max_over_time("
                    f'dbbench_operator_runs{{phase="Running"}}[{observed.window()}])')  # fmt: skip
    print(f"runs Running at most: {running}")
    assert len(running) == 1, running
    assert float(running[0]["value"][1]) >= 1, running

    def api_counts() -> dict[str, float]:
        listed = kube.get("benchmarkruns", "--all-namespaces") or {"items": []}
        phases = [(item.get("status") or {}).get("phase") or "Pending" for item in listed["items"]]
        return {phase: float(phases.count(phase)) for phase in set(phases)}

    def gauge() -> dict[str, float]:
        found = by_labels(query(observed.url, "dbbench_operator_runs"), "phase")
        return {phase: value for (phase,), value in found.items() if value}

    # Now: the gauge (a scrape behind at most) shows the API's runs by phase,
    # this run among the Succeeded.
    deadline = time.monotonic() + 30
    while gauge() != api_counts() and time.monotonic() < deadline:
        time.sleep(1)
    scraped = gauge()
    print(f"runs by phase, scraped: {scraped}")
    assert scraped == api_counts()
    assert scraped.get("Succeeded", 0) >= 1, scraped
