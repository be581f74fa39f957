"""environment.json: what a reader needs to judge a result (versions, settings, memory)."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import dbbench_runner
from dbbench_runner.config import StepConfig
from dbbench_runner.drivers.base import ServerInfo, StorageSample

CGROUP_MEMORY = Path("/sys/fs/cgroup/memory.max")


def memory_limit_bytes(path: Path = CGROUP_MEMORY) -> int | None:
    """This pod's memory limit (cgroup v2), or None when unlimited/unknown."""
    try:
        value = path.read_text().strip()
    except OSError:
        return None
    return int(value) if value.isdigit() else None


def data_to_memory(storage: StorageSample | None, cache_bytes: int | None) -> float | None:
    """(data + index) / the engine's cache: > 1 means the set no longer fits in cache."""
    if storage is None or not cache_bytes:
        return None
    return (storage.data_bytes + storage.index_bytes) / cache_bytes


def environment(
    config: StepConfig,
    info: ServerInfo,
    storage: StorageSample | None,
    processes: int,
    *,
    cpu_budget: float,
    noop_loop: dict[str, object],
) -> dict[str, object]:
    return {
        "runner": {
            "version": dbbench_runner.__version__,
            "python": platform.python_version(),
            "client": info.client,
            # The runner's own cost per operation (a driver that calls nothing).
            "noopLoop": noop_loop,
            "image": os.environ.get("DBBENCH_RUNNER_IMAGE"),
        },
        "target": {
            "name": config.target.name,
            "engine": config.target.engine,
            "database": config.target.database,
            "shardKey": config.target.shard_key,
            # Where reads go: the replicas a MySQL-family runner reads from, or
            # the MongoDB read preference (the driver picks the member).
            "readPreference": config.phase.read_preference,
            "readReplicas": [f"{r.host}:{r.port}" for r in config.target.replicas]
            if config.phase.read_preference != "primary"
            else [],
        },
        "server": {
            "version": info.version,
            "settings": info.settings,
            "cacheBytes": info.cache_bytes,
        },
        "dataset": config.dataset.model_dump(),
        "phase": config.phase.model_dump(),
        "dataToCacheRatio": data_to_memory(storage, info.cache_bytes),
        "pod": {
            "index": config.pod.index,
            "count": config.pod.count,
            "threads": config.threads,
            "processes": processes,
            "hostname": socket.gethostname(),
            "node": os.environ.get("NODE_NAME"),
            "memoryLimitBytes": memory_limit_bytes(),
            "cpus": os.cpu_count(),
            # CPUs this pod may use (cgroup quota, else affinity): sizes the processes.
            "cpuBudget": cpu_budget,
        },
    }
