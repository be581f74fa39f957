"""The chart's PodMonitors against the real PodMonitor CRD in the suite's kube-apiserver.

The CRD is prometheus-operator's own (`make tools` takes it from the
prometheus-operator Go module, hack/tools.sh `podmonitor-crd`). Once it is
installed, the API server serves monitoring.coreos.com/v1, so helm, asked for
the cluster's capabilities, renders the PodMonitors (the template's gate), and a
server-side dry-run create checks every field against the CRD's OpenAPI schema,
unknown fields included (kubectl's strict field validation).
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.controlplane import ControlPlane
from tests.integration.chart.cluster import ensure_namespace, wait_until
from tests.support.helm import CHART, TOOLS_BIN, Manifest, by_kind, helm, values_args

pytestmark = pytest.mark.integration

# The version hack/tools.sh takes the CRD from (PROMETHEUS_OPERATOR_VERSION there).
PROMETHEUS_OPERATOR_VERSION = "v0.85.0"
CRD_FILE = (
    TOOLS_BIN.parent
    / "share"
    / f"prometheus-operator-{PROMETHEUS_OPERATOR_VERSION}"
    / "monitoring.coreos.com_podmonitors.yaml"
)
CRD_NAME = "podmonitors.monitoring.coreos.com"
NAMESPACE = "chart-podmonitors"


@pytest.fixture(scope="module")
def monitoring_api(kube_cluster: ControlPlane) -> Iterator[ControlPlane]:
    """The control plane serving PodMonitors (the CRD removed again afterwards, so
    the chart's other tests on this control plane see the API absent, as before)."""
    if not CRD_FILE.exists():
        pytest.fail(f"{CRD_FILE} missing: run `make tools` (hack/tools.sh podmonitor-crd)")
    enabled = {"metrics": {"podMonitor": {"enabled": True}}}
    with tempfile.TemporaryDirectory() as workdir:
        # The gate, against the real discovery: no API, no PodMonitors.
        assert not rendered_pod_monitors(kube_cluster, enabled, Path(workdir))
    kube_cluster.kubectl("create", "-f", str(CRD_FILE))
    try:
        # Polled, not `kubectl wait`: that fails while status.conditions is unset.
        established = '{.status.conditions[?(@.type=="Established")].status}'
        wait_until(
            lambda: (
                kube_cluster.kubectl(
                    "get", "crd", CRD_NAME, "-o", f"jsonpath={established}", check=False
                ).stdout.strip()
                == "True"
            ),
            f"{CRD_NAME} Established",
        )
        # What helm's capabilities come from: the API server's discovery.
        wait_until(
            lambda: "monitoring.coreos.com/v1" in kube_cluster.kubectl("api-versions").stdout,
            "monitoring.coreos.com/v1 in discovery",
        )
        ensure_namespace(kube_cluster, NAMESPACE)
        yield kube_cluster
    finally:
        kube_cluster.kubectl("delete", "crd", CRD_NAME, "--wait=false")
        kube_cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def rendered_pod_monitors(
    cluster: ControlPlane, values: dict[str, Any], tmp_path: Path
) -> list[Manifest]:
    """The chart rendered with the capabilities the real API server reports
    (`--validate` makes helm ask it instead of assuming its defaults)."""
    out = helm(
        "template",
        "chart-podmon",
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--validate",
        *values_args(values, tmp_path),
        kubeconfig=cluster.kubeconfig,
    ).stdout
    return by_kind([doc for doc in yaml.safe_load_all(out) if doc], "PodMonitor")


def dry_run_create(cluster: ControlPlane, manifests: list[Manifest]) -> tuple[int, str]:
    """A server-side dry-run create: admission and the CRD's schema, nothing stored."""
    result = cluster.kubectl(
        "create",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        "-",
        input=yaml.safe_dump_all(manifests),
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize(
    "values",
    [
        {"metrics": {"podMonitor": {"enabled": True}}},
        {
            "watchNamespaces": ["chart-team-x", "chart-team-y"],
            "metrics": {
                "podMonitor": {
                    "enabled": True,
                    "interval": "1m30s",
                    "labels": {"release": "kube-prometheus-stack"},
                }
            },
        },
    ],
    ids=["defaults", "scoped-with-labels"],
)
def test_the_rendered_pod_monitors_are_valid_pod_monitors(
    monitoring_api: ControlPlane, values: dict[str, Any], tmp_path: Path
) -> None:
    monitors = rendered_pod_monitors(monitoring_api, values, tmp_path)
    assert [m["metadata"]["name"] for m in monitors] == [
        "chart-podmon-dbbench",
        "chart-podmon-dbbench-runners",
    ]
    code, output = dry_run_create(monitoring_api, monitors)
    assert code == 0, output
    for monitor in monitors:
        name = monitor["metadata"]["name"]
        assert f"podmonitor.monitoring.coreos.com/{name} created (server dry run)" in output


def _misspelt_endpoints(monitor: Manifest) -> None:
    monitor["spec"]["podMetricEndpoints"] = monitor["spec"].pop("podMetricsEndpoints")


def _interval_not_a_duration(monitor: Manifest) -> None:
    monitor["spec"]["podMetricsEndpoints"][0]["interval"] = "15 seconds"


def _port_a_number(monitor: Manifest) -> None:
    monitor["spec"]["podMetricsEndpoints"][0]["port"] = 9090


@pytest.mark.parametrize(
    ("break_it", "error"),
    [
        (_misspelt_endpoints, 'unknown field "spec.podMetricEndpoints"'),
        (_interval_not_a_duration, "spec.podMetricsEndpoints[0].interval: Invalid value"),
        (_port_a_number, "spec.podMetricsEndpoints[0].port: Invalid value"),
    ],
)
def test_the_crd_refuses_a_wrong_field(
    monitoring_api: ControlPlane,
    break_it: Callable[[Manifest], None],
    error: str,
    tmp_path: Path,
) -> None:
    """The check above can fail: the same PodMonitor with one field wrong is refused."""
    monitors = rendered_pod_monitors(
        monitoring_api, {"metrics": {"podMonitor": {"enabled": True}}}, tmp_path
    )
    broken = copy.deepcopy(monitors[0])
    break_it(broken)
    code, output = dry_run_create(monitoring_api, [broken])
    assert code != 0, output
    assert error in output
