"""A step whose merged summary failed fails the run, naming the step: the operator
in-process as the chart's ServiceAccount, the real control plane and results
service, and the real runner against FerretDB.

No kubelet runs here, so the test plays the step's two runner pods: it runs the
real runner in Job mode on the step file the operator wrote (the Job's
ConfigMap), with the Job's environment and the run's results token, and then
marks the Job complete, as the Job controller does once every pod exited 0.

Both pods pass their own check of unacknowledged (w:0) writes: a pod compares
what it sent with the whole collection, which holds the other pod's writes
too. Between the pods, 20 of pod 1's documents are deleted: the collection
holds 20 fewer than the pods sent, as a server that lost writes nobody
acknowledged leaves it. Only the merge, over what both pods sent, sees it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pymongo
import pytest
import yaml

from dbbench_contract.run_summary import RunSummary
from dbbench_contract.step_nodes import StepNodes
from dbbench_local.results_service import ResultsService
from dbbench_runner.config import parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.merge import merge
from tests.fixtures.controlplane import ControlPlane
from tests.fixtures.ferretdb import FerretDBServer
from tests.integration.operator.test_operator_lifecycle import (
    condition,
    get_json,
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
RECORDS = 240
LOST = 20
ENDED = ("Failed", "Succeeded")
PHASE = "load-w0"
WHERE = f"step 1 (target ext, phase {PHASE}, repeat 1) failed: "


def _decoded(cluster: ControlPlane, secret: str, key: str) -> str:
    found = get_json(cluster, "secret", secret, "-n", NS) or {}
    return base64.b64decode(found["data"][key]).decode()


def _play_pod(
    cluster: ControlPlane, job: dict[str, Any], step_file: Path, index: int, out: Path
) -> None:
    """Runner pod `index` of the Job, as the kubelet would start it (the Job's
    command and environment; the token from the run's Secret)."""
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    token = next(e for e in container["env"] if e["name"] == "DBBENCH_RESULTS_TOKEN")
    ref = token["valueFrom"]["secretKeyRef"]
    env["DBBENCH_RESULTS_TOKEN"] = _decoded(cluster, ref["name"], ref["key"])
    env.pop("DBBENCH_RUNNER_METRICS_PORT", None)  # the pod's port; none needed here
    assert container["args"][0] == "job", container["args"]
    done = subprocess.run(
        [sys.executable, "-m", "dbbench_runner", "job", "--config", str(step_file),
         "--out", str(out)],
        env={**os.environ, **env, "JOB_COMPLETION_INDEX": str(index)},
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr  # its own check passed


def _complete(cluster: ControlPlane, job: dict[str, Any], pods: int) -> None:
    """The Job's status once every pod exited 0, as the Job controller writes it."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = get_json(cluster, "job", job["metadata"]["name"], "-n", NS) or job
    start = started.get("status", {}).get("startTime") or now
    indexes = "0" if pods == 1 else f"0-{pods - 1}"  # the API server refuses "0-0"
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
         "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}
        for kind in ("SuccessCriteriaMet", "Complete")
    ]  # fmt: skip
    status: dict[str, Any] = {"startTime": start, "completionTime": now, "active": 0, "ready": 0,
              "terminating": 0, "succeeded": pods, "completedIndexes": indexes,
              "uncountedTerminatedPods": {}, "conditions": conditions}  # fmt: skip
    cluster.kubectl(
        "patch", "job", job["metadata"]["name"], "-n", NS, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def _apply(cluster: ControlPlane, name: str, secret: str, uri: str) -> None:
    """One external FerretDB target, one w:0 load from two runner pods."""
    cluster.kubectl("create", "secret", "generic", secret, "-n", NS, f"--from-literal=uri={uri}")
    targets = [{"name": "ext", "engine": "mongodb",
                "external": {"uriSecretRef": {"name": secret, "key": "uri"}}}]  # fmt: skip
    phases = [{"name": PHASE, "type": "insert", "writeConcern": "unacknowledged",
               "batchSize": 10, "reportEvery": 40}]  # fmt: skip
    manifest = run_manifest(
        name, NS, targets=targets, phases=phases, hardware={"exclusive": False},
        dataset={"shape": "flat45", "records": RECORDS, "recordSize": 256},
        runner={"pods": 2, "threads": 1}, startupGrace="10m", timeout="10m",
    )  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=manifest)


def _play_step(
    cluster: ControlPlane, name: str, uri: str, client: Any, tmp_path: Path
) -> dict[str, Any]:
    """Both runner pods of step 1 played, 20 of pod 1's documents lost between
    them; the Job."""
    job: dict[str, Any] = wait_for(lambda: get_json(cluster, "job", f"{name}-step-1", "-n", NS),
                                   90, "the step's runner Job")  # fmt: skip
    config_map = get_json(cluster, "configmap", f"{name}-step-1", "-n", NS) or {}
    raw = yaml.safe_load(config_map["data"]["step.yaml"])
    uri_file = tmp_path / "uri"
    uri_file.write_text(uri)
    raw["target"]["uriFile"] = str(uri_file)  # the Secret as the pod mounts it
    step_file = tmp_path / "step.yaml"
    step_file.write_text(yaml.safe_dump(raw))
    config = parse_config(raw)
    collection = client[config.target.database][config.dataset.shape]
    collection.drop()  # the run's table starts empty (the server is shared)
    _play_pod(cluster, job, step_file, 1, tmp_path / "pod-1")
    # Pod 1 wrote records 121..240; 20 of them are lost before pod 0 writes.
    generator = generator_for(config.dataset)
    lost = [generator.key(n) for n in range(RECORDS // 2 + 1, RECORDS // 2 + 1 + LOST)]
    assert collection.delete_many({"_id": {"$in": lost}}).deleted_count == LOST
    _play_pod(cluster, job, step_file, 0, tmp_path / "pod-0")
    assert collection.count_documents({}) == RECORDS - LOST
    return job


def _ended(cluster: ControlPlane, name: str) -> dict[str, Any]:
    ended = wait_for(lambda: (phase := phase_of(cluster, NS, name)) in ENDED and phase,
                     90, "the run to end")  # fmt: skip
    assert ended == "Failed", ended
    wait_for(lambda: (get_json(cluster, "br", name, "-n", NS) or {})
             .get("status", {}).get("cleanedUp"), 60, "cleanup")  # fmt: skip
    return get_json(cluster, "br", name, "-n", NS) or {}


def _failed_naming_the_step(run: dict[str, Any], results_root: Path) -> None:
    """The Failed condition, status.message and the run's summary.json name the step."""
    failed = condition(run, "Failed")
    assert failed["reason"] == "StepFailed"
    assert failed["message"].startswith(WHERE), failed["message"]
    assert f"{LOST} unacknowledged (w:0) writes were not applied" in failed["message"]
    assert run["status"]["message"] == failed["message"]
    run_dir = results_root / NS / run["metadata"]["name"] / run["metadata"]["uid"]
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_bytes())
    assert (summary.run.phase, summary.run.reason) == ("Failed", "StepFailed")
    assert summary.run.message == failed["message"]
    (entry,) = summary.steps
    assert entry.result is not None
    assert (entry.result.status, entry.result.errors) == ("failed", LOST)


def _events(cluster: ControlPlane, name: str) -> list[dict[str, Any]]:
    found = get_json(cluster, "events", "-n", NS,
                     f"--field-selector=involvedObject.name={name}") or {}  # fmt: skip
    return list(found.get("items") or [])


def test_a_step_whose_merged_summary_failed_fails_the_run_naming_it(
    kube_cluster: ControlPlane,
    operator_env: list[str],
    ferretdb: FerretDBServer,
    results_service: ResultsService,
    tmp_path: Path,
) -> None:
    name = "merged-failure"
    _apply(kube_cluster, name, "ext-mongo", ferretdb.uri)
    client: Any = pymongo.MongoClient(ferretdb.uri, serverSelectionTimeoutMS=5000)
    try:
        with operator(operator_env) as runner:
            job = _play_step(kube_cluster, name, ferretdb.uri, client, tmp_path)
            _complete(kube_cluster, job, 2)
            run = _ended(kube_cluster, name)
    finally:
        client.close()
    _failed_naming_the_step(run, results_service.root)
    # A failed run is judged too once its summary is stored; this one has no series.
    judged = condition(run, "ChangePoint")
    assert (judged["status"], judged["reason"]) == ("Unknown", "NotJudged"), judged
    # The operator recorded the step's nodes when its Job ended (issue 32, item 3):
    # the Job's two pods, never bound (no node runs here: the test played them),
    # so no node; an external target has no database pods.
    run_dir = results_service.root / NS / name / run["metadata"]["uid"]
    nodes = StepNodes.from_json((run_dir / "ext" / PHASE / "1" / "nodes.json").read_bytes())
    assert [(p.kind, p.role, p.node) for p in nodes.pods] == [("runner", "0", None),
                                                              ("runner", "1", None)]  # fmt: skip
    assert (nodes.nodes, nodes.error) == ((), None)
    # The step's result is recorded, as failed, with what the merge counted.
    (result,) = run["status"]["targets"][0]["phases"]
    assert (result["name"], result["status"], result["errors"]) == (PHASE, "failed", LOST)
    events = _events(kube_cluster, name)
    warnings = [e for e in events if e.get("reason") == "StepFailed"]
    assert warnings, [e.get("reason") for e in events]
    assert warnings[0]["type"] == "Warning"
    assert warnings[0]["message"].startswith(WHERE)
    assert not [e for e in events if e.get("reason") == "StepCompleted"]
    assert "Traceback" not in runner.output


def test_a_run_collecting_with_a_failed_step_fails_instead_of_succeeding(
    kube_cluster: ControlPlane,
    operator_env: list[str],
    ferretdb: FerretDBServer,
    results_service: ResultsService,
    tmp_path: Path,
) -> None:
    """The state an operator before the step check left: the failed step merged and
    counted done, the run Collecting. The last pass reads every merged summary
    before writing the run's summary.json, and fails the run on that step."""
    name = "collecting-failure"
    _apply(kube_cluster, name, "ext-mongo-2", ferretdb.uri)
    client: Any = pymongo.MongoClient(ferretdb.uri, serverSelectionTimeoutMS=5000)
    try:
        with operator(operator_env):
            _play_step(kube_cluster, name, ferretdb.uri, client, tmp_path)
    finally:
        client.close()
    run = get_json(kube_cluster, "br", name, "-n", NS) or {}
    step = results_service.root / NS / name / run["metadata"]["uid"] / "ext" / PHASE / "1"
    assert merge(step, [step / "pod-0", step / "pod-1"]).status == "failed"
    progress = {**run["status"]["progress"], "stepsDone": 1, "stage": None}
    kube_cluster.kubectl(
        "patch", "br", name, "-n", NS, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": "Collecting", "progress": progress}}),
    )  # fmt: skip
    with operator(operator_env):
        run = _ended(kube_cluster, name)
    _failed_naming_the_step(run, results_service.root)
