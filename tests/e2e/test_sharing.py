"""The concurrent phase's rule on the real node (tests/e2e/sharing.py, `apply_run`
in conftest): a test not marked `disruptive` cannot apply an exclusive run, nor
one larger than its worker's share of the node, whose allocatable resources
and release pods are read from the cluster; nothing is created either way.
"""

from __future__ import annotations

import pytest

from dbbench_local.install import Kube
from tests.e2e.conftest import RUNS_NS, apply_run, session_name, small_spec

pytestmark = pytest.mark.e2e


def test_an_exclusive_run_is_refused_in_a_concurrent_test(kube: Kube) -> None:
    name = session_name("exclusive-refused")
    spec = small_spec()
    spec["hardware"]["exclusive"] = True
    with pytest.raises(pytest.fail.Exception, match=r"spec\.hardware\.exclusive is true"):
        apply_run(kube, name, spec)
    assert kube.get("benchmarkrun", name, "-n", RUNS_NS) is None


def test_a_run_beyond_the_workers_share_of_the_node_is_refused(kube: Kube) -> None:
    """Three 9Gi database pods: each fits the 24 GiB node (so the operator would
    deploy them), together they exceed even a single worker's share of it."""
    name = session_name("beyond-the-share")
    spec = small_spec(targets=[{"name": "maria", "engine": "mariadb",
                                "topology": "primaryReplica", "members": 3}])  # fmt: skip
    spec["hardware"]["resources"] = {"requests": {"memory": "9Gi"}, "limits": {"memory": "9Gi"}}
    (node,) = (kube.get("nodes") or {"items": []})["items"]
    with pytest.raises(pytest.fail.Exception, match="more than the worker's share") as refused:
        apply_run(kube, name, spec)
    assert f"run {name} requests 0.05 cpu, 27776 MiB" in str(refused.value)
    assert kube.get("benchmarkrun", name, "-n", RUNS_NS) is None
    print(f"node {node['metadata']['name']} allocatable {node['status']['allocatable']}: "
          f"{refused.value}")  # fmt: skip
