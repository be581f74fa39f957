"""The step file's database host, from the pods the chart really makes: a sharded
MongoDB target rendered (helm template of charts/mongodb), applied to the real
API server, its pods created by the real StatefulSet and ReplicaSet controllers
(no node: they stay Pending, which changes nothing here), then found the way
the operator finds them (`running.database_pods`) and described by
`specs/runner_job.database_host`. The target's memory and CPU are the shards' own;
config servers and the router are listed under their roles with their own,
smaller limits. (By name the config server's pod comes first: it used to stand
for the target.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.runner_job import database_host
from dbbench_operator.steps.runner_jobs import database_pods
from tests.fixtures.controlplane import ControlPlane, forget_kube_clients

pytestmark = pytest.mark.integration

NAMESPACE = "sharded-pods"
GIB = 1 << 30
RUN = RunRef("hosts", NAMESPACE, "5e1f-uid", generation=1)
SPEC = parse_spec({
    "targets": [{"name": "mongo", "engine": "mongodb", "topology": "sharded", "shards": 2,
                 "members": 2,
                 "hardware": {
                     "resources": {"requests": {"cpu": "2", "memory": "6Gi"},
                                   "limits": {"cpu": "2", "memory": "6Gi"}},
                     "configServerResources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                               "limits": {"cpu": "500m", "memory": "1Gi"}},
                     "mongosResources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                         "limits": {"cpu": "1", "memory": "2Gi"}}}}],
    "dataset": {"records": 1000},
    "phases": [{"name": "load", "type": "insert"}],
})  # fmt: skip
# 2 config servers, 2 shards x 2 members, 1 router.
PODS = 2 + 2 * 2 + 1


@pytest.fixture(scope="module")
def pods(
    kube_cluster: ControlPlane, helm_on_path: str, monkeypatch_module: pytest.MonkeyPatch
) -> Iterator[list[dict[str, Any]]]:
    """The target's pods as the controllers made them, listed by the operator's client."""
    request = topology_request(RUN, SPEC, SPEC.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)
    docs = [d for d in render(request) if d["kind"] in ("StatefulSet", "Deployment", "Service")]
    kube_cluster.kubectl("create", "namespace", NAMESPACE)
    monkeypatch_module.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    monkeypatch_module.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    forget_kube_clients()
    try:
        kube_cluster.kubectl("apply", "-n", NAMESPACE, "-f", "-", input=yaml.safe_dump_all(docs))
        deadline = time.monotonic() + 90
        found = database_pods(RUN, SPEC, 0)
        while len(found) < PODS and time.monotonic() < deadline:
            time.sleep(1)
            found = database_pods(RUN, SPEC, 0)
        assert len(found) == PODS, [p["metadata"]["name"] for p in found]
        yield found
    finally:
        forget_kube_clients()
        kube_cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_the_target_limits_are_the_shards_and_every_pod_keeps_its_role(
    pods: list[dict[str, Any]],
) -> None:
    host = database_host(pods)
    first = host.pods[0]
    assert first.role == "configsvr"  # first by name: the case that went wrong
    assert (host.memory_limit_bytes, host.cpu_limit) == (6 * GIB, 2.0)
    roles: dict[str, list[tuple[int | None, float | None]]] = {}
    for pod in host.pods:
        assert pod.role is not None
        roles.setdefault(pod.role, []).append((pod.memory_limit_bytes, pod.cpu_limit))
    assert roles == {
        "configsvr": [(GIB, 0.5)] * 2,
        "mongos": [(2 * GIB, 1.0)],
        "shard0": [(6 * GIB, 2.0)] * 2,
        "shard1": [(6 * GIB, 2.0)] * 2,
    }
    assert [p.holds_data for p in host.pods].count(True) == 4
    # Each shard's limits, as the runner joins them to the shard it read.
    assert host.role_limits("shard1") == (6 * GIB, 2.0)
