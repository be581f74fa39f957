"""Every engine x topology renders to manifests the real API server accepts."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dbbench_operator.specs.databases.rendering import render
from tests.fixtures.topology import COMBINATIONS, combo_id, make_request, server_dry_run

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-topology-dryrun"


@pytest.mark.parametrize("combo", COMBINATIONS, ids=combo_id)
def test_server_side_dry_run_accepts_manifests(
    kube_cluster: Any, namespace: str, helm_on_path: str, combo: tuple[str, str, int, int]
) -> None:
    docs, accepted = server_dry_run(kube_cluster, combo, namespace)
    assert sorted((d["kind"], d["metadata"]["name"]) for d in accepted) == sorted(
        (d["kind"], d["metadata"]["name"]) for d in docs
    )
    # Server defaults were applied, i.e. the API server really processed the objects.
    for obj in accepted:
        if obj["kind"] == "StatefulSet":
            assert obj["spec"]["updateStrategy"]["type"] == "RollingUpdate"
            assert obj["metadata"]["namespace"] == namespace


def test_invalid_manifest_is_rejected(kube_cluster: Any, namespace: str, helm_on_path: str) -> None:
    """The dry run is not a rubber stamp: a broken StatefulSet is refused."""
    docs = render(make_request("mariadb", "standalone", namespace=namespace))
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    sts["spec"]["selector"]["matchLabels"] = {"app.kubernetes.io/name": "something-else"}
    result = kube_cluster.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-",
        input=yaml.safe_dump(sts), check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "selector" in result.stderr
