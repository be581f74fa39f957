"""targets[].sharding at admission: what cannot be honoured is refused, naming the
field and the fix (the model's rules, which the CRD's CEL twins enforce at the
API server: tests/data/invalid/*routers*, sharding-*; and the semantic checks
that read the hardware in force), and what can be is checked against each
co-located process's share of the memory."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import SpecError, check, parse_spec
from dbbench_contract.api.sharding import split_quantity
from dbbench_contract.api.units import parse_quantity


def spec(sharding: dict[str, Any], hardware: dict[str, Any] | None = None, **target: Any) -> Any:
    body = {"name": "sharded", "engine": "mongodb", "topology": "sharded", "shards": 3,
            "members": 1, "sharding": sharding, **target}  # fmt: skip
    return parse_spec({
        "targets": [body],
        "hardware": hardware or {"resources": {"limits": {"cpu": "6", "memory": "24Gi"}}},
        "phases": [{"name": "load", "type": "insert"}],
    })  # fmt: skip


def refusal(sharding: dict[str, Any], **target: Any) -> list[str]:
    with pytest.raises(SpecError) as caught:
        spec(sharding, **target)
    return [str(p) for p in caught.value.problems]


def test_client_side_routers_take_no_count_and_no_node_selector() -> None:
    (count,) = refusal({"routers": {"placement": "client", "count": 2}})
    assert count.startswith("spec.targets[0].sharding.routers.count: count must be unset")
    assert "spec.runner.pods" in count
    (nodes,) = refusal({"routers": {"placement": "client", "nodeSelector": {"pool": "x"}}})
    assert nodes.startswith("spec.targets[0].sharding.routers.nodeSelector:")
    assert "spec.runner.nodeSelector" in nodes


def test_an_external_target_places_nothing() -> None:
    (found,) = refusal(
        {"routers": {"placement": "client"}},
        external={"uriSecretRef": {"name": "cluster", "key": "uri"}},
        shards=None, members=None,
    )  # fmt: skip
    assert found.startswith("spec.targets[0].sharding: sharding must be unset for an external")


def test_only_a_sharded_target_has_shards_to_place() -> None:
    (found,) = refusal({"shards": {"placement": "colocated"}}, topology="replicaSet",
                       shards=None, members=3)  # fmt: skip
    assert found.startswith("spec.targets[0].sharding: sharding places a sharded cluster")


def test_colocated_shards_need_a_memory_limit_to_split() -> None:
    problems = check(spec({"shards": {"placement": "colocated"}},
                          {"resources": {"limits": {"cpu": "6"}}}))  # fmt: skip
    (found,) = [p for p in problems if "colocated" in p.message]
    assert found.field == "spec.hardware.resources.limits.memory"
    assert "3 shard processes" in found.message
    assert "set limits.memory" in found.message
    # Spread shards have whole pods: no split, no such need.
    assert not [p for p in check(spec({}, {"resources": {"limits": {"cpu": "6"}}}))
                if "colocated" in p.message]  # fmt: skip


def test_resources_that_cannot_be_split_are_refused() -> None:
    gpus = {"resources": {"limits": {"memory": "24Gi", "nvidia.com/gpu": "1"}}}
    (found,) = [p for p in check(spec({"shards": {"placement": "colocated"}}, gpus))
                if "cannot be split" in p.message]  # fmt: skip
    assert found.field == "spec.hardware.resources"
    assert found.message.startswith("nvidia.com/gpu cannot be split")


def test_a_cache_setting_must_fit_each_processs_share() -> None:
    # 9 GB fits the node's 24 GiB but not a third of it.
    problems = check(spec({"shards": {"placement": "colocated"}},
                          settings={"wiredTigerCacheSizeGB": "9"}))  # fmt: skip
    (found,) = [p for p in problems if p.field.endswith("wiredTigerCacheSizeGB")]
    assert "memory 8Gi (each of 3 co-located shard processes' share)" in found.message
    assert not [p for p in check(spec({}, settings={"wiredTigerCacheSizeGB": "9"}))
                if p.field.endswith("wiredTigerCacheSizeGB")]  # fmt: skip


def test_the_memory_floor_is_each_processs_share() -> None:
    small = {"resources": {"limits": {"memory": "1Gi"}}}
    problems = check(spec({"shards": {"placement": "colocated"}}, small))
    (found,) = [p for p in problems if p.field == "spec.hardware.resources.limits.memory"]
    assert found.message.startswith("1Gi / 3 (each of 3 co-located shard processes' share)")
    # The fix names the node's memory for all three, not one process's.
    suggested = found.message.rsplit("at least ", 1)[1].split()[0].rstrip(",")
    assert parse_quantity(suggested) >= 3 * parse_quantity("400Mi")
    assert not [p for p in check(spec({}, small))
                if p.field == "spec.hardware.resources.limits.memory"]  # fmt: skip


@pytest.mark.parametrize(
    ("amount", "resource", "ways", "share"),
    [("24Gi", "memory", 3, "8Gi"), ("6", "cpu", 3, "2"), ("8", "cpu", 3, "2666m"),
     ("1Gi", "memory", 3, "341Mi"), ("1000", "memory", 3, "333")],
)  # fmt: skip
def test_shares_round_down(amount: str, resource: str, ways: int, share: str) -> None:
    assert split_quantity(parse_quantity(amount), resource, ways) == share
    assert parse_quantity(share) * ways <= parse_quantity(amount)
