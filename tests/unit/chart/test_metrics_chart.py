"""The chart's metrics: `metrics` ports, PodMonitors only where the API exists,
the dashboard's ConfigMap, and runner pods that carry the port the operator is told."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import JobSettings, build_runner_job
from tests.support.helm import CHART, by_kind, env_of, one, operator_container, render

MONITORING = ["--api-versions", "monitoring.coreos.com/v1"]
RUN = RunRef(name="quick", namespace="team-a", uid="1234-uid")


def ports(container: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container.get("ports", [])}


def results_container(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = one(manifests, "Deployment", component="results")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "results")


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    matched = all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In"
        matched = matched and labels.get(expression["key"]) in expression["values"]
    return matched


def runner_pod_labels_and_container(env: dict[str, Any]) -> tuple[dict[str, str], Any]:
    """A runner Job as the operator builds it with the chart's environment."""
    settings = OperatorSettings.from_env({k: str(v) for k, v in env.items() if v is not None})
    spec = parse_spec(yaml.safe_load((CHART / "examples" / "quickstart.yaml").read_text())["spec"])
    job_settings = JobSettings(
        "runner:1", "Never", "http://results", 600,
        metrics_port=settings.runner_metrics_port, metrics_linger=settings.runner_metrics_linger,
    )  # fmt: skip
    job = build_runner_job(
        RUN, spec, plan(spec)[1], target_access(RUN, spec, 0), job_settings, database_pods={}
    )
    template = job["spec"]["template"]
    return template["metadata"]["labels"], template["spec"]["containers"][0]


def test_every_program_serves_metrics_on_a_port_named_metrics() -> None:
    manifests = render({"metrics": {"port": 9300, "runnerLingerSeconds": 20}})
    operator = operator_container(manifests)
    assert ports(operator)["metrics"] == 9300
    env = env_of(operator)
    assert (env["DBBENCH_METRICS_PORT"], env["DBBENCH_RUNNER_METRICS_PORT"]) == ("9300", "9300")
    results = results_container(manifests)
    assert ports(results)["metrics"] == 9300
    assert "--metrics-port=9300" in results["command"]
    # The operator puts the port on the runner pods it creates, and tells the runner
    # in its environment (the runner's flags default to it).
    _, runner = runner_pod_labels_and_container(env)
    assert ports(runner) == {"metrics": 9300}
    runner_env = env_of(runner)
    assert runner_env["DBBENCH_RUNNER_METRICS_PORT"] == "9300"
    assert runner_env["DBBENCH_RUNNER_METRICS_LINGER"] == "20"
    assert not [a for a in runner["args"] if a.startswith("--metrics")]


def test_pod_monitors_only_when_enabled_and_the_api_exists() -> None:
    assert not by_kind(render(extra=MONITORING), "PodMonitor")
    enabled = {"metrics": {"podMonitor": {"enabled": True}}}
    assert not by_kind(render(enabled), "PodMonitor"), "rendered without the CRD's API"
    assert len(by_kind(render(enabled, extra=MONITORING), "PodMonitor")) == 2


@pytest.mark.parametrize("watch", [[], ["team-a", "team-b"]])
def test_pod_monitors_select_the_operator_results_and_runner_pods(watch: list[str]) -> None:
    values = {
        "watchNamespaces": watch,
        "metrics": {"podMonitor": {"enabled": True, "interval": "30s",
                                   "labels": {"release": "prom"}}},
    }  # fmt: skip
    manifests = render(values, extra=MONITORING)
    monitors = by_kind(manifests, "PodMonitor")
    for monitor in monitors:
        assert monitor["metadata"]["labels"]["release"] == "prom"
        assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "metrics", "interval": "30s"}]
    programs, runners = sorted(monitors, key=lambda m: m["metadata"]["name"])
    for component in ("operator", "results"):
        pod = one(manifests, "Deployment", component=component)["spec"]["template"]
        assert selects(programs["spec"]["selector"], pod["metadata"]["labels"]), component
        assert not selects(runners["spec"]["selector"], pod["metadata"]["labels"]), component
    labels, _ = runner_pod_labels_and_container(env_of(operator_container(manifests)))
    assert selects(runners["spec"]["selector"], labels)
    assert not selects(programs["spec"]["selector"], labels)
    expected = {"matchNames": watch} if watch else {"any": True}
    assert runners["spec"]["namespaceSelector"] == expected


def dashboards(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in by_kind(manifests, "ConfigMap") if "dashboard" in m["metadata"]["name"]]


def test_the_dashboard_configmap_carries_the_sidecar_label_and_the_json() -> None:
    (configmap,) = dashboards(render())
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(configmap["data"]["dbbench.json"])
    assert dashboard == json.loads((CHART / "dashboards" / "dbbench.json").read_text())
    # A sidecar configured with another label value (or label) loads it too.
    relabelled = render({"metrics": {"dashboard": {
        "labels": {"grafana_dashboard": "dbbench", "team": "db"},
        "annotations": {"grafana_folder": "db"}}}})  # fmt: skip
    (configmap,) = dashboards(relabelled)
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "dbbench"
    assert configmap["metadata"]["labels"]["team"] == "db"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "db"}
    off = render({"metrics": {"dashboard": {"enabled": False}}})
    assert not dashboards(off)


def test_the_results_policy_opens_the_metrics_port_and_not_the_upload_port() -> None:
    policy = one(render(), "NetworkPolicy", component="results")
    (metrics,) = [r for r in policy["spec"]["ingress"]
                  if [p["port"] for p in r["ports"]] == ["metrics"]]  # fmt: skip
    assert "from" not in metrics  # any scraper
    (upload,) = [r for r in policy["spec"]["ingress"]
                 if [p["port"] for p in r["ports"]] == ["http"]]  # fmt: skip
    assert upload["from"]
