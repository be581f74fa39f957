"""environment.json: what a reader needs to judge a result.

Versions, settings in force, where the runner and the database ran, memory
and the data-set-to-memory ratios. Each runner pod writes its own; the merged
step's file lists every pod's (`MergedEnvironment`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dbbench_contract.step import DatabaseHost
from dbbench_contract.wire import StoredModel


class NoopLoop(StoredModel):
    """The runner's own cost per operation, measured with a driver that calls nothing."""

    operations: int = 0
    cpu_per_op_us: float | None = None
    wall_per_op_us: float | None = None
    seconds: float = 0.0


class RunnerInfo(StoredModel):
    version: str = ""
    python: str = ""
    client: dict[str, str] = Field(default_factory=dict)
    noop_loop: NoopLoop | None = None
    image: str | None = None


class TargetInfo(StoredModel):
    name: str
    engine: str
    database: str = ""
    shard_key: str | None = None
    # Where reads go: the replicas a relational runner reads from, or the
    # MongoDB read preference (the driver picks the member).
    read_preference: str = "primary"
    read_replicas: tuple[str, ...] = ()


class ShardServer(StoredModel):
    """One shard of a sharded MongoDB target, as its own mongod (the shard's
    primary) reports it, with its pods' limits and its part of the data."""

    name: str
    hosts: str = ""  # listShards' "<replica set>/<member>,<member>"
    version: str = ""
    settings: dict[str, str] = Field(default_factory=dict)
    cache_bytes: int | None = None
    # Why the runner could not read it (the error's type); then nothing above is known.
    error: str | None = None
    # The shard's database pods' limits (from the step file; None: external or unknown).
    memory_limit_bytes: int | None = None
    cpu_limit: float | None = None
    # Data + index bytes of the phase's collection on this shard, and its ratios.
    used_bytes: int | None = None
    data_to_cache_ratio: float | None = None
    data_to_memory_ratio: float | None = None


class ServerInfo(StoredModel):
    version: str = ""
    # Settings in force on the servers that hold the data; for a sharded target,
    # those every shard shares (each shard's own: `shards`).
    settings: dict[str, str] = Field(default_factory=dict)
    # Bytes of the engine's data cache (InnoDB buffer pool, WiredTiger cache,
    # PostgreSQL shared_buffers); for a sharded target, the shards' together.
    cache_bytes: int | None = None
    # A sharded MongoDB target: every shard's own mongod, never a config
    # server's or the router's.
    shards: tuple[ShardServer, ...] = ()
    # A sharded target's router (the mongos the runner used): its own settings,
    # among them the config servers it reads (sharding.configDB). No cache.
    router: dict[str, str] = Field(default_factory=dict)
    # How long the server had been up when the runner read it at the step's start
    # (MySQL/MariaDB status Uptime, PostgreSQL since pg_postmaster_start_time(),
    # MongoDB serverStatus uptime), and so when it started, in seconds since the
    # epoch by the runner's clock (the read's time less the uptime; MySQL counts
    # whole seconds). Equal across a target's steps unless the server restarted
    # between them (cache: cold before every measured step, coldOnce once).
    # None where the server does not say (a sharded target's router).
    uptime_seconds: float | None = None
    started_at: float | None = None


class RunnerPod(StoredModel):
    index: int = 0
    count: int = 1
    threads: int = 1
    processes: int = 1
    hostname: str = ""
    node: str | None = None
    memory_limit_bytes: int | None = None
    cpus: int | None = None
    # CPUs this pod may use (cgroup quota, else affinity): sizes the processes.
    cpu_budget: float | None = None


class Environment(StoredModel):
    runner: RunnerInfo = RunnerInfo()
    target: TargetInfo
    server: ServerInfo = ServerInfo()
    # The step file's data set and phase as the runner applied them.
    dataset: dict[str, Any] = Field(default_factory=dict)
    phase: dict[str, Any] = Field(default_factory=dict)
    # (data + index) / the engine's cache: above 1 the set no longer fits the cache.
    data_to_cache_ratio: float | None = None
    # (data + index) / the database pod's memory limit: above 1 not even the
    # page cache can hold it (field benchmark 3's point). A sharded target's is
    # over the shards' memory together (one data-bearing pod per shard); each
    # shard's own is in server.shards.
    data_to_memory_ratio: float | None = None
    # Where the database ran and its limits (None: an external target).
    database: DatabaseHost | None = None
    pod: RunnerPod = RunnerPod()


class MergedEnvironment(StoredModel):
    """A merged step's environment: every pod's (they share the server)."""

    pods: tuple[Environment, ...]

    @property
    def first(self) -> Environment:
        return self.pods[0]


def data_to_memory(used_bytes: int | None, memory_bytes: int | None) -> float | None:
    """(data + index) bytes over a memory size: > 1 means the set no longer fits."""
    if used_bytes is None or not memory_bytes:
        return None
    return used_bytes / memory_bytes
