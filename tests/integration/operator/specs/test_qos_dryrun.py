"""Issue 8, defect 2: every database pod of every topology is Guaranteed when the
hardware's requests equal its limits, so results across targets compare.

Server-side dry runs do not compute `status.qosClass` (the kubelet's admission
does), so the QoS class is computed here from the dry-run result with the
Kubernetes rules (pkg/apis/core/helper/qos): Guaranteed when every container
and init container sets cpu and memory limits equal to their requests.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.topology import COMBINATIONS, combo_id, server_dry_run

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-topology-qos"
COMPUTE = ("cpu", "memory")


def qos_class(pod: dict[str, Any]) -> str:
    """The QoS class Kubernetes assigns to a pod spec (requests default to limits)."""
    containers = [*pod.get("initContainers", []), *pod["containers"]]
    requests_seen = limits_seen = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in COMPUTE}
        requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in COMPUTE}
        requests = {**limits, **requests}  # the API server defaults requests to limits
        requests_seen = requests_seen or bool(requests)
        limits_seen = limits_seen or bool(limits)
        if set(limits) != set(COMPUTE) or any(requests.get(k) != limits[k] for k in COMPUTE):
            guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


@pytest.mark.parametrize("combo", COMBINATIONS, ids=combo_id)
def test_every_database_pod_is_guaranteed(
    kube_cluster: Any, namespace: str, helm_on_path: str, combo: tuple[str, str, int, int]
) -> None:
    _, accepted = server_dry_run(kube_cluster, combo, namespace)
    workloads = [d for d in accepted if d["kind"] in ("StatefulSet", "Deployment")]
    assert workloads
    for workload in workloads:
        pod = workload["spec"]["template"]["spec"]
        where = f"{workload['kind']}/{workload['metadata']['name']}"
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            resources = container.get("resources") or {}
            for kind in COMPUTE:
                assert resources.get("requests", {}).get(kind) == resources.get("limits", {}).get(
                    kind
                ), f"{where} container {container['name']} {kind}"
        assert qos_class(pod) == "Guaranteed", where


def test_qos_rules_are_the_kubernetes_ones() -> None:
    full = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert qos_class({"containers": [{"resources": full}]}) == "Guaranteed"
    assert qos_class({"containers": [{"resources": {"limits": full["limits"]}}]}) == "Guaranteed"
    no_init = {"initContainers": [{"resources": {}}], "containers": [{"resources": full}]}
    assert qos_class(no_init) == "Burstable"
    assert qos_class({"containers": [{}]}) == "BestEffort"
