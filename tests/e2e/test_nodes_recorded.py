"""Issue 32, item 3 on the real node: a run's results name the node its pods ran on,
with that node's own figures.

The run selects its pools by a label every Linux node carries
(`kubernetes.io/os`), for its database and its runner pods. When it has
succeeded, the step's nodes.json must name the node `kubectl get nodes` shows
(the local cluster has one; with several, the node each pod was bound to),
every pod of the step on it, the selecting label and the hostname with the
node's values, and its capacity and allocatable CPU and memory exactly as the
node reports them; the runner's own environment.json and the report's Nodes
table must say the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import parse_quantity
from dbbench_local.install import Kube
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    results_json,
    results_text,
    session_name,
    small_spec,
    wait_for_report,
    wait_phase,
)
from tests.support.pages import parse

pytestmark = pytest.mark.e2e

POOL = {"kubernetes.io/os": "linux"}
STEP = "maria/load/1"


def cluster_nodes(kube: Kube) -> dict[str, dict[str, Any]]:
    listed = kube.get("nodes") or {"items": []}
    return {n["metadata"]["name"]: n for n in listed["items"]}


def test_the_environment_names_the_node_its_pods_ran_on_with_its_resources(kube: Kube) -> None:
    name = session_name("nodes")
    spec = small_spec(dataset={"shape": "flat45", "records": 2000, "recordSize": 256})
    spec["hardware"] = {**spec["hardware"], "nodeSelector": POOL}
    spec["runner"] = {**spec["runner"], "nodeSelector": POOL}
    apply_run(kube, name, spec)
    status = wait_phase(kube, name, ("Succeeded", "Failed"), 900)
    assert status["phase"] == "Succeeded", status.get("message")
    nodes = cluster_nodes(kube)
    recorded = results_json(kube, status, f"{STEP}/nodes.json")
    print(f"nodes.json: {recorded}")
    assert recorded.get("error") is None, recorded["error"]
    pods = recorded["pods"]
    assert {p["kind"] for p in pods} == {"database", "runner"}, pods
    assert all(p["target"] == "maria" and p["nodeSelector"] == POOL for p in pods), pods
    used = {p["node"] for p in pods}
    assert used <= set(nodes), (used, sorted(nodes))
    if len(nodes) == 1:  # the local cluster: everything on its one node
        assert used == set(nodes), (used, sorted(nodes))
    assert sorted(n["name"] for n in recorded["nodes"]) == sorted(used)
    for entry in recorded["nodes"]:
        node = nodes[entry["name"]]
        status_of = node["status"]
        assert entry.get("error") is None, entry
        assert sorted(entry["pods"]) == sorted(p["name"] for p in pods
                                               if p["node"] == entry["name"])  # fmt: skip
        labels = node["metadata"]["labels"]
        assert entry["labels"]["kubernetes.io/os"] == labels["kubernetes.io/os"] == "linux"
        assert entry["labels"]["kubernetes.io/hostname"] == labels["kubernetes.io/hostname"]
        for side in ("capacity", "allocatable"):
            mine, theirs = entry[side], status_of[side]
            assert (mine["cpu"], mine["memory"]) == (theirs["cpu"], theirs["memory"]), side
            assert mine["cpuCores"] == float(parse_quantity(theirs["cpu"])), side
            assert mine["memoryBytes"] == int(parse_quantity(theirs["memory"])), side
        assert entry["info"]["kubeletVersion"] == status_of["nodeInfo"]["kubeletVersion"]
        assert entry["info"]["architecture"] == status_of["nodeInfo"]["architecture"]

    # The runner's own record (the downward API's spec.nodeName) and the database
    # pods the step file named agree with it.
    environment = results_json(kube, status, f"{STEP}/environment.json")["pods"][0]
    runner_nodes = {p["node"] for p in pods if p["kind"] == "runner"}
    assert environment["pod"]["node"] in runner_nodes
    database_nodes = {p["node"] for p in pods if p["kind"] == "database"}
    assert {p["node"] for p in environment["database"]["pods"]} == database_nodes

    # The report's Nodes table shows the node's allocatable CPU and memory.
    assert "report.html" in wait_for_report(kube, status)
    html = results_text(kube, status, "report.html")
    page = parse(html)
    assert "nodes" in page.sections
    for node_name in used:
        allocatable = nodes[node_name]["status"]["allocatable"]
        cpu = page.find("nodes", "cpu allocatable", node=node_name).value
        memory = page.find("nodes", "memory allocatable", node=node_name).value
        assert cpu == repr(float(parse_quantity(allocatable["cpu"])))
        assert memory == str(int(parse_quantity(allocatable["memory"])))
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=false")
