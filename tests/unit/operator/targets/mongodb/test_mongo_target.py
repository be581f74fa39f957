"""A whole setup pass per MongoDB topology: identities, order and commands sent."""

from __future__ import annotations

from typing import Any

from dbbench_operator.specs.databases import target_names
from dbbench_operator.targets.mongodb import commands as cmd
from dbbench_operator.targets.mongodb.setup import UnreachableError
from dbbench_operator.targets.mongodb.target import MongoCredentials, set_up_mongodb
from tests.fixtures.topology import make_request
from tests.unit.operator.targets.mongodb.test_mongo_setup import (
    NOT_INIT,
    Recorder,
    _catalog,
    _status,
)

CREDS = MongoCredentials("root", "root-pw", "a2V5ZmlsZQ")


class Servers:
    """connect() stand-in: one Recorder per host, and who connected how."""

    def __init__(self) -> None:
        self.by_host: dict[str, Recorder] = {}
        self.logins: list[tuple[str, str | None, str, bool]] = []

    def __call__(self, host: str, **options: Any) -> Recorder:
        self.logins.append(
            (host, options.get("username"), options.get("auth_source", "admin"), options["direct"])
        )
        return self.by_host.setdefault(host, Recorder())


def test_replica_set_pass_uses_root_and_sets_default_write_concern() -> None:
    request = make_request("mongodb", "replicaSet", 3, durability="strict")
    rs = target_names.layout(request).replica_sets[0]
    servers = Servers()
    for i, host in enumerate(rs.hosts):
        servers.by_host[host] = Recorder(
            replSetGetStatus=_status(["PRIMARY", "SECONDARY", "SECONDARY"], i, rs),
            getDefaultRWConcern={"ok": 1, "defaultWriteConcern": {"w": "majority"}},
        )
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert result.ready, result
    assert {(user, source) for _, user, source, _ in servers.logins} == {("root", "admin")}
    assert servers.by_host[rs.host(0)].sent[-1] == {
        "setDefaultRWConcern": 1,
        "defaultWriteConcern": {"w": "majority", "j": True},
    }


def test_fresh_replica_set_is_initiated_not_yet_ready() -> None:
    request = make_request("mongodb", "replicaSet", 3)
    rs = target_names.layout(request).replica_sets[0]
    servers = Servers()
    for host in rs.hosts:
        servers.by_host[host] = Recorder(replSetGetStatus=NOT_INIT)
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert (result.ready, result.actions) == (False, ("replSetInitiate",))
    assert cmd.repl_set_initiate(rs) in servers.by_host[rs.host(0)].sent


def test_sharded_pass_uses_internal_identity_and_creates_root_through_mongos() -> None:
    request = make_request("mongodb", "sharded", 1, 2, durability="fast")
    layout = target_names.layout(request)
    servers = Servers()
    for rs in layout.replica_sets:
        servers.by_host[rs.host(0)] = Recorder(replSetGetStatus=_status(["PRIMARY"], 0, rs))
    mongos = servers.by_host[layout.endpoint] = Recorder(
        listShards={"ok": 1, "shards": []},
        usersInfo={"ok": 1, "users": []},
        getDefaultRWConcern={"ok": 1, "defaultWriteConcern": {"w": "majority"}},
        find=_catalog(),
    )
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert result.ready, result
    assert result.actions == (
        "addShard shard0", "addShard shard1", "createUser",
        "createUser shard0", "createUser shard1", "shardCollection dbbench.flat45",
    )  # fmt: skip
    assert {(user, source) for _, user, source, _ in servers.logins} == {("__system", "local")}
    assert (layout.endpoint, "__system", "local", False) in servers.logins
    # The same user on each shard, shard-local (through the shard's replica set, so
    # on its primary), allowed to read settings and status only: the runner reads
    # each shard's own mongod for the environment record.
    for shard in layout.shards:
        seeds = ",".join(shard.hosts)  # one member here: the same fake as the member's
        assert (seeds, "__system", "local", False) in servers.logins
        sent = servers.by_host[seeds].sent
        assert [d for d in sent if next(iter(d)) in ("usersInfo", "createUser")] == [
            {"usersInfo": {"user": "root", "db": "admin"}},
            {"createUser": "root", "pwd": "root-pw",
             "roles": [{"role": "clusterMonitor", "db": "admin"}]},
        ]  # fmt: skip
    assert mongos.names() == [
        "ping", "listShards", "addShard", "addShard", "usersInfo", "createUser",
        "getDefaultRWConcern", "setDefaultRWConcern",
        "find", "enableSharding", "shardCollection",
    ]  # fmt: skip
    assert mongos.sent[7] == {
        "setDefaultRWConcern": 1,
        "defaultWriteConcern": {"w": 1, "j": False},
    }
    # Through mongos, before any step inserts: the data set's collection, hashed _id.
    assert mongos.sent[-1] == {"shardCollection": "dbbench.flat45", "key": {"_id": "hashed"}}
    assert result.shard_key == "_id: hashed"


def test_sharded_pass_shards_on_the_key_the_spec_names() -> None:
    request = make_request(
        "mongodb", "sharded", 1, 1, shard_key="UserID", collections=("news",)
    )  # fmt: skip
    layout = target_names.layout(request)
    servers = Servers()
    for rs in layout.replica_sets:
        servers.by_host[rs.host(0)] = Recorder(replSetGetStatus=_status(["PRIMARY"], 0, rs))
    mongos = servers.by_host[layout.endpoint] = Recorder(
        listShards={"ok": 1, "shards": [{"_id": "shard0"}]},
        usersInfo={"ok": 1, "users": [{"user": "root"}]},
        getDefaultRWConcern={"ok": 1, "defaultWriteConcern": {"w": 1, "j": True}},
        find=_catalog(),
    )
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert result.ready, result
    assert mongos.sent[-1] == {"shardCollection": "dbbench.news", "key": {"UserID": "hashed"}}
    assert result.shard_key == "UserID: hashed"


def test_shard_users_already_there_are_left_alone() -> None:
    request = make_request("mongodb", "sharded", 1, 2)
    layout = target_names.layout(request)
    servers = Servers()
    existing = {"ok": 1, "users": [{"user": "root"}]}
    for rs in layout.replica_sets:
        servers.by_host[rs.host(0)] = Recorder(
            replSetGetStatus=_status(["PRIMARY"], 0, rs), usersInfo=existing
        )
    servers.by_host[layout.endpoint] = Recorder(
        listShards={"ok": 1, "shards": [{"_id": "shard0"}, {"_id": "shard1"}]},
        usersInfo=existing,
        getDefaultRWConcern={"ok": 1, "defaultWriteConcern": {"w": 1, "j": True}},
        find=_catalog(),
    )
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert result.ready, result
    assert not [a for a in result.actions if a.startswith("createUser")]
    for shard in layout.shards:
        names = servers.by_host[",".join(shard.hosts)].names()
        assert ("usersInfo" in names, "createUser" in names) == (True, False)


def test_sharded_cluster_not_ready_shards_nothing_yet() -> None:
    request = make_request("mongodb", "sharded", 1, 1)
    layout = target_names.layout(request)
    servers = Servers()
    for rs in layout.replica_sets:
        servers.by_host[rs.host(0)] = Recorder(replSetGetStatus=_status(["PRIMARY"], 0, rs))
    mongos = servers.by_host[layout.endpoint] = Recorder(
        listShards={"ok": 1, "shards": []}, usersInfo={"ok": 1, "users": []},
        addShard=UnreachableError("shard not reachable yet"),
    )  # fmt: skip
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert not result.ready
    assert "shardCollection" not in mongos.names()


def test_standalone_that_does_not_answer_is_waiting() -> None:
    request = make_request("mongodb", "standalone")
    servers = Servers()
    host = target_names.layout(request).replica_sets[0].host(0)
    servers.by_host[host] = Recorder(ping=UnreachableError("connection refused"))
    result = set_up_mongodb(request, CREDS, connect=servers)
    assert (result.ready, result.reason) == (False, "WaitingForDatabase")
    assert "password" not in repr(CREDS)
    assert "root-pw" not in repr(CREDS)
