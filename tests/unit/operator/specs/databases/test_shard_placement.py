"""targets[].sharding on the rendered pods (the operator's builders and `helm template`).

A spec goes parse_spec -> topology_request -> the mongodb chart, as the
operator deploys it. Seen on the workloads: co-located shards held on one node
by a required pod affinity, each with an even share of the target's resources
(and the WiredTiger cache of its share); spread shards apart from each other;
each component on its own nodeSelector; the number of routers; and with
client-side routers, the one server-side mongos left on the config servers'
nodes. (The API server's acceptance: tests/integration/operator/specs/
test_shard_placement_applied.py.)
"""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_contract.api.units import parse_quantity
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import render

RUN = RunRef(name="field2", namespace="perf", uid="5e1f-uid")
NODE_GB = {"requests": {"cpu": "6", "memory": "24Gi"}, "limits": {"cpu": "6", "memory": "24Gi"}}
HARDWARE = {"resources": NODE_GB, "nodeSelector": {"dbbench.io/pool": "db"}}
SHARD_LABEL = {"dbbench.io/shard-member": "true"}


def sharded(sharding: dict[str, Any] | None = None, **target: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "sharded", "engine": "mongodb", "topology": "sharded",
                            "shards": 3, "members": 1, **target}  # fmt: skip
    if sharding is not None:
        body["sharding"] = sharding
    return body


def rendered(target: dict[str, Any], hardware: dict[str, Any] | None = None) -> Any:
    spec = parse_spec({
        "targets": [target], "hardware": HARDWARE if hardware is None else hardware,
        "phases": [{"name": "load", "type": "insert"}],
    })  # fmt: skip
    request = topology_request(RUN, spec, spec.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)
    return request, render(request)


def pods_by_component(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["labels"]["app.kubernetes.io/component"]: d
        for d in docs
        if d["kind"] in ("StatefulSet", "Deployment")
    }


def pod_of(workload: dict[str, Any]) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


def shard_components(workloads: dict[str, Any]) -> list[str]:
    return sorted(c for c in workloads if c.startswith("shard"))


def test_colocated_shards_share_one_node_and_split_its_resources(helm_on_path: str) -> None:
    request, docs = rendered(sharded({"shards": {"placement": "colocated"}}))
    workloads = pods_by_component(docs)
    shards = shard_components(workloads)
    assert shards == ["shard0", "shard1", "shard2"]
    base = target_names.base_name(request)
    for component in shards:
        pod = pod_of(workloads[component])
        labels = workloads[component]["spec"]["template"]["metadata"]["labels"]
        assert labels["dbbench.io/shard-member"] == "true"
        # One node for all of them: the first lands anywhere, the others follow.
        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term == {"topologyKey": "kubernetes.io/hostname", "labelSelector": {
            "matchLabels": {"app.kubernetes.io/instance": base, **SHARD_LABEL}}}  # fmt: skip
        assert "podAntiAffinity" not in pod["affinity"]  # nothing pushes them apart
        mongod = pod["containers"][0]
        share = {"cpu": "2", "memory": "8Gi"}
        assert mongod["resources"] == {"requests": share, "limits": share}
        # Each cache from its share (50% of 8 GiB - 1 GiB), not from the node's 24 GiB.
        assert "--wiredTigerCacheSizeGB=3.5" in mongod["args"]
    total = sum(
        parse_quantity(pod_of(workloads[c])["containers"][0]["resources"]["limits"]["memory"])
        for c in shards
    )
    assert total == parse_quantity("24Gi")
    # Config servers are not shards: spread as before, their own resources.
    config = pod_of(workloads["configsvr"])
    assert "podAffinity" not in config["affinity"]
    assert "podAntiAffinity" in config["affinity"]


def test_an_uneven_split_rounds_down_so_the_shares_fit_the_node(helm_on_path: str) -> None:
    hardware = {"resources": {"limits": {"cpu": "8", "memory": "24Gi"}}}
    _, docs = rendered(sharded({"shards": {"placement": "colocated"}}, members=2), hardware)
    workloads = pods_by_component(docs)
    # 3 shards x 2 members = 6 shard pods on the node.
    limits = pod_of(workloads["shard0"])["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": "1333m", "memory": "4Gi"}
    assert workloads["shard0"]["spec"]["replicas"] == 2


def test_spread_shards_keep_the_whole_resources_and_stay_apart(helm_on_path: str) -> None:
    request, docs = rendered(sharded())
    workloads = pods_by_component(docs)
    base = target_names.base_name(request)
    for component in shard_components(workloads):
        pod = pod_of(workloads[component])
        assert pod["containers"][0]["resources"] == NODE_GB
        assert "podAffinity" not in pod["affinity"]
        terms = pod["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        apart = [t["podAffinityTerm"]["labelSelector"]["matchLabels"] for t in terms]
        # Members of this shard apart (weight 100), every shard pod apart (weight 50).
        assert [t["weight"] for t in terms] == [100, 50]
        assert apart[1] == {"app.kubernetes.io/instance": base, **SHARD_LABEL}
        assert apart[0]["app.kubernetes.io/component"] == component


def test_each_component_runs_on_its_own_nodes(helm_on_path: str) -> None:
    sharding = {
        "shards": {"nodeSelector": {"dbbench.io/pool": "db-24gb"}},
        "configServers": {"nodeSelector": {}},  # any node
        "routers": {"nodeSelector": {"dbbench.io/pool": "routers"}, "count": 3},
    }
    _, docs = rendered(sharded(sharding))
    workloads = pods_by_component(docs)
    for component in shard_components(workloads):
        assert pod_of(workloads[component])["nodeSelector"] == {"dbbench.io/pool": "db-24gb"}
    assert "nodeSelector" not in pod_of(workloads["configsvr"])
    assert pod_of(workloads["mongos"])["nodeSelector"] == {"dbbench.io/pool": "routers"}
    assert workloads["mongos"]["spec"]["replicas"] == 3


def test_components_without_their_own_selector_use_the_hardwares(helm_on_path: str) -> None:
    _, docs = rendered(sharded({"routers": {"count": 2}}))
    workloads = pods_by_component(docs)
    for component, workload in workloads.items():
        assert pod_of(workload)["nodeSelector"] == {"dbbench.io/pool": "db"}, component
    assert workloads["mongos"]["spec"]["replicas"] == 2


def test_with_client_side_routers_one_router_stays_for_the_setup(helm_on_path: str) -> None:
    sharding = {
        "configServers": {"nodeSelector": {"dbbench.io/pool": "meta"}},
        "routers": {"placement": "client"},
    }
    _, docs = rendered(sharded(sharding))
    workloads = pods_by_component(docs)
    assert workloads["mongos"]["spec"]["replicas"] == 1
    assert pod_of(workloads["mongos"])["nodeSelector"] == {"dbbench.io/pool": "meta"}


def test_without_sharding_the_default_is_one_server_side_router(helm_on_path: str) -> None:
    request, docs = rendered(sharded())
    workloads = pods_by_component(docs)
    assert workloads["mongos"]["spec"]["replicas"] == 1
    assert request.sharding.router_placement == "server"
