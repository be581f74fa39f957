"""Run-level fields the operator acts on, observed on the real control plane.

The operator runs as the chart's ServiceAccount (see test_operator_lifecycle);
there is no kubelet, so deployed databases never start and a short
`startupGrace` or `timeout` ends each run. What is left in the API server then
shows what `spec.cleanup` did, and the Secret key an external target's URI was
read from shows in the target's status and the runner Job.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.controlplane import ControlPlane, free_port
from tests.fixtures.mariadb import MariaDBServer
from tests.integration.operator.test_operator_lifecycle import (
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


def owned(cluster: ControlPlane, kind: str, name: str) -> list[dict[str, Any]]:
    found = get_json(cluster, kind, "-n", NS, f"-ldbbench.io/run={name}") or {"items": []}
    return list(found["items"])


def cleaned_up(cluster: ControlPlane, name: str) -> bool:
    run = get_json(cluster, "br", name, "-n", NS) or {}
    return bool(run.get("status", {}).get("cleanedUp"))


@pytest.mark.parametrize("cleanup", ["Retain", "Delete"])
def test_cleanup_retain_scales_the_database_to_zero_and_delete_removes_it(
    kube_cluster: ControlPlane, operator_env: list[str], cleanup: str
) -> None:
    name = f"cleanup-{cleanup.lower()}"
    manifest = run_manifest(name, NS, cleanup=cleanup, startupGrace="10s")
    kube_cluster.kubectl("apply", "-f", "-", input=manifest)
    with operator(operator_env) as runner:
        wait_for(lambda: owned(kube_cluster, "statefulsets", name), 60, "the database")
        wait_for(lambda: phase_of(kube_cluster, NS, name) == "Failed", 60, "Failed")
        wait_for(lambda: cleaned_up(kube_cluster, name), 60, "cleanup")
        wait_for(lambda: not owned(kube_cluster, "pods", name), 60, "the database pods to go")
    assert runner.exception is None
    statefulsets = owned(kube_cluster, "statefulsets", name)
    services = owned(kube_cluster, "services", name)
    if cleanup == "Retain":
        # Kept for inspection (its volumes with it), but holding no pod on the nodes.
        (sts,) = statefulsets
        assert sts["spec"]["replicas"] == 0
        assert services
    else:
        assert statefulsets == []
        assert services == []
    kube_cluster.kubectl("delete", "br", name, "-n", NS, "--wait=false")


def test_an_external_uri_is_read_from_the_secret_key_the_spec_names(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    """The Secret holds two URIs: `uri` (nothing listens there) and `dsn` (a real
    mariadbd). With uriSecretRef {name, key: dsn} the operator reaches the real
    server, and the runner Job mounts that key, not another."""
    name, secret = "keyed", "keyed-uris"
    nowhere = f"mariadb://root:x@127.0.0.1:{free_port()}/"
    kube_cluster.kubectl(
        "create", "secret", "generic", secret, "-n", NS, f"--from-literal=uri={nowhere}",
        f"--from-literal=dsn={mariadb_uri(mariadb)}",
    )  # fmt: skip
    external = {"uriSecretRef": {"name": secret, "key": "dsn"}}
    manifest = run_manifest(
        name, NS, targets=[{"name": "ext", "engine": "mariadb", "external": external}],
        phases=[{"name": "load", "type": "insert", "batchSize": 100}], timeout="25s",
    )  # fmt: skip
    kube_cluster.kubectl("apply", "-f", "-", input=manifest)
    with operator(operator_env) as runner:
        job = wait_for(lambda: get_json(kube_cluster, "job", f"{name}-step-1", "-n", NS), 60,
                       "the first step's runner Job")  # fmt: skip
        wait_for(lambda: phase_of(kube_cluster, NS, name) == "Failed", 60, "Failed (timeout)")
        wait_for(lambda: cleaned_up(kube_cluster, name), 30, "cleanup")
    assert runner.exception is None
    run = get_json(kube_cluster, "br", name, "-n", NS) or {}
    (target,) = run["status"]["targets"]
    assert target["ready"] is True
    assert target["endpoint"] == f"127.0.0.1:{mariadb.port}"
    assert "MariaDB" in target["serverVersion"]
    assert condition(run, "Failed")["reason"] == "Timeout"
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["target-uri"]["secret"]["secretName"] == secret
    assert volumes["target-uri"]["secret"]["items"] == [{"key": "dsn", "path": "uri"}]
    assert mariadb.root_password not in json.dumps(run)
    kube_cluster.kubectl("delete", "br", name, "-n", NS, "--wait=false")
