"""NetworkPolicies as rendered: who reaches the results service and a run's databases.

The pods are the ones the chart and the operator make (the chart's Deployments,
the operator's runner Job and topology charts), judged by `tests.support.netpol`'s
reading of the NetworkPolicy rules. `tests/e2e/test_tenant.py` applies the same
policies on the real API server and judges real pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef, adopt
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.addresses import target_access, topology_request
from dbbench_operator.specs.databases.rendering import render as render_target
from dbbench_operator.specs.network_policies import build_database_policy
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import JobSettings, build_runner_job
from tests.support.helm import by_kind, env_of, one, operator_container, render
from tests.support.netpol import ingress_allowed

REPO = Path(__file__).resolve().parents[3]
RUN = RunRef("quick", "team-a", "1111-2222")
OTHER_RUN = RunRef("quick", "team-a", "3333-4444")  # an earlier run of the same name


def namespace(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}


def pod_of(workload: dict[str, Any], ns: str) -> dict[str, Any]:
    template = workload["spec"]["template"]
    return {"metadata": {**template["metadata"], "namespace": ns}, "spec": template["spec"]}


def spec() -> Any:
    return parse_spec(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])


def runner_pod(run: RunRef) -> dict[str, Any]:
    settings = JobSettings("runner:1", "Never", "http://results", 600)
    job = build_runner_job(
        run, spec(), plan(spec())[1], target_access(run, spec(), 0), settings, database_pods={}
    )
    return pod_of(job, run.namespace)


def chart(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return render({"coldCache": {"allowPrivilegedPods": True}, **(values or {})})


@pytest.mark.parametrize("watch", [[], ["team-a"]])
def test_only_runner_pods_and_the_operator_reach_the_results_upload_port(watch: list[str]) -> None:
    manifests = chart({"watchNamespaces": watch})
    policies = by_kind(manifests, "NetworkPolicy")
    results = pod_of(one(manifests, "Deployment", component="results"), "dbbench-system")
    operator = pod_of(one(manifests, "Deployment", component="operator"), "dbbench-system")
    system, team_a, team_c = namespace("dbbench-system"), namespace("team-a"), namespace("team-c")
    stranger = {"metadata": {"name": "curl", "namespace": "team-a", "labels": {"run": "curl"}}}
    assert ingress_allowed(policies, results, operator, system, 8080)
    assert ingress_allowed(policies, results, runner_pod(RUN), team_a, 8080)
    assert not ingress_allowed(policies, results, stranger, team_a, 8080)
    assert not ingress_allowed(policies, results, {**stranger, "metadata": {
        **stranger["metadata"], "namespace": "dbbench-system"}}, system, 8080)  # fmt: skip
    # A runner-labelled pod in a namespace the operator does not serve: only with all.
    elsewhere = runner_pod(RunRef("quick", "team-c", "5"))
    assert ingress_allowed(policies, results, elsewhere, team_c, 8080) is (not watch)
    # The browser's port is never open to pods (port-forward does not cross the network).
    assert not ingress_allowed(policies, results, runner_pod(RUN), team_a, 8081)


def test_policies_can_be_turned_off_and_the_operator_is_told() -> None:
    on = chart()
    off = chart({"networkPolicy": {"enabled": False}})
    assert env_of(operator_container(on))["DBBENCH_NETWORK_POLICIES"] == "true"
    assert env_of(operator_container(off))["DBBENCH_NETWORK_POLICIES"] == "false"
    assert by_kind(off, "NetworkPolicy") == []
    labels = json.loads(env_of(operator_container(on))["DBBENCH_OPERATOR_POD_LABELS"])
    template = one(on, "Deployment", component="operator")["spec"]["template"]["metadata"]
    assert labels.items() <= template["labels"].items()


def test_only_the_runs_runners_its_members_and_the_operator_reach_a_database() -> None:
    manifests = chart()
    operator = pod_of(one(manifests, "Deployment", component="operator"), "dbbench-system")
    labels = json.loads(env_of(operator_container(manifests))["DBBENCH_OPERATOR_POD_LABELS"])
    peer = OperatorSettings(namespace="dbbench-system", operator_labels=labels).operator_peer()
    request = topology_request(RUN, spec(), spec().targets[0])
    target = [adopt(m, RUN) for m in render_target(request)]
    policy = adopt(build_database_policy(RUN, request, peer), RUN)
    database = pod_of(one(target, "StatefulSet"), "team-a")
    team_a, system = namespace("team-a"), namespace("dbbench-system")
    assert ingress_allowed([policy], database, runner_pod(RUN), team_a, 3306)
    assert ingress_allowed([policy], database, database, team_a, 3306)  # replication
    assert ingress_allowed([policy], database, operator, system, 3306)
    # Not another run's runners, not even an earlier run of the same name.
    assert not ingress_allowed([policy], database, runner_pod(OTHER_RUN), team_a, 3306)
    stranger = {"metadata": {"name": "x", "namespace": "team-b", "labels": {}}}
    assert not ingress_allowed([policy], database, stranger, namespace("team-b"), 3306)
    impostor = {"metadata": {**operator["metadata"], "namespace": "team-b"}}
    assert not ingress_allowed([policy], database, impostor, namespace("team-b"), 3306)


def test_the_browser_port_opens_only_to_the_peers_named_in_browser_from() -> None:
    """The API server's service proxy (the CLI's way in) connects from the control
    plane: networkPolicy.browserFrom names it; by default no pod reaches the port."""
    assert not any(
        any(p.get("port") == "browser" for p in rule.get("ports") or [])
        for policy in by_kind(chart(), "NetworkPolicy")
        for rule in policy["spec"]["ingress"]
    )
    control_plane = [{"ipBlock": {"cidr": "10.0.0.10/32"}}]
    manifests = chart({"networkPolicy": {"browserFrom": control_plane}})
    (policy,) = by_kind(manifests, "NetworkPolicy")
    opened = [r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == "browser"]
    assert opened == [{"ports": [{"port": "browser", "protocol": "TCP"}], "from": control_plane}]
    results = pod_of(one(manifests, "Deployment", component="results"), "dbbench-system")
    ports = {p["name"]: p["containerPort"] for c in results["spec"]["containers"]
             for p in c.get("ports") or []}  # fmt: skip
    assert ports["browser"] == 8081  # the named port exists on the pod
