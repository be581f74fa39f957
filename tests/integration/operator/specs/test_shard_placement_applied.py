"""targets[].sharding reaches the objects the real kube-apiserver keeps.

The operator's builders (parse_spec -> topology_request -> the mongodb chart;
build_runner_job) to the real API server: the database workloads by
`kubectl apply --dry-run=server` (defaults and validation included), the
runner Job created for real so that the Job controller makes its pods. Seen:
co-located shards with their share of the resources and the pod affinity
holding them on one node, each component's nodeSelector, the routers' count,
and runner pods that carry a mongos sidecar (restartPolicy Always) with the
config servers as --configdb while the runner's step file names localhost.
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

NAMESPACE = "dbbench-shard-placement"
RUN = RunRef(name="field2", namespace=NAMESPACE, uid="7a6b5c4d-uid", generation=1)
NODE = {"requests": {"cpu": "6", "memory": "24Gi"}, "limits": {"cpu": "6", "memory": "24Gi"}}
SPEC: dict[str, Any] = {
    "targets": [{
        "name": "sharded", "engine": "mongodb", "topology": "sharded", "shards": 3, "members": 1,
        "sharding": {
            "shards": {"placement": "colocated", "nodeSelector": {"dbbench.io/pool": "db-24gb"}},
            "configServers": {"nodeSelector": {"dbbench.io/pool": "meta"}},
            "routers": {"placement": "client"},
        },
    }],
    "hardware": {"resources": NODE, "nodeSelector": {"dbbench.io/pool": "db"}},
    "runner": {"pods": 2, "threads": 2, "nodeSelector": {"dbbench.io/pool": "load"}},
    "phases": [{"name": "load", "type": "insert"}],
}  # fmt: skip
JOB_SETTINGS = JobSettings(
    image="dbbench/runner:test", pull_policy="Never", results_url="http://results.invalid:8080",
    deadline_seconds=600,
)  # fmt: skip


def kubectl_json(cluster: Any, *args: str, stdin: str | None = None) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl(*args, "-o", "json", input=stdin).stdout))


def applied(cluster: Any, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The target's workloads as the API server would store them, by component."""
    spec = parse_spec(body)
    request = topology_request(RUN, spec, spec.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)
    docs = [d for d in render(request) if d["kind"] in ("StatefulSet", "Deployment")]
    accepted = kubectl_json(cluster, "apply", "--dry-run=server", "-n", NAMESPACE, "-f", "-",
                            stdin=yaml.safe_dump_all(docs))  # fmt: skip
    items = accepted.get("items") or [accepted]
    return {i["metadata"]["labels"]["app.kubernetes.io/component"]: i for i in items}


def test_colocated_shards_and_component_pools_are_what_the_server_keeps(
    kube_cluster: Any, namespace: str, helm_on_path: str
) -> None:
    assert namespace == NAMESPACE
    workloads = applied(kube_cluster, SPEC)
    shards = sorted(c for c in workloads if c.startswith("shard"))
    assert shards == ["shard0", "shard1", "shard2"]
    for component in shards:
        pod = workloads[component]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"dbbench.io/pool": "db-24gb"}
        share = {"cpu": "2", "memory": "8Gi"}
        assert pod["containers"][0]["resources"] == {"requests": share, "limits": share}
        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["labelSelector"]["matchLabels"]["dbbench.io/shard-member"] == "true"
        assert term["topologyKey"] == "kubernetes.io/hostname"
    assert workloads["configsvr"]["spec"]["template"]["spec"]["nodeSelector"] == {
        "dbbench.io/pool": "meta"}  # fmt: skip
    # Client-side routers: one mongos left server-side, for the setup, with the config servers.
    mongos = workloads["mongos"]
    assert mongos["spec"]["replicas"] == 1
    assert mongos["spec"]["template"]["spec"]["nodeSelector"] == {"dbbench.io/pool": "meta"}


def test_server_side_routers_are_as_many_as_the_count(
    kube_cluster: Any, namespace: str, helm_on_path: str
) -> None:
    assert namespace == NAMESPACE
    target = {**SPEC["targets"][0], "sharding": {"routers": {
        "count": 3, "nodeSelector": {"dbbench.io/pool": "routers"}}}}  # fmt: skip
    workloads = applied(kube_cluster, {**SPEC, "targets": [target]})
    mongos = workloads["mongos"]
    assert mongos["spec"]["replicas"] == 3
    assert mongos["spec"]["template"]["spec"]["nodeSelector"] == {"dbbench.io/pool": "routers"}
    shard = workloads["shard0"]["spec"]["template"]["spec"]
    assert shard["nodeSelector"] == {"dbbench.io/pool": "db"}
    assert shard["containers"][0]["resources"] == NODE  # spread: the whole resources


def runner_pods(cluster: Any, job: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = kubectl_json(cluster, "get", "pods", "-n", NAMESPACE, f"-ljob-name={job}")["items"]
        if len(pods) == count:
            return list(pods)
        time.sleep(0.5)
    raise AssertionError(f"the Job controller made no {count} pods for {job}")


def test_every_runner_pod_carries_its_own_router(kube_cluster: Any, namespace: str) -> None:
    assert namespace == NAMESPACE
    spec = parse_spec(SPEC)
    access = target_access(RUN, spec, 0)
    job = build_runner_job(RUN, spec, plan(spec)[0], access, JOB_SETTINGS, database_pods={})
    job["metadata"].pop("ownerReferences")  # no BenchmarkRun owns it here
    name = job["metadata"]["name"]
    kube_cluster.kubectl("create", "-f", "-", input=json.dumps(job))
    request = topology_request(RUN, spec, spec.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)
    config_servers = target_names.layout(request).config_servers
    assert config_servers is not None
    configdb = f"--configdb=cfg/{','.join(config_servers.hosts)}"
    try:
        for pod in runner_pods(kube_cluster, name, 2):
            where = pod["metadata"]["name"]
            body = pod["spec"]
            assert body["nodeSelector"] == {"dbbench.io/pool": "load"}, where
            sidecars = [c for c in body["initContainers"] if c.get("restartPolicy") == "Always"]
            (mongos,) = sidecars
            assert mongos["command"] == ["mongos"], where
            assert configdb in mongos["args"], where
            assert "--bind_ip=127.0.0.1" in mongos["args"], where
            assert [c["name"] for c in body["containers"]] == ["runner"], where
    finally:
        kube_cluster.kubectl("delete", "job", name, "-n", NAMESPACE, "--cascade=foreground",
                             "--wait=false", check=False)  # fmt: skip
    assert access.uri == "mongodb://localhost:27017/?authSource=admin"
