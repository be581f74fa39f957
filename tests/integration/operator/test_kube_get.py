"""tests/support/kube_get.py answers what `kubectl get ... -o json` prints, against the
real API server: the operator tests' polls rely on it reading the same objects."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.controlplane import ControlPlane
from tests.support import kube_get

pytestmark = pytest.mark.integration

NS = "kube-get-check"


def test_every_form_read_over_the_api_prints_as_kubectl_prints_it(
    kube_cluster: ControlPlane,
) -> None:
    kube_cluster.kubectl("create", "namespace", NS)
    try:
        kube_cluster.kubectl("create", "configmap", "c1", "-n", NS, "--from-literal=a=b")
        kube_cluster.kubectl("label", "configmap", "c1", "-n", NS, "app=z")
        kube_cluster.kubectl("create", "secret", "generic", "s1", "-n", NS, "--from-literal=a=b")
        forms = [
            ("configmap", "c1", "-n", NS),
            ("secret", "s1", "-n", NS),
            ("secret", "absent", "-n", NS),  # kubectl fails: None
            ("configmaps", "-n", NS, "-lapp=z"),
            ("configmaps", "-n", NS, "-lapp=other"),
            ("jobs", "-n", NS, "-lapp=z"),
            ("br", "absent", "-n", NS),
            ("benchmarkruns", "-n", NS),
        ]
        for args in forms:
            printed = kube_cluster.kubectl("get", *args, "-o", "json", check=False)
            expected = json.loads(printed.stdout) if printed.returncode == 0 else None
            assert kube_get.read(kube_cluster, args) == (True, expected), args
        assert kube_get.read(kube_cluster, ("configmap", "c1", "-n", NS))[1] is not None
        # Forms left to kubectl: several kinds, `all`, events, no namespace.
        for args in (("jobs,pods", "-n", NS), ("all", "-n", NS), ("events", "-n", NS),
                     ("configmap", "c1")):  # fmt: skip
            assert kube_get.read(kube_cluster, args) == (False, None), args
    finally:
        kube_cluster.kubectl("delete", "namespace", NS, "--wait=false")
