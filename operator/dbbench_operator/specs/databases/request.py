"""The typed input of everything in this package: one target to deploy."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Engine = Literal["mongodb", "mysql", "mariadb", "postgresql"]
Topology = Literal["standalone", "replicaSet", "sharded", "primaryReplica"]
Durability = Literal["fast", "safe", "strict"]
Cleanup = Literal["Delete", "Retain"]

# Keys of the per-run credentials Secret that the operator creates and the
# charts read. The operator owns the values; the charts only reference them.
SECRET_USERNAME_KEY = "root-username"  # noqa: S105 - a key name
SECRET_PASSWORD_KEY = "root-password"  # noqa: S105 - a key name, not a password
SECRET_KEYFILE_KEY = "mongodb-keyfile"  # noqa: S105 - a key name
SECRET_REPLICATION_PASSWORD_KEY = "replication-password"  # noqa: S105 - a key name

_TOPOLOGIES: dict[str, frozenset[str]] = {
    "mongodb": frozenset({"standalone", "replicaSet", "sharded"}),
    "mysql": frozenset({"standalone", "primaryReplica"}),
    "mariadb": frozenset({"standalone", "primaryReplica"}),
    "postgresql": frozenset({"standalone", "primaryReplica"}),
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Storage(_Frozen):
    storage_class_name: str | None = None
    size: str = "10Gi"


def _guaranteed(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


# Sharded clusters: config servers hold only metadata and mongos routes, so
# data-node resources would need 2 x members + routers large pods for nothing.
DEFAULT_CONFIG_SERVER_RESOURCES = _guaranteed("500m", "1Gi")
DEFAULT_MONGOS_RESOURCES = _guaranteed("1", "1Gi")


class Hardware(_Frozen):
    """Where database pods run; copied verbatim onto every database pod template."""

    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    affinity: dict[str, Any] = Field(default_factory=dict)
    resources: dict[str, Any] = Field(default_factory=dict)  # data-bearing servers
    config_server_resources: dict[str, Any] = Field(
        default_factory=lambda: dict(DEFAULT_CONFIG_SERVER_RESOURCES)
    )
    mongos_resources: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_MONGOS_RESOURCES))
    storage: Storage = Field(default_factory=Storage)


class ShardingRequest(_Frozen):
    """Where a sharded target's processes run (api `targets[].sharding`, resolved):
    each component's nodeSelector in force (None: the hardware's), and the mongos
    routers deployed server-side (with client-side routers, the operator's one)."""

    shard_placement: Literal["spread", "colocated"] = "spread"
    shard_node_selector: dict[str, str] | None = None
    config_server_node_selector: dict[str, str] | None = None
    router_placement: Literal["server", "client"] = "server"
    routers: int = Field(default=1, ge=1, le=16)
    router_node_selector: dict[str, str] | None = None


class TopologyRequest(_Frozen):
    """One database target of one run, as the charts and setup code need it."""

    run_name: str = Field(min_length=1)
    run_uid: str = ""
    namespace: str = Field(min_length=1)
    target_name: str = Field(min_length=1)
    engine: Engine
    topology: Topology
    version: str = ""
    # The full reference the servers run (the operator resolves it: the target's
    # `image` or the configured engine image); None leaves it to the chart.
    image: str | None = None
    # `image` is a MongoDB-protocol stand-in (standalone only, no mongod flags).
    protocol_stand_in: bool = False
    members: int = Field(default=1, ge=1, le=50)
    shards: int = Field(default=0, ge=0, le=32)
    settings: dict[str, str] = Field(default_factory=dict)
    # Connections each server must accept at once (MySQL/MariaDB: the runner's,
    # the operator's, the replicas' and headroom, `model.connections`); their
    # max_connections and buffer pool are sized from it unless `settings` say.
    connections: int = Field(default=0, ge=0)
    durability: Durability = "safe"
    # Sharded: the data-bearing pods' resources are each pod's own (co-located
    # shards: the target's split between them, `shard_placement.split`).
    hardware: Hardware = Field(default_factory=Hardware)
    sharding: ShardingRequest = Field(default_factory=ShardingRequest)
    cleanup: Cleanup = "Delete"
    credentials_secret: str = Field(min_length=1)
    # Where the runner writes: every collection the run's phases use (client-keyed
    # `<table>`, server-keyed `<table>_serverkey`); sharded targets shard each first.
    database: str = Field(default="dbbench", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    collections: tuple[
        Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")], ...
    ] = Field(default=("flat45",), min_length=1)
    shard_key: str = Field(default="_id", pattern=r"^[A-Za-z_][A-Za-z0-9_.]{0,63}$")
    # The cluster's DNS domain (kubelet --cluster-domain): member host names end in it.
    cluster_domain: str = Field(
        default="cluster.local",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    )

    @model_validator(mode="after")
    def _combination(self) -> TopologyRequest:
        if self.topology not in _TOPOLOGIES[self.engine]:
            raise ValueError(f"topology {self.topology} is not available for {self.engine}")
        if self.topology == "sharded" and self.shards < 1:
            raise ValueError("shards must be >= 1 for a sharded topology")
        if self.topology != "sharded" and self.shards:
            raise ValueError("shards is only valid with topology sharded")
        if self.topology == "standalone" and self.members != 1:
            raise ValueError("members must be 1 for a standalone topology")
        if self.sharding != ShardingRequest() and self.topology != "sharded":
            raise ValueError("sharding placement is only valid with topology sharded")
        if self.protocol_stand_in and (self.engine, self.topology) != ("mongodb", "standalone"):
            raise ValueError("a protocol stand-in runs as a standalone mongodb target only")
        return self

    @property
    def replicated(self) -> bool:
        """True when members of a replica set / replication group exist."""
        return self.topology in ("replicaSet", "sharded", "primaryReplica")
