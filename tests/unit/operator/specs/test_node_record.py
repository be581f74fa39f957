"""Issue 32, item 3: a step's nodes.json from its pods and nodes as the API shows them
(pure). The objects are shaped as a kind cluster's API server returns them (a
worker's labels, capacity and nodeInfo; a StatefulSet's member; an Indexed
Job's pod). Against a real API server: tests/integration/operator/test_step_nodes.py."""

from __future__ import annotations

from typing import Any

from dbbench_contract.step_nodes import StepNodes
from dbbench_operator.specs.node_record import affinity_keys, resources, step_nodes

GIB = 1 << 30


def node(name: str, pool: str, *, cpu: str = "4", memory: str = "16279396Ki",
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "beta.kubernetes.io/arch": "amd64", "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "dbbench.io/pool": pool, "dbbench.io/size": "small",
            "node.kubernetes.io/instance-type": "m5.xlarge",
            "topology.kubernetes.io/zone": "eu-west-1a",
            "node.kubernetes.io/exclude-from-external-load-balancers": "",
        }},
        "spec": {"podCIDR": "10.244.1.0/24", "taints": taints or []},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "ephemeral-storage": "41152812Ki",
                         "hugepages-2Mi": "0", "pods": "110"},
            "allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": "110",
                            "ephemeral-storage": "41152812Ki"},
            "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
                         "kernelVersion": "6.8.0-49-generic", "architecture": "amd64",
                         "containerRuntimeVersion": "containerd://2.1.1",
                         "operatingSystem": "linux"},
        },
    }  # fmt: skip


def database_pod(name: str, node_name: str | None, role: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {
            "app.kubernetes.io/instance": "r-db", "app.kubernetes.io/component": role,
            "statefulset.kubernetes.io/pod-name": name}},
        "spec": {"nodeName": node_name, "nodeSelector": {"dbbench.io/pool": "db"},
                 "tolerations": [{"key": "dbbench.io/pool", "value": "db",
                                  "effect": "NoSchedule"}]},
    }  # fmt: skip


def runner_pod(name: str, node_name: str, index: int) -> dict[str, Any]:
    required = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "dbbench.io/size", "operator": "In", "values": ["small"]}
                ]
            }
        ]
    }
    return {
        "metadata": {"name": name,
                     "labels": {"batch.kubernetes.io/controller-uid": "u-1",
                                "batch.kubernetes.io/job-completion-index": str(index)},
                     "annotations": {"batch.kubernetes.io/job-completion-index": str(index)}},
        "spec": {"nodeName": node_name, "nodeSelector": {"dbbench.io/pool": "runners"},
                 "affinity": {"nodeAffinity": {
                     "requiredDuringSchedulingIgnoredDuringExecution": required}}},
    }  # fmt: skip


DB_TAINT = {"key": "dbbench.io/pool", "value": "db", "effect": "NoSchedule"}
NODES = {
    "db-1": node("db-1", "db", taints=[DB_TAINT]),
    "db-2": node("db-2", "db", taints=[DB_TAINT]),
    "run-1": node("run-1", "runners", cpu="8", memory="32Gi"),
}
DATABASE = [database_pod("r-db-1", "db-2", "replica"), database_pod("r-db-0", "db-1", "primary")]
RUNNERS = [runner_pod("r-s1-0-abcde", "run-1", 0), runner_pod("r-s1-1-fghij", "run-1", 1)]


def recorded() -> StepNodes:
    found = step_nodes(DATABASE, RUNNERS, NODES, "maria")
    return StepNodes.from_json(found.model_dump_json(by_alias=True))  # as the report reads it


def test_each_pod_names_its_node_kind_target_and_role() -> None:
    pods = {p.name: p for p in recorded().pods}
    assert [(p.kind, p.node, p.role) for p in pods.values()] == [
        ("database", "db-1", "primary"), ("database", "db-2", "replica"),
        ("runner", "run-1", "0"), ("runner", "run-1", "1"),
    ]  # fmt: skip
    assert {p.target for p in pods.values()} == {"maria"}
    assert pods["r-db-0"].node_selector == {"dbbench.io/pool": "db"}


def test_nodes_are_listed_once_with_the_pods_bound_to_them() -> None:
    nodes = recorded().nodes
    assert [(n.name, n.pods) for n in nodes] == [
        ("db-1", ("r-db-0",)), ("db-2", ("r-db-1",)),
        ("run-1", ("r-s1-0-abcde", "r-s1-1-fghij")),
    ]  # fmt: skip


def test_labels_are_the_selecting_ones_and_the_well_known_ones_only() -> None:
    found = recorded()
    db, runner = found.node("db-1"), found.node("run-1")
    assert db is not None
    assert runner is not None
    well_known = {"kubernetes.io/hostname", "node.kubernetes.io/instance-type",
                  "topology.kubernetes.io/zone"}  # fmt: skip
    assert set(db.labels) == {"dbbench.io/pool", *well_known}
    assert db.labels["dbbench.io/pool"] == "db"
    # The runner pods also required dbbench.io/size through node affinity.
    assert set(runner.labels) == {"dbbench.io/pool", "dbbench.io/size", *well_known}
    assert runner.labels["dbbench.io/size"] == "small"
    assert runner.labels["kubernetes.io/hostname"] == "run-1"


def test_capacity_allocatable_kubelet_and_taints_are_the_nodes() -> None:
    found = recorded()
    db, runner = found.node("db-1"), found.node("run-1")
    assert db is not None
    assert runner is not None
    assert (db.capacity.cpu, db.capacity.cpu_cores) == ("4", 4.0)
    assert (db.capacity.memory, db.capacity.memory_bytes) == ("16279396Ki", 16279396 * 1024)
    assert (db.allocatable.cpu, db.allocatable.cpu_cores) == ("3800m", 3.8)
    assert db.allocatable.memory_bytes == 15 * GIB
    assert runner.capacity.memory_bytes == 32 * GIB
    assert db.info is not None
    assert (db.info.kubelet_version, db.info.architecture) == ("v1.33.1", "amd64")
    assert db.info.os_image == "Debian GNU/Linux 12 (bookworm)"
    assert db.taints == ("dbbench.io/pool=db:NoSchedule",)
    assert runner.taints == ()


def test_a_node_gone_or_unread_is_named_with_the_reason() -> None:
    gone = step_nodes(DATABASE, [], {"db-1": NODES["db-1"]}, "maria")
    missing = gone.node("db-2")
    assert missing is not None
    assert missing.pods == ("r-db-1",)
    assert missing.error is not None
    assert "not found" in missing.error
    assert missing.capacity.cpu is None
    refused = step_nodes(DATABASE, [], {}, "maria", error="nodes not read: list Node: 403 x")
    assert refused.error == "nodes not read: list Node: 403 x"
    assert all(n.error == refused.error for n in refused.nodes)


def test_an_unscheduled_pod_is_listed_without_a_node() -> None:
    pending = database_pod("r-db-0", None, "primary")
    found = step_nodes([pending], [], NODES, "maria")
    assert [(p.name, p.node) for p in found.pods] == [("r-db-0", None)]
    assert found.nodes == ()


def test_quantities_the_parser_does_not_know_keep_their_text() -> None:
    odd = resources({"cpu": "lots", "memory": "1Gi"})
    assert (odd.cpu, odd.cpu_cores, odd.memory_bytes) == ("lots", None, GIB)
    assert resources(None).cpu is None


def test_affinity_keys_read_every_required_term() -> None:
    pod = {"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
            {"matchExpressions": [{"key": "b", "operator": "In", "values": ["x"]}],
             "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]},
        ]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "c", "operator": "Exists"}]}},
        ],
    }}}}  # fmt: skip
    assert affinity_keys(pod) == {"a", "b"}
    assert affinity_keys({"spec": {}}) == set()
