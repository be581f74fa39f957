"""The results service key's checksum annotation across upgrades and rotations:
the chart rendered with `--dry-run=server` against the real kube-apiserver, where
its `lookup` reads the Secret as an upgrade would (a rotated key restarts the pods
that read it). The render tests: tests/unit/chart/test_results_key.py."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.controlplane import ControlPlane
from tests.integration.chart.cluster import ensure_namespace
from tests.support.helm import CHART, Manifest, helm, one
from tests.support.helm import values_args as values_file
from tests.unit.chart.test_results_key import annotations, checksum


def server_render(cluster: ControlPlane, namespace: str, values: dict[str, Any]) -> list[Manifest]:
    with tempfile.TemporaryDirectory() as tmp:
        out = helm(
            "template", "keyed", str(CHART), "--namespace", namespace, "--dry-run=server",
            *values_file(values, Path(tmp)), kubeconfig=cluster.kubeconfig,
        ).stdout  # fmt: skip
    return [doc for doc in yaml.safe_load_all(out) if doc]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.integration
def test_a_rotated_existing_secret_changes_the_checksum(kube_cluster: ControlPlane) -> None:
    namespace = "results-key-own"
    ensure_namespace(kube_cluster, namespace)
    values = {"results": {"existingSecret": "own-key", "existingSecretKey": "token"}}
    kube_cluster.kubectl("create", "secret", "generic", "own-key", "-n", namespace,
                         "--from-literal=token=first-key-0123456789abcdef")  # fmt: skip
    first = annotations(server_render(kube_cluster, namespace, values))
    assert first == (checksum(b64("first-key-0123456789abcdef")),) * 2
    assert annotations(server_render(kube_cluster, namespace, values)) == first  # stable
    patch = f'{{"data": {{"token": "{b64("second-key-0123456789abcdef")}"}}}}'
    kube_cluster.kubectl("patch", "secret", "own-key", "-n", namespace, "-p", patch)
    second = annotations(server_render(kube_cluster, namespace, values))
    assert second == (checksum(b64("second-key-0123456789abcdef")),) * 2
    assert second != first


@pytest.mark.integration
def test_the_generated_key_is_kept_across_upgrades_and_a_new_one_restarts(
    kube_cluster: ControlPlane,
) -> None:
    namespace = "results-key-generated"
    ensure_namespace(kube_cluster, namespace)
    manifests = server_render(kube_cluster, namespace, {})
    secret = one(manifests, "Secret", "keyed-dbbench-results-key")
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(secret))
    installed = annotations(manifests)
    # An upgrade renders the same key, so nothing restarts and run tokens stay valid.
    again = server_render(kube_cluster, namespace, {})
    assert one(again, "Secret", "keyed-dbbench-results-key")["data"] == secret["data"]
    assert annotations(again) == installed
    # A re-created (rotated) key changes the checksum on both pods.
    patch = f'{{"data": {{"key": "{b64("rotated-0123456789abcdef")}"}}}}'
    kube_cluster.kubectl("patch", "secret", "keyed-dbbench-results-key", "-n", namespace,
                         "-p", patch)  # fmt: skip
    rotated = annotations(server_render(kube_cluster, namespace, {}))
    assert rotated == (checksum(b64("rotated-0123456789abcdef")),) * 2
    assert rotated != installed
