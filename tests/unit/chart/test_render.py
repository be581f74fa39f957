"""What `helm template` produces: the operator workload and its RBAC.

Pure rendering (no API server); helm itself must be present.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dbbench_operator.k8s import permissions
from tests.support.helm import (
    CHART,
    by_kind,
    env_of,
    helm,
    one,
    operator_container,
    render,
)

APP_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())
KOPF_RUN = [
    "kopf",
    "run",
    "--module=dbbench_operator.handlers",
    "--standalone",
    "--liveness=http://0.0.0.0:8080/healthz",
]


# The operator's permissions, as reviewed: operator/dbbench_operator/k8s/permissions.py
# (each rule with why). A change there is a change to what the operator may do.
def expected(scope: str, **when: bool) -> dict[tuple[str, str], set[str]]:
    table: dict[tuple[str, str], set[str]] = {}
    for rule in permissions.RULES:
        if rule.scope == scope and (not rule.when or when.get(rule.when, False)):
            table.setdefault((rule.group, rule.resource), set()).update(rule.verbs)
    return table


OPERATOR_RULES = expected("runs", networkPolicy=True)


# The API server authorizes a service proxy request by the name in its path,
# `<service>:<port>` (seen on the real API server: tests/integration/cli/test_cli_proxy.py).
BROWSER_ONLY = {"services/proxy": ["dbbench-browser", "dbbench-browser:http"]}


def rule_table(
    role: dict[str, Any], names: dict[str, list[str]] | None = None
) -> dict[tuple[str, str], set[str]]:
    """(apiGroup, resource) -> verbs; fails on wildcards, and on resourceNames
    other than `names` (resource -> the names its rule must be limited to)."""
    table: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert rule.get("resourceNames") == (names or {}).get(resource), rule
                assert "*" not in (group, resource, *rule["verbs"]), rule
                table.setdefault((group, resource), set()).update(rule["verbs"])
    return table


def role_named(manifests: list[dict[str, Any]], suffix: str) -> dict[str, Any]:
    return one(manifests, "ClusterRole", f"dbbench-{suffix}")


def test_lint_is_clean_even_when_strict() -> None:
    for args in (["lint", str(CHART)], ["lint", "--strict", str(CHART)]):
        out = helm(*args).stdout
        assert "0 chart(s) failed" in out
        assert "[WARNING]" not in out
        assert "[ERROR]" not in out
    listed = helm("lint", "--strict", str(CHART), "--set", "watchNamespaces={team-a,team-b}")
    assert "0 chart(s) failed" in listed.stdout


def test_default_install_watches_all_namespaces() -> None:
    manifests = render()
    container = operator_container(manifests)
    assert container["command"] == [*KOPF_RUN, "--all-namespaces"]
    env = env_of(container)
    assert env["DBBENCH_WATCH_NAMESPACES"] == ""
    assert env["DBBENCH_OPERATOR_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["DBBENCH_RUNNER_IMAGE"] == f"dbbench/runner:{APP_VERSION}"
    assert env["DBBENCH_RESULTS_CLAIM"] == DEFAULTS["results"]["claimName"]
    # Cluster-wide: the namespaced permissions are bound once, for every namespace.
    assert by_kind(manifests, "RoleBinding") == []
    binding = one(manifests, "ClusterRoleBinding", "dbbench-operator")
    assert binding["roleRef"]["name"] == "dbbench-operator"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "dbbench", "namespace": "dbbench-system"}
    ]
    # kopf never looks at namespaces in --all-namespaces mode, so neither may we.
    # Nodes: read only (listed, then watched), to know which nodes a run's
    # nodeSelector picks (exclusive) and what they can hold.
    assert rule_table(role_named(manifests, "cluster")) == {
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
        ("", "nodes"): {"list", "watch"},
    }
    assert rule_table(role_named(manifests, "cluster")) == expected("cluster")


def test_namespace_list_binds_only_those_namespaces() -> None:
    manifests = render({"watchNamespaces": ["team-a", "team-b"]})
    container = operator_container(manifests)
    assert container["command"] == [*KOPF_RUN, "--namespace=team-a", "--namespace=team-b"]
    assert env_of(container)["DBBENCH_WATCH_NAMESPACES"] == "team-a,team-b"
    bindings = by_kind(manifests, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    for binding in bindings:
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "dbbench-operator",
        }
        assert binding["subjects"][0]["namespace"] == "dbbench-system"
    # The only cluster-wide grant left is what kopf needs to observe the cluster.
    cluster_bindings = by_kind(manifests, "ClusterRoleBinding")
    assert [b["roleRef"]["name"] for b in cluster_bindings] == ["dbbench-cluster"]
    assert rule_table(role_named(manifests, "cluster")) == {
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
        ("", "namespaces"): {"list", "watch"},
        ("", "nodes"): {"list", "watch"},
    }
    assert rule_table(role_named(manifests, "cluster")) == expected("cluster", watchNamespaces=True)


def test_single_namespace() -> None:
    manifests = render({"watchNamespaces": ["team-a"]})
    container = operator_container(manifests)
    assert container["command"] == [*KOPF_RUN, "--namespace=team-a"]
    assert env_of(container)["DBBENCH_WATCH_NAMESPACES"] == "team-a"
    assert [b["metadata"]["namespace"] for b in by_kind(manifests, "RoleBinding")] == ["team-a"]


@pytest.mark.parametrize("watch", [[], ["team-a"]])
def test_operator_role_is_exactly_the_reviewed_set(watch: list[str]) -> None:
    manifests = render({"watchNamespaces": watch})
    assert rule_table(role_named(manifests, "operator")) == OPERATOR_RULES
    for role in by_kind(manifests, "ClusterRole"):
        verbs = set().union(*rule_table(role, BROWSER_ONLY).values())
        assert not verbs & {"escalate", "bind", "impersonate"}, role["metadata"]["name"]


# What `dbbench fetch/report/compare` need: find the results browser's Service by
# label, and GET through the API server's service proxy to that Service only.
RESULTS_READER_RULES = {
    ("", "services"): {"get", "list"},
    ("", "services/proxy"): {"get"},
}


def test_aggregated_roles_add_only_runs_schedules_and_reading_results() -> None:
    manifests = render()
    edit, view = role_named(manifests, "edit"), role_named(manifests, "view")
    edit_labels = edit["metadata"]["labels"]
    assert edit_labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert edit_labels["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert "rbac.authorization.k8s.io/aggregate-to-view" not in edit_labels
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert not any(k.endswith(("-admin", "-edit")) for k in view["metadata"]["labels"])
    # Nothing but BenchmarkRuns, BenchmarkSchedules and reading the results browser flows into the
    # built-in roles: the built-in edit role gains no Secrets, pods or operator
    # objects through us, and services/proxy only on the browser's Service.
    writing = {"get", "list", "watch", "create", "update", "patch", "delete"}
    reading = {"get", "list", "watch"}
    assert rule_table(edit, BROWSER_ONLY) == {
        ("dbbench.io", "benchmarkruns"): writing,
        ("dbbench.io", "benchmarkschedules"): writing,
        ("dbbench.io", "benchmarkruns/status"): reading,
        ("dbbench.io", "benchmarkschedules/status"): reading,
        **RESULTS_READER_RULES,
    }
    viewing = dict.fromkeys(
        [
            ("dbbench.io", "benchmarkruns"),
            ("dbbench.io", "benchmarkruns/status"),
            ("dbbench.io", "benchmarkschedules"),
            ("dbbench.io", "benchmarkschedules/status"),
        ],
        reading,
    )
    assert rule_table(view, BROWSER_ONLY) == {**viewing, **RESULTS_READER_RULES}
    reader = one(manifests, "Role")
    assert reader["metadata"]["name"] == "dbbench-results-reader"
    assert rule_table(reader, BROWSER_ONLY) == RESULTS_READER_RULES
    # Without the browser there is nothing to read through: no proxy rights at all.
    off = render({"results": {"browser": {"enabled": False}}})
    assert rule_table(role_named(off, "view")) == viewing
    assert by_kind(off, "Role") == []
    without = render({"rbac": {"aggregateToDefaultRoles": False}})
    assert {r["metadata"]["name"] for r in by_kind(without, "ClusterRole")} == {
        "dbbench-cluster",
        "dbbench-operator",
    }


def test_rbac_and_service_account_can_be_left_out() -> None:
    manifests = render(
        {
            "rbac": {"create": False, "aggregateToDefaultRoles": False},
            "serviceAccount": {"create": False, "name": "preexisting"},
        }
    )
    kinds = {m["kind"] for m in manifests}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding", "RoleBinding", "ServiceAccount"}
    pod_spec = one(manifests, "Deployment", component="operator")["spec"]["template"]["spec"]
    assert pod_spec["serviceAccountName"] == "preexisting"


def test_operator_pod_is_locked_down() -> None:
    deployment = one(render(), "Deployment", component="operator")
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = pod["containers"][0]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert container["image"] == f"dbbench/operator:{APP_VERSION}"
    assert container["imagePullPolicy"] == "IfNotPresent"
    probe = container["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[probe["port"]] == 8080  # the port kopf's --liveness listens on


def test_image_values_flow_into_the_pod() -> None:
    values = {
        "image": {"repository": "localhost/dbbench-operator", "tag": "dev", "pullPolicy": "Never"},
        "runner": {"image": {"repository": "localhost/dbbench-runner", "tag": "dev"}},
        "replicaCount": 0,
    }
    manifests = render(values)
    container = operator_container(manifests)
    assert container["image"] == "localhost/dbbench-operator:dev"
    assert container["imagePullPolicy"] == "Never"
    assert env_of(container)["DBBENCH_RUNNER_IMAGE"] == "localhost/dbbench-runner:dev"
    assert one(manifests, "Deployment", component="operator")["spec"]["replicas"] == 0


def test_service_reaches_the_operator_and_not_the_test_pod() -> None:
    manifests = render()
    selector = one(manifests, "Service", component="operator")["spec"]["selector"]
    pod_labels = one(manifests, "Deployment", component="operator")["spec"]["template"]["metadata"][
        "labels"
    ]
    test_pod = one(manifests, "Pod")
    assert selector.items() <= pod_labels.items()
    assert not selector.items() <= test_pod["metadata"]["labels"].items()
    assert (
        one(manifests, "Service", component="operator")["spec"]["ports"][0]["targetPort"]
        == "health"
    )


@pytest.mark.parametrize(("watch", "checked"), [([], ""), (["team-b", "team-c"], "team-b")])
def test_helm_test_hook_checks_health_and_rbac(watch: list[str], checked: str) -> None:
    manifests = render({"watchNamespaces": watch}, release="perf")
    pod = one(manifests, "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["spec"]["serviceAccountName"] == "perf-dbbench"
    assert pod["spec"]["restartPolicy"] == "Never"
    container = pod["spec"]["containers"][0]
    assert container["image"] == operator_container(manifests)["image"]
    env = env_of(container)
    assert env["DBBENCH_HEALTH_URL"] == "http://perf-dbbench.dbbench-system.svc:8080/healthz"
    assert env["DBBENCH_CHECK_NAMESPACE"] == checked
    assert container["command"][:2] == ["python3", "-c"]
    compile(container["command"][2], "helm-test", "exec")  # the snippet is valid Python


def test_results_claim_options() -> None:
    claim = one(render(), "PersistentVolumeClaim")
    assert claim["metadata"]["name"] == DEFAULTS["results"]["claimName"]
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"] == DEFAULTS["results"]["size"]
    assert "storageClassName" not in claim["spec"]  # the cluster default class
    named_values = {"results": {"storageClassName": "fast", "size": "1Ti"}}
    named = one(render(named_values), "PersistentVolumeClaim")
    assert named["spec"]["storageClassName"] == "fast"
    assert named["spec"]["resources"]["requests"]["storage"] == "1Ti"
    static = one(render({"results": {"storageClassName": "-"}}), "PersistentVolumeClaim")
    assert static["spec"]["storageClassName"] == ""
    external = render({"results": {"create": False, "claimName": "shared-results"}})
    assert by_kind(external, "PersistentVolumeClaim") == []
    assert env_of(operator_container(external))["DBBENCH_RESULTS_CLAIM"] == "shared-results"


def test_names_stay_within_63_characters() -> None:
    release = "r" * 53  # the longest release name helm accepts
    manifests = render({"watchNamespaces": ["team-a"]}, release=release)
    names = [(m["kind"], m["metadata"]["name"]) for m in manifests]
    assert all(len(name) <= 63 for _, name in names), names
    assert len(set(names)) == len(names)
    roles = {n for kind, n in names if kind == "ClusterRole"}
    assert {n.rsplit("-", 1)[1] for n in roles} == {"cluster", "operator", "edit", "view"}
    # Every object carries the standard labels, so `-l app.kubernetes.io/instance` finds it.
    for manifest in manifests:
        assert manifest["metadata"]["labels"]["app.kubernetes.io/instance"] == release
        assert manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"


def test_the_results_service_alone_mounts_the_results_claim() -> None:
    manifests = render()
    results = one(manifests, "Deployment", component="results")
    pod = results["spec"]["template"]["spec"]
    assert results["spec"]["strategy"] == {"type": "Recreate"}  # one writer of an RWO claim
    container, browser = pod["containers"]  # the browser mounts the claim read-only
    assert browser["name"] == "browser"
    assert {"name": "results", "mountPath": "/results", "readOnly": True} in browser["volumeMounts"]
    assert container["image"] == f"dbbench/runner:{APP_VERSION}"
    assert container["command"][:3] == ["python", "-m", "dbbench_results"]
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
              if "persistentVolumeClaim" in v]  # fmt: skip
    assert claims == ["dbbench-results"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    operator_pod = one(manifests, "Deployment", component="operator")["spec"]["template"]["spec"]
    assert not [v for v in operator_pod["volumes"] if "persistentVolumeClaim" in v]
    service = one(manifests, "Service", component="results")
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "results"


def test_the_operator_gets_the_results_url_and_key_from_a_secret_never_a_value() -> None:
    manifests = render()
    env = env_of(operator_container(manifests))
    assert env["DBBENCH_RESULTS_URL"] == "http://dbbench-results.dbbench-system.svc:8080"
    assert env["DBBENCH_RESULTS_KEY"] == {
        "secretKeyRef": {"name": "dbbench-results-key", "key": "key"}}  # fmt: skip
    assert env["DBBENCH_ALLOW_CACHE_DROP"] == "false"
    key = one(manifests, "Secret", "dbbench-results-key")
    assert len(key["data"]["key"]) >= 64
    allowed = env_of(operator_container(render({"coldCache": {"allowPrivilegedPods": True}})))
    assert allowed["DBBENCH_ALLOW_CACHE_DROP"] == "true"
