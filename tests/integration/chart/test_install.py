"""The chart against the real control plane: server-side validation, the
installed objects, the operator's rights in both modes, and the install notes."""

from __future__ import annotations

import pytest
import yaml

from tests.fixtures.controlplane import ControlPlane
from tests.integration.chart.cluster import (
    SYSTEM,
    TEAM_A,
    TEAM_B,
    Release,
    can_i,
    ensure_namespace,
    get,
)
from tests.support.helm import helm, template

pytestmark = pytest.mark.integration


def test_rendered_chart_passes_server_side_dry_run(
    kube_cluster: ControlPlane, scoped: Release
) -> None:
    for values in ({}, {"watchNamespaces": [TEAM_A, TEAM_B]}):
        manifests = template(
            values, release="chart-dry", namespace=SYSTEM, extra=["--skip-tests"]
        ).stdout
        result = kube_cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=manifests)
        lines = result.stdout.splitlines()
        assert lines, result.stderr
        assert all(line.endswith("(server dry run)") for line in lines), result.stdout
        assert any(line.startswith("deployment.apps/chart-dry-dbbench") for line in lines)
    # The helm test pod, against the installed release (its ServiceAccount exists).
    hook = template(
        scoped.values,
        release=scoped.name,
        namespace=SYSTEM,
        extra=["--show-only", "templates/tests/test-operator.yaml"],
    ).stdout
    result = kube_cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=hook)
    assert result.stdout.strip() == "pod/chart-scoped-dbbench-test created (server dry run)"


def test_install_creates_crd_workload_and_rbac(kube_cluster: ControlPlane, scoped: Release) -> None:
    crd = get(kube_cluster, "crd", "benchmarkruns.dbbench.io")
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established["Established"] == "True"
    if not scoped.crd_existed_before:  # then helm installed it, from crds/
        shown = ["get", "crd", "benchmarkruns.dbbench.io", "--show-managed-fields", "-o", "yaml"]
        fields = yaml.safe_load(kube_cluster.kubectl(*shown).stdout)["metadata"]["managedFields"]
        assert "helm" in {f["manager"] for f in fields}
    deployment = get(kube_cluster, "deployment", "chart-scoped-dbbench", "-n", SYSTEM)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][-1] == f"--namespace={TEAM_A}"
    assert container["imagePullPolicy"] == "Never"
    get(kube_cluster, "serviceaccount", scoped.service_account, "-n", SYSTEM)
    get(kube_cluster, "service", "chart-scoped-dbbench", "-n", SYSTEM)
    get(kube_cluster, "pvc", "dbbench-results", "-n", SYSTEM)
    for role in ("cluster", "operator", "edit", "view"):
        get(kube_cluster, "clusterrole", f"chart-scoped-dbbench-{role}")
    get(kube_cluster, "clusterrolebinding", "chart-scoped-dbbench-cluster")
    get(kube_cluster, "rolebinding", "chart-scoped-dbbench-operator", "-n", TEAM_A)
    absent = kube_cluster.kubectl(
        "get", "clusterrolebinding", "chart-scoped-dbbench-operator", check=False
    )
    assert absent.returncode != 0
    elsewhere = kube_cluster.kubectl("get", "rolebindings", "-n", TEAM_B, "-o", "name")
    assert "chart-scoped" not in elsewhere.stdout


# (verb, resource, namespace or "" for cluster scope / "-A" for all) -> allowed
SCOPED_RIGHTS = [
    ("watch", "benchmarkruns.dbbench.io", TEAM_A, True),
    ("patch", "benchmarkruns.dbbench.io", TEAM_A, True),
    ("patch", "benchmarkruns.dbbench.io/status", TEAM_A, True),
    ("create", "statefulsets.apps", TEAM_A, True),
    ("create", "jobs.batch", TEAM_A, True),
    ("create", "secrets", TEAM_A, True),
    ("create", "events", TEAM_A, True),
    ("list", "events", TEAM_A, True),
    ("delete", "pods", TEAM_A, True),
    # Nothing the code does not call (k8s/permissions.py): no Secret listing, no logs.
    ("list", "secrets", TEAM_A, False),
    ("watch", "secrets", TEAM_A, False),
    ("get", "pods/log", TEAM_A, False),
    ("create", "persistentvolumeclaims", TEAM_A, False),
    ("watch", "customresourcedefinitions.apiextensions.k8s.io", "", True),
    ("list", "namespaces", "", True),
    # Not served: other namespaces, its own namespace, everything cluster-wide.
    ("list", "benchmarkruns.dbbench.io", TEAM_B, False),
    ("get", "secrets", TEAM_B, False),
    ("get", "secrets", SYSTEM, False),
    ("list", "secrets", "-A", False),
    ("list", "benchmarkruns.dbbench.io", "-A", False),
    ("create", "pods", TEAM_A, False),
    ("delete", "namespaces", "", False),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", "", False),
    ("create", "rolebindings.rbac.authorization.k8s.io", TEAM_A, False),
]
WIDE_RIGHTS = [
    ("list", "benchmarkruns.dbbench.io", "-A", True),
    ("patch", "benchmarkruns.dbbench.io/status", TEAM_B, True),
    ("get", "secrets", "-A", True),
    ("list", "secrets", "-A", False),
    ("watch", "customresourcedefinitions.apiextensions.k8s.io", "", True),
    ("list", "namespaces", "", False),  # kopf does not need them in --all-namespaces mode
    ("create", "pods", TEAM_B, False),
    ("create", "clusterroles.rbac.authorization.k8s.io", "", False),
]


def check_rights(
    cluster: ControlPlane, release: Release, table: list[tuple[str, str, str, bool]]
) -> None:
    wrong = []
    for verb, resource, namespace, allowed in table:
        scope = [] if not namespace else ["-A"] if namespace == "-A" else ["-n", namespace]
        resource_args = resource.split("/")
        args = [verb, resource_args[0], *scope]
        if len(resource_args) == 2:
            args.append(f"--subresource={resource_args[1]}")
        if can_i(cluster, release.identity, *args) != allowed:
            wrong.append((verb, resource, namespace, allowed))
    assert wrong == [], f"{release.identity}: rights differ from the table: {wrong}"


def test_scoped_operator_acts_only_in_listed_namespaces(
    kube_cluster: ControlPlane, scoped: Release
) -> None:
    check_rights(kube_cluster, scoped, SCOPED_RIGHTS)


def test_clusterwide_operator_acts_everywhere(
    kube_cluster: ControlPlane, clusterwide: Release
) -> None:
    ensure_namespace(kube_cluster, TEAM_B)
    check_rights(kube_cluster, clusterwide, WIDE_RIGHTS)


def test_notes_tell_the_next_command(
    kube_cluster: ControlPlane, scoped: Release, clusterwide: Release
) -> None:
    def notes(release: Release) -> str:
        return helm(
            "get", "notes", release.name, "--namespace", release.namespace,
            kubeconfig=kube_cluster.kubeconfig,
        ).stdout  # fmt: skip

    everywhere = notes(clusterwide)
    assert "serves BenchmarkRuns in all namespaces" in everywhere
    assert "kubectl apply -f examples/quickstart.yaml" in everywhere
    assert "kubectl get br -w" in everywhere
    assert f"helm test {clusterwide.name} -n {clusterwide.namespace}" in everywhere
    scoped_notes = notes(scoped)
    assert f"these namespaces only: {TEAM_A}" in scoped_notes
    assert f"kubectl apply -n {TEAM_A} -f examples/quickstart.yaml" in scoped_notes
    assert f"kubectl get br -n {TEAM_A} -w" in scoped_notes
