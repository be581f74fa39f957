"""Every engine x topology renders to manifests the real API server accepts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dbbench_operator.topology.rendering import render
from tests.topology.conftest import COMBINATIONS, combo_id, make_request

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-topology-dryrun"


@pytest.fixture(scope="module")
def namespace(kube_cluster: Any) -> Iterator[str]:
    kube_cluster.kubectl("create", "namespace", NAMESPACE)
    yield NAMESPACE
    kube_cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


@pytest.mark.parametrize("combo", COMBINATIONS, ids=combo_id)
def test_server_side_dry_run_accepts_manifests(
    kube_cluster: Any, namespace: str, helm_on_path: str, combo: tuple[str, str, int, int]
) -> None:
    engine, topology, members, shards = combo
    docs = render(make_request(engine, topology, members, shards, namespace=namespace))
    result = kube_cluster.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", "-o", "yaml",
        input=yaml.safe_dump_all(docs),
    )  # fmt: skip
    accepted = [item for doc in yaml.safe_load_all(result.stdout) if doc
                for item in (doc.get("items") or [doc])]  # fmt: skip
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
