"""DBBENCH_NODES: which kind node gets which pool label, taint and reservation
(docs/local-cluster.md, "Several nodes"), and the counts that are refused."""

from __future__ import annotations

import pytest
import yaml

from dbbench_local import kind_pools
from dbbench_local.kind import node_routes
from dbbench_local.kind_pools import HostSize, kind_config, node_plan

HOST = HostSize(cpu_millis=2000, memory_mib=23_000)

# (node name, role, pool label, taint) for 1..5 nodes: the documented mapping.
EXPECTED = {
    1: [("dbbench-control-plane", "control-plane", None, None)],
    2: [
        ("dbbench-control-plane", "control-plane", None, None),
        ("dbbench-worker", "worker", "runners", None),
    ],
    3: [
        ("dbbench-control-plane", "control-plane", None, None),
        ("dbbench-worker", "worker", "runners", None),
        ("dbbench-worker2", "worker", "db-small", "dbbench.io/pool=db-small:NoSchedule"),
    ],
    4: [
        ("dbbench-control-plane", "control-plane", None, None),
        ("dbbench-worker", "worker", "runners", None),
        ("dbbench-worker2", "worker", "db-small", "dbbench.io/pool=db-small:NoSchedule"),
        ("dbbench-worker3", "worker", "db-large", "dbbench.io/pool=db-large:NoSchedule"),
    ],
    5: [
        ("dbbench-control-plane", "control-plane", None, None),
        ("dbbench-worker", "worker", "runners", None),
        ("dbbench-worker2", "worker", "db-small", "dbbench.io/pool=db-small:NoSchedule"),
        ("dbbench-worker3", "worker", "db-large", "dbbench.io/pool=db-large:NoSchedule"),
        ("dbbench-worker4", "worker", "db-small", "dbbench.io/pool=db-small:NoSchedule"),
    ],
}


@pytest.mark.parametrize("nodes", sorted(EXPECTED))
def test_each_node_gets_its_pool_and_taint(nodes: int) -> None:
    got = [(p.name, p.role, p.pool, p.taint) for p in node_plan(nodes)]
    assert got == EXPECTED[nodes]


def test_later_workers_go_round_the_pools() -> None:
    pools = [kind_pools.worker_pool(i) for i in range(1, 10)]
    assert pools == [
        "runners", "db-small", "db-large",
        "db-small", "db-large", "runners",
        "db-small", "db-large", "runners",
    ]  # fmt: skip


def test_one_node_is_kinds_default_cluster() -> None:
    """Today's cluster exactly: a lone control plane, no label, no patch."""
    assert kind_config(1, HOST) == {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "nodes": [{"role": "control-plane"}],
    }


def _join_patch(entry: dict[str, object]) -> dict[str, object]:
    patches = entry["kubeadmConfigPatches"]
    assert isinstance(patches, list)
    assert len(patches) == 1
    patch = yaml.safe_load(patches[0])
    assert patch["kind"] == "JoinConfiguration"
    assert "apiVersion" not in patch  # kind then matches its v1beta3 document by kind
    registration = patch["nodeRegistration"]
    assert isinstance(registration, dict)
    return registration


def test_four_nodes_config_labels_taints_and_reserves_what_kind_registers() -> None:
    config = yaml.safe_load(yaml.safe_dump(kind_config(4, HOST)))  # as written to the file
    control, runners, small, large = config["nodes"]
    assert control == {"role": "control-plane"}
    assert runners == {"role": "worker", "labels": {"dbbench.io/pool": "runners"}}
    assert small["labels"] == {"dbbench.io/pool": "db-small"}
    assert _join_patch(small) == {
        "taints": [{"key": "dbbench.io/pool", "value": "db-small", "effect": "NoSchedule"}],
        # Half of 2 CPUs and of 23,000 MiB held back: allocatable is half db-large's.
        "kubeletExtraArgs": {"system-reserved": "cpu=1000m,memory=11500Mi"},
    }
    assert large["labels"] == {"dbbench.io/pool": "db-large"}
    assert _join_patch(large) == {
        "taints": [{"key": "dbbench.io/pool", "value": "db-large", "effect": "NoSchedule"}],
    }


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_takes_the_cluster_that_is_up(value: str | None) -> None:
    assert kind_pools.requested_nodes(value) is None


@pytest.mark.parametrize("value", ["1", "4", " 8 "])
def test_a_count_is_read(value: str) -> None:
    assert kind_pools.requested_nodes(value) == int(value)


@pytest.mark.parametrize("value", ["0", "9", "-1", "four", "2.5"])
def test_a_count_that_cannot_be_honoured_is_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(RuntimeError, match=r"DBBENCH_NODES=.*from 1 to 8"):
        kind_pools.requested_nodes(value)


def test_several_nodes_on_the_local_cluster_are_refused_with_the_fix() -> None:
    problem = kind_pools.nodes_problem("local", 4)
    assert problem is not None
    assert "DBBENCH_NODES=4" in problem
    assert "DBBENCH_CLUSTER=kind DBBENCH_NODES=4 make cluster-up" in problem
    assert kind_pools.nodes_problem("local", 1) is None
    assert kind_pools.nodes_problem("local", None) is None
    assert kind_pools.nodes_problem("kind", 4) is None


def test_a_count_other_than_the_running_clusters_is_refused() -> None:
    problem = kind_pools.count_problem(1, 4)
    assert problem is not None
    assert "has 1 node:" in problem
    assert "make cluster-down" in problem
    assert kind_pools.count_problem(4, 4) is None
    assert kind_pools.count_problem(0, 4) is None  # nothing up: it is created
    assert kind_pools.count_problem(4, None) is None  # unset: the cluster that is up


def test_the_host_reaches_each_nodes_pods_through_that_node() -> None:
    node_list = {
        "items": [
            {
                "spec": {"podCIDR": "10.244.0.0/24"},
                "status": {"addresses": [
                    {"type": "InternalIP", "address": "10.89.0.2"},
                    {"type": "InternalIP", "address": "fc00:f853:ccd:e793::2"},
                    {"type": "Hostname", "address": "dbbench-control-plane"},
                ]},
            },
            {
                "spec": {"podCIDR": "10.244.1.0/24"},
                "status": {"addresses": [{"type": "InternalIP", "address": "10.89.0.3"}]},
            },
            {"spec": {}, "status": {"addresses": [{"type": "InternalIP", "address": "10.89.0.4"}]}},
        ]
    }  # fmt: skip
    assert node_routes(node_list) == [
        ("10.244.0.0/24", "10.89.0.2"),
        ("10.244.1.0/24", "10.89.0.3"),
    ]
