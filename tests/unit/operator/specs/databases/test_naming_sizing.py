"""Names, labels, request validation and settings computed from the memory limit."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from dbbench_operator.specs.databases import sizing, target_names
from dbbench_operator.specs.databases.request import Hardware
from tests.fixtures.topology import make_request

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def test_base_name_is_run_unique_and_dns_safe() -> None:
    a = make_request("mongodb", "replicaSet", 3)
    b = make_request("mongodb", "replicaSet", 3, run_uid="another-uid")
    assert target_names.base_name(a).startswith("nightly-compare-mongodb-replicase-")
    assert target_names.base_name(a) != target_names.base_name(b)
    assert target_names.base_name(a) == target_names.base_name(
        make_request("mongodb", "replicaSet", 3)
    )


@pytest.mark.parametrize(
    ("run", "target"),
    [("x" * 253, "t" * 63), ("2024.11.run", "Mongo_8"), ("a", "b"), ("9lives", "db")],
)
def test_long_or_odd_names_fit_every_suffix(run: str, target: str) -> None:
    request = make_request("mongodb", "sharded", 3, 3, run_name=run, target_name=target)
    base = target_names.base_name(request)
    assert DNS_1035.match(base), base
    assert len(base) <= target_names.MAX_BASE
    # Longest child: a shard StatefulSet's pod with its controller-revision hash label.
    assert len(f"{base}-shard31-{'x' * 10}") <= 63


def test_labels_name_run_and_target() -> None:
    request = make_request("mysql", "primaryReplica", 2)
    assert target_names.labels(request, "mysql") == {
        "app.kubernetes.io/name": "mysql",
        "app.kubernetes.io/instance": target_names.base_name(request),
        "app.kubernetes.io/component": "mysql",
        "app.kubernetes.io/managed-by": "dbbench",
        "dbbench.io/run": "nightly-compare",
        "dbbench.io/run-uid": request.run_uid,
        "dbbench.io/target": "mysql-primaryreplica",
    }


def test_layout_hosts_and_endpoints() -> None:
    request = make_request("mongodb", "sharded", 2, 2)
    lay = target_names.layout(request)
    base = target_names.base_name(request)
    assert lay.config_servers is not None
    assert lay.config_servers.hosts == (
        f"{base}-cfg-0.{base}-cfg.perf.svc.cluster.local:27017",
        f"{base}-cfg-1.{base}-cfg.perf.svc.cluster.local:27017",
    )
    assert [s.name for s in lay.shards] == ["shard0", "shard1"]
    assert lay.endpoint == f"{base}-mongos.perf.svc.cluster.local:27017"
    mysql = target_names.layout(make_request("mariadb", "primaryReplica", 3))
    assert mysql.endpoint == mysql.replica_sets[0].host(0)
    assert (
        mysql.replica_sets[0]
        .hosts[2]
        .endswith("-2." + mysql.replica_sets[0].statefulset + ".perf.svc.cluster.local:3306")
    )


@pytest.mark.parametrize(
    ("engine", "topology", "members", "shards", "message"),
    [
        ("mongodb", "primaryReplica", 2, 0, "not available for mongodb"),
        ("mysql", "sharded", 1, 2, "not available for mysql"),
        ("mongodb", "replicaSet", 3, 2, "shards is only valid"),
        ("mongodb", "sharded", 3, 0, "shards must be >= 1"),
        ("mysql", "standalone", 2, 0, "members must be 1"),
    ],
)
def test_invalid_combinations_are_refused(
    engine: str, topology: str, members: int, shards: int, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        make_request(engine, topology, members, shards)


def test_wired_tiger_cache_is_half_of_limit_minus_one_gib() -> None:
    assert sizing.wired_tiger_cache_gb(8 * sizing.GIB) == "3.5"
    assert sizing.wired_tiger_cache_gb(3 * sizing.GIB) == "1"
    assert sizing.wired_tiger_cache_gb(1 * sizing.GIB) == "0.25"  # floor
    assert sizing.wired_tiger_cache_gb(512 * sizing.MIB) == "0.25"


def test_innodb_buffer_pool_is_whole_units_of_chunk_times_instances() -> None:
    limit = 8 * sizing.GIB
    pool, instances = sizing.innodb_buffer_pool(limit, 151)
    assert instances == pool // sizing.GIB
    assert pool % (sizing.INNODB_CHUNK * instances) == 0
    assert limit * 0.6 < pool <= limit * 0.75
    # Below one chunk: whole MiB, one instance (MySQL shrinks the chunk to fit).
    small, one = sizing.innodb_buffer_pool(800 * sizing.MIB, 151)
    assert (small % sizing.MIB, one) == (0, 1)
    assert small < sizing.INNODB_CHUNK


def test_settings_computed_then_overridden_by_the_user() -> None:
    mongo = make_request("mongodb", "replicaSet", 3)
    assert sizing.engine_settings(mongo) == {"wiredTigerCacheSizeGB": "3.5"}
    given = make_request("mongodb", "replicaSet", 3, settings={"wiredTigerCacheSizeGB": "2"})
    assert sizing.engine_settings(given) == {"wiredTigerCacheSizeGB": "2"}
    no_limit = make_request("mongodb", "replicaSet", 3, hardware=Hardware())
    assert sizing.engine_settings(no_limit) == {}


@pytest.mark.parametrize(
    ("durability", "flush", "sync"), [("fast", "2", "0"), ("safe", "1", "1"), ("strict", "1", "1")]
)
def test_mysql_durability_profile(durability: str, flush: str, sync: str) -> None:
    settings = sizing.engine_settings(make_request("mariadb", "standalone", durability=durability))
    assert settings["innodb_flush_log_at_trx_commit"] == flush
    assert settings["sync_binlog"] == sync
    assert settings["innodb_buffer_pool_size"] == str(
        sizing.innodb_buffer_pool(8 * sizing.GIB, sizing.MYSQL_DEFAULT_MAX_CONNECTIONS)[0]
    )
