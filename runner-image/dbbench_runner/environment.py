"""environment.json: what a reader needs to judge a result (versions, settings, memory).

The model is the contract's (``dbbench_contract.environment``); this module
gathers the values, reading the pod's own cgroup and environment.
"""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import dbbench_runner
from dbbench_contract.environment import (
    Environment,
    NoopLoop,
    RunnerInfo,
    RunnerPod,
    ServerInfo,
    ShardServer,
    TargetInfo,
    data_to_memory,
)
from dbbench_runner.config import DatabaseHost, StepConfig
from dbbench_runner.drivers import base

CGROUP_MEMORY = Path("/sys/fs/cgroup/memory.max")


def memory_limit_bytes(path: Path = CGROUP_MEMORY) -> int | None:
    """This pod's memory limit (cgroup v2), or None when unlimited/unknown."""
    try:
        value = path.read_text().strip()
    except OSError:
        return None
    return int(value) if value.isdigit() else None


def _used(storage: base.StorageSample | None) -> int | None:
    return None if storage is None else storage.data_bytes + storage.index_bytes


def _shard_storage(shard: ShardServer, storage: base.StorageSample | None) -> ShardServer:
    parts = (
        {} if storage is None else {s.shard: s.data_bytes + s.index_bytes for s in storage.shards}
    )
    used = parts.get(shard.name)
    return shard.model_copy(
        update={
            "used_bytes": used,
            "data_to_cache_ratio": data_to_memory(used, shard.cache_bytes),
            "data_to_memory_ratio": data_to_memory(used, shard.memory_limit_bytes),
        }
    )


def _memory(environment: Environment) -> int | None:
    """The memory that holds the data: the data-bearing pod's limit, or for a
    sharded target the shards' together (None unless every shard's is known)."""
    host = environment.database
    shards = environment.server.shards
    if not shards:
        return None if host is None else host.memory_limit_bytes
    limits = [s.memory_limit_bytes for s in shards]
    return None if any(m is None for m in limits) else sum(m for m in limits if m is not None)


def with_storage(environment: Environment, storage: base.StorageSample | None) -> Environment:
    """Both data-to-memory ratios from a storage sample (the one after the phase),
    and each shard's from its part of the data."""
    shards = tuple(_shard_storage(s, storage) for s in environment.server.shards)
    server = environment.server.model_copy(update={"shards": shards})
    return environment.model_copy(
        update={
            "server": server,
            "data_to_cache_ratio": data_to_memory(_used(storage), server.cache_bytes),
            "data_to_memory_ratio": data_to_memory(_used(storage), _memory(environment)),
        }
    )


def _shards(info: base.ServerInfo, host: DatabaseHost | None) -> tuple[ShardServer, ...]:
    """Each shard as read on its own servers, with its pods' limits (pods whose role
    is the shard's name: the chart's app.kubernetes.io/component)."""
    listed = []
    for shard in info.shards:
        memory, cpu = (None, None) if host is None else host.role_limits(shard.name)
        listed.append(
            ShardServer(
                name=shard.name,
                hosts=shard.hosts,
                version=shard.version,
                settings=shard.settings,
                cache_bytes=shard.cache_bytes,
                error=shard.error,
                memory_limit_bytes=memory,
                cpu_limit=cpu,
            )
        )
    return tuple(listed)


def environment(
    config: StepConfig,
    info: base.ServerInfo,
    storage: base.StorageSample | None,
    processes: int,
    *,
    cpu_budget: float,
    noop_loop: NoopLoop,
) -> Environment:
    gathered = Environment(
        runner=RunnerInfo(
            version=dbbench_runner.__version__,
            python=platform.python_version(),
            client=info.client,
            noop_loop=noop_loop,
            image=os.environ.get("DBBENCH_RUNNER_IMAGE"),
        ),
        target=TargetInfo(
            name=config.target.name,
            engine=config.target.engine,
            database=config.target.database,
            shard_key=config.target.shard_key,
            read_preference=config.phase.read_preference,
            read_replicas=tuple(f"{r.host}:{r.port}" for r in config.target.replicas)
            if config.phase.read_preference != "primary"
            else (),
        ),
        server=ServerInfo(
            version=info.version,
            settings=info.settings,
            cache_bytes=info.cache_bytes,
            shards=_shards(info, config.database_host),
            router=info.router,
            uptime_seconds=info.uptime_seconds,
            started_at=None if info.uptime_seconds is None else info.read_at - info.uptime_seconds,
        ),
        dataset=config.dataset.model_dump(mode="json", by_alias=True),
        phase=config.phase.model_dump(mode="json", by_alias=True),
        database=config.database_host,
        pod=RunnerPod(
            index=config.pod.index,
            count=config.pod.count,
            threads=config.threads,
            processes=processes,
            hostname=socket.gethostname(),
            node=os.environ.get("NODE_NAME"),
            memory_limit_bytes=memory_limit_bytes(),
            cpus=os.cpu_count(),
            cpu_budget=cpu_budget,
        ),
    )
    return with_storage(gathered, storage)
