"""How runs end when something goes wrong, on the real node: every run ends,
says why, and leaves nothing running.

The operator killed and the results service killed are `disruptive`: `make
e2e` runs them alone. A cold run's restart and cache drop are checked on the
session's cold-cache example (test_tenant.py, `cold_baseline`). The others
share the node with other tests' runs; their long timed phases are paced, so
that they leave the two cores to the runs beside them."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dbbench_local.cluster import node_images_built_here
from dbbench_local.install import NAMESPACE, Kube, wait_for
from tests.e2e.conftest import (
    RUNNER_RESOURCES,
    RUNS_NS,
    apply_run,
    condition,
    database_pods,
    node_image,
    owned_by,
    owned_children,
    results_files,
    results_json,
    run_status,
    session_name,
    small_spec,
    wait_for_report,
    wait_phase,
)

pytestmark = pytest.mark.e2e

LOAD = {"name": "load", "type": "insert", "batchSize": 100}


def wait_step_running(kube: Kube, name: str, step: int, timeout: float = 600) -> dict[str, Any]:
    def running() -> dict[str, Any] | None:
        status = run_status(kube, name)
        progress = status.get("progress") or {}
        ok = progress.get("step") == step and progress.get("stage") == "Running"
        return status if ok and (progress.get("opsPerSecond") or 0) > 0 else None

    found: dict[str, Any] = wait_for(running, timeout, f"{name}: step {step} running")
    return found


def jobs_of(kube: Kube, name: str, uid: str) -> dict[str, str]:
    jobs = owned_by(kube, "jobs", uid, f"dbbench.io/run={name}")
    return {j["metadata"]["name"]: j["metadata"]["uid"] for j in jobs}


@pytest.mark.disruptive
def test_the_operator_killed_mid_phase_resumes_and_completes_the_run_once(kube: Kube) -> None:
    name = session_name("resumed")
    # Long enough that the operator's new pod (about 10-20 s) is back before the
    # phase ends; the alone phase waits for all of it.
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 90, "update": 10}, "duration": "25s"}
    reads = {"name": "reads", "type": "pointReads", "operations": 2000}
    uid = apply_run(kube, name, small_spec(phases=[LOAD, mix, reads]))
    wait_step_running(kube, name, 2)
    jobs_before = jobs_of(kube, name, uid)
    kube.kubectl("delete", "pod", "-n", NAMESPACE, "-lapp.kubernetes.io/component=operator",
                 "--grace-period=0", "--force")  # fmt: skip
    status = wait_phase(kube, name, ("Succeeded", "Failed"), 900)
    assert status["phase"] == "Succeeded", status.get("message")
    jobs_after = jobs_of(kube, name, uid)
    assert len(jobs_after) == 3, jobs_after  # one Job per step, none twice
    for job, job_uid in jobs_before.items():
        assert jobs_after[job] == job_uid, f"{job} was re-created"
    (target,) = status["targets"]
    assert [(p["name"], p["repeat"]) for p in target["phases"]] == [
        ("load", 1), ("oltp", 1), ("reads", 1)]  # fmt: skip
    assert target["phases"][2]["operations"] == 2000
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")


def test_a_database_pod_lost_mid_phase_is_reported_and_the_run_goes_on(kube: Kube) -> None:
    name = session_name("disturbed")
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 90, "update": 10}, "duration": "45s",
           "targetRate": 200, "maxErrorRate": 1.0}  # fmt: skip
    reads = {"name": "reads", "type": "pointReads", "operations": 1000}
    uid = apply_run(kube, name, small_spec(phases=[LOAD, mix, reads]))
    wait_step_running(kube, name, 2)
    time.sleep(5)
    (db_pod,) = database_pods(kube, name, uid)
    kube.kubectl("delete", "pod", db_pod, "-n", RUNS_NS, "--grace-period=0", "--force")
    status = wait_phase(kube, name, ("Succeeded", "Failed"), 900)
    assert status["phase"] == "Succeeded", status.get("message")
    degraded = condition(status, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "DatabasePodRestarted")
    assert db_pod in degraded["message"]
    assert "step 2" in degraded["message"]
    (target,) = status["targets"]
    oltp = next(p for p in target["phases"] if p["name"] == "oltp")
    assert oltp["errors"] > 0
    events = kube.get("events", "-n", RUNS_NS, f"--field-selector=involvedObject.uid={uid},"
                      "reason=DatabasePodRestarted") or {"items": []}  # fmt: skip
    assert events["items"]
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")


UNREACHABLE_DB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: e2e-short-name-db, namespace: dbbench-system}
spec:
  selector: {matchLabels: {app: e2e-short-name-db}}
  template:
    metadata: {labels: {app: e2e-short-name-db}}
    spec:
      containers:
      - name: mariadb
        image: {image}
        imagePullPolicy: IfNotPresent
        env: [{name: MARIADB_ROOT_PASSWORD, value: e2e-password}]
        ports: [{containerPort: 3306}]
        readinessProbe: {tcpSocket: {port: 3306}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: e2e-short-name-db, namespace: dbbench-system}
spec:
  selector: {app: e2e-short-name-db}
  ports: [{port: 3306}]
"""


def test_a_runner_that_cannot_reach_its_database_fails_the_run_in_bounded_time(
    kube: Kube,
) -> None:
    """The URI's short host name resolves in the operator's namespace (its check
    passes) but not in the run's, where the runner pods are: the runner gives up
    after its bounded retries and the run fails, saying so."""
    # The MariaDB image built here (kind's node on Docker pulls the official one).
    image = (
        node_image("mariadb.tar") if node_images_built_here() else "docker.io/library/mariadb:11.8"
    )
    database = UNREACHABLE_DB.replace("{image}", image)
    kube.kubectl("apply", "-f", "-", stdin=database)
    kube.kubectl("rollout", "status", "-n", NAMESPACE, "deploy/e2e-short-name-db",
                 "--timeout=180s", timeout=200)  # fmt: skip
    uri = "mariadb://root:e2e-password@e2e-short-name-db:3306/"
    kube.kubectl("create", "secret", "generic", "short-name-uri", "-n", RUNS_NS,
                 f"--from-literal=uri={uri}", check=False)  # fmt: skip
    name = session_name("unreachable")
    external = {"uriSecretRef": {"name": "short-name-uri", "key": "uri"}}
    spec = small_spec(targets=[{"name": "ext", "engine": "mariadb", "external": external}])
    try:
        apply_run(kube, name, spec)
        running = wait_phase(kube, name, ("Running", "Failed"), 600)
        assert running["phase"] == "Running", running.get("message")
        started = time.monotonic()
        status = wait_phase(kube, name, ("Failed", "Succeeded"), 300)
        elapsed = time.monotonic() - started
    finally:
        kube.kubectl("delete", "-f", "-", stdin=database, check=False)
    assert status["phase"] == "Failed"
    failed = condition(status, "Failed")
    assert failed["reason"] == "DatabaseUnreachable", failed
    assert "runner pod" in failed["message"]
    assert "exited 4" in failed["message"]
    assert elapsed < 240, f"took {elapsed:.0f}s"
    assert "e2e-password" not in str(status)
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")


def test_a_timeout_fails_the_run_and_removes_its_children(kube: Kube) -> None:
    name = session_name("too-long")
    endless = {"name": "endless", "type": "mix", "mix": {"read": 1}, "operations": 10**11,
               "targetRate": 100}  # fmt: skip
    apply_run(kube, name, small_spec(phases=[LOAD, endless], timeout="150s"))
    status = wait_phase(kube, name, ("Failed", "Succeeded"), 600)
    assert status["phase"] == "Failed"
    assert condition(status, "Failed")["reason"] == "Timeout"
    wait_for(lambda: run_status(kube, name).get("cleanedUp"), 60, "cleanup")
    # A timed-out run still has its summary.json (the load step's result, why it
    # ended) and a report, which the results service renders from it.
    summary = results_json(kube, status, "summary.json")
    assert (summary["run"]["phase"], summary["run"]["reason"]) == ("Failed", "Timeout")
    assert summary["run"]["currentStep"] == 2
    assert summary["steps"][0]["result"]["status"] == "succeeded"
    assert summary["steps"][1]["result"] is None
    assert "report.html" in wait_for_report(kube, status)

    def children_gone() -> bool:
        left = owned_children(kube, name)
        return not any(left.get(k) for k in ("Pod", "Job", "StatefulSet", "Deployment"))

    wait_for(children_gone, 120, "the run's pods, Jobs and StatefulSets to go")
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")


def delete_at_the_server(kube: Kube, uid: str, sql: str) -> None:
    """`sql` run inside the run's MariaDB pod, as the image's superuser."""
    pods = (kube.get("pods", "-n", RUNS_NS, f"-ldbbench.io/run-uid={uid}") or {})["items"]
    (pod,) = [p for p in pods if p["metadata"]["labels"].get("app.kubernetes.io/component")
              != "runner"]  # fmt: skip
    kube.kubectl(
        "exec", "-n", RUNS_NS, pod["metadata"]["name"], "-c", pod["spec"]["containers"][0]["name"],
        "--", "bash", "-c", f"mariadb -uroot -p\"$MARIADB_ROOT_PASSWORD\" dbbench -e '{sql}'",
    )  # fmt: skip


def test_reads_of_keys_the_load_did_not_write_fail_the_run_naming_the_step(kube: Kube) -> None:
    """Reads draw from what the run loaded (issue 30), so keys that find nothing
    are keys that went missing: the load writes the 5,000 records, a `hold` phase
    (scan100 queries, which find rows either way) keeps the database up while the
    test deletes records 2,501..5,000 at the server, and the point reads then
    read every key of the 5,000. Half find no row: errors, so the step fails,
    its merged result (recorded) says how many per type, and the run ends Failed
    naming the step, its target and repeat. One runner pod: the Job fails as its
    pod exits, and a second pod would be stopped before its upload."""
    name, half = session_name("reads-nothing"), 2500
    hold = {"name": "hold", "type": "query", "queries": ["scan100"], "duration": "60s",
            "targetRate": 5}  # fmt: skip
    # Uniform point reads of `operations` distinct keys (keys: the whole data set).
    reads = {"name": "reads", "type": "pointReads", "operations": 2 * half, "reportEvery": 1000}
    spec = small_spec(dataset={"shape": "indexed4", "records": 2 * half},
                      phases=[LOAD, hold, reads],
                      runner={"pods": 1, "threads": 2, "resources": RUNNER_RESOURCES})  # fmt: skip
    uid = apply_run(kube, name, spec)
    wait_step_running(kube, name, 2)
    delete_at_the_server(kube, uid, f"DELETE FROM indexed4 WHERE id > {half}")
    status = wait_phase(kube, name, ("Failed", "Succeeded"), 900)
    assert status["phase"] == "Failed", status.get("message")
    failed = condition(status, "Failed")
    assert failed["reason"] == "ErrorRateExceeded", failed
    assert failed["message"].startswith("step 3 (maria/reads/1): runner pod"), failed["message"]
    assert "exited 3" in failed["message"]
    assert f"(read {half:,} of {2 * half:,})" in failed["message"]
    (target,) = status["targets"]
    load, held, result = target["phases"]
    assert (load["status"], load["records"]) == ("succeeded", 2 * half)
    assert load.get("notFound") is None  # an insert looks nothing up
    assert held["status"] == "succeeded"
    assert (result["name"], result["status"], result["operations"]) == ("reads", "failed", 2 * half)
    assert (result["notFound"], result["errors"]) == (half, half)
    assert result["lookups"] == {"read": {"operations": 2 * half, "found": half, "notFound": half}}
    merged = results_json(kube, status, "maria/reads/1/summary.json")
    assert (merged["status"], merged["notFound"]) == ("failed", half)
    assert merged["errorsByType"] == {"read:NotFound": half}
    wait_for(lambda: run_status(kube, name).get("cleanedUp"), 60, "cleanup")
    summary = results_json(kube, status, "summary.json")
    assert (summary["run"]["phase"], summary["run"]["reason"]) == ("Failed", "ErrorRateExceeded")
    assert summary["steps"][2]["result"]["status"] == "failed"
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")


POD_FILES = ("summary.json", "environment.json", "checkpoints.csv", "series-ops.csv",
             "series-seconds.csv", "storage.csv")  # fmt: skip


@pytest.mark.disruptive
def test_the_results_service_killed_as_pods_upload_loses_no_file(kube: Kube) -> None:
    """The results pod is killed just before a step's two runner pods finish and
    kept down until one of them has failed an upload: they retry until it is back
    (their Job's deadline is minutes away), no file is lost and the run succeeds.

    Killing the pod alone did not always meet the uploads: on a busy node the
    Deployment's new pod was serving again before the step ended (seen once).
    """
    name = session_name("results-killed")
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 90, "update": 10}, "duration": "40s"}
    runner = {"pods": 2, "threads": 2, "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
              "limits": {"cpu": "1", "memory": "256Mi"}}}  # fmt: skip
    apply_run(kube, name, small_spec(phases=[LOAD, mix], runner=runner))
    wait_step_running(kube, name, 2)

    def near_the_end() -> bool:
        progress = run_status(kube, name).get("progress") or {}
        return progress.get("step") == 2 and (progress.get("percent") or 0) >= 90

    def step_logs() -> list[str]:
        pods = kube.get("pods", "-n", RUNS_NS, f"-lbatch.kubernetes.io/job-name={name}-step-2")
        return [kube.kubectl("logs", "-n", RUNS_NS, p["metadata"]["name"], check=False).stdout
                for p in (pods or {}).get("items", [])]  # fmt: skip

    wait_for(near_the_end, 120, "step 2 near its end", every=0.5)
    results = ("-n", NAMESPACE, "deploy/dbbench-results")
    kube.kubectl("scale", *results, "--replicas=0")
    try:
        kube.kubectl("delete", "pod", "-n", NAMESPACE, "-lapp.kubernetes.io/component=results",
                     "--grace-period=0", "--force")  # fmt: skip
        # The outage meets the uploads: a runner pod of the step retries at least once.
        wait_for(lambda: any("retrying in" in log for log in step_logs()), 180,
                 "a runner pod of step 2 to retry its upload")  # fmt: skip
    finally:
        kube.kubectl("scale", *results, "--replicas=1")
    status = wait_phase(kube, name, ("Succeeded", "Failed"), 900)
    assert status["phase"] == "Succeeded", status.get("message")
    files = results_files(kube, status)
    for step in ("maria/load/1", "maria/oltp/1"):
        for pod in ("pod-0", "pod-1"):
            for file in POD_FILES:
                assert f"{step}/{pod}/{file}" in files, (step, pod, file)
        assert f"{step}/summary.json" in files
    merged = results_json(kube, status, "maria/oltp/1/summary.json")
    assert merged["pods"] == [0, 1]
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")
