"""Every placement field of a BenchmarkRun reaches the objects the API server keeps.

A spec goes through the operator's own builders (parse_spec -> topology_request
-> the charts through helm; build_runner_job) to the real kube-apiserver:
database workloads by `kubectl apply --dry-run=server` (what the server would
store, defaults and validation included), runner Jobs created for real so that
the Job controller makes their pods. What the server returns carries
spec.hardware on every database pod template and volume claim, spec.runner on
every runner pod, and the targets' members and shards as the workloads' shape
(docs/fields.md names these tests for those fields).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES
from dbbench_operator.specs.addresses import target_access, topology_request
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import JobSettings, build_runner_job

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-fields-placement"
RUN = RunRef(name="placed", namespace=NAMESPACE, uid="0f1e2d3c-uid", generation=1)
WORKLOADS = ("StatefulSet", "Deployment")
# Quantities in the API server's canonical form, so what it returns compares equal.
DATA_RESOURCES = {"requests": {"cpu": "1500m", "memory": "3Gi"},
                  "limits": {"cpu": "2", "memory": "4Gi"}}  # fmt: skip
CONFIG_RESOURCES = {"requests": {"cpu": "300m", "memory": "768Mi"},
                    "limits": {"cpu": "400m", "memory": "1Gi"}}  # fmt: skip
MONGOS_RESOURCES = {"requests": {"cpu": "700m", "memory": "512Mi"},
                    "limits": {"cpu": "800m", "memory": "640Mi"}}  # fmt: skip
NODE_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                           "values": ["m6i.2xlarge"]}]}]}}  # fmt: skip
HARDWARE: dict[str, Any] = {
    "nodeSelector": {"dbbench.io/pool": "db-large"},
    "tolerations": [
        {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute",
         "tolerationSeconds": 120},
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
    ],
    "affinity": {"nodeAffinity": NODE_AFFINITY},
    "resources": DATA_RESOURCES,
    "configServerResources": CONFIG_RESOURCES,
    "mongosResources": MONGOS_RESOURCES,
    "storage": {"storageClassName": "fast-ssd", "size": "7Gi"},
}  # fmt: skip
RUNNER: dict[str, Any] = {
    "pods": 2,
    "threads": 2,
    "nodeSelector": {"dbbench.io/pool": "load"},
    "tolerations": [{"key": "load", "operator": "Equal", "value": "yes", "effect": "NoExecute",
                     "tolerationSeconds": 30}],
    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                  "limits": {"cpu": "1", "memory": "512Mi"}},
}  # fmt: skip
SPEC = {
    "targets": [
        {"name": "maria", "engine": "mariadb", "topology": "primaryReplica", "members": 3},
        {"name": "shardy", "engine": "mongodb", "topology": "sharded", "shards": 2, "members": 3},
    ],
    "hardware": HARDWARE,
    "runner": RUNNER,
    "dataset": {"records": 1000, "recordSize": 256},
    "phases": [{"name": "load", "type": "insert"}],
}
JOB_SETTINGS = JobSettings(
    image="dbbench/runner:test", pull_policy="Never", results_url="http://results.invalid:8080",
    deadline_seconds=600,
)  # fmt: skip


def kubectl_json(cluster: Any, *args: str, stdin: str | None = None) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl(*args, "-o", "json", input=stdin).stdout))


def applied_workloads(
    cluster: Any, target: str, body: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The target's workloads as the API server would store them (server-side dry run)."""
    spec = parse_spec(SPEC if body is None else body)
    chosen = next(t for t in spec.targets if t.name == target)
    request = topology_request(RUN, spec, chosen, "cluster.local", BUILT_IN_ENGINE_IMAGES)
    docs = [d for d in render(request) if d["kind"] in WORKLOADS]
    accepted = kubectl_json(
        cluster, "apply", "--dry-run=server", "-n", NAMESPACE, "-f", "-",
        stdin=yaml.safe_dump_all(docs),
    )  # fmt: skip
    items = accepted.get("items") or [accepted]
    assert {i["metadata"]["name"] for i in items} == {d["metadata"]["name"] for d in docs}
    for item in items:
        assert item["metadata"]["labels"]["dbbench.io/target"] == target
        assert item["metadata"]["name"].startswith(target_names.base_name(request))
    return list(items)


def component(workload: dict[str, Any]) -> str:
    return str(workload["metadata"]["labels"]["app.kubernetes.io/component"])


@pytest.mark.parametrize("target", ["maria", "shardy"])
def test_hardware_is_on_every_database_pod_the_api_server_accepts(
    kube_cluster: Any, namespace: str, helm_on_path: str, target: str
) -> None:
    assert namespace == NAMESPACE
    for workload in applied_workloads(kube_cluster, target):
        where = f"{workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == HARDWARE["nodeSelector"], where
        assert pod["tolerations"] == HARDWARE["tolerations"], where
        assert pod["affinity"]["nodeAffinity"] == NODE_AFFINITY, where
        wanted = {"configsvr": CONFIG_RESOURCES, "mongos": MONGOS_RESOURCES}.get(
            component(workload), DATA_RESOURCES
        )
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            assert container["resources"] == wanted, (where, container["name"])
        if workload["kind"] == "StatefulSet":
            (claim,) = workload["spec"]["volumeClaimTemplates"]
            assert claim["spec"]["storageClassName"] == "fast-ssd", where
            assert claim["spec"]["resources"]["requests"]["storage"] == "7Gi", where


# A target's own hardware: every field different from the run's HARDWARE.
OWN_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                           "values": ["r6i.large"]}]}]}}  # fmt: skip
OWN: dict[str, Any] = {
    "nodeSelector": {"dbbench.io/pool": "db-16gb"},
    "tolerations": [{"key": "memory-optimised", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": OWN_AFFINITY},
    "resources": {"requests": {"cpu": "1", "memory": "6Gi"},
                  "limits": {"cpu": "2", "memory": "8Gi"}},
    "configServerResources": {"requests": {"cpu": "200m", "memory": "512Mi"},
                              "limits": {"cpu": "300m", "memory": "512Mi"}},
    "mongosResources": {"requests": {"cpu": "600m", "memory": "768Mi"},
                        "limits": {"cpu": "600m", "memory": "768Mi"}},
    "storage": {"storageClassName": "bulk-hdd", "size": "9Gi"},
    "pricePerHour": 0.126,
}  # fmt: skip
_SQL_OWN = {k: v for k, v in OWN.items() if k not in ("configServerResources", "mongosResources")}
OWN_SPEC = {
    **SPEC,
    "targets": [
        {"name": "maria", "engine": "mariadb", "topology": "primaryReplica", "members": 2},
        {"name": "pg", "engine": "postgresql", "topology": "primaryReplica", "members": 2,
         "hardware": _SQL_OWN},
        {"name": "shardy", "engine": "mongodb", "topology": "sharded", "shards": 2, "members": 1,
         "hardware": OWN},
    ],
}  # fmt: skip


def test_a_targets_own_hardware_is_on_its_pods_the_api_server_accepts(
    kube_cluster: Any, namespace: str, helm_on_path: str
) -> None:
    """targets[].hardware replaces the run's fields for that target's workloads
    only; a target without one keeps the run's."""
    assert namespace == NAMESPACE
    for target, hardware in (("maria", HARDWARE), ("pg", OWN), ("shardy", OWN)):
        for workload in applied_workloads(kube_cluster, target, OWN_SPEC):
            where = f"{target}: {workload['kind']}/{workload['metadata']['name']}"
            pod = workload["spec"]["template"]["spec"]
            assert pod["nodeSelector"] == hardware["nodeSelector"], where
            assert pod["tolerations"] == hardware["tolerations"], where
            assert pod["affinity"]["nodeAffinity"] == hardware["affinity"]["nodeAffinity"], where
            by_component = {"configsvr": hardware["configServerResources"],
                            "mongos": hardware["mongosResources"]}  # fmt: skip
            wanted = by_component.get(component(workload), hardware["resources"])
            for container in [*pod.get("initContainers", []), *pod["containers"]]:
                assert container["resources"] == wanted, (where, container["name"])
            if workload["kind"] == "StatefulSet":
                (claim,) = workload["spec"]["volumeClaimTemplates"]
                storage = hardware["storage"]
                assert claim["spec"]["storageClassName"] == storage["storageClassName"], where
                assert claim["spec"]["resources"]["requests"]["storage"] == storage["size"], where


def test_members_and_shards_are_the_shape_of_the_workloads(
    kube_cluster: Any, namespace: str, helm_on_path: str
) -> None:
    assert namespace == NAMESPACE
    (maria,) = applied_workloads(kube_cluster, "maria")
    assert (maria["kind"], maria["spec"]["replicas"]) == ("StatefulSet", 3)
    shardy = applied_workloads(kube_cluster, "shardy")
    sets = {component(w): w for w in shardy if w["kind"] == "StatefulSet"}
    shards = sorted(c for c in sets if c.startswith("shard"))
    assert shards == ["shard0", "shard1"]
    assert all(sets[c]["spec"]["replicas"] == 3 for c in shards)
    assert sets["configsvr"]["spec"]["replicas"] == 3
    assert [component(w) for w in shardy if w["kind"] == "Deployment"] == ["mongos"]


def runner_pods(cluster: Any, job: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = kubectl_json(cluster, "get", "pods", "-n", NAMESPACE, f"-ljob-name={job}")["items"]
        if len(pods) == RUNNER["pods"]:
            return list(pods)
        time.sleep(0.5)
    raise AssertionError(f"the Job controller made no {RUNNER['pods']} pods for {job}")


def test_runner_placement_is_on_every_runner_pod(kube_cluster: Any, namespace: str) -> None:
    assert namespace == NAMESPACE
    spec = parse_spec(SPEC)
    step = plan(spec)[0]
    job = build_runner_job(RUN, spec, step, target_access(RUN, spec, 0), JOB_SETTINGS,
                           database_pods={})  # fmt: skip
    # No BenchmarkRun object owns it here: the garbage collector would remove it.
    job["metadata"].pop("ownerReferences")
    name = job["metadata"]["name"]
    kube_cluster.kubectl("create", "-f", "-", input=json.dumps(job))
    try:
        stored = kubectl_json(kube_cluster, "get", "job", name, "-n", NAMESPACE)
        assert stored["spec"]["completions"] == stored["spec"]["parallelism"] == RUNNER["pods"]
        pods = runner_pods(kube_cluster, name)
        indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                         for p in pods)  # fmt: skip
        assert indexes == ["0", "1"]
        for pod in pods:
            where = pod["metadata"]["name"]
            body = pod["spec"]
            assert body["nodeSelector"] == RUNNER["nodeSelector"], where
            # The API server appends its default not-ready/unreachable tolerations.
            assert body["tolerations"][: len(RUNNER["tolerations"])] == RUNNER["tolerations"]
            assert body["containers"][0]["resources"] == RUNNER["resources"], where
    finally:
        kube_cluster.kubectl("delete", "job", name, "-n", NAMESPACE, "--cascade=foreground",
                             "--wait=false", check=False)  # fmt: skip
