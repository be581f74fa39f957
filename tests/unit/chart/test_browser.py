"""The results browser in the chart: on by default (the CLI reads results through
it), a read-only container in the results pod (claim mounted readOnly), a
ClusterIP Service the CLI finds by label, and who may read through it."""

from __future__ import annotations

from tests.support.helm import by_kind, one, render, template

ENABLED = {"results": {"browser": {"enabled": True}}}


def test_on_by_default_and_can_be_turned_off() -> None:
    manifests = render()
    pod = one(manifests, "Deployment", component="results")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["results", "browser"]
    service = one(manifests, "Service", component="results-browser")
    assert service["metadata"]["annotations"] == {
        "dbbench.io/results-claim": "dbbench-results",
        "dbbench.io/reader-role": "dbbench-results-reader",
    }
    off = render({"results": {"browser": {"enabled": False}}})
    pod = one(off, "Deployment", component="results")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["results"]
    components = [s["metadata"]["labels"].get("app.kubernetes.io/component")
                  for s in by_kind(off, "Service")]  # fmt: skip
    assert "results-browser" not in components


def test_results_readers_are_bound_in_the_release_namespace() -> None:
    readers = [{"kind": "Group", "name": "team-a"},
               {"kind": "ServiceAccount", "name": "ci", "namespace": "ci-ns"},
               {"kind": "ServiceAccount", "name": "local"}]  # fmt: skip
    manifests = render({"rbac": {"resultsReaders": readers}})
    binding = next(b for b in by_kind(manifests, "RoleBinding")
                   if b["metadata"]["name"] == "dbbench-results-readers")  # fmt: skip
    assert binding["metadata"]["namespace"] == "dbbench-system"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "dbbench-results-reader"}  # fmt: skip
    assert binding["subjects"] == [
        {"kind": "Group", "name": "team-a", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "ci", "namespace": "ci-ns"},
        {"kind": "ServiceAccount", "name": "local", "namespace": "dbbench-system"},
    ]
    assert template({"rbac": {"resultsReaders": [{"kind": "Robot", "name": "x"}]}},
                    check=False).returncode != 0  # fmt: skip
    none = render()
    assert all(b["metadata"]["name"] != "dbbench-results-readers"
               for b in by_kind(none, "RoleBinding"))  # fmt: skip


def test_enabled_browser_is_read_only_and_reached_through_its_service() -> None:
    manifests = render(ENABLED, release="bench")
    pod = one(manifests, "Deployment", component="results")["spec"]["template"]["spec"]
    browser = next(c for c in pod["containers"] if c["name"] == "browser")
    assert browser["command"] == [
        "python", "-m", "dbbench_results.browser", "--root=/results", "--port=8081",
        # The series pages judge change points as the service does (results.history).
        "--significance=0.001", "--min-runs=4", "--min-change=0.05",
    ]  # fmt: skip
    mounts = {m["name"]: m for m in browser["volumeMounts"]}
    assert mounts["results"] == {"name": "results", "mountPath": "/results", "readOnly": True}
    assert browser["securityContext"]["readOnlyRootFilesystem"] is True
    assert browser["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "MPLCONFIGDIR", "value": "/tmp/matplotlib"} in browser["env"]
    assert browser["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "browser"}
    service = one(manifests, "Service", component="results-browser")
    assert service["metadata"]["name"] == "bench-dbbench-browser"
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8081, "targetPort": "browser", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "results"


def test_service_type_and_port_are_values_and_checked() -> None:
    values = {"results": {"browser": {"enabled": True, "service": {"port": 9000}}}}
    service = one(render(values), "Service", component="results-browser")
    assert service["spec"]["ports"][0]["port"] == 9000
    bad = template({"results": {"browser": {"enabled": True, "service": {"type": "Ingress"}}}},
                   check=False)  # fmt: skip
    assert bad.returncode != 0
    assert "type" in bad.stderr
