"""MongoDB setup: exact command documents, idempotence and partial states.

FerretDB, the MongoDB-protocol server the tests run, has no replSetInitiate,
addShard, shardCollection or createUser, so a recording fake client stands in
for pymongo here; tests/integration/operator/targets/test_mongo_contract.py runs the same setup
against real mongod/mongos when MONGODB_BIN_DIR is set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from dbbench_operator.specs.databases.request import TopologyRequest
from dbbench_operator.specs.databases.target_names import ReplicaSetLayout, layout
from dbbench_operator.targets.mongodb import commands as cmd
from dbbench_operator.targets.mongodb.setup import (
    CommandFailedError,
    UnreachableError,
    ensure_default_write_concern,
    ensure_replica_set,
    ensure_root_user,
    ensure_sharded_cluster,
)
from dbbench_operator.targets.mongodb.sharding import (
    ShardKeyMismatchError,
    ensure_sharded_collection,
)

Reply = dict[str, Any] | Exception | Callable[[Mapping[str, Any]], dict[str, Any]]


class Recorder:
    """Answers commands from a script keyed by command name; records every document."""

    def __init__(self, **script: Reply) -> None:
        self.script: dict[str, Reply] = {"ping": {"ok": 1}, **script}
        self.sent: list[dict[str, Any]] = []

    def admin_command(self, command: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append(dict(command))
        reply = self.script.get(next(iter(command)), {"ok": 1})
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(command)
        return reply

    def database_command(self, database: str, command: Mapping[str, Any]) -> dict[str, Any]:
        """Commands on other databases are recorded with `$db`, as on the wire."""
        reply = self.admin_command(command)
        self.sent[-1]["$db"] = database
        return reply

    def names(self) -> list[str]:
        return [next(iter(doc)) for doc in self.sent]


def _request(topology: str, members: int, shards: int = 0) -> TopologyRequest:
    return TopologyRequest(
        run_name="bench", run_uid="8d5f", namespace="perf", target_name="mongo",
        engine="mongodb", topology=topology, members=members, shards=shards,
        credentials_secret="bench-creds",
    )  # fmt: skip


RS = layout(_request("replicaSet", 3)).replica_sets[0]
NOT_INIT = CommandFailedError(cmd.NOT_YET_INITIALIZED, "no replset config has been received")


def _status(states: list[str], me: int = 0, rs: ReplicaSetLayout = RS) -> dict[str, Any]:
    return {
        "ok": 1,
        "set": rs.name,
        "myState": {"PRIMARY": 1, "SECONDARY": 2}.get(states[me], 0),
        "members": [
            {"_id": i, "name": rs.host(i), "stateStr": s, "health": 1} for i, s in enumerate(states)
        ],
    }


def test_initiate_document_lists_every_member() -> None:
    sts = RS.statefulset  # bench-mongo-<hash>
    assert cmd.repl_set_initiate(RS) == {
        "replSetInitiate": {
            "_id": "rs0",
            "members": [
                {"_id": i, "host": f"{sts}-{i}.{sts}.perf.svc.cluster.local:27017"}
                for i in range(3)
            ],
        }
    }
    assert sts.startswith("bench-mongo-")


def test_config_server_initiate_says_configsvr() -> None:
    cfg = layout(_request("sharded", 3, shards=2)).config_servers
    assert cfg is not None
    doc = cmd.repl_set_initiate(cfg)["replSetInitiate"]
    assert doc["_id"] == "cfg"
    assert doc["configsvr"] is True
    assert [m["host"] for m in doc["members"]] == list(cfg.hosts)


def test_add_shard_and_shard_collection_documents() -> None:
    shard = layout(_request("sharded", 2, shards=2)).shards[1]
    assert cmd.add_shard(shard) == {
        "addShard": f"shard1/{shard.host(0)},{shard.host(1)}",
        "name": "shard1",
    }
    assert cmd.shard_collection("bench", "records") == {
        "shardCollection": "bench.records",
        "key": {"_id": "hashed"},
    }
    assert cmd.enable_sharding("bench") == {"enableSharding": "bench"}


def test_fresh_set_is_initiated_once_all_members_answer() -> None:
    members = [Recorder(replSetGetStatus=NOT_INIT) for _ in range(3)]
    members[0].script["replSetGetStatus"] = _InitiatedAfter(
        members[0], ["PRIMARY", "SECONDARY", "SECONDARY"]
    )
    result = ensure_replica_set(RS, members)
    assert result.ready, result
    assert result.actions == ("replSetInitiate",)
    assert [d for d in members[0].sent if "replSetInitiate" in d] == [cmd.repl_set_initiate(RS)]
    assert all("replSetInitiate" not in m.names() for m in members[1:])


class _InitiatedAfter:
    """replSetGetStatus that says NotYetInitialized until replSetInitiate was sent."""

    def __init__(self, member: Recorder, states: list[str]) -> None:
        self.member, self.states = member, states

    def __call__(self, _command: Mapping[str, Any]) -> dict[str, Any]:
        if "replSetInitiate" in self.member.names():
            return _status(self.states)
        raise NOT_INIT


def test_no_initiate_while_a_member_does_not_answer() -> None:
    members = [Recorder(replSetGetStatus=NOT_INIT) for _ in range(3)]
    members[2].script["ping"] = UnreachableError("connection refused")
    result = ensure_replica_set(RS, members)
    assert (result.ready, result.reason) == (False, "WaitingForMembers 2/3")
    assert not any("replSetInitiate" in m.names() for m in members)


def test_already_initialized_is_success() -> None:
    members = [Recorder(replSetGetStatus=NOT_INIT) for _ in range(3)]
    members[0].script["replSetInitiate"] = CommandFailedError(
        cmd.ALREADY_INITIALIZED, "already initialized"
    )
    result = ensure_replica_set(RS, members)
    assert result.reason == "WaitingForPrimary"
    assert members[0].names().count("replSetInitiate") == 1


def test_node_not_found_is_retried_then_reported() -> None:
    members = [Recorder(replSetGetStatus=NOT_INIT) for _ in range(3)]
    members[0].script["replSetInitiate"] = CommandFailedError(
        cmd.NODE_NOT_FOUND, "No host described"
    )
    sleeps: list[float] = []
    result = ensure_replica_set(RS, members, sleep=sleeps.append, attempts=3)
    assert members[0].names().count("replSetInitiate") == 3
    assert sleeps == [1.0, 1.0]
    assert not result.ready
    assert "NodeNotFound" in result.message


def test_initiated_without_primary_waits_and_sends_nothing() -> None:
    states = ["SECONDARY", "SECONDARY", "STARTUP2"]
    members = [Recorder(replSetGetStatus=_status(states, me=i)) for i in range(3)]
    result = ensure_replica_set(RS, members)
    assert (result.ready, result.reason, result.actions) == (False, "WaitingForPrimary", ())
    assert all(set(m.names()) == {"ping", "replSetGetStatus"} for m in members)


def test_member_still_joining_reports_count() -> None:
    states = ["PRIMARY", "SECONDARY", "STARTUP2"]
    members = [Recorder(replSetGetStatus=_status(states, me=0))] + [
        Recorder(replSetGetStatus=NOT_INIT) for _ in range(2)
    ]
    result = ensure_replica_set(RS, members)
    assert (result.ready, result.reason, result.actions) == (False, "WaitingForMembers 2/3", ())
    assert result.primary == RS.host(0)


def test_two_primaries_is_not_ready() -> None:
    status = _status(["PRIMARY", "PRIMARY", "SECONDARY"])
    assert cmd.interpret_status(status, 3).reason == "WaitingForPrimary"
    unhealthy = _status(["PRIMARY", "SECONDARY", "SECONDARY"])
    unhealthy["members"][2]["health"] = 0
    assert cmd.interpret_status(unhealthy, 3).reason == "WaitingForMembers 2/3"


def test_healthy_set_second_pass_sends_reads_only() -> None:
    states = ["PRIMARY", "SECONDARY", "SECONDARY"]
    members = [Recorder(replSetGetStatus=_status(states, me=i)) for i in range(3)]
    first = ensure_replica_set(RS, members)
    second = ensure_replica_set(RS, members)
    assert first.ready
    assert second.ready
    assert first.actions == second.actions == ()
    assert {n for m in members for n in m.names()} == {"ping", "replSetGetStatus"}


def _cluster(shards_listed: list[str], cfg_states: list[str]) -> tuple[Any, list[Any], Recorder]:
    lay = layout(_request("sharded", 2, shards=3))
    assert lay.config_servers is not None
    cfg = (
        lay.config_servers,
        [Recorder(replSetGetStatus=_status(cfg_states, 0, lay.config_servers)) for _ in range(2)],
    )
    shards = [
        (s, [Recorder(replSetGetStatus=_status(["PRIMARY", "SECONDARY"], 0, s)) for _ in range(2)])
        for s in lay.shards
    ]
    listed = {"ok": 1, "shards": [{"_id": n, "host": "x"} for n in shards_listed]}
    return cfg, shards, Recorder(listShards=listed)


def test_only_missing_shards_are_added() -> None:
    cfg, shards, mongos = _cluster(["shard0"], ["PRIMARY", "SECONDARY"])
    result = ensure_sharded_cluster(cfg, shards, mongos)
    assert result.ready, result
    added = [d for d in mongos.sent if "addShard" in d]
    assert added == [cmd.add_shard(shards[1][0]), cmd.add_shard(shards[2][0])]
    assert result.actions == ("addShard shard1", "addShard shard2")


def test_all_shards_present_sends_no_add() -> None:
    cfg, shards, mongos = _cluster(["shard0", "shard1", "shard2"], ["PRIMARY", "SECONDARY"])
    result = ensure_sharded_cluster(cfg, shards, mongos)
    assert (result.ready, result.actions) == (True, ())
    assert mongos.names() == ["ping", "listShards"]


def test_mongos_untouched_until_config_servers_have_a_primary() -> None:
    cfg, shards, mongos = _cluster([], ["SECONDARY", "SECONDARY"])
    result = ensure_sharded_cluster(cfg, shards, mongos)
    assert (result.ready, result.reason) == (False, "WaitingForConfigServers")
    assert mongos.sent == []


def test_shard_without_primary_is_not_added_yet() -> None:
    cfg, shards, mongos = _cluster([], ["PRIMARY", "SECONDARY"])
    for member in shards[2][1]:
        member.script["replSetGetStatus"] = _status(["SECONDARY", "SECONDARY"], 0, shards[2][0])
    result = ensure_sharded_cluster(cfg, shards, mongos)
    assert (result.ready, result.reason) == (False, "WaitingForShards 2/3")
    assert [d["name"] for d in mongos.sent if "addShard" in d] == ["shard0", "shard1"]


def test_root_user_created_only_when_missing() -> None:
    empty = Recorder(usersInfo={"ok": 1, "users": []})
    assert ensure_root_user(empty, "root", "pw") is True
    assert empty.sent[-1] == {
        "createUser": "root", "pwd": "pw", "roles": [{"role": "root", "db": "admin"}],
    }  # fmt: skip
    present = Recorder(usersInfo={"ok": 1, "users": [{"user": "root", "db": "admin"}]})
    assert ensure_root_user(present, "root", "pw") is False
    assert present.names() == ["usersInfo"]
    assert present.sent == [{"usersInfo": {"user": "root", "db": "admin"}}]


@pytest.mark.parametrize(
    ("durability", "wanted"),
    [
        ("fast", {"w": 1, "j": False}),
        ("safe", {"w": 1, "j": True}),
        ("strict", {"w": "majority", "j": True}),
    ],
)
def test_default_write_concern_follows_profile(durability: str, wanted: dict[str, Any]) -> None:
    client = Recorder(
        getDefaultRWConcern={"ok": 1, "defaultWriteConcern": {"w": "majority", "wtimeout": 0}}
    )
    changed = ensure_default_write_concern(client, durability)
    assert changed is True
    assert client.sent[-1] == {"setDefaultRWConcern": 1, "defaultWriteConcern": wanted}
    settled = Recorder(getDefaultRWConcern={"ok": 1, "defaultWriteConcern": dict(wanted)})
    assert ensure_default_write_concern(settled, durability) is False
    assert settled.names() == ["getDefaultRWConcern"]


def _catalog(*docs: dict[str, Any]) -> dict[str, Any]:
    """A `find` reply on config.collections."""
    return {"ok": 1, "cursor": {"id": 0, "ns": "config.collections", "firstBatch": list(docs)}}


CATALOG_QUERY = {
    "find": "collections",
    "filter": {"_id": "bench.records"},
    "limit": 1,
    "$db": "config",
}


def test_unsharded_collection_is_sharded_hashed_on_id() -> None:
    mongos = Recorder(find=_catalog())
    sharded = ensure_sharded_collection(mongos, "bench", "records")
    assert mongos.sent == [
        CATALOG_QUERY,
        {"enableSharding": "bench"},
        {"shardCollection": "bench.records", "key": {"_id": "hashed"}},
    ]
    assert (sharded.key, sharded.actions) == ("_id: hashed", ("shardCollection bench.records",))


def test_collection_sharded_on_the_wanted_key_sends_reads_only() -> None:
    mongos = Recorder(find=_catalog({"_id": "bench.records", "key": {"Number": "hashed"}}))
    sharded = ensure_sharded_collection(mongos, "bench", "records", "Number")
    assert mongos.sent == [{**CATALOG_QUERY}]
    assert (sharded.key, sharded.actions) == ("Number: hashed", ())


def test_collection_sharded_on_another_key_is_an_error_naming_the_fix() -> None:
    mongos = Recorder(find=_catalog({"_id": "bench.records", "key": {"UserID": 1}}))
    with pytest.raises(ShardKeyMismatchError) as caught:
        ensure_sharded_collection(mongos, "bench", "records")
    message = str(caught.value)
    assert "bench.records is already sharded on {UserID: 1}, not {_id: hashed}" in message
    assert "shardKey" in message
    assert "drop" in message
    assert mongos.names() == ["find"]  # nothing was changed


def test_concurrent_sharding_on_another_key_is_still_an_error() -> None:
    answers = iter([_catalog(), _catalog({"_id": "bench.records", "key": {"x": 1}})])
    mongos = Recorder(
        find=lambda _command: next(answers),
        shardCollection=CommandFailedError(cmd.ALREADY_INITIALIZED, "already sharded"),
    )
    with pytest.raises(ShardKeyMismatchError):
        ensure_sharded_collection(mongos, "bench", "records")
    failing = Recorder(find=_catalog(), shardCollection=CommandFailedError(13, "unauthorized"))
    with pytest.raises(CommandFailedError):
        ensure_sharded_collection(failing, "bench", "records")
