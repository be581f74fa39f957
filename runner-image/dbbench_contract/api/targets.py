"""``spec.targets[]``: the databases under test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from .base import ApiModel, Rule
from .phases import WriteConcern
from .placement import TARGET_HARDWARE_RULES, TargetHardware
from .sharding import SHARDING_RULES, Sharding

Engine = Literal["mongodb", "mysql", "mariadb", "postgresql"]
Topology = Literal["standalone", "replicaSet", "sharded", "primaryReplica"]
Durability = Literal["fast", "safe", "strict"]
# The MongoDB write concern a durability profile implies, for phases that set
# none (the SQL engines' durability is a server setting: acknowledged there).
DURABILITY_WRITE_CONCERN: dict[Durability, WriteConcern] = {
    "fast": "acknowledged", "safe": "journaled", "strict": "majority",
}  # fmt: skip

# Built-in image of each engine when a target sets no `image`: the official
# repository, at `version` or this tag. The operator's chart overrides both per
# engine (values `engines.<engine>.repository/version`, see settings.py).
DEFAULT_REPOSITORIES: dict[str, str] = {
    "mongodb": "mongo",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "postgresql": "postgres",
}
DEFAULT_VERSIONS: dict[str, str] = {
    "mongodb": "8.0",
    "mysql": "8.4",
    "mariadb": "11.8",
    "postgresql": "17",
}
# Replica-set members (mongodb) or primary + replicas (the SQL engines) when unset.
DEFAULT_MEMBERS: dict[str, int] = {
    "standalone": 1,
    "replicaSet": 3,
    "sharded": 3,
    "primaryReplica": 2,
}

# Engine flags a target may set. An allow-list, so that a typo fails at
# admission instead of an hour into a run, and so that results record only
# flags whose meaning the report knows.
ALLOWED_SETTINGS: dict[str, tuple[str, ...]] = {
    "mongodb": (
        "wiredTigerCacheSizeGB",
        "oplogSizeMB",
        "wiredTigerCollectionBlockCompressor",
        "wiredTigerJournalCompressor",
        "wiredTigerIndexPrefixCompression",
        "syncPeriodSecs",
        "journalCommitIntervalMs",
        "maxIncomingConnections",
        "slowOpThresholdMs",
    ),
    "mysql": (
        "innodb_buffer_pool_size",
        "innodb_buffer_pool_instances",
        "innodb_flush_log_at_trx_commit",
        "innodb_flush_method",
        "innodb_redo_log_capacity",
        "innodb_io_capacity",
        "innodb_io_capacity_max",
        "innodb_doublewrite",
        "sync_binlog",
        "binlog_format",
        "max_connections",
        "table_open_cache",
        "performance_schema",
    ),
    "mariadb": (
        "innodb_buffer_pool_size",
        "innodb_flush_log_at_trx_commit",
        "innodb_flush_method",
        "innodb_log_file_size",
        "innodb_io_capacity",
        "innodb_io_capacity_max",
        "innodb_doublewrite",
        "sync_binlog",
        "binlog_format",
        "max_connections",
        "table_open_cache",
        "performance_schema",
    ),
    # Not allowed: what the durability profile or the replication setup owns
    # (fsync, full_page_writes, wal_level, synchronous_standby_names,
    # primary_conninfo, max_wal_senders).
    "postgresql": (
        "shared_buffers",
        "effective_cache_size",
        "work_mem",
        "maintenance_work_mem",
        "max_connections",
        "synchronous_commit",
        "wal_buffers",
        "wal_compression",
        "wal_writer_delay",
        "wal_writer_flush_after",
        "wal_sync_method",
        "max_wal_size",
        "min_wal_size",
        "checkpoint_timeout",
        "checkpoint_completion_target",
        "random_page_cost",
        "effective_io_concurrency",
        "huge_pages",
        "jit",
    ),
}
# The unit of a bare number in PostgreSQL's memory settings (bytes), for the
# checks against the memory limit.
POSTGRES_SETTING_UNITS: dict[str, int] = {
    "shared_buffers": 8192,
    "effective_cache_size": 8192,
    "wal_buffers": 8192,
    "work_mem": 1024,
    "maintenance_work_mem": 1024,
}


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


_FLUSH_KEY = "innodb_flush_log_at_trx_commit"
_SYNC_COMMIT_KEY = "synchronous_commit"
SYNCHRONOUS_COMMIT_VALUES = ("on", "off", "local", "remote_write", "remote_apply")


def _settings_allowed(engine: str, keys: tuple[str, ...]) -> Callable[[Any], bool]:
    def holds(target: Any) -> bool:
        return bool(
            target.engine != engine or not target.settings or set(target.settings) <= set(keys)
        )

    return holds


class SecretKeyRef(ApiModel):
    """A key of a Secret in the run's namespace."""

    name: str = Field(
        min_length=1, max_length=253, description="Name of the Secret, in the run's namespace."
    )
    key: str = Field(min_length=1, max_length=253, description="Key inside the Secret.")


class External(ApiModel):
    """An existing database to benchmark instead of deploying one."""

    uri_secret_ref: SecretKeyRef = Field(
        description=(
            "Secret key holding the connection URI, e.g. mongodb://user:pw@host:27017/ or "
            "mysql://user:pw@host:3306/. The operator passes it to the runner pods without "
            "logging it. The user needs rights to create and drop the benchmark database."
        )
    )


class Target(ApiModel):
    """One database under test. Targets run one after another, with the same data
    set, seed and phases, never at the same time; on the run's hardware unless
    they set their own."""

    name: str = Field(
        min_length=1,
        max_length=20,
        pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$",
        description=(
            "Short name of the target (DNS-1035 label, at most 20 characters): it prefixes "
            "the names of the target's pods and Services and keys its results. "
            "Unique within the run."
        ),
    )
    engine: Engine = Field(description="Database engine: mongodb, mysql, mariadb or postgresql.")
    topology: Topology = Field(
        default="standalone",
        description=(
            "Deployment shape. standalone: one server (any engine). replicaSet: a MongoDB "
            "replica set of `members`. sharded: a MongoDB sharded cluster of `shards` replica "
            "sets of `members` each, plus config servers and mongos. primaryReplica: a "
            "MySQL/MariaDB primary with `members - 1` asynchronous replicas, or a PostgreSQL "
            "primary with `members - 1` streaming-replication standbys. Default standalone."
        ),
    )
    version: str | None = Field(
        default=None,
        max_length=64,
        description=(
            "Image tag of the engine's image. Defaults to the operator's version for the "
            "engine (chart value engines.<engine>.version; the chart's defaults: mongodb 8.0, "
            "mysql 8.4, mariadb 11.8 LTS, postgresql 17, of the official mongo, mysql, mariadb "
            "and postgres images). "
            "Ignored when `image` is set."
        ),
    )
    image: str | None = Field(
        default=None,
        max_length=512,
        description=(
            "Full image reference; overrides the engine's image (chart value "
            "engines.<engine>.repository) and `version`."
        ),
    )
    protocol_stand_in: bool | None = Field(
        default=None,
        description=(
            "Says that `image` is not MongoDB but a server speaking its wire protocol "
            "(the local node's FerretDB stand-in, localhost/dbbench/ferretdb-mongodb-standin). "
            "Such a server has no replica sets, sharding or mongod settings: only engine "
            "mongodb, topology standalone, with `image` set and no `settings`. Its root user "
            "comes from the image's MONGO_INITDB_ROOT_* contract as with mongo. Results "
            "record the server's own version (FerretDB's buildInfo names it)."
        ),
    )
    members: int | None = Field(
        default=None,
        ge=1,
        le=7,
        description=(
            "Replica-set members (replicaSet, and each shard of sharded) or primary plus "
            "replicas (primaryReplica). Defaults: replicaSet 3, sharded 3, primaryReplica 2; "
            "standalone allows only 1."
        ),
    )
    shards: int | None = Field(
        default=None,
        ge=1,
        le=16,
        description="Number of shards; required with topology sharded and allowed only there.",
    )
    settings: dict[str, Annotated[str, StringConstraints(max_length=256)]] | None = Field(
        default=None,
        max_length=32,
        description=(
            'Engine flags, each a string (quote numbers: "2"). Allowed keys per engine: '
            + "; ".join(f"{e}: {', '.join(k)}" for e, k in ALLOWED_SETTINGS.items())
            + ". Settings win over the `durability` profile; memory sizes must fit "
            "hardware.resources.limits.memory."
        ),
    )
    durability: Durability = Field(
        default="safe",
        description=(
            "Portable durability profile. fast: MongoDB w:1 j:false, MySQL "
            "innodb_flush_log_at_trx_commit=2 sync_binlog=0, PostgreSQL "
            "synchronous_commit=off. safe: w:1 j:true, innodb_flush_log_at_trx_commit=1 "
            "sync_binlog=1, synchronous_commit=on fsync=on. strict: w:majority j:true, "
            "safe plus semi-synchronous replication (MySQL/MariaDB) or a synchronous standby "
            "(PostgreSQL); needs a replica. A phase's `writeConcern` overrides it on "
            "MongoDB. Default safe."
        ),
    )
    shard_key: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$",
        description=(
            "topology sharded: the field the benchmark collections are sharded on, hashed "
            "(default _id). The operator shards every collection the run's phases use "
            "(`<table>` for idMode client, `<table>_serverkey` for idMode server) through "
            "mongos before the first step; a collection already sharded on another key fails "
            "the run."
        ),
    )
    hardware: TargetHardware | None = Field(
        default=None,
        description=(
            "This target's own hardware (resources, storage, node pool, price): each field "
            "set replaces spec.hardware's field of the same name as a whole; unset fields "
            "come from spec.hardware. An external target may set only pricePerHour."
        ),
    )
    sharding: Sharding | None = Field(
        default=None,
        description=(
            "topology sharded: where the shards (one node each, or co-located on one node "
            "with the resources split), config servers and mongos routers (server-side, or "
            "one in every runner pod) run, and how many routers."
        ),
    )
    external: External | None = Field(
        default=None,
        description=(
            "Benchmark an existing database: nothing is deployed, `members`, `shards`, "
            "`settings`, `version` and `image` must be unset, and cache: cold or coldOnce is not "
            "possible."
        ),
    )

    RULES = (
        Rule(
            cel=(
                "!has(self.protocolStandIn) || !self.protocolStandIn "
                "|| (self.engine == 'mongodb' && self.topology == 'standalone')"
            ),
            message=(
                "protocolStandIn is for engine mongodb with topology standalone only: a "
                "MongoDB-protocol stand-in has no replica sets or sharding; remove "
                "protocolStandIn or use a real mongo image"
            ),
            field="protocolStandIn",
            holds=lambda t: (
                not t.protocol_stand_in or (t.engine == "mongodb" and t.topology == "standalone")
            ),
        ),
        Rule(
            cel="!has(self.protocolStandIn) || !self.protocolStandIn || has(self.image)",
            message=(
                "protocolStandIn describes the image: set image to the stand-in's reference "
                "(e.g. localhost/dbbench/ferretdb-mongodb-standin:1.24.0)"
            ),
            field="image",
            reason="FieldValueRequired",
            holds=lambda t: not t.protocol_stand_in or t.image is not None,
        ),
        Rule(
            cel="!has(self.protocolStandIn) || !self.protocolStandIn || !has(self.settings)",
            message=(
                "settings must be unset with protocolStandIn: they are mongod flags, which a "
                "MongoDB-protocol stand-in cannot honour"
            ),
            field="settings",
            reason="FieldValueForbidden",
            holds=lambda t: not t.protocol_stand_in or t.settings is None,
        ),
        Rule(
            cel="self.engine == 'mongodb' || self.topology in ['standalone', 'primaryReplica']",
            message=(
                "topology replicaSet and sharded are MongoDB-only: for mysql, mariadb and "
                "postgresql use standalone or primaryReplica"
            ),
            field="topology",
            holds=lambda t: t.engine == "mongodb" or t.topology in ("standalone", "primaryReplica"),
        ),
        Rule(
            cel="self.engine != 'mongodb' || self.topology != 'primaryReplica'",
            message=(
                "topology primaryReplica is for mysql, mariadb and postgresql: for mongodb use "
                "replicaSet"
            ),
            field="topology",
            holds=lambda t: t.engine != "mongodb" or t.topology != "primaryReplica",
        ),
        Rule(
            cel="!has(self.shards) || self.topology == 'sharded'",
            message="shards is only valid with topology: sharded; remove shards or set topology",
            field="shards",
            reason="FieldValueForbidden",
            holds=lambda t: t.shards is None or t.topology == "sharded",
        ),
        Rule(
            cel="self.topology != 'sharded' || has(self.shards) || has(self.external)",
            message="shards is required with topology: sharded (e.g. shards: 3)",
            field="shards",
            reason="FieldValueRequired",
            holds=lambda t: t.topology != "sharded" or t.shards is not None or t.external,
        ),
        Rule(
            cel="self.topology != 'standalone' || !has(self.members) || self.members == 1",
            message="members must be 1 (or unset) with topology: standalone",
            field="members",
            holds=lambda t: t.topology != "standalone" or t.members in (None, 1),
        ),
        Rule(
            cel="self.topology != 'primaryReplica' || !has(self.members) || self.members >= 2",
            message="members must be at least 2 (a primary and a replica) with primaryReplica",
            field="members",
            holds=lambda t: t.topology != "primaryReplica" or t.members is None or t.members >= 2,
        ),
        Rule(
            cel=(
                "self.durability != 'strict' || self.engine == 'mongodb' "
                "|| self.topology != 'standalone' || has(self.external)"
            ),
            message=(
                "durability strict waits for a replica: use topology primaryReplica, or "
                "durability safe for a standalone mysql, mariadb or postgresql"
            ),
            field="durability",
            holds=lambda t: (
                t.durability != "strict"
                or t.engine == "mongodb"
                or t.topology != "standalone"
                or t.external is not None
            ),
        ),
        *(
            Rule(
                cel=(
                    f"self.engine != '{engine}' || !has(self.settings) "
                    f"|| self.settings.all(k, k in {_cel_list(keys)})"
                ),
                # Static per engine: naming the offending key in a messageExpression
                # costs too much CEL budget (map keys have no length bound).
                message=f"settings: only these keys are allowed for {engine}: {', '.join(keys)}",
                field="settings",
                holds=_settings_allowed(engine, keys),
            )
            for engine, keys in ALLOWED_SETTINGS.items()
        ),
        Rule(
            cel=(
                f"!has(self.settings) || !('{_FLUSH_KEY}' in self.settings) "
                f"|| self.settings['{_FLUSH_KEY}'] in ['0', '1', '2']"
            ),
            message=f'settings.{_FLUSH_KEY} must be "0", "1" or "2"',
            field="settings",
            holds=lambda t: not t.settings or t.settings.get(_FLUSH_KEY, "1") in ("0", "1", "2"),
        ),
        Rule(
            cel=(
                f"!has(self.settings) || !('{_SYNC_COMMIT_KEY}' in self.settings) "
                f"|| self.settings['{_SYNC_COMMIT_KEY}'] in {_cel_list(SYNCHRONOUS_COMMIT_VALUES)}"
            ),
            message=(
                f"settings.{_SYNC_COMMIT_KEY} must be one of {', '.join(SYNCHRONOUS_COMMIT_VALUES)}"
            ),
            field="settings",
            holds=lambda t: (
                not t.settings
                or t.settings.get(_SYNC_COMMIT_KEY, "on") in SYNCHRONOUS_COMMIT_VALUES
            ),
        ),
        Rule(
            cel="!has(self.shardKey) || (self.topology == 'sharded' && !has(self.external))",
            message=(
                "shardKey is only valid with topology: sharded on a deployed target; remove "
                "shardKey or set topology: sharded"
            ),
            field="shardKey",
            reason="FieldValueForbidden",
            holds=lambda t: t.shard_key is None or (t.topology == "sharded" and not t.external),
        ),
        Rule(
            cel="!has(self.external) || !has(self.members)",
            message="members must be unset for an external target (nothing is deployed)",
            field="members",
            reason="FieldValueForbidden",
            holds=lambda t: t.external is None or t.members is None,
        ),
        Rule(
            cel="!has(self.external) || !has(self.shards)",
            message="shards must be unset for an external target (nothing is deployed)",
            field="shards",
            reason="FieldValueForbidden",
            holds=lambda t: t.external is None or t.shards is None,
        ),
        Rule(
            cel="!has(self.external) || !has(self.settings)",
            message=(
                "settings must be unset for an external target: configure the existing "
                "database yourself"
            ),
            field="settings",
            reason="FieldValueForbidden",
            holds=lambda t: t.external is None or t.settings is None,
        ),
        *TARGET_HARDWARE_RULES,
        *SHARDING_RULES,
        Rule(
            cel="!has(self.external) || (!has(self.image) && !has(self.version))",
            message="image and version must be unset for an external target",
            field="external",
            reason="FieldValueForbidden",
            holds=lambda t: t.external is None or (t.image is None and t.version is None),
        ),
    )

    @property
    def effective_members(self) -> int:
        """Members actually deployed (per shard for sharded)."""
        return self.members if self.members is not None else DEFAULT_MEMBERS[self.topology]

    @property
    def effective_image(self) -> str:
        """Image reference with the built-in defaults: `image`, else the official image at
        `version` or the default (the operator uses its configured defaults instead)."""
        if self.image is not None:
            return self.image
        repository = DEFAULT_REPOSITORIES[self.engine]
        return f"{repository}:{self.version or DEFAULT_VERSIONS[self.engine]}"
