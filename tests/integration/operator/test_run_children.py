"""A run's children are its own: the operator against the real control plane, as
the chart's ServiceAccount.

- A run re-created under the same name while its predecessor's children still
  exist (held here by a finalizer, as a slow garbage collector would) waits,
  saying why, and then makes its own: its Secret (and so its results token)
  is never the old run's.
- An object of the run's name that is not a run's fails the run, naming it.
- A failing run stops its own Jobs, never those of a neighbour whose name
  shares its first 63 characters.
- The longest names the API server accepts give valid child names and labels
  (the API server, the StatefulSet and Job controllers accept them all).
- The runner image is fixed when a run leaves Pending.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.cache_drop_job import build_cache_drop_job
from dbbench_operator.specs.plan import plan
from dbbench_operator.targets import provisioning
from tests.fixtures.controlplane import ControlPlane
from tests.fixtures.mariadb import MariaDBServer
from tests.integration.operator.test_operator_lifecycle import (
    OPERATOR_NS,
    apply_external_run,
    condition,
    get_json,
    mariadb_uri,
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
HOLD = "test.dbbench.io/hold"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# The longest name the API server accepts for a BenchmarkRun (a DNS subdomain):
# 253 characters, a leading digit, dots and hyphens.
MAXIMAL = ("9x-" + "a.b-c" * 50)[:252] + "z"
PHASES = [{"name": "load", "type": "insert", "batchSize": 100}]


def run_obj(cluster: ControlPlane, name: str) -> dict[str, Any]:
    return get_json(cluster, "benchmarkrun", name, "-n", NS) or {}


def uid_of(cluster: ControlPlane, name: str) -> str:
    return str(run_obj(cluster, name).get("metadata", {}).get("uid", ""))


def jobs_owned_by(cluster: ControlPlane, uid: str) -> list[dict[str, Any]]:
    listed = get_json(cluster, "jobs", "-n", NS, f"-ldbbench.io/run-uid={uid}") or {}
    return list(listed.get("items") or [])


def progressing(cluster: ControlPlane, name: str, reason: str) -> dict[str, Any] | None:
    for c in run_obj(cluster, name).get("status", {}).get("conditions") or []:
        if c["type"] == "Progressing" and c["reason"] == reason:
            return dict(c)
    return None


def external(cluster: ControlPlane, name: str, secret: str, server: MariaDBServer,
             **run: Any) -> None:  # fmt: skip
    given = {"phases": PHASES, "runner": {"pods": 2}, "hardware": {"exclusive": False}, **run}
    apply_external_run(cluster, NS, name, secret, None, given)


def test_a_run_recreated_under_the_same_name_waits_for_its_predecessors_children(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    name = "again"
    kube_cluster.kubectl("create", "secret", "generic", "again-db", "-n", NS,
                         f"--from-literal=uri={mariadb_uri(mariadb)}")  # fmt: skip
    external(kube_cluster, name, "again-db", mariadb)
    with operator(operator_env) as runner:
        wait_for(lambda: jobs_owned_by(kube_cluster, uid_of(kube_cluster, name)), 60, "first Job")
        first_uid = uid_of(kube_cluster, name)
        old = get_json(kube_cluster, "secret", f"{name}-credentials", "-n", NS) or {}
        # A slow garbage collector, made certain: the old Secret and Job stay a while.
        hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
        for kind, child in (("secret", f"{name}-credentials"), ("job", f"{name}-step-1")):
            kube_cluster.kubectl("patch", kind, child, "-n", NS, "--type=merge", "-p", hold)
        kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", NS, "--wait=true")
        external(kube_cluster, name, "again-db", mariadb)
        second_uid = uid_of(kube_cluster, name)
        assert second_uid
        assert second_uid != first_uid
        waiting = wait_for(lambda: progressing(kube_cluster, name, "WaitingForPreviousRun"), 60,
                           "the new run to wait for its predecessor's Secret")  # fmt: skip
        assert f"Secret {NS}/{name}-credentials still belongs to an earlier" in waiting["message"]
        assert first_uid in waiting["message"]
        assert phase_of(kube_cluster, NS, name) == "Provisioning"
        for kind, child in (("secret", f"{name}-credentials"), ("job", f"{name}-step-1")):
            kube_cluster.kubectl("patch", kind, child, "-n", NS, "--type=merge",
                                 "-p", '{"metadata": {"finalizers": null}}')  # fmt: skip
        wait_for(lambda: jobs_owned_by(kube_cluster, second_uid), 90, "the new run's own Job")
    assert runner.exception is None
    new = get_json(kube_cluster, "secret", f"{name}-credentials", "-n", NS) or {}
    assert new["metadata"]["ownerReferences"][0]["uid"] == second_uid
    assert new["data"]["results-token"] != old["data"]["results-token"]
    assert new["data"]["root-password"] != old["data"]["root-password"]
    (job,) = jobs_owned_by(kube_cluster, second_uid)
    assert job["metadata"]["ownerReferences"][0]["uid"] == second_uid
    assert jobs_owned_by(kube_cluster, first_uid) == []
    kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", NS, "--wait=false")


def test_an_object_of_the_runs_name_that_is_not_a_runs_fails_it_naming_the_object(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    name = "squatted"
    kube_cluster.kubectl("create", "configmap", f"{name}-plan", "-n", NS, "--from-literal=a=b")
    kube_cluster.kubectl("create", "secret", "generic", "squatted-db", "-n", NS,
                         f"--from-literal=uri={mariadb_uri(mariadb)}")  # fmt: skip
    external(kube_cluster, name, "squatted-db", mariadb)
    with operator(operator_env):
        wait_for(lambda: phase_of(kube_cluster, NS, name) == "Failed", 60, "Failed")
    failed = condition(run_obj(kube_cluster, name), "Failed")
    assert failed["reason"] == "NameTaken"
    assert f"ConfigMap {NS}/{name}-plan exists and is not this run's (no owner)" in (
        failed["message"])  # fmt: skip
    plan = get_json(kube_cluster, "configmap", f"{name}-plan", "-n", NS) or {}
    assert plan["data"] == {"a": "b"}, "the operator rewrote an object it does not own"


def test_a_failing_run_stops_its_own_jobs_not_a_neighbours_with_the_same_prefix(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    """Before run-uid selectors, stop_jobs selected `dbbench.io/run=<first 63 chars>`."""
    prefix = "n" * 63
    doomed, neighbour = f"{prefix}-doomed", f"{prefix}-neighbour"
    kube_cluster.kubectl("create", "secret", "generic", "prefix-db", "-n", NS,
                         f"--from-literal=uri={mariadb_uri(mariadb)}")  # fmt: skip
    external(kube_cluster, neighbour, "prefix-db", mariadb)
    external(kube_cluster, doomed, "prefix-db", mariadb, timeout="20s")
    with operator(operator_env):
        neighbour_uid = uid_of(kube_cluster, neighbour)
        wait_for(lambda: jobs_owned_by(kube_cluster, neighbour_uid), 60, "the neighbour's Job")
        doomed_uid = uid_of(kube_cluster, doomed)
        wait_for(lambda: jobs_owned_by(kube_cluster, doomed_uid), 60, "the doomed run's Job")
        wait_for(lambda: run_obj(kube_cluster, doomed).get("status", {}).get("cleanedUp"), 90,
                 "the doomed run to fail (timeout) and clean up")  # fmt: skip
    assert condition(run_obj(kube_cluster, doomed), "Failed")["reason"] == "Timeout"
    assert jobs_owned_by(kube_cluster, doomed_uid) == []
    (job,) = jobs_owned_by(kube_cluster, neighbour_uid)
    assert not job["metadata"].get("deletionTimestamp")
    for name in (doomed, neighbour):
        kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", NS, "--wait=false")


def job_pods(cluster: ControlPlane, job: dict[str, Any], count: int) -> list[dict[str, Any]]:
    uid = job["metadata"]["uid"]
    listed = get_json(cluster, "pods", "-n", NS, f"-lbatch.kubernetes.io/controller-uid={uid}")
    items = list((listed or {}).get("items") or [])
    return items if len(items) >= count else []


def _names_and_labels(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    assert len(meta["name"]) <= 63, meta["name"]
    assert DNS_1035.match(meta["name"]), meta["name"]
    for key, value in (meta.get("labels") or {}).items():
        assert LABEL_VALUE.match(value), (key, value)
        assert len(value) <= 63, (key, value)


def test_the_longest_run_name_the_api_accepts_gives_valid_children(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    assert len(MAXIMAL) == 253
    deployed = MAXIMAL
    outside = MAXIMAL[:-1] + "y"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(deployed, NS, hardware={
        "exclusive": False, "storage": {"size": "1Gi"}}))  # fmt: skip
    kube_cluster.kubectl("create", "secret", "generic", "long-db", "-n", NS,
                         f"--from-literal=uri={mariadb_uri(mariadb)}")  # fmt: skip
    external(kube_cluster, outside, "long-db", mariadb)
    with operator(operator_env) as runner:
        deployed_uid, outside_uid = uid_of(kube_cluster, deployed), uid_of(kube_cluster, outside)
        # The database pod exists (the StatefulSet controller accepted its names) and
        # the scheduler refuses it: no node here.
        wait_for(lambda: progressing(kube_cluster, deployed, "Unschedulable"), 90,
                 "the maximal run's database pod to be refused by the scheduler")  # fmt: skip
        (job,) = wait_for(lambda: jobs_owned_by(kube_cluster, outside_uid), 60, "the Job")
        # The Job controller made both indexed pods (hostnames <job>-<index> valid).
        pods = wait_for(lambda: job_pods(kube_cluster, job, 2), 60, "the Job's two pods")
    assert runner.exception is None
    assert "forbidden" not in runner.output.lower()
    for run_uid in (deployed_uid, outside_uid):
        kinds = "secrets,configmaps,jobs,statefulsets,services,networkpolicies"
        items = (get_json(kube_cluster, kinds, "-n", NS, f"-ldbbench.io/run-uid={run_uid}")
                 or {}).get("items", [])  # fmt: skip
        assert {i["kind"] for i in items} >= {"Secret", "ConfigMap"}
        for item in items:
            _names_and_labels(item)
    for pod in pods:
        assert len(pod["spec"]["hostname"]) <= 63
    for name in (deployed, outside):
        kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", NS, "--wait=false")


def test_the_runner_image_is_fixed_when_the_run_starts(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    """An operator upgraded to another runner image keeps the run's own for its Jobs."""
    name, later = "pinned", "pinned-later"
    kube_cluster.kubectl("create", "secret", "generic", "pinned-db", "-n", NS,
                         f"--from-literal=uri={mariadb_uri(mariadb)}")  # fmt: skip
    saved = os.environ.get("DBBENCH_RUNNER_IMAGE")
    os.environ["DBBENCH_RUNNER_IMAGE"] = "example.test/runner:before"
    try:
        external(kube_cluster, name, "pinned-db", mariadb)
        with operator(operator_env):
            uid = wait_for(lambda: uid_of(kube_cluster, name), 30, "uid")
            wait_for(lambda: jobs_owned_by(kube_cluster, uid), 60, "the step's Job")
        assert run_obj(kube_cluster, name)["status"]["runnerImage"] == "example.test/runner:before"
        # The "upgrade": a new operator process with another image; the step's Job is
        # made again (deleted here) and a run started after the upgrade begins.
        os.environ["DBBENCH_RUNNER_IMAGE"] = "example.test/runner:after"
        provisioning._applied.clear()
        kube_cluster.kubectl("delete", "job", f"{name}-step-1", "-n", NS, "--wait=true")
        external(kube_cluster, later, "pinned-db", mariadb)
        with operator(operator_env):
            later_uid = wait_for(lambda: uid_of(kube_cluster, later), 30, "uid")
            (again,) = wait_for(lambda: jobs_owned_by(kube_cluster, uid), 60, "the Job again")
            (fresh,) = wait_for(lambda: jobs_owned_by(kube_cluster, later_uid), 60, "later's Job")
    finally:
        if saved is None:
            os.environ.pop("DBBENCH_RUNNER_IMAGE", None)
        else:
            os.environ["DBBENCH_RUNNER_IMAGE"] = saved
    image = again["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "example.test/runner:before"
    assert fresh["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "example.test/runner:after")  # fmt: skip
    assert run_obj(kube_cluster, later)["status"]["runnerImage"] == "example.test/runner:after"
    for run in (name, later):
        kube_cluster.kubectl("delete", "benchmarkrun", run, "-n", NS, "--wait=false")


def drop_jobs(cluster: ControlPlane, uid: str) -> list[dict[str, Any]]:
    listed = get_json(cluster, "jobs", "-n", OPERATOR_NS, f"-ldbbench.io/run-uid={uid}")
    return list((listed or {}).get("items") or [])


def plant_cache_drop(cluster: ControlPlane, name: str) -> str:
    """The cache-drop Job the operator makes for a cold step (its own builder), in
    the release namespace: no kubelet here, so cooling never gets that far."""
    run = run_obj(cluster, name)
    ref = RunRef(name, NS, run["metadata"]["uid"])
    step = plan(parse_spec(run["spec"]))[1]
    job = build_cache_drop_job(ref, step, "no-such-node", "example.test/runner:1", OPERATOR_NS)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(job))
    return ref.uid


def test_cache_drop_jobs_in_the_release_namespace_go_with_their_run(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    """No owner reference reaches them: the run's cleanup removes them when it ends,
    and the deletion handler when it is deleted (its finalizer waits for that)."""
    ending, deleted = "cold-ends", "cold-deleted"
    for name, timeout in ((ending, "60s"), (deleted, "15m")):
        # cache: cold needs exclusive; a pool of no node keeps the two from waiting on
        # each other (and on nodes other modules made).
        hardware = {"exclusive": True, "storage": {"size": "1Gi"},
                    "nodeSelector": {"dbbench.io/test-pool": name}}  # fmt: skip
        manifest = run_manifest(name, NS, cache="cold", timeout=timeout, hardware=hardware)
        kube_cluster.kubectl("apply", "-f", "-", input=manifest)  # fmt: skip
    with operator(operator_env) as runner:
        wait_for(lambda: phase_of(kube_cluster, NS, deleted) == "Provisioning", 60, "started")
        wait_for(lambda: phase_of(kube_cluster, NS, ending) in ("Provisioning", "Failed"), 60,
                 "started")  # fmt: skip
        ending_uid = plant_cache_drop(kube_cluster, ending)
        deleted_uid = plant_cache_drop(kube_cluster, deleted)
        assert drop_jobs(kube_cluster, ending_uid)
        wait_for(lambda: run_obj(kube_cluster, ending).get("status", {}).get("cleanedUp"), 150,
                 "the timed-out run's cleanup")  # fmt: skip
        assert condition(run_obj(kube_cluster, ending), "Failed")["reason"] == "Timeout"
        assert drop_jobs(kube_cluster, ending_uid) == []
        assert drop_jobs(kube_cluster, deleted_uid)
        kube_cluster.kubectl("delete", "benchmarkrun", deleted, "-n", NS, "--wait=true")
        assert drop_jobs(kube_cluster, deleted_uid) == []
    assert runner.exception is None
    assert "forbidden" not in runner.output.lower()
    kube_cluster.kubectl("delete", "benchmarkrun", ending, "-n", NS, "--wait=false")
