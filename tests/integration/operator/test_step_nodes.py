"""Issue 32, item 3: a step's nodes.json read from a real API server, as the chart's
ServiceAccount (its RBAC rendered from the chart: reading nodes by name must be
granted by what it already holds). The test makes the Nodes (with status) and
the Pods bound to them (spec.nodeName: no scheduler, no kubelet); the operator's
`steps/placement` finds the target's members by their instance label and the
runner pods by their Job's uid, as it does when a step ends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import DATABASE_PODS_ANNOTATION
from dbbench_operator.steps import node_loss, placement, runner_jobs
from tests.fixtures.controlplane import ControlPlane, forget_kube_clients
from tests.integration.operator.test_operator_lifecycle import (
    WATCHED,
    operator_env,
    results_service,
    wait_for,
)

pytestmark = pytest.mark.integration
__all__ = ["operator_env", "results_service"]  # fixtures, shared with the lifecycle tests

NS = WATCHED[0]
RUN = RunRef(name="nodes-run", namespace=NS, uid="5b0c2d0e-0000-4000-8000-00000000e032")
JOB_UID = "5b0c2d0e-0000-4000-8000-0000000a0b32"
SPEC = parse_spec({
    "targets": [{"name": "maria", "engine": "mariadb",
                 "hardware": {"nodeSelector": {"dbbench.io/test-pool": "nodes-db"}}}],
    "dataset": {"records": 100},
    "runner": {"nodeSelector": {"dbbench.io/test-pool": "nodes-runner"}},
    "phases": [{"name": "load", "type": "insert"}],
})  # fmt: skip
STEP = plan(SPEC)[0]
SIZES = {
    "nodes-db-1": ({"cpu": "4", "memory": "16279396Ki", "pods": "110"},
                   {"cpu": "3800m", "memory": "15Gi", "pods": "110"}),
    "nodes-run-1": ({"cpu": "8", "memory": "32Gi", "pods": "110"},
                    {"cpu": "7", "memory": "30Gi", "pods": "110"}),
}  # fmt: skip
INFO = {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
        "kernelVersion": "6.8.0", "architecture": "amd64", "operatingSystem": "linux",
        "machineID": "m", "systemUUID": "s", "bootID": "b",
        "containerRuntimeVersion": "c"}  # fmt: skip


def make_node(cluster: ControlPlane, name: str, pool: str) -> None:
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"dbbench.io/test-pool": pool,
                                                  "kubernetes.io/hostname": name,
                                                  "unrelated.example.com/label": "x"}},
            "spec": {"unschedulable": True,
                     "taints": [{"key": "dbbench.io/test", "effect": "NoExecute"}]}}  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    capacity, allocatable = SIZES[name]
    status = {"status": {"capacity": capacity, "allocatable": allocatable, "nodeInfo": INFO}}
    cluster.kubectl("patch", "node", name, "--subresource=status", "--type=merge",
                    "-p", json.dumps(status))  # fmt: skip


def pod(name: str, node: str, labels: dict[str, str], selector: dict[str, str],
        annotations: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels,
                     "annotations": annotations or {}},
        "spec": {"nodeName": node, "nodeSelector": selector,
                 "automountServiceAccountToken": False,
                 "tolerations": [{"key": "dbbench.io/test", "operator": "Exists"}],
                 "containers": [{"name": "c", "image": "registry.invalid/none:1"}]},
    }  # fmt: skip


@pytest.fixture
def bound_pods(kube_cluster: ControlPlane, operator_env: list[str]) -> Iterator[None]:
    """Two nodes; the target's member on the first, two runner pods on the second."""
    make_node(kube_cluster, "nodes-db-1", "nodes-db")
    make_node(kube_cluster, "nodes-run-1", "nodes-runner")
    instance = target_names.base_name(topology_request(RUN, SPEC, SPEC.targets[0]))
    db_labels = {"app.kubernetes.io/instance": instance, "app.kubernetes.io/component": "primary"}
    pods = [
        pod("nodes-db-0", "nodes-db-1", db_labels, {"dbbench.io/test-pool": "nodes-db"}),
        *(pod(f"nodes-runner-{i}", "nodes-run-1", {runner_jobs.JOB_UID_LABEL: JOB_UID},
              {"dbbench.io/test-pool": "nodes-runner"},
              {"batch.kubernetes.io/job-completion-index": str(i)}) for i in range(2)),
    ]  # fmt: skip
    # The namespace's default ServiceAccount comes from the controller manager.
    wait_for(lambda: kube_cluster.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": pods}), check=False).returncode == 0,
        60, "the pods to be created")  # fmt: skip
    forget_kube_clients()  # the operator's clients, as its ServiceAccount (operator_env)
    try:
        yield
    finally:
        forget_kube_clients()
        names = [p["metadata"]["name"] for p in pods]
        kube_cluster.kubectl("delete", "pod", "-n", NS, *names, "--force", "--grace-period=0",
                             "--wait=false", check=False)  # fmt: skip
        kube_cluster.kubectl("delete", "node", "nodes-db-1", "nodes-run-1", "--wait=false",
                             check=False)  # fmt: skip


def test_the_step_names_each_pods_node_with_its_labels_and_resources(bound_pods: None) -> None:
    found = placement.read_step_nodes(RUN, SPEC, STEP, {"metadata": {"uid": JOB_UID}})
    assert found.error is None
    assert [(p.name, p.kind, p.node, p.role) for p in found.pods] == [
        ("nodes-db-0", "database", "nodes-db-1", "primary"),
        ("nodes-runner-0", "runner", "nodes-run-1", "0"),
        ("nodes-runner-1", "runner", "nodes-run-1", "1"),
    ]  # fmt: skip
    assert [(n.name, n.pods) for n in found.nodes] == [
        ("nodes-db-1", ("nodes-db-0",)), ("nodes-run-1", ("nodes-runner-0", "nodes-runner-1")),
    ]  # fmt: skip
    db, runner = found.node("nodes-db-1"), found.node("nodes-run-1")
    assert db is not None
    assert runner is not None
    # The selecting label and the hostname; not the node's other labels.
    assert db.labels == {"dbbench.io/test-pool": "nodes-db", "kubernetes.io/hostname": "nodes-db-1"}
    assert runner.labels["dbbench.io/test-pool"] == "nodes-runner"
    assert (db.capacity.cpu, db.capacity.memory) == ("4", "16279396Ki")
    assert (db.allocatable.cpu_cores, db.allocatable.memory_bytes) == (3.8, 15 << 30)
    assert (runner.allocatable.cpu_cores, runner.allocatable.memory_bytes) == (7.0, 30 << 30)
    assert db.info is not None
    assert db.info.kubelet_version == "v1.33.1"
    # Its own taint, and the one the node controller adds to a cordoned node.
    assert "dbbench.io/test:NoExecute" in db.taints


def test_a_node_deleted_before_the_step_ended_is_named_not_described(
    kube_cluster: ControlPlane, bound_pods: None
) -> None:
    kube_cluster.kubectl("delete", "node", "nodes-run-1")
    found = placement.read_step_nodes(RUN, SPEC, STEP, {"metadata": {"uid": JOB_UID}})
    gone = found.node("nodes-run-1")
    assert gone is not None
    assert gone.error is not None
    assert "not found" in gone.error
    assert gone.pods == ("nodes-runner-0", "nodes-runner-1")
    kept = found.node("nodes-db-1")
    assert kept is not None
    assert kept.error is None
    assert kept.allocatable.cpu == "3800m"


def test_a_running_steps_pass_reads_its_pods_once_for_every_check(
    kube_cluster: ControlPlane, bound_pods: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following the Job, a database pod's restart and a lost node judge the two lists
    the pass read once (`advancing._follow`), and judge them as they would have
    read them themselves (the second reading was two of a deployed target's seven
    API calls a pass: docs/operator.md)."""
    lost = {"status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                       "reason": "NodeStatusUnknown"}]}}  # fmt: skip
    kube_cluster.kubectl("patch", "node", "nodes-run-1", "--subresource=status", "--type=merge",
                         "-p", json.dumps(lost))  # fmt: skip
    real, kinds = api.list_objects, []

    def spy(api_version: str, kind: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        kinds.append(kind)
        return real(api_version, kind, *args, **kwargs)

    monkeypatch.setattr(api, "list_objects", spy)
    member = real("v1", "Pod", NS, fields={"metadata.name": "nodes-db-0"})[0]
    marks = {"nodes-db-0": [member["metadata"]["uid"], 0]}
    job = {"metadata": {"uid": JOB_UID, "name": "nodes-run-step-1",
                        "annotations": {DATABASE_PODS_ANNOTATION: json.dumps(marks)}},
           "spec": {"completions": 2}, "status": {"active": 2}}  # fmt: skip
    read = placement.read_step_pods(RUN, SPEC, STEP, job)
    assert kinds == ["Pod", "Pod"]
    assert [len(pods) for pods in read] == [1, 2]
    shared = (
        runner_jobs.follow(RUN, STEP, job, read[1])[0],
        runner_jobs.disturbance(RUN, SPEC, STEP, job, read[0]),
        node_loss.lost_node_failure(RUN, SPEC, STEP, job, "step 1/1", read=read),
    )
    assert kinds.count("Pod") == 2  # no pod read again
    alone = (
        runner_jobs.follow(RUN, STEP, job)[0],
        runner_jobs.disturbance(RUN, SPEC, STEP, job),
        node_loss.lost_node_failure(RUN, SPEC, STEP, job, "step 1/1"),
    )
    assert kinds.count("Pod") == 6  # each reading its own: four more
    assert shared == alone
    # The runners' node reads Ready=Unknown: the pass names it lost, both ways.
    assert shared[2] is not None
    assert shared[2][0] == "NodeLost"
    assert "nodes-run-1" in shared[2][1]
