"""A finished run judged against its series: the ChangePoint condition, its Event
and the operator's change-point counter, with the operator in-process as the
chart's ServiceAccount, the real control plane, the real results service (its
index) and the real runner against FerretDB.

No kubelet runs here: the test plays the step's runner pods (the real runner in
Job mode on the step file the operator wrote) and marks its Job complete, as
test_failed_step_run does. The series' four earlier runs are uploaded to the
service as the operator leaves runs (tests/support/series_runs): a hundred
times faster than FerretDB here, so the run under test is a Regression.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pymongo
import pytest
import yaml

from dbbench_contract.run_summary import RunSummary
from dbbench_local.results_service import ResultsService
from dbbench_runner.config import parse_config
from tests.fixtures.controlplane import ControlPlane
from tests.fixtures.ferretdb import FerretDBServer
from tests.integration.operator.test_failed_step_run import _complete, _play_pod
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
from tests.support.series_runs import upload

pytestmark = pytest.mark.integration
__all__ = ["operator_env", "results_service"]  # the module-scoped fixtures, shared

NS = "team-b"
SERIES = "nightly-ferret"
RECORDS = 300


def _apply(cluster: ControlPlane, name: str, secret: str, uri: str, series: str | None) -> None:
    """One external FerretDB target `db`, one acknowledged load `load` (the names of
    the series' earlier runs), two runner pods; labelled with `series`."""
    cluster.kubectl("create", "secret", "generic", secret, "-n", NS, f"--from-literal=uri={uri}")
    targets = [{"name": "db", "engine": "mongodb",
                "external": {"uriSecretRef": {"name": secret, "key": "uri"}}}]  # fmt: skip
    manifest = yaml.safe_load(run_manifest(
        name, NS, targets=targets, hardware={"exclusive": False},
        phases=[{"name": "load", "type": "insert", "batchSize": 10}],
        dataset={"shape": "flat45", "records": RECORDS, "recordSize": 256},
        runner={"pods": 2, "threads": 1}, startupGrace="10m", timeout="10m",
    ))  # fmt: skip
    if series is not None:
        manifest["metadata"]["labels"] = {"dbbench.io/series": series}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))


def _play(cluster: ControlPlane, name: str, uri: str, tmp_path: Path) -> None:
    job: dict[str, Any] = wait_for(lambda: get_json(cluster, "job", f"{name}-step-1", "-n", NS),
                                   90, "the step's runner Job")  # fmt: skip
    config_map = get_json(cluster, "configmap", f"{name}-step-1", "-n", NS) or {}
    raw = yaml.safe_load(config_map["data"]["step.yaml"])
    tmp_path.mkdir(parents=True)
    (tmp_path / "uri").write_text(uri)
    raw["target"]["uriFile"] = str(tmp_path / "uri")  # the Secret as the pod mounts it
    step_file = tmp_path / "step.yaml"
    step_file.write_text(yaml.safe_dump(raw))
    config = parse_config(raw)
    client: Any = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:  # the run's table starts empty (the server is shared)
        client[config.target.database][config.dataset.shape].drop()
    finally:
        client.close()
    for index in (0, 1):
        _play_pod(cluster, job, step_file, index, tmp_path / f"pod-{index}")
    _complete(cluster, job, 2)


def _finished(cluster: ControlPlane, name: str) -> dict[str, Any]:
    wait_for(lambda: phase_of(cluster, NS, name) in ("Failed", "Succeeded"), 120, "the run's end")
    wait_for(lambda: (get_json(cluster, "br", name, "-n", NS) or {})
             .get("status", {}).get("cleanedUp"), 60, "cleanup")  # fmt: skip
    return get_json(cluster, "br", name, "-n", NS) or {}


def _events(cluster: ControlPlane, name: str, reason: str) -> list[dict[str, Any]]:
    found = get_json(cluster, "events", "-n", NS,
                     f"--field-selector=involvedObject.name={name}") or {}  # fmt: skip
    return [e for e in found.get("items") or [] if e.get("reason") == reason]


def _regressions(port: int) -> float:
    wanted = {"series_namespace": NS, "series": SERIES, "direction": "Regression"}
    return metric_total(port, "dbbench_operator_change_points_total", wanted)


def test_a_runs_verdict_against_its_series_is_a_condition_an_event_and_a_metric(
    kube_cluster: ControlPlane,
    operator_env: list[str],
    ferretdb: FerretDBServer,
    results_service: ResultsService,
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(8)
    for i in range(4):  # the series before: same target, phase and operation type
        upload(results_service, tmp_path / "earlier", NS, i,
               100 * (1 + 0.02 * float(rng.standard_normal())), series=SERIES)  # fmt: skip
    port = int(os.environ["DBBENCH_METRICS_PORT"])
    with operator(operator_env) as runner:
        before = _regressions(port)
        _apply(kube_cluster, "ferret-live", "ferret-live-uri", ferretdb.uri, SERIES)
        _play(kube_cluster, "ferret-live", ferretdb.uri, tmp_path / "live")
        judged = _finished(kube_cluster, "ferret-live")
        _apply(kube_cluster, "ferret-lone", "ferret-lone-uri", ferretdb.uri, None)
        _play(kube_cluster, "ferret-lone", ferretdb.uri, tmp_path / "lone")
        lone = _finished(kube_cluster, "ferret-lone")
        time.sleep(1)
        after = _regressions(port)
    assert judged["status"]["phase"] == "Succeeded", judged["status"]
    change = condition(judged, "ChangePoint")
    assert (change["status"], change["reason"]) == ("True", "Regression"), change
    assert "opsPerSecond of db/load/all: " in change["message"]
    # The run's own figures are what the service judged: its summary names the series.
    run_dir = results_service.root / NS / "ferret-live" / judged["metadata"]["uid"]
    assert RunSummary.from_json((run_dir / "summary.json").read_bytes()).series == SERIES
    (warning,) = _events(kube_cluster, "ferret-live", "Regression")
    assert warning["type"] == "Warning"
    assert warning["message"] == change["message"]
    assert after - before == 1
    # No series label: not judged, and the run succeeds all the same.
    assert lone["status"]["phase"] == "Succeeded"
    not_judged = condition(lone, "ChangePoint")
    assert (not_judged["status"], not_judged["reason"]) == ("Unknown", "NotJudged")
    assert "no dbbench.io/series label" in not_judged["message"]
    assert _events(kube_cluster, "ferret-lone", "NotJudged")[0]["type"] == "Normal"
    assert "Traceback" not in runner.output
