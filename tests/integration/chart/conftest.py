"""The chart installed once per session, in both modes (see cluster.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.controlplane import ControlPlane
from tests.integration.chart.cluster import (
    SYSTEM,
    TEAM_A,
    TEAM_B,
    Release,
    ensure_namespace,
    install,
)
from tests.support.helm import helm


@pytest.fixture(scope="session")
def scoped(
    kube_cluster: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Release]:
    """The chart serving only TEAM_A, installed in SYSTEM."""
    for namespace in (SYSTEM, TEAM_A, TEAM_B):
        ensure_namespace(kube_cluster, namespace)
    values = {"watchNamespaces": [TEAM_A], "image": {"pullPolicy": "Never"}}
    release = install(kube_cluster, "chart-scoped", SYSTEM, values, tmp_path_factory.mktemp("v"))
    yield release
    helm("uninstall", release.name, "--namespace", SYSTEM, kubeconfig=kube_cluster.kubeconfig)
    # The results claim is kept by helm on purpose; the namespaces take it along.
    kube_cluster.kubectl("delete", "namespace", SYSTEM, TEAM_A, TEAM_B, "--wait=false")


@pytest.fixture(scope="session")
def clusterwide(
    kube_cluster: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Release]:
    """The chart with its defaults (all namespaces), installed in its own namespace."""
    namespace = "chart-wide-system"
    ensure_namespace(kube_cluster, namespace)
    release = install(kube_cluster, "chart-wide", namespace, {}, tmp_path_factory.mktemp("v"))
    yield release
    helm("uninstall", release.name, "--namespace", namespace, kubeconfig=kube_cluster.kubeconfig)
    kube_cluster.kubectl("delete", "namespace", namespace, "--wait=false")
