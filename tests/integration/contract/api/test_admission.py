"""The CRD against the real kube-apiserver: every invalid manifest is rejected
with a message naming the field; every example is accepted; server-side
defaults agree with the models; status and printer columns work."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.api.status import BenchmarkRunStatus
from tests.support.manifests import EXAMPLES, INVALID, crd_and_namespace, expected_message, load

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-model-test"


@pytest.fixture(scope="module")
def cluster(kube_cluster: Any) -> Iterator[Any]:
    """The session control plane with the CRD installed and a test namespace."""
    with crd_and_namespace(kube_cluster, NAMESPACE, "dbbench-model-test") as cluster:
        yield cluster


def dry_run_create(cluster: Any, path: Path) -> Any:
    return cluster.kubectl(
        "create", "--dry-run=server", "-n", NAMESPACE, "-f", str(path), "-o", "json", check=False
    )


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_manifest_is_rejected_naming_the_field(cluster: Any, path: Path) -> None:
    result = dry_run_create(cluster, path)
    assert result.returncode != 0, f"{path.name} was accepted"
    message = result.stderr + result.stdout
    assert expected_message(path) in message, message


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_accepted(cluster: Any, path: Path) -> None:
    result = dry_run_create(cluster, path)
    assert result.returncode == 0, result.stderr
    stored = json.loads(result.stdout)
    # What the API server would store (its defaults applied) parses to the same model.
    assert parse_spec(stored["spec"]) == parse_spec(load(path)["spec"])


def test_server_defaults_agree_with_the_model(cluster: Any) -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "dbbench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": "defaults"},
        "spec": {
            "targets": [{"name": "db", "engine": "mariadb"}],
            "phases": [{"name": "r", "type": "pointReads", "duration": "1m"}],
        },
    }
    result = cluster.kubectl(
        "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", "-o", "json",
        input=json.dumps(manifest),
    )  # fmt: skip
    stored = json.loads(result.stdout)["spec"]
    expected = parse_spec(manifest["spec"]).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    assert stored == expected


def test_status_subresource_and_printer_columns(cluster: Any) -> None:
    quickstart = next(p for p in EXAMPLES if p.name == "quickstart.yaml")
    cluster.kubectl("create", "-n", NAMESPACE, "-f", str(quickstart))
    try:
        status = BenchmarkRunStatus.model_validate(
            {
                "phase": "Running",
                "observedGeneration": 1,
                "startedAt": "2026-11-22T02:00:00Z",
                "conditions": [
                    {"type": "Progressing", "status": "True", "reason": "Running",
                     "message": "phase point-reads", "lastTransitionTime": "2026-11-22T02:00:00Z",
                     "observedGeneration": 1},
                ],
                "progress": {"target": "mariadb", "phase": "point-reads", "percent": 42,
                             "step": 2, "steps": 3, "eta": "2026-11-22T02:10:00Z"},
                "lastResult": {"target": "mariadb", "phase": "load", "throughput": 1234.5,
                               "p99Ms": 3.25},
                "targets": [{"name": "mariadb", "ready": True, "serverVersion": "10.11.6",
                             "endpoint": "quickstart-mariadb:3306",
                             "phases": [{"name": "load", "repeat": 1, "operations": 10000,
                                         "errors": 0, "durationSeconds": 8.1, "throughput": 1234.5,
                                         "latencyMs": {"p50": 0.7, "p95": 1.9, "p99": 3.25,
                                                       "p999": 7.0, "max": 12.0},
                                         "storage": {"dataBytes": 2, "indexBytes": 1,
                                                     "storageBytes": 4}}]}],
                "resultsPath": "dbbench-results/dbbench-model-test/quickstart/uid/",
            }
        )  # fmt: skip
        body = {"status": status.model_dump(by_alias=True, exclude_none=True, mode="json")}
        cluster.kubectl(
            "patch", "benchmarkrun", "quickstart", "-n", NAMESPACE, "--subresource=status",
            "--type=merge", "-p", json.dumps(body),
        )  # fmt: skip
        stored = json.loads(
            cluster.kubectl("get", "br", "quickstart", "-n", NAMESPACE, "-o", "json").stdout
        )
        assert BenchmarkRunStatus.model_validate(stored["status"]) == status
        table = cluster.kubectl("get", "br", "quickstart", "-n", NAMESPACE).stdout.splitlines()
        assert table[0].split() == [
            "NAME",
            "PHASE",
            "TARGET",
            "PROGRESS",
            "THROUGHPUT",
            "P99",
            "AGE",
        ]
        assert table[1].split()[:6] == ["quickstart", "Running", "mariadb", "42", "1234.5", "3.25"]
    finally:
        cluster.kubectl("delete", "br", "quickstart", "-n", NAMESPACE, "--wait=false", check=False)


def test_status_outside_the_schema_is_rejected(cluster: Any) -> None:
    quickstart = next(p for p in EXAMPLES if p.name == "quickstart.yaml")
    cluster.kubectl("create", "-n", NAMESPACE, "-f", str(quickstart))
    try:
        result = cluster.kubectl(
            "patch", "benchmarkrun", "quickstart", "-n", NAMESPACE, "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": {"phase": "Exploded"}}), check=False,
        )  # fmt: skip
        assert result.returncode != 0
        assert "status.phase" in result.stderr
    finally:
        cluster.kubectl("delete", "br", "quickstart", "-n", NAMESPACE, "--wait=false", check=False)


def test_kubectl_explain_teaches_the_api(cluster: Any) -> None:
    # The CRD's OpenAPI is published asynchronously after it is Established.
    deadline = time.monotonic() + 30
    while True:
        result = cluster.kubectl("explain", "br.spec.phases", check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert result.returncode == 0, result.stderr
    assert "Steps run in order against each target" in result.stdout
    assert "writeConcern" in result.stdout
    explained = cluster.kubectl("explain", "br.spec.phases.duration").stdout
    assert "Exclusive with `operations`" in explained


def test_kubectl_explain_documents_postgresql(cluster: Any) -> None:
    deadline = time.monotonic() + 30
    while True:
        result = cluster.kubectl("explain", "br.spec.targets.engine", check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert result.returncode == 0, result.stderr
    assert "mongodb, mysql, mariadb or postgresql" in result.stdout
    settings = cluster.kubectl("explain", "br.spec.targets.settings").stdout
    assert "postgresql: shared_buffers, effective_cache_size" in " ".join(settings.split())
    durability = " ".join(cluster.kubectl("explain", "br.spec.targets.durability").stdout.split())
    assert "synchronous_commit=off" in durability
    assert "a synchronous standby (PostgreSQL)" in durability


def test_kubectl_explain_documents_per_target_hardware(cluster: Any) -> None:
    deadline = time.monotonic() + 30
    while True:
        result = cluster.kubectl("explain", "br.spec.targets.hardware", check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "replaces spec.hardware's field of the same name as a whole" in text
    assert "An external target may set only pricePerHour" in text
    for field in ("resources", "storage", "nodeSelector", "tolerations", "affinity",
                  "pricePerHour"):  # fmt: skip
        assert field in result.stdout, field
    assert "exclusive" not in result.stdout  # the run's, not a target's
    price = " ".join(cluster.kubectl("explain", "br.spec.targets.hardware.pricePerHour")
                     .stdout.split())  # fmt: skip
    assert "Price of one database pod's hardware per hour" in price
    storage = " ".join(
        cluster.kubectl("explain", "br.spec.targets.hardware.storage").stdout.split()
    )
    assert "replaces spec.hardware.storage as a whole" in storage
