"""Every wait says why, and ends: the operator against the real control plane.

The control plane has a real scheduler and no node, so every pod is really
refused by the scheduler (PodScheduled=False, reason Unschedulable, with its
message). A Node object with a small capacity (no kubelet behind it, cordoned
so that nothing lands on it) stands for a pool too small for a run.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.fixtures.controlplane import ControlPlane
from tests.fixtures.mariadb import MariaDBServer
from tests.integration.operator.test_operator_lifecycle import (
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

NS = "team-a"
TINY_NODE = "dbbench-tiny"
TINY_POOL = {"dbbench.io/test-pool": "tiny"}


def run_of(cluster: ControlPlane, name: str) -> dict[str, Any]:
    return get_json(cluster, "benchmarkrun", name, "-n", NS) or {}


def condition_with(
    cluster: ControlPlane, name: str, kind: str, reason: str
) -> dict[str, Any] | None:
    conditions = run_of(cluster, name).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind and c["reason"] == reason), None)


def events_of(cluster: ControlPlane, name: str, reason: str) -> list[dict[str, Any]]:
    selector = f"--field-selector=involvedObject.name={name},reason={reason}"
    return (get_json(cluster, "events", "-n", NS, selector) or {}).get("items") or []


def children(cluster: ControlPlane, name: str) -> dict[str, list[str]]:
    kinds = "pods,jobs,statefulsets,deployments,services,persistentvolumeclaims"
    listed = get_json(cluster, kinds, "-n", NS, f"-ldbbench.io/run={name}") or {"items": []}
    found: dict[str, list[str]] = {}
    for item in listed["items"]:
        found.setdefault(item["kind"], []).append(item["metadata"]["name"])
    return found


def test_an_unschedulable_database_pod_is_named_at_once_and_fails_the_run_after_the_grace(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    name = "no-room"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, NS, startupGrace="20s"))
    with operator(operator_env) as runner:
        seen = wait_for(
            lambda: condition_with(kube_cluster, name, "TargetsReady", "Unschedulable"),
            60,
            "TargetsReady=Unschedulable",
        )
        created = time.monotonic()
        (target,) = run_of(kube_cluster, name)["status"]["targets"]
        ready = target["conditions"][0]
        assert (ready["status"], ready["reason"]) == ("False", "Unschedulable")
        # The scheduler's own words, as the pod's PodScheduled condition has them.
        pods = get_json(kube_cluster, "pods", "-n", NS, f"-ldbbench.io/run={name}") or {}
        (pod,) = pods["items"]
        scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["message"] in ready["message"]
        assert f"pod {pod['metadata']['name']} Unschedulable" in seen["message"]
        assert "spec.startupGrace 20s" in seen["message"]
        progressing = condition(run_of(kube_cluster, name), "Progressing")
        assert progressing["reason"] == "Unschedulable"
        wait_for(lambda: events_of(kube_cluster, name, "Unschedulable"), 30, "a Warning event")
        wait_for(lambda: phase_of(kube_cluster, ns=NS, name=name) == "Failed", 60, "Failed")
        waited = time.monotonic() - created
        wait_for(lambda: run_of(kube_cluster, name)["status"].get("cleanedUp"), 30, "cleanup")
    assert runner.exception is None
    run = run_of(kube_cluster, name)
    failed = condition(run, "Failed")
    assert failed["reason"] == "Unschedulable"
    assert "did not start within spec.startupGrace (20s)" in failed["message"]
    assert scheduled["message"] in failed["message"]
    assert waited < 20 + 15, f"failed {waited:.0f}s after the first report"
    # One Warning when the wait began (not one per pass), one when the run failed.
    events = events_of(kube_cluster, name, "Unschedulable")
    assert sorted("the run fails at" in e["message"] for e in events) == [False, True], events
    assert all(e["type"] == "Warning" and e.get("count", 1) == 1 for e in events), events
    wait_for(lambda: not children(kube_cluster, name).get("StatefulSet")
             and not children(kube_cluster, name).get("Pod"), 60, "the database to go")  # fmt: skip


def test_runner_pods_that_cannot_start_fail_the_step_after_the_grace(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    """An external target (a real mariadbd) is ready at once; the step's runner
    pods are refused by the scheduler; the run fails after its grace, not its timeout."""
    name = "no-runner"
    apply_external_run(kube_cluster, NS, name, "ext-no-runner", mariadb_uri(mariadb),
                       {"startupGrace": "15s", "timeout": "30m"})  # fmt: skip
    with operator(operator_env) as runner:
        seen = wait_for(
            lambda: condition_with(kube_cluster, name, "Progressing", "Unschedulable"),
            90,
            "Progressing=Unschedulable",
        )
        assert "runner pods not started: pod " in seen["message"]
        assert run_of(kube_cluster, name)["status"]["phase"] == "Running"
        wait_for(lambda: phase_of(kube_cluster, ns=NS, name=name) == "Failed", 60, "Failed")
        wait_for(lambda: run_of(kube_cluster, name)["status"].get("cleanedUp"), 30, "cleanup")
    assert runner.exception is None
    failed = condition(run_of(kube_cluster, name), "Failed")
    assert failed["reason"] == "Unschedulable"
    assert "runner pod " in failed["message"]
    assert "did not start within spec.startupGrace (15s)" in failed["message"]
    assert get_json(kube_cluster, "job", f"{name}-step-1", "-n", NS) is None
    assert mariadb.root_password not in json.dumps(run_of(kube_cluster, name))


def test_a_database_that_refuses_the_operator_fails_the_run_after_the_grace(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    """A real mariadbd on which the operator's user does not exist (as on a server
    whose first start never created it): the refusal is explained at once (what it
    means, the likely fix, one Warning), and the run fails when spec.startupGrace
    ends, not spec.timeout, naming the target and the last error."""
    name = "refused"
    uri = f"mariadb://dbbench_missing:not-the-password@127.0.0.1:{mariadb.port}/"
    apply_external_run(kube_cluster, NS, name, "ext-refused", uri,
                       {"startupGrace": "15s", "timeout": "30m"})  # fmt: skip
    with operator(operator_env) as runner:
        seen = wait_for(
            lambda: condition_with(kube_cluster, name, "Progressing", "AccessDenied"),
            60,
            "Progressing=AccessDenied",
        )
        first = time.monotonic()
        said = "the server refused the operator's user name and password (MariaDB error 1045)"
        assert said in seen["message"]
        assert ("check the user and password in the URI of spec.targets[0].external."
                "uriSecretRef") in seen["message"]  # fmt: skip
        assert "spec.startupGrace 15s" in seen["message"]
        (target,) = run_of(kube_cluster, name)["status"]["targets"]
        (ready,) = target["conditions"]
        assert (ready["status"], ready["reason"]) == ("False", "AccessDenied")
        assert ready["lastTransitionTime"]  # when the wait began, kept from pass to pass
        wait_for(lambda: phase_of(kube_cluster, ns=NS, name=name) == "Failed", 60, "Failed")
        waited = time.monotonic() - first
        wait_for(lambda: run_of(kube_cluster, name)["status"].get("cleanedUp"), 30, "cleanup")
    assert runner.exception is None
    run = run_of(kube_cluster, name)
    failed = condition(run, "Failed")
    assert failed["reason"] == "AccessDenied"
    assert "target ext: the database was not usable within spec.startupGrace (15s)" in (
        failed["message"])  # fmt: skip
    assert f"last error: AccessDenied: {said}" in failed["message"]
    assert waited < 15 + 15, f"failed {waited:.0f}s after the first report"
    events = events_of(kube_cluster, name, "AccessDenied")
    assert [e["type"] for e in events] == ["Warning", "Warning"], events  # began, failed
    text = json.dumps(run) + json.dumps(events)
    assert "not-the-password" not in text
    assert "dbbench_missing" not in text


@pytest.fixture
def tiny_node(kube_cluster: ControlPlane) -> Any:
    """A cordoned Node with 2 CPUs and 4 GiB allocatable, labelled as its own pool."""
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": TINY_NODE, "labels": TINY_POOL},
        "spec": {"unschedulable": True},
    }  # fmt: skip
    kube_cluster.kubectl("apply", "-f", "-", input=json.dumps(node))
    size = {"cpu": "2", "memory": "4Gi", "pods": "110"}
    kube_cluster.kubectl(
        "patch",
        "node",
        TINY_NODE,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"capacity": size, "allocatable": size}}),
    )
    try:
        yield TINY_NODE
    finally:
        kube_cluster.kubectl("delete", "node", TINY_NODE, "--wait=false", check=False)


def test_requests_that_fit_no_node_of_the_pool_are_refused_at_once(
    kube_cluster: ControlPlane, operator_env: list[str], tiny_node: str
) -> None:
    name, runner_name = "too-big", "runner-too-big"
    hardware = {"nodeSelector": TINY_POOL, "storage": {"size": "1Gi"},
                "resources": {"requests": {"cpu": "64", "memory": "1Gi"}}}  # fmt: skip
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, NS, hardware=hardware))
    runner_spec = {"nodeSelector": TINY_POOL, "resources": {"limits": {"memory": "64Gi"}}}
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(
        runner_name, NS, hardware={"nodeSelector": TINY_POOL, "storage": {"size": "1Gi"}},
        runner=runner_spec))  # fmt: skip
    with operator(operator_env) as runner:
        wait_for(lambda: phase_of(kube_cluster, ns=NS, name=name) == "Failed", 30, "Failed")
        wait_for(lambda: phase_of(kube_cluster, ns=NS, name=runner_name) == "Failed", 30,
                 "Failed (runner)")  # fmt: skip
        # kopf posts events from a queue of its own, after the status patch that
        # ends the wait above: read before the operator stops, it was missing once.
        wait_for(lambda: events_of(kube_cluster, name, "NoNodeFits"), 30, "a NoNodeFits event")
    assert runner.exception is None
    run = run_of(kube_cluster, name)
    failed = condition(run, "Failed")
    assert failed["reason"] == "NoNodeFits"
    assert failed["message"].startswith("spec.hardware.resources.requests.cpu: 64 per database pod")
    assert f"the largest, {tiny_node}, has 2 cpu allocatable" in failed["message"]
    assert "spec.hardware.nodeSelector={dbbench.io/test-pool=tiny}" in failed["message"]
    assert "startedAt" not in run["status"]  # refused before anything was deployed
    assert not children(kube_cluster, name)
    other = condition(run_of(kube_cluster, runner_name), "Failed")
    assert other["reason"] == "NoNodeFits"
    assert other["message"].startswith("spec.runner.resources.limits.memory: 64Gi per runner pod")


def test_a_targets_own_hardware_is_fitted_to_its_own_pool(
    kube_cluster: ControlPlane, operator_env: list[str], tiny_node: str
) -> None:
    """The run's hardware fits the tiny pool; the second target's own memory does
    not: refused at once, naming that target's fields and pool."""
    name = "own-too-big"
    big = {"resources": {"requests": {"cpu": "1", "memory": "16Gi"}},
           "nodeSelector": TINY_POOL, "pricePerHour": 0.4}  # fmt: skip
    targets = [{"name": "small", "engine": "mariadb"},
               {"name": "large", "engine": "postgresql", "hardware": big}]  # fmt: skip
    hardware = {"nodeSelector": TINY_POOL, "storage": {"size": "1Gi"},
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}  # fmt: skip
    manifest = run_manifest(name, NS, targets=targets, hardware=hardware)
    kube_cluster.kubectl("apply", "-f", "-", input=manifest)
    with operator(operator_env) as runner:
        wait_for(lambda: phase_of(kube_cluster, ns=NS, name=name) == "Failed", 30, "Failed")
    assert runner.exception is None
    failed = condition(run_of(kube_cluster, name), "Failed")
    assert failed["reason"] == "NoNodeFits"
    assert failed["message"].startswith(
        "spec.targets[1].hardware.resources.requests.memory: 16Gi per database pod fits no "
        "node of the pool spec.targets[1].hardware.nodeSelector={dbbench.io/test-pool=tiny}"
    ), failed["message"]
    assert f"the largest, {tiny_node}, has 4Gi memory allocatable" in failed["message"]
    assert not children(kube_cluster, name)


def test_a_statefulset_that_cannot_create_its_pods_is_named_and_fails_after_the_grace(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    """A ResourceQuota allowing no pods: the StatefulSet's own FailedCreate event."""
    ns, name = "team-b", "no-quota"
    kube_cluster.kubectl("create", "quota", "no-pods", "-n", ns, "--hard=pods=0")
    try:
        kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns, startupGrace="20s"))
        with operator(operator_env) as runner:
            seen = wait_for(
                lambda: next((c for c in (get_json(kube_cluster, "br", name, "-n", ns) or {})
                              .get("status", {}).get("conditions") or []
                              if c["type"] == "TargetsReady" and c["reason"] == "FailedCreate"),
                             None),
                60, "TargetsReady=FailedCreate",
            )  # fmt: skip
            wait_for(lambda: phase_of(kube_cluster, ns, name) == "Failed", 60, "Failed")
    finally:
        kube_cluster.kubectl("delete", "quota", "no-pods", "-n", ns, check=False)
    assert runner.exception is None
    assert "0/1 database pods ready; StatefulSet " in seen["message"]
    assert "exceeded quota: no-pods" in seen["message"]
    failed = condition(get_json(kube_cluster, "br", name, "-n", ns) or {}, "Failed")
    assert failed["reason"] == "FailedCreate"
    assert "did not start within spec.startupGrace (20s)" in failed["message"]
