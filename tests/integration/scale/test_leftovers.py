"""What `make scale` counts as left after deleting every run, read as metadata
alone (dbbench_scale.observing.leftovers), at a real API server: the same
counts as full lists give, the runs and every labelled child by kind, claims by
namespace."""

from __future__ import annotations

import json
import uuid

import pytest

from dbbench_scale.observing import RUNS, Api, leftovers
from tests.fixtures.controlplane import ControlPlane
from tests.integration.operator.test_operator_lifecycle import CRD, wait_established

pytestmark = pytest.mark.integration


def _configmap(name: str, labels: dict[str, str]) -> str:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"plan": "x" * 4096}}  # fmt: skip
    return json.dumps(body)


def test_leftovers_are_counted_from_metadata_as_full_lists_count_them(
    kube_cluster: ControlPlane,
) -> None:
    kube_cluster.kubectl("apply", "--server-side", "-f", str(CRD))
    wait_established(kube_cluster)
    namespace = f"scale-{uuid.uuid4().hex[:8]}"
    kube_cluster.kubectl("create", "namespace", namespace)
    try:
        for i in range(3):
            labels = {"dbbench.io/run-uid": f"u{i}"}
            kube_cluster.kubectl("apply", "-n", namespace, "-f", "-",
                                 input=_configmap(f"run-{i}", labels))  # fmt: skip
        kube_cluster.kubectl("apply", "-n", namespace, "-f", "-",
                             input=_configmap("not-a-run", {"app": "other"}))  # fmt: skip
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": "data-0"},
                 "spec": {"accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
        kube_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(claim))
        api = Api(kube_cluster)

        left = leftovers(api, {namespace})

        labelled = api.items("/api/v1/configmaps", labelSelector="dbbench.io/run-uid")
        assert left.get("configmaps") == len(labelled) >= 3, left
        assert left.get("persistentvolumeclaims") == 1, left
        assert left.get("benchmarkruns", 0) == len(api.items(RUNS)), left
        # What is counted is the metadata, not the objects.
        (item, *_) = api.metadata("/api/v1/configmaps", labelSelector="dbbench.io/run-uid")
        assert "labels" in item, item
        assert "data" not in item, item
    finally:
        kube_cluster.kubectl("delete", "namespace", namespace, "--wait=false")
