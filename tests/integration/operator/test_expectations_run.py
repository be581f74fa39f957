"""spec.expectations judged at a run's end (issue 31, item 4): the operator
in-process as the chart's ServiceAccount, the real control plane and results
service, and the real runner (played as the Job's pod, as in
test_failed_step_run) loading a real FerretDB.

The measured figures in status.expectations are the step's merged summary on
the results claim (what the runner measured), not constants: a bound no server
reaches (ops/s) is missed by what the claim's summary says; a bound every
server holds (p99 within 10s) holds with the claim's p99.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pymongo
import pytest
import yaml

from dbbench_contract.run_summary import RunSummary
from dbbench_contract.summary import StepSummary
from dbbench_local.results_service import ResultsService
from dbbench_runner.config import parse_config
from tests.fixtures.controlplane import ControlPlane
from tests.fixtures.ferretdb import FerretDBServer
from tests.integration.operator.test_failed_step_run import _complete, _events, _play_pod
from tests.integration.operator.test_operator_lifecycle import (
    condition,
    get_json,
    metric_total,
    operator,
    operator_env,
    phase_of,
    results_service,
    run_manifest,
    wait_for,
)

pytestmark = pytest.mark.integration
__all__ = ["operator_env", "results_service"]  # the module-scoped fixtures, shared

NS = "team-b"
PHASE = "load"
ENDED = ("Failed", "Succeeded")
IMPOSSIBLE = 1e9  # ops/s no server here reaches
BOUNDS = [{"phase": PHASE, "minOpsPerSecond": IMPOSSIBLE},
          {"phase": PHASE, "maxLatency": {"p99": "10s"}, "maxErrorRate": 0}]  # fmt: skip


def _apply(cluster: ControlPlane, name: str, uri: str, expectations: list[dict[str, Any]],
           labels: dict[str, str] | None = None) -> None:  # fmt: skip
    secret = f"{name}-uri"
    cluster.kubectl("create", "secret", "generic", secret, "-n", NS, f"--from-literal=uri={uri}")
    targets = [{"name": "ext", "engine": "mongodb",
                "external": {"uriSecretRef": {"name": secret, "key": "uri"}}}]  # fmt: skip
    manifest = yaml.safe_load(run_manifest(
        name, NS, targets=targets, phases=[{"name": PHASE, "type": "insert", "batchSize": 10}],
        hardware={"exclusive": False}, dataset={"shape": "flat45", "records": 300,
        "recordSize": 256}, runner={"pods": 1, "threads": 1}, startupGrace="10m",
        timeout="10m", expectations=expectations,
    ))  # fmt: skip
    manifest["metadata"]["labels"] = labels or {}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))


def _play(cluster: ControlPlane, name: str, uri: str, tmp_path: Path) -> None:
    """The step's one runner pod, on an empty collection; then the Job complete."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    job: dict[str, Any] = wait_for(lambda: get_json(cluster, "job", f"{name}-step-1", "-n", NS),
                                   90, "the step's runner Job")  # fmt: skip
    config_map = get_json(cluster, "configmap", f"{name}-step-1", "-n", NS) or {}
    raw = yaml.safe_load(config_map["data"]["step.yaml"])
    (tmp_path / "uri").write_text(uri)
    raw["target"]["uriFile"] = str(tmp_path / "uri")  # the Secret as the pod mounts it
    step_file = tmp_path / "step.yaml"
    step_file.write_text(yaml.safe_dump(raw))
    config = parse_config(raw)
    client: Any = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        client[config.target.database][config.dataset.shape].drop()
    finally:
        client.close()
    _play_pod(cluster, job, step_file, 0, tmp_path / "pod-0")
    _complete(cluster, job, 1)


def _ended(cluster: ControlPlane, name: str) -> dict[str, Any]:
    wait_for(lambda: phase_of(cluster, NS, name) in ENDED, 120, "the run to end")
    wait_for(lambda: (get_json(cluster, "br", name, "-n", NS) or {})
             .get("status", {}).get("cleanedUp"), 60, "cleanup")  # fmt: skip
    return get_json(cluster, "br", name, "-n", NS) or {}


def _claim(service: ResultsService, run: dict[str, Any]) -> Path:
    return Path(service.root) / NS / str(run["metadata"]["name"]) / str(run["metadata"]["uid"])


def _measured(run: dict[str, Any], service: ResultsService) -> StepSummary:
    """The step's merged summary, as the results service wrote it on the claim."""
    return StepSummary.from_json((_claim(service, run) / "ext" / PHASE / "1" / "summary.json")
                                 .read_bytes())  # fmt: skip


def _check_outcomes(run: dict[str, Any], merged: StepSummary, on_miss: str) -> None:
    assert (merged.operations, merged.records) == (30, 300)  # batches of 10
    assert merged.throughput > 0
    ops, p99, errors = run["status"]["expectations"][:3]
    assert (ops["bound"], ops["verdict"], ops["onMiss"]) == ("minOpsPerSecond", "Missed", on_miss)
    assert ops["measured"] == pytest.approx(merged.throughput, rel=1e-6)
    assert ops["byPercent"] == pytest.approx((IMPOSSIBLE - merged.throughput) / IMPOSSIBLE * 100,
                                             abs=0.1)  # fmt: skip
    assert (p99["bound"], p99["verdict"], p99["limit"]) == ("maxLatency.p99", "Held", 10000)
    assert p99["measured"] == pytest.approx(merged.latency_ms.p99, rel=1e-6)
    assert (errors["bound"], errors["verdict"], errors["measured"]) == ("maxErrorRate", "Held", 0)
    message = condition(run, "Expectations")["message"]
    assert message.startswith("1 of ")
    assert f"expectations[0] ext/{PHASE} minOpsPerSecond >= 1e+09 ops/s: measured " in message


def _missed_count(series: str) -> float:
    """dbbench_operator_expectations_missed_total for one series of NS, from the
    operator's /metrics (the in-process operator's registry counts from its start)."""
    port = int(os.environ["DBBENCH_METRICS_PORT"])
    wanted = {"series_namespace": NS, "series": series}
    return metric_total(port, "dbbench_operator_expectations_missed_total", wanted)


def test_a_missed_expectation_fails_the_run_with_its_measured_value(
    kube_cluster: ControlPlane, operator_env: list[str], ferretdb: FerretDBServer,
    results_service: ResultsService, tmp_path: Path,
) -> None:  # fmt: skip
    name = "expect-fail"
    _apply(kube_cluster, name, ferretdb.uri, BOUNDS)
    with operator(operator_env) as runner:
        before = _missed_count("")
        _play(kube_cluster, name, ferretdb.uri, tmp_path)
        run = _ended(kube_cluster, name)
        assert _missed_count("") == before + 1  # counted once, its series empty (none)
    assert run["status"]["phase"] == "Failed"
    failed = condition(run, "Failed")
    assert failed["reason"] == "ExpectationsMissed"
    judged = condition(run, "Expectations")
    assert (judged["status"], judged["reason"]) == ("False", "Missed")
    assert failed["message"] == judged["message"]
    _check_outcomes(run, _measured(run, results_service), "Fail")
    # The run's summary.json says how it ended: Failed, ExpectationsMissed.
    summary = RunSummary.model_validate_json((_claim(results_service, run) / "summary.json")
                                             .read_bytes())  # fmt: skip
    assert (summary.run.phase, summary.run.reason) == ("Failed", "ExpectationsMissed")
    # ... and what was judged, as the status has it (the report's Expectations section).
    assert [o.model_dump(mode="json", exclude_none=True) for o in summary.expectations] == (
        run["status"]["expectations"]
    )
    (entry,) = summary.steps
    assert entry.result is not None
    assert entry.result.status == "succeeded"  # the step itself succeeded
    warnings = [e for e in _events(kube_cluster, name) if e.get("reason") == "ExpectationsMissed"]
    assert [e["type"] for e in warnings] == ["Warning"]
    assert "Traceback" not in runner.output


def test_a_recorded_miss_lets_the_run_succeed_with_the_condition_false(
    kube_cluster: ControlPlane, operator_env: list[str], ferretdb: FerretDBServer,
    results_service: ResultsService, tmp_path: Path,
) -> None:  # fmt: skip
    name = "expect-record"
    recorded = [{**b, "onMiss": "Record"} for b in BOUNDS]
    tolerance = {"phase": PHASE, "tolerance": {"withinPercentOfRecent": 10}, "onMiss": "Record"}
    _apply(kube_cluster, name, ferretdb.uri, [*recorded, tolerance],
           labels={"dbbench.io/series": "nightly"})  # fmt: skip
    with operator(operator_env):
        before = _missed_count("nightly")
        _play(kube_cluster, name, ferretdb.uri, tmp_path)
        run = _ended(kube_cluster, name)
        assert _missed_count("nightly") == before + 1  # a Record policy's miss counts too
    assert run["status"]["phase"] == "Succeeded", run["status"].get("message")
    judged = condition(run, "Expectations")
    assert (judged["status"], judged["reason"]) == ("False", "Missed")
    _check_outcomes(run, _measured(run, results_service), "Record")
    # The first run of its series: its tolerance's bounds are not judged, and fail nothing.
    unjudged = run["status"]["expectations"][3:]
    assert [(o["bound"], o["verdict"], o["message"]) for o in unjudged] == [
        ("tolerance.opsPerSecond", "NotJudged", "the series has no earlier run with this figure"),
        ("tolerance.p99", "NotJudged", "the series has no earlier run with this figure"),
    ]  # fmt: skip
    events = _events(kube_cluster, name)
    assert [e["type"] for e in events if e.get("reason") == "ExpectationsMissed"] == ["Warning"]
    summary = RunSummary.model_validate_json((_claim(results_service, run) / "summary.json")
                                             .read_bytes())  # fmt: skip
    assert summary.run.phase == "Succeeded"
    assert [o.model_dump(mode="json", exclude_none=True) for o in summary.expectations] == (
        run["status"]["expectations"]
    )


def test_a_tolerance_without_a_series_label_is_refused_naming_the_field(
    kube_cluster: ControlPlane, operator_env: list[str], ferretdb: FerretDBServer,
) -> None:  # fmt: skip
    name = "expect-no-series"
    _apply(kube_cluster, name, ferretdb.uri,
           [{"phase": PHASE, "tolerance": {"withinPercentOfRecent": 10}}])  # fmt: skip
    with operator(operator_env):
        wait_for(lambda: phase_of(kube_cluster, NS, name) == "Failed", 60, "the run to fail")
    run = get_json(kube_cluster, "br", name, "-n", NS) or {}
    accepted = condition(run, "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "InvalidSpec")
    assert accepted["message"].startswith(
        "spec.expectations[0].tolerance: compares with the series' recent runs, and this run "
        "has no dbbench.io/series label: add metadata.labels[dbbench.io/series]"
    )


def test_a_tolerance_compares_with_the_series_earlier_runs(
    kube_cluster: ControlPlane, operator_env: list[str], ferretdb: FerretDBServer,
    results_service: ResultsService, tmp_path: Path,
) -> None:  # fmt: skip
    """Two runs of series `weekly`: the second's tolerance bars are the first run's
    figures as the service's index holds them (its summary's step result), worse
    by 50%; its measured figures are its own merged summary's."""
    series = {"dbbench.io/series": "weekly"}
    _apply(kube_cluster, "weekly-1", ferretdb.uri, [{"phase": PHASE, "maxErrorRate": 0}], series)
    tolerance = {"withinPercentOfRecent": 50, "metrics": ["opsPerSecond", "p99"]}
    _apply(kube_cluster, "weekly-2", ferretdb.uri,
           [{"phase": PHASE, "tolerance": tolerance, "onMiss": "Record"}], series)  # fmt: skip
    with operator(operator_env):
        _play(kube_cluster, "weekly-1", ferretdb.uri, tmp_path / "1")
        first = _ended(kube_cluster, "weekly-1")
        _play(kube_cluster, "weekly-2", ferretdb.uri, tmp_path / "2")
        second = _ended(kube_cluster, "weekly-2")
    assert (first["status"]["phase"], second["status"]["phase"]) == ("Succeeded", "Succeeded")
    earlier = RunSummary.model_validate_json((_claim(results_service, first) / "summary.json")
                                             .read_bytes())  # fmt: skip
    assert earlier.series == "weekly"
    (entry,) = earlier.steps
    assert entry.result is not None
    assert entry.result.latency_ms is not None
    merged = _measured(second, results_service)
    ops, p99 = second["status"]["expectations"]
    assert ops["bound"] == "tolerance.opsPerSecond"
    assert ops["limit"] == pytest.approx(entry.result.throughput * 0.5, rel=1e-6)
    assert ops["measured"] == pytest.approx(merged.throughput, rel=1e-6)
    assert ops["verdict"] == ("Held" if ops["measured"] >= ops["limit"] else "Missed")
    assert p99["bound"] == "tolerance.p99"
    assert p99["limit"] == pytest.approx(entry.result.latency_ms.p99 * 1.5, rel=1e-6)
    assert p99["measured"] == pytest.approx(merged.latency_ms.p99, rel=1e-6)
    assert p99["verdict"] == ("Held" if p99["measured"] <= p99["limit"] else "Missed")
